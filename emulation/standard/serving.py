"""What an emulated device serves: its native ``heliostat.southbound.v1`` service alone
(``native``), or the standard protocols beside it (``standard``, the default of ``heliostat
emulate`` and the demo): a block or spine switch serves the native service, P4Runtime (its WCMP
groups) and gNMI (counters, ports, drains) on one gRPC server, as one device agent; an OCS
serves the native service on its agent and NETCONF over SSH on a port of its own.

The devices file written from :func:`device_config` names every protocol's endpoint under its
own key (``p4runtime``, ``gnmi``, ``netconf`` with its login), with transport ``auto``: the
controller drives each capability over the standard protocol that serves it. The native
address stays in the file for tools that speak it (``heliostat emuctl``, the tests' clients).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import NamedTuple

import grpc
import paramiko

from emulation.admission.limits import StreamGate, stream_capacity
from emulation.agent import SWITCH_SERVICE, WORKERS, DeviceAgent, ocs_agent_of, spine_agent, switch_agent
from emulation.ocs_device import ServedOcs
from emulation.servicers import OcsServicer, PacketSwitchServicer
from emulation.standard import PROTOCOLS
from emulation.standard.gnmi.servicer import GnmiTarget
from emulation.standard.gnmi.target import GNMI_SERVICE, add_gnmi
from emulation.standard.netconf import NetconfServer
from emulation.standard.p4rt import P4RUNTIME_SERVICE, p4runtime_register
from emulation.switch_device import ServedSwitch
from southbound.devices import AUTO, DeviceConfig, Endpoint
from southbound.grpc_native.pb import packet_switch_pb2_grpc
from southbound.tls import ServerTlsConfig, TlsConfig

NETCONF_USER = "heliostat"
#: how often the devices file asks the gNMI targets to sample the counters: half the shortest
#: poll interval the shipped configs use (1 s, the demo's), so that every poll sees a new sample
GNMI_SAMPLE_INTERVAL_S = 0.5
#: a switch agent's workers: the controller's P4Runtime arbitration stream and gNMI sampling
#: stream hold one each for as long as it runs, besides the native event streams' share
STANDARD_WORKERS = 16


class ProtocolError(ValueError):
    """An unknown protocol set."""


def check_protocols(protocols: str) -> str:
    if protocols not in PROTOCOLS:
        raise ProtocolError(f"protocols: {protocols!r} is not one of {', '.join(PROTOCOLS)}")
    return protocols


def packet_switch_agent(
    device: ServedSwitch,
    tls: ServerTlsConfig | None,
    *,
    protocols: str,
    prefixes: Mapping[str, str],
    sample_interval_s: float = 1.0,
) -> DeviceAgent:
    """A block's or spine's agent: the native service, and with ``standard`` P4Runtime and gNMI
    beside it on the same server (their state survives the agent's restarts)."""
    if check_protocols(protocols) == "native":
        return spine_agent(device, tls) if device.role == "spine" else switch_agent(device, tls)
    native = PacketSwitchServicer(device)
    p4runtime = p4runtime_register(device, prefixes=prefixes)
    agent: DeviceAgent | None = None
    gnmi = GnmiTarget(
        device,
        sample_interval_s=sample_interval_s,
        streams=StreamGate(stream_capacity(STANDARD_WORKERS)),
        serving=lambda: agent is None or agent.serving,
    )

    def register(server: grpc.Server) -> None:
        packet_switch_pb2_grpc.add_PacketSwitchServiceServicer_to_server(native, server)
        p4runtime(server)
        add_gnmi(server, gnmi)

    agent = DeviceAgent(
        device.name, device.role, register, (SWITCH_SERVICE, P4RUNTIME_SERVICE, GNMI_SERVICE),
        tls=tls, max_workers=STANDARD_WORKERS,
    )
    return agent


def ocs_servers(
    device: ServedOcs, tls: ServerTlsConfig | None, *, protocols: str, password: str,
    host_key: paramiko.PKey | None = None,
) -> tuple[DeviceAgent, NetconfServer | None]:
    """An OCS's agent (the native service) and, with ``standard``, its NETCONF server (not
    started, on a port of its own). Both admit writes through one epoch fence: a deposed
    leader is refused on either protocol once the device has seen its successor's epoch."""
    servicer = OcsServicer(device, StreamGate(stream_capacity(WORKERS)))
    agent = ocs_agent_of(servicer, tls)
    if check_protocols(protocols) == "native":
        return agent, None
    return agent, NetconfServer(device, username=NETCONF_USER, password=password, host_key=host_key,
                                fence=servicer.fence)


def new_password() -> str:
    """A NETCONF password for one emulated fabric (written to its devices file, mode 0600)."""
    return secrets.token_urlsafe(16)


class NetconfLogin(NamedTuple):
    """Where an OCS serves NETCONF, its password and its SSH host key (pinned by the driver)."""

    address: str
    password: str
    host_key: str | None = None


def host_key_of(server: NetconfServer) -> str:
    """The server's SSH host key as the devices file pins it: ``<type> <base64>``."""
    return f"{server.host_key.get_name()} {server.host_key.get_base64()}"


def device_config(
    agent: DeviceAgent,
    client_tls: TlsConfig | None,
    *,
    netconf: NetconfServer | None = None,
    prefixes: Mapping[str, str] | None = None,
) -> DeviceConfig:
    """The devices-file entry of one device: native only, or every standard endpoint (switches:
    P4Runtime and gNMI at the agent's address; an OCS: NETCONF with its login)."""
    protocols = "native" if set(agent.service_names) == {SWITCH_SERVICE} else "standard"
    if agent.kind == "ocs":
        protocols = "native" if netconf is None else "standard"
    login = None if netconf is None else NetconfLogin(netconf.address, netconf.password, host_key_of(netconf))
    return device_entry(agent.name, agent.kind, agent.address, client_tls, protocols=protocols,
                        netconf=login, prefixes=prefixes)


def device_entry(
    name: str,
    kind: str,
    address: str,
    client_tls: TlsConfig | None,
    *,
    protocols: str,
    netconf: NetconfLogin | None = None,
    prefixes: Mapping[str, str] | None = None,
) -> DeviceConfig:
    """One device's entry from its addresses (and an OCS's NETCONF login)."""
    if check_protocols(protocols) == "native":
        return DeviceConfig(name, kind, address, "grpc", client_tls)
    if kind == "ocs":
        if netconf is None:
            raise ProtocolError(f"{name}: an OCS under the standard protocols needs its NETCONF address")
        endpoint = Endpoint("netconf", netconf.address, NETCONF_USER, netconf.password,
                            host_key=netconf.host_key)
        return DeviceConfig(name, "ocs", address, AUTO, client_tls, endpoints=(endpoint,))
    endpoints = (Endpoint("p4runtime", address),
                 Endpoint("gnmi", address, sample_interval_s=GNMI_SAMPLE_INTERVAL_S))
    return DeviceConfig(name, kind, address, AUTO, client_tls, endpoints=endpoints,
                        prefixes=tuple(sorted((prefixes or {}).items())))
