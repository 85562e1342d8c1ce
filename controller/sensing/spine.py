"""The spine as the devices report it: which spine links are up, their loads, and what a
spine switch under maintenance takes out. Pure.

A spine link (:class:`optimizer.spine.SpineLink`) is up when both ends say so: the block
port is up and hears the spine switch's port as its LLDP peer, and the spine port hears
the block's. An end that was not read (its device did not answer, or a spine switch with
no device: a static spine) does not take the link out, as for circuits (fail static).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from controller.device_view import PortsByBlock, ends_see_each_other, merge_ports
from controller.sensing.estimation import CounterSample
from optimizer.fabric import Fabric, SpineSwitch
from optimizer.spine import SpineLink, spine_capacity_gbps, spine_links
from southbound.types import SwitchCounters, SwitchPort


def spine_links_up(
    fabric: Fabric,
    ports: Mapping[str, Iterable[SwitchPort]],
    spine_ports: Mapping[str, Iterable[SwitchPort]],
) -> frozenset[SpineLink]:
    """The spine links both of whose read ends are up and see each other."""
    seen = {(b, p.port): p for b, plist in ports.items() for p in plist}
    seen.update({(s, p.port): p for s, plist in spine_ports.items() for p in plist})
    read = set(ports) | set(spine_ports)
    return frozenset(
        link for link in spine_links(fabric)
        if ends_see_each_other(seen, read, ((link.block, link.block_port), (link.spine, link.spine_port)))
    )


def without_drained(links: Iterable[SpineLink], drained: Mapping[str, Iterable[int]]) -> frozenset[SpineLink]:
    """The links neither of whose ends is in ``drained`` (device -> ports)."""
    held = {(d, p) for d, plist in drained.items() for p in plist}
    return frozenset(
        lk for lk in links if (lk.block, lk.block_port) not in held and (lk.spine, lk.spine_port) not in held
    )


def spine_ports_of(fabric: Fabric, spines: Iterable[str]) -> PortsByBlock:
    """Both ends of every link of the spine switches ``spines``: the blocks' ports that face
    them and their own ports (what draining them for maintenance takes out)."""
    names = set(spines)
    blocks: dict[str, list[int]] = {}
    own: dict[str, list[int]] = {}
    for link in spine_links(fabric):
        if link.spine in names:
            blocks.setdefault(link.block, []).append(link.block_port)
            own.setdefault(link.spine, []).append(link.spine_port)
    return merge_ports(blocks, own)


def spine_port_samples(counters: Mapping[str, SwitchCounters]) -> list[tuple[tuple[str, int], CounterSample]]:
    """Transmit-byte samples of the spine switches' ports, keyed (spine, port)."""
    return [
        ((spine, port), CounterSample(reading.time_s, int(c.tx_bytes)))
        for spine, reading in counters.items()
        for port, c in reading.ports.items()
    ]


def spine_utilisation(
    fabric: Fabric,
    spine: Iterable[SpineSwitch],
    links: Iterable[SpineLink],
    port_rates: Mapping[tuple[str, int], float],
) -> dict[tuple[str, str], float]:
    """Per directed trunk block -> spine and spine -> block of the spine in service, the
    measured rate over its capacity (from the ports' transmit rates; a trunk none of whose
    ports was measured is left out)."""
    capacity = spine_capacity_gbps(spine, fabric)
    load: dict[tuple[str, str], float] = {}
    for link in links:
        for (device, port), trunk in (
            ((link.block, link.block_port), (link.block, link.spine)),
            ((link.spine, link.spine_port), (link.spine, link.block)),
        ):
            rate = port_rates.get((device, port))
            if rate is not None and trunk in capacity:
                load[trunk] = load.get(trunk, 0.0) + rate
    return {trunk: gbps / capacity[trunk] for trunk, gbps in load.items() if capacity[trunk] > 0}
