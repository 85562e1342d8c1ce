"""Serving the gNMI target: on an existing gRPC server (:func:`add_gnmi`, so one device agent
serves the native service, P4Runtime and gNMI together), or alone on a device agent
(:func:`start_gnmi_target`, for tests)."""

from __future__ import annotations

from typing import Any

import grpc

from emulation.admission.limits import StreamGate, stream_capacity
from emulation.agent import WORKERS, DeviceAgent
from emulation.standard.gnmi.servicer import GnmiTarget
from emulation.switch_device import ServedSwitch
from southbound.standard.pb import gnmi_pb2, gnmi_pb2_grpc
from southbound.tls import ServerTlsConfig

GNMI_SERVICE = gnmi_pb2.DESCRIPTOR.services_by_name["gNMI"].full_name


def add_gnmi(server: grpc.Server, device: ServedSwitch | GnmiTarget, **opts: Any) -> GnmiTarget:
    """Register a gNMI target of ``device`` (or an existing target: its state, drains and
    election ids, outlives a server) on ``server``; ``opts`` go to :class:`GnmiTarget`."""
    target = device if isinstance(device, GnmiTarget) else GnmiTarget(device, **opts)
    gnmi_pb2_grpc.add_gNMIServicer_to_server(target, server)
    return target


def gnmi_agent(
    device: ServedSwitch, tls: ServerTlsConfig | None = None, **opts: Any
) -> tuple[DeviceAgent, GnmiTarget]:
    """A (not yet started) agent serving only gNMI, and its target (the same for every start:
    drains and election ids survive a restart of the agent)."""
    opts.setdefault("streams", StreamGate(stream_capacity(WORKERS), per_client=stream_capacity(WORKERS)))
    target = GnmiTarget(device, **opts)

    def register(server: grpc.Server) -> None:
        add_gnmi(server, target)

    agent = DeviceAgent(device.name, device.role, register, GNMI_SERVICE, tls=tls, max_workers=WORKERS)
    return agent, target


def start_gnmi_target(device: ServedSwitch, tls: ServerTlsConfig | None = None, **opts: Any) -> DeviceAgent:
    """A running agent serving ``device`` over gNMI on loopback (``agent.address``)."""
    agent, _ = gnmi_agent(device, tls, **opts)
    agent.start()
    return agent
