"""Emulated switches served over P4Runtime, and the P4Runtime group driver on them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from emulation.agent import DeviceAgent
from emulation.clock import EmulatedClock
from emulation.standard.p4rt import start_p4runtime
from emulation.switch_device import BlockSwitch, StaticLinks
from southbound.devices import DeviceConfig, Endpoint
from southbound.standard.p4rt.driver import P4GroupWriter
from southbound.standard.p4rt.prefixes import default_prefixes
from tests.support.southbound_fixtures import BLOCKS, FAST, served_switch

PREFIXES = default_prefixes(BLOCKS)


def p4_device(address: str, name: str = "sw-a", device_id: int = 1) -> DeviceConfig:
    """A devices-file entry naming only a P4Runtime endpoint (and every block's prefix)."""
    return DeviceConfig(name=name, kind="block", address="", transport="auto", options=FAST,
                        endpoints=(Endpoint("p4runtime", address, device_id=device_id),),
                        prefixes=tuple(PREFIXES.items()))


def block_switch(num_ports: int = 8, **kwargs: object) -> tuple[BlockSwitch, StaticLinks]:
    """Block "a" with ports wired: port i -> block BLOCKS[1 + i % 3], far port i."""
    links = StaticLinks(BLOCKS, num_ports)
    for port in range(num_ports):
        links.connect("a", port, BLOCKS[1 + port % 3], port)
    device = BlockSwitch("sw-a", "a", BLOCKS, num_ports, 100.0, EmulatedClock(), links, **kwargs)  # type: ignore[arg-type]
    device.install_current_peers()
    return device, links


@contextmanager
def served_p4_switch(
    num_ports: int = 8, **kwargs: object
) -> Iterator[tuple[BlockSwitch, DeviceAgent, P4GroupWriter, StaticLinks]]:
    """As southbound_fixtures.served_switch, over P4Runtime with the P4GroupWriter."""
    device, links = block_switch(num_ports, **kwargs)
    agent = start_p4runtime(device, prefixes=PREFIXES)
    driver = P4GroupWriter(p4_device(agent.address))
    try:
        yield device, agent, driver, links
    finally:
        driver.close()
        agent.stop()


#: the group drivers the switch contract runs over
GROUP_DRIVERS = ("native", "p4runtime")


Served = tuple[BlockSwitch, DeviceAgent, Any, StaticLinks]


def served_groups(driver: str) -> Callable[..., AbstractContextManager[Served]]:
    """The fixture of a served switch and its group driver: ``native`` (SwitchClient over the
    packet-switch service) or ``p4runtime`` (P4GroupWriter)."""
    if driver == "native":
        return served_switch
    if driver == "p4runtime":
        return served_p4_switch
    raise ValueError(f"unknown group driver {driver!r} (expected one of {', '.join(GROUP_DRIVERS)})")
