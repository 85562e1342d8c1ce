"""The spine's cabling, port by port, and the spine capacity left in service. Pure.

A fabric's ``spine:`` section says how many links join each spine switch to each block;
this module fixes which ports they use, the one numbering the emulated devices, the
packet-level fabric and the controller share:

- a block's spine ports follow its OCS uplinks (``uplinks .. uplinks + links - 1``),
  grouped by spine switch in fabric order;
- a spine switch's ports are numbered from 0 in block order (all of the first block's
  links, then the next block's...).

:func:`spine_in_service` turns the links that are up (as the devices report them) into
:class:`~optimizer.fabric.SpineSwitch` values with the live link counts, which is what TE,
the drain guard and ToE take as the spine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from optimizer.fabric import Fabric, SpineSwitch


@dataclass(frozen=True, slots=True, order=True)
class SpineLink:
    """One static electrical link: ``spine`` port ``spine_port`` to ``block`` port ``block_port``."""

    spine: str
    spine_port: int
    block: str
    block_port: int


def spine_links(fabric: Fabric) -> tuple[SpineLink, ...]:
    """Every spine link of the fabric, in spine then spine-port order."""
    next_block_port = {b.name: b.uplinks for b in fabric.blocks}
    by_spine: dict[str, list[SpineLink]] = {s.name: [] for s in fabric.spine}
    for block in fabric.blocks:
        for switch in fabric.spine:
            for _ in range(switch.links_to(block.name)):
                port = next_block_port[block.name]
                next_block_port[block.name] += 1
                links = by_spine[switch.name]
                links.append(SpineLink(switch.name, len(links), block.name, port))
    return tuple(link for s in fabric.spine for link in by_spine[s.name])


def spine_port_count(fabric: Fabric, spine: str) -> int:
    """How many ports spine switch ``spine`` has (one per link)."""
    for switch in fabric.spine:
        if switch.name == spine:
            return sum(count for _, count in switch.links)
    raise KeyError(f"fabric {fabric.name!r} has no spine switch {spine!r}")


def block_ports(fabric: Fabric, block: str) -> int:
    """All ports of ``block``: its OCS uplinks and its spine links."""
    return fabric.block(block).uplinks + sum(s.links_to(block) for s in fabric.spine)


def spine_in_service(
    fabric: Fabric, up: Iterable[SpineLink], out: Iterable[str] = ()
) -> tuple[SpineSwitch, ...]:
    """The fabric's spine switches with only the links in ``up``, less the switches in ``out``
    (drained for maintenance). A switch with no link left is left out."""
    gone = set(out)
    counts: dict[tuple[str, str], int] = {}
    for link in up:
        counts[(link.spine, link.block)] = counts.get((link.spine, link.block), 0) + 1
    kept = []
    for switch in fabric.spine:
        if switch.name in gone:
            continue
        links = tuple(
            (b.name, count) for b in fabric.blocks if (count := counts.get((switch.name, b.name), 0))
        )
        if links:
            kept.append(SpineSwitch(switch.name, links, switch.speed_gbps))
    return tuple(kept)


def spine_capacity_gbps(spine: Iterable[SpineSwitch], fabric: Fabric) -> Mapping[tuple[str, str], float]:
    """Capacity of each directed block-spine trunk, both ways: {(node, node): Gbit/s}."""
    out: dict[tuple[str, str], float] = {}
    for switch in spine:
        for block, count in switch.links:
            gbps = count * min(switch.speed_gbps, fabric.block(block).speed_gbps)
            out[(block, switch.name)] = gbps
            out[(switch.name, block)] = gbps
    return out
