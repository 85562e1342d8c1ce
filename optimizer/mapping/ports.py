"""The port model the mapping works on: per OCS, per block, its north and south ports.

A circuit always joins a *north* port of one block to a *south* port of another block on
the same OCS. On a split OCS (circulators) the sides are physical. On an OCS with
``sides: any`` every port may join any other, so the mapping labels each block's ports
there with a *virtual* side: half north, half south (for an odd share, the extra port
alternates between north and south from one ``any`` OCS to the next). The labels are
chosen so that as many of the current circuits as possible join a north to a south port
and can therefore be kept. This makes every OCS look alike to the rest of the mapping.

Ports within one (OCS, block, side) group are interchangeable: which of them a new
circuit uses does not change the logical topology.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from optimizer.errors import ConfigError
from optimizer.fabric import Fabric, OcsSides, Side, WiredPort
from optimizer.topology import Circuit, check_circuits


@dataclass
class OcsPorts:
    """The ports of one OCS, grouped by block and (physical or virtual) side.

    ``north[b]`` and ``south[b]`` list the OCS port numbers of block index ``b``.
    ``current[(a, b)]`` lists the current circuits on this OCS as (north port, south port)
    pairs whose north end belongs to block ``a`` and south end to block ``b``.
    """

    name: str
    index: int
    domain: int
    north: list[list[int]]
    south: list[list[int]]
    current: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)
    flexible: list[set[int]] = field(default_factory=list)

    def flexible_count(self, block: int) -> int:
        """Ports of ``block`` on an ``any`` OCS whose virtual side may still change."""
        return len(self.flexible[block]) if self.flexible else 0

    def set_flexible_north(self, block: int, count: int) -> None:
        """Make ``count`` of the block's flexible ports north and the others south."""
        flex = sorted(self.flexible[block])
        fixed_north = [p for p in self.north[block] if p not in self.flexible[block]]
        fixed_south = [p for p in self.south[block] if p not in self.flexible[block]]
        self.north[block] = fixed_north + flex[:count]
        self.south[block] = fixed_south + flex[count:]

    def north_budget(self, block: int) -> int:
        return len(self.north[block])

    def south_budget(self, block: int) -> int:
        return len(self.south[block])

    def kept(self, counts: np.ndarray) -> int:
        """Today's circuits on this OCS that directed counts (north block x south block) keep."""
        return sum(min(int(counts[a, b]), len(cur)) for (a, b), cur in self.current.items())


@dataclass
class PortModel:
    """Every OCS's port groups, plus the current circuits that cannot be kept as they are."""

    ocs: list[OcsPorts]
    unkeepable: list[Circuit]

    def domains(self) -> list[int]:
        return sorted({o.domain for o in self.ocs})


def build_port_model(fabric: Fabric, current: Sequence[Circuit], source: str = "<current>") -> PortModel:
    """Group the wiring per OCS/block/side and sort the current circuits onto the groups.

    Raises ConfigError when a current circuit is not one the wiring allows (via
    :func:`optimizer.topology.check_circuits`).
    """
    check_circuits(fabric, current, source)
    n = fabric.n_blocks
    by_ocs: dict[str, list[Circuit]] = {}
    for c in current:
        by_ocs.setdefault(c.ocs, []).append(c)
    wiring_by_ocs: dict[str, list[WiredPort]] = {}
    for w in fabric.wiring:
        wiring_by_ocs.setdefault(w.ocs, []).append(w)

    model: list[OcsPorts] = []
    unkeepable: list[Circuit] = []
    any_seen = 0
    for oi, ocs in enumerate(fabric.ocs):
        wired = wiring_by_ocs.get(ocs.name, [])
        north: list[list[int]] = [[] for _ in range(n)]
        south: list[list[int]] = [[] for _ in range(n)]
        block_of = {w.port: fabric.block_index(w.block) for w in wired}
        circuits = by_ocs.get(ocs.name, [])
        if ocs.sides is OcsSides.SPLIT:
            for w in wired:
                (north if w.side is Side.NORTH else south)[block_of[w.port]].append(w.port)
            side_of = {w.port: w.side for w in wired}
        else:
            side_of = _label_any_ocs(wired, block_of, circuits, n, any_seen)
            any_seen += 1
            for w in wired:
                (north if side_of[w.port] is Side.NORTH else south)[block_of[w.port]].append(w.port)
        ports = OcsPorts(ocs.name, oi, ocs.domain, north, south)
        if ocs.sides is OcsSides.ANY:
            ports.flexible = [set(north[b]) | set(south[b]) for b in range(n)]
        for c in circuits:
            sa, sb = side_of[c.a], side_of[c.b]
            if sa is Side.NORTH and sb is Side.SOUTH:
                n_port, s_port = c.a, c.b
            elif sa is Side.SOUTH and sb is Side.NORTH:
                n_port, s_port = c.b, c.a
            else:
                unkeepable.append(c)
                continue
            ports.current.setdefault((block_of[n_port], block_of[s_port]), []).append((n_port, s_port))
            if ports.flexible:
                ports.flexible[block_of[n_port]].discard(n_port)
                ports.flexible[block_of[s_port]].discard(s_port)
        model.append(ports)
    return PortModel(model, unkeepable)


def _label_any_ocs(
    wired: list[WiredPort], block_of: dict[int, int], circuits: list[Circuit], n: int, any_index: int
) -> dict[int, Side]:
    """Virtual sides for an ``any`` OCS.

    Every current circuit gets one north and one south end, oriented along Euler trails
    so that each block has at most ``ceil(used/2)`` north and south ends; the free ports
    then fill each block up to half north, half south (for an odd share the extra port
    alternates between north and south from one block and ``any`` OCS to the next).
    """
    ports_of: list[list[int]] = [[] for _ in range(n)]
    for w in wired:
        ports_of[block_of[w.port]].append(w.port)
    side: dict[int, Side] = {}
    for north_port, south_port in _euler_orientation(
        [(block_of[c.a], c.a, block_of[c.b], c.b) for c in sorted(circuits)], n
    ):
        side[north_port], side[south_port] = Side.NORTH, Side.SOUTH
    for b, plist in enumerate(ports_of):
        k = len(plist)
        want_north = k // 2 + (k % 2 if (any_index + b) % 2 == 0 else 0)
        used_north = sum(1 for p in plist if side.get(p) is Side.NORTH)
        used_south = sum(1 for p in plist if side.get(p) is Side.SOUTH)
        north_left = min(max(want_north, used_north), k - used_south) - used_north
        for p in plist:
            if p in side:
                continue
            if north_left > 0:
                side[p] = Side.NORTH
                north_left -= 1
            else:
                side[p] = Side.SOUTH
    return side


def _euler_orientation(edges: list[tuple[int, int, int, int]], n: int) -> list[tuple[int, int]]:
    """Orient edges ``(block, port, block, port)`` along Euler trails: every block gets
    out- and in-degree at most ``ceil(degree / 2)``. Returns (north port, south port)."""
    dummy = n
    adjacency: dict[int, list[int]] = {}
    ends: list[tuple[int, int, int, int]] = list(edges)
    degree = [0] * (n + 1)
    for i, (a, _, b, _) in enumerate(ends):
        adjacency.setdefault(a, []).append(i)
        adjacency.setdefault(b, []).append(i)
        degree[a] += 1
        degree[b] += 1
    for v in range(n):
        if degree[v] % 2:
            ends.append((v, -1, dummy, -1))
            adjacency.setdefault(v, []).append(len(ends) - 1)
            adjacency.setdefault(dummy, []).append(len(ends) - 1)
    used = [False] * len(ends)
    oriented: list[tuple[int, int]] = []
    pointer: dict[int, int] = dict.fromkeys(adjacency, 0)
    for start in sorted(adjacency):
        while pointer[start] < len(adjacency[start]):
            v = start
            while True:
                lst = adjacency[v]
                while pointer[v] < len(lst) and used[lst[pointer[v]]]:
                    pointer[v] += 1
                if pointer[v] == len(lst):
                    break
                i = lst[pointer[v]]
                used[i] = True
                a, pa, b, pb = ends[i]
                _tail, tail_port, head, head_port = (a, pa, b, pb) if a == v else (b, pb, a, pa)
                if tail_port >= 0 and head_port >= 0:
                    oriented.append((tail_port, head_port))
                v = head
    return oriented


def require_same_blocks(fabric: Fabric, blocks: Sequence[str], source: str = "<topology>") -> list[int]:
    """Map a topology's block order onto the fabric's; raise ConfigError if the sets differ."""
    names = fabric.block_names
    unknown = [b for b in blocks if not fabric.has_block(b)]
    if unknown:
        raise ConfigError(source, "blocks", f"unknown block(s) {', '.join(map(repr, unknown))} "
                          f"(fabric {fabric.name!r} has {len(names)} blocks)")
    missing = [b for b in names if b not in set(blocks)]
    if missing or len(set(blocks)) != len(blocks):
        detail = f"missing {', '.join(map(repr, missing))}" if missing else "duplicate block names"
        raise ConfigError(source, "blocks", f"the topology is over different blocks than fabric "
                          f"{fabric.name!r}: {detail}")
    return [fabric.block_index(b) for b in blocks]
