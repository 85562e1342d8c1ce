"""Pure forwarding logic of a block switch: WCMP groups -> select-group buckets.

No OpenFlow here; the agent turns the plan into group mods. Semantics follow the
PacketSwitchService: a next hop "via block K" spreads its weight equally over the block's
*installed* (peer was K when last programmed), undrained uplinks; a destination without a
group goes direct; the transit table only ever goes direct.

Bucket schemes (see README, "select groups"):
  * ``weighted``: one bucket per uplink, weight = its share (integers, reduced by gcd);
  * ``replicated``: the shares rounded to exactly ``HASH_SLOTS`` (a power of two)
    equal-weight buckets, an uplink repeated as often as its share says. OVS maps 2^k
    datapath hash values onto the buckets of a select group; with weighted buckets its
    allocation is coarse (16 values for a handful of buckets, so 3:1 became 13:3), while
    2^k equal buckets get one hash value each, so the split is the rounded shares.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

#: destination block -> {via block: weight}
Table = Mapping[str, Mapping[str, int]]
#: one bucket: (uplink index, weight)
Bucket = tuple[int, int]

SOURCE_GROUP_BASE = 1000
HASH_SLOTS = 64
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
    nodes: Sequence[str],
    installed: Sequence[int] | np.ndarray,
    drained: Sequence[bool] | np.ndarray,
) -> dict[int, int]:
    """Integer share of each uplink for one group; empty when no member can carry it.
    ``installed`` holds, per uplink, the index in ``nodes`` of its installed peer (or -1)."""
    members: dict[str, list[int]] = {}
    for via, weight in hops.items():
        if weight <= 0:
            continue
        k = nodes.index(via)
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


def buckets(shares: Mapping[int, int], scheme: str, slots: int = HASH_SLOTS) -> tuple[Bucket, ...]:
    if scheme == "replicated":
        return tuple((p, 1) for p, n in round_to_slots(shares, slots).items() for _ in range(n))
    return tuple(shares.items())


def round_to_slots(shares: Mapping[int, int], slots: int) -> dict[int, int]:
    """Apportion ``slots`` in proportion to ``shares`` (largest remainder), giving every
    positive share at least one slot while there are slots enough."""
    total = sum(shares.values())
    if not total:
        return {}
    exact = {p: s * slots / total for p, s in shares.items() if s > 0}
    counts = {p: max(1, int(x)) for p, x in exact.items()}
    by_remainder = sorted(exact, key=lambda p: (exact[p] - counts[p], -p), reverse=True)
    i = 0
    while sum(counts.values()) < slots:
        counts[by_remainder[i % len(by_remainder)]] += 1
        i += 1
    while sum(counts.values()) > slots:  # minimum-one slots overshot: take from the largest
        largest = max(counts, key=lambda p: (counts[p] - exact[p], counts[p]))
        if counts[largest] <= 1:
            break
        counts[largest] -= 1
    return counts


def plan_groups(
    own: str,
    blocks: Sequence[str],
    nodes: Sequence[str],
    source: Table,
    transit: Table,
    installed: Sequence[int] | np.ndarray,
    drained: Sequence[bool] | np.ndarray,
    scheme: str = "replicated",
) -> GroupPlan:
    groups: dict[int, tuple[Bucket, ...]] = {}
    for d, dest in enumerate(blocks):
        if dest == own:
            continue
        for name, table in (("source", source), ("transit", transit)):
            hops = table.get(dest) or {dest: 1}
            shares = port_shares(hops, nodes, installed, drained)
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
