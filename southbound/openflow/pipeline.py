"""Pure forwarding logic of a block switch: WCMP groups -> select-group buckets.

No OpenFlow here; the agent turns the plan into group mods. Semantics follow the
PacketSwitchService: a next hop "via block K" spreads its weight equally over the block's
*installed* (peer was K when last programmed), undrained uplinks; a destination without a
group goes direct; the transit table only ever goes direct.

Bucket schemes (see README, "select groups"):
  * ``weighted``: one bucket per uplink, weight = its share (integers, reduced by gcd);
  * ``replicated``: the same shares as equal-weight buckets, an uplink repeated as often
    as its weight says, for switches whose weighted select is not proportional.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: destination block -> {via block: weight}
Table = Mapping[str, Mapping[str, int]]
#: one bucket: (uplink index, weight)
Bucket = tuple[int, int]

SOURCE_GROUP_BASE = 1000
TRANSIT_GROUP_BASE = 2000


@dataclass(frozen=True)
class GroupPlan:
    """Buckets of every select group of one block switch, by OpenFlow group id."""

    groups: dict[int, tuple[Bucket, ...]]


def group_id(table: str, dest_index: int) -> int:
    base = SOURCE_GROUP_BASE if table == "source" else TRANSIT_GROUP_BASE
    return base + dest_index


def port_shares(
    hops: Mapping[str, int],
    blocks: Sequence[str],
    installed: Sequence[int],
    drained: Sequence[bool],
) -> dict[int, int]:
    """Integer share of each uplink for one group; empty when no member can carry it."""
    members: dict[str, list[int]] = {}
    for via, weight in hops.items():
        if weight <= 0:
            continue
        k = blocks.index(via)
        ports = [p for p, peer in enumerate(installed) if peer == k and not drained[p]]
        if ports:
            members[via] = ports
    if not members:
        return {}
    lcm = math.lcm(*(len(ports) for ports in members.values()))
    shares: dict[int, int] = {}
    for via, ports in members.items():
        each = hops[via] * lcm // len(ports)
        for p in ports:
            shares[p] = shares.get(p, 0) + each
    divisor = math.gcd(*shares.values())
    return {p: s // divisor for p, s in sorted(shares.items())}


def buckets(shares: Mapping[int, int], scheme: str) -> tuple[Bucket, ...]:
    if scheme == "replicated":
        return tuple((p, 1) for p, s in shares.items() for _ in range(s))
    return tuple(shares.items())


def plan_groups(
    own: str,
    blocks: Sequence[str],
    source: Table,
    transit: Table,
    installed: Sequence[int],
    drained: Sequence[bool],
    scheme: str = "weighted",
) -> GroupPlan:
    groups: dict[int, tuple[Bucket, ...]] = {}
    for d, dest in enumerate(blocks):
        if dest == own:
            continue
        for name, table in (("source", source), ("transit", transit)):
            hops = table.get(dest) or {dest: 1}
            shares = port_shares(hops, blocks, installed, drained)
            groups[group_id(name, d)] = buckets(shares, scheme)
    return GroupPlan(groups)


class MonotonicCounter:
    """Turns raw switch counters, which restart when a flow, group or port is re-created,
    into counters that only grow: a drop in a raw value is taken as a restart from 0."""

    def __init__(self) -> None:
        self._last: dict[object, int] = {}
        self._total: dict[object, int] = {}

    def update(self, key: object, raw: int) -> int:
        last = self._last.get(key)
        delta = raw if last is None or raw < last else raw - last
        self._last[key] = raw
        self._total[key] = self._total.get(key, 0) + delta
        return self._total[key]

    def value(self, key: object) -> int:
        return self._total.get(key, 0)
