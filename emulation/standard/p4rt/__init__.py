"""A stateful P4Runtime server over an emulated block or spine switch (PINS's sai_p4 WCMP
subset): its group writes land in the switch model, so the flow-level data plane follows them.

``add_p4runtime(server, device)`` registers the service on an existing gRPC server (one
device agent may serve the native service, P4Runtime and gNMI together);
``start_p4runtime(device)`` starts an agent serving P4Runtime alone (tests)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import grpc

from emulation.agent import WORKERS, DeviceAgent
from emulation.standard.p4rt.servicer import P4RuntimeServicer
from emulation.switch_device import ServedSwitch
from southbound.standard.p4rt.prefixes import default_prefixes
from southbound.standard.pb import p4runtime_pb2, p4runtime_pb2_grpc
from southbound.tls import ServerTlsConfig

P4RUNTIME_SERVICE = p4runtime_pb2.DESCRIPTOR.services_by_name["P4Runtime"].full_name

__all__ = ["P4RUNTIME_SERVICE", "P4RuntimeServicer", "add_p4runtime", "p4runtime_register", "start_p4runtime"]


def _blocks(device: ServedSwitch) -> Sequence[str]:
    return getattr(device, "blocks", device.nodes)


def add_p4runtime(server: grpc.Server, device: ServedSwitch, *, prefixes: Mapping[str, str] | None = None,
                  device_id: int = 1) -> P4RuntimeServicer:
    """Serve ``device`` over P4Runtime on ``server``; ``prefixes`` (block -> IPv4 network)
    default to :func:`~southbound.standard.p4rt.prefixes.default_prefixes` of its blocks.
    A new servicer: an agent that restarts should use :func:`p4runtime_register`."""
    return p4runtime_register(device, prefixes=prefixes, device_id=device_id)(server)


def p4runtime_register(device: ServedSwitch, *, prefixes: Mapping[str, str] | None = None,
                       device_id: int = 1) -> Callable[[grpc.Server], P4RuntimeServicer]:
    """A function adding one servicer (made now) to a server: a DeviceAgent calls it at every
    start, and the switch's tables and arbitration survive the agent's restarts, as the
    native servicer's state does."""
    servicer = P4RuntimeServicer(device, prefixes or default_prefixes(_blocks(device)), device_id)

    def register(server: grpc.Server) -> P4RuntimeServicer:
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(servicer, server)
        return servicer

    return register


def start_p4runtime(device: ServedSwitch, *, prefixes: Mapping[str, str] | None = None, device_id: int = 1,
                    tls: ServerTlsConfig | None = None) -> DeviceAgent:
    """A running agent serving ``device`` over P4Runtime alone (loopback, OS-chosen port)."""
    add = p4runtime_register(device, prefixes=prefixes, device_id=device_id)

    def register(server: grpc.Server) -> None:
        add(server)

    agent = DeviceAgent(device.name, device.role, register, P4RUNTIME_SERVICE, tls=tls, max_workers=WORKERS)
    agent.start()
    return agent
