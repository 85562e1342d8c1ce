"""The gNMI driver against the emulated gNMI target on loopback, shaped like
:func:`tests.support.southbound_fixtures.served_switch` so the switch contract tests run
over both transports (:func:`served_switch_over`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from emulation.agent import DeviceAgent
from emulation.clock import EmulatedClock
from emulation.standard.gnmi.servicer import GnmiTarget
from emulation.standard.gnmi.target import gnmi_agent
from emulation.switch_device import BlockSwitch, ServedSwitch, StaticLinks
from southbound.devices import DeviceConfig
from southbound.standard.gnmi.driver import GnmiSwitch
from tests.support.southbound_fixtures import BLOCKS, FAST, served_switch

#: the transports the CounterReader / PortDrainer contract tests run over
SWITCH_TRANSPORTS = ("grpc", "gnmi")
SAMPLE_S = 0.05


class DeviceEgress:
    """Per-destination bytes read straight from the emulated switch: the stand-in, in these
    tests, for the P4Runtime direct counters the controller wires in as ``egress``."""

    def __init__(self, device: ServedSwitch) -> None:
        self.device = device
        self.closed = False

    def egress_bytes(self) -> dict[str, int]:
        egress = self.device.counters()["egress"]
        assert isinstance(egress, dict)
        return {str(b): int(v) for b, v in egress.items()}

    def close(self) -> None:
        self.closed = True


def gnmi_config(name: str, address: str, kind: str = "block") -> DeviceConfig:
    return DeviceConfig(name=name, kind=kind, address=address, transport="gnmi", options=FAST)


def wired_block(num_ports: int, **kwargs: Any) -> tuple[BlockSwitch, StaticLinks]:
    """Block "a" with ports wired as served_switch wires them: port i -> BLOCKS[1 + i % 3]."""
    links = StaticLinks(BLOCKS, num_ports)
    for port in range(num_ports):
        links.connect("a", port, BLOCKS[1 + port % 3], port)
    device = BlockSwitch("sw-a", "a", BLOCKS, num_ports, 100.0, EmulatedClock(), links, **kwargs)
    device.install_current_peers()
    return device, links


@contextmanager
def served_gnmi_switch(
    num_ports: int = 8, *, sample_interval_s: float = SAMPLE_S, drain_leaf: str = "forwarding-viable",
    **kwargs: Any,
) -> Iterator[tuple[BlockSwitch, DeviceAgent, GnmiSwitch, StaticLinks]]:
    """The wired block "a" behind a gNMI-only agent, and a GnmiSwitch to it."""
    with served_gnmi_target(num_ports, **kwargs) as (device, agent, _, links):
        client = GnmiSwitch(gnmi_config(device.name, agent.address), egress=DeviceEgress(device),
                            sample_interval_s=sample_interval_s, drain_leaf=drain_leaf)
        try:
            yield device, agent, client, links
        finally:
            client.close()


@contextmanager
def served_gnmi_target(
    num_ports: int = 8, **kwargs: Any
) -> Iterator[tuple[BlockSwitch, DeviceAgent, GnmiTarget, StaticLinks]]:
    device, links = wired_block(num_ports, **kwargs)
    agent, target = gnmi_agent(device, sample_interval_s=SAMPLE_S)
    agent.start()
    try:
        yield device, agent, target, links
    finally:
        agent.stop()


def served_switch_over(transport: str, num_ports: int = 8, **kwargs: Any) -> AbstractContextManager[Any]:
    """served_switch (native gRPC) or served_gnmi_switch, by transport name."""
    if transport == "gnmi":
        return served_gnmi_switch(num_ports, **kwargs)
    return served_switch(num_ports, **kwargs)
