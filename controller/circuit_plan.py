"""Turn a logical topology into per-OCS circuits, keeping as many of today's as possible.

The daemon uses ``optimizer.mapping.map_topology`` when that module exists; until then (and
as the reference for small fabrics) :func:`map_circuits` solves the split as a small integer
program: per OCS and per ordered block pair (north block, south block) a circuit count,
within every block's north and south ports on that OCS, summing to the topology's count per
pair, maximising the circuits kept. Concrete ports are then chosen: kept circuits stay, new
ones take free ports of the right side. Pure: no I/O, no clock.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from optimizer.errors import InfeasibleError
from optimizer.fabric import Fabric, OcsSides, Side
from optimizer.topology import Circuit, Topology

log = logging.getLogger(__name__)


def plan_circuits(fabric: Fabric, target: Topology, current: Iterable[Circuit]) -> tuple[Circuit, ...]:
    """The circuits realising ``target``: the mapping module's if present, else :func:`map_circuits`."""
    current = tuple(current)
    try:
        from optimizer.mapping import map_topology  # type: ignore[import-not-found]
    except ImportError:
        return map_circuits(fabric, target, current)
    result = map_topology(fabric, target, current)
    circuits = getattr(result, "circuits", result)
    return tuple(sorted(circuits))


def map_circuits(fabric: Fabric, target: Topology, current: Iterable[Circuit]) -> tuple[Circuit, ...]:
    """Split ``target`` over the OCSes (see the module docstring). Raises InfeasibleError."""
    names = fabric.block_names
    n = len(names)
    idx = {b: i for i, b in enumerate(names)}
    counts = np.asarray(target.counts, dtype=np.int64)
    if tuple(target.blocks) != names:
        order = [tuple(target.blocks).index(b) for b in names]
        counts = counts[np.ix_(order, order)]
    ocs_list = fabric.ocs
    # Ports per (ocs, block, side): side 0 = north (or any), 1 = south.
    ports: dict[tuple[str, int, int], list[int]] = {}
    for w in fabric.wiring:
        side = 1 if w.side is Side.SOUTH else 0
        ports.setdefault((w.ocs, idx[w.block], side), []).append(w.port)
    current = sorted(set(current))
    ordered = [(x, y) for x in range(n) for y in range(n) if x != y]
    pos = {p: k for k, p in enumerate(ordered)}
    n_pairs = len(ordered)
    n_ocs = len(ocs_list)
    # Current circuits per (ocs, north block, south block).
    have = np.zeros((n_ocs, n_pairs))
    for c in current:
        o = fabric.ocs_index(c.ocs)
        x, y = _oriented(fabric, c, idx)
        have[o, pos[(x, y)]] += 1
    m_count = n_ocs * n_pairs  # variables M (circuits) then K (kept)
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lo: list[float] = []
    hi: list[float] = []
    r = 0

    def add_row(entries: list[tuple[int, float]], low: float, high: float) -> None:
        nonlocal r
        for col, val in entries:
            rows.append(r)
            cols.append(col)
            vals.append(val)
        lo.append(low)
        hi.append(high)
        r += 1

    for o, ocs in enumerate(ocs_list):
        split = ocs.sides is OcsSides.SPLIT
        for b in range(n):
            if split:
                north = [(o * n_pairs + pos[(b, y)], 1.0) for y in range(n) if y != b]
                south = [(o * n_pairs + pos[(x, b)], 1.0) for x in range(n) if x != b]
                add_row(north, 0, len(ports.get((ocs.name, b, 0), ())))
                add_row(south, 0, len(ports.get((ocs.name, b, 1), ())))
            else:
                both = [(o * n_pairs + pos[(b, y)], 1.0) for y in range(n) if y != b]
                both += [(o * n_pairs + pos[(x, b)], 1.0) for x in range(n) if x != b]
                add_row(both, 0, len(ports.get((ocs.name, b, 0), ())))
    for a in range(n):
        for b in range(a + 1, n):
            entries = [(o * n_pairs + pos[(a, b)], 1.0) for o in range(n_ocs)]
            entries += [(o * n_pairs + pos[(b, a)], 1.0) for o in range(n_ocs)]
            want = float(counts[a, b])
            add_row(entries, want, want)
    for k in range(m_count):  # K <= M
        add_row([(m_count + k, 1.0), (k, -1.0)], -np.inf, 0)
    matrix = coo_matrix((vals, (rows, cols)), shape=(r, 2 * m_count)).tocsr()
    cost = np.concatenate([np.full(m_count, 1e-6), -np.ones(m_count)])
    upper = np.concatenate([np.full(m_count, np.inf), have.ravel()])
    result = milp(
        cost,
        constraints=LinearConstraint(matrix, np.array(lo), np.array(hi)),
        integrality=np.ones(2 * m_count),
        bounds=Bounds(np.zeros(2 * m_count), upper),
    )
    if result.x is None:
        raise InfeasibleError(f"the topology cannot be split over the OCSes: {result.message}")
    m = np.rint(result.x[:m_count]).astype(np.int64).reshape(n_ocs, n_pairs)
    return tuple(sorted(_assign_ports(fabric, m, ordered, current, ports, idx)))


def _oriented(fabric: Fabric, c: Circuit, idx: dict[str, int]) -> tuple[int, int]:
    pa, pb = c.ends(fabric)
    if pa.side is Side.SOUTH or (pa.side is Side.ANY and idx[pa.block] > idx[pb.block]):
        pa, pb = pb, pa
    return idx[pa.block], idx[pb.block]


def _assign_ports(
    fabric: Fabric,
    m: np.ndarray,
    ordered: list[tuple[int, int]],
    current: list[Circuit],
    ports: dict[tuple[str, int, int], list[int]],
    idx: dict[str, int],
) -> list[Circuit]:
    circuits: list[Circuit] = []
    for o, ocs in enumerate(fabric.ocs):
        split = ocs.sides is OcsSides.SPLIT
        left = {ordered[k]: int(m[o, k]) for k in range(len(ordered)) if m[o, k]}
        used: set[int] = set()
        for c in current:
            if c.ocs != ocs.name:
                continue
            key = _oriented(fabric, c, idx)
            if left.get(key, 0) > 0:
                left[key] -= 1
                circuits.append(c)
                used.update((c.a, c.b))
        for (x, y), count in sorted(left.items()):
            for _ in range(count):
                a = _free_port(ports, used, ocs.name, x, 0)
                b = _free_port(ports, used, ocs.name, y, 1 if split else 0)
                if a is None or b is None:  # pragma: no cover - the program keeps port budgets
                    raise InfeasibleError(
                        f"no free port for {fabric.block_names[x]}-{fabric.block_names[y]} on {ocs.name}"
                    )
                used.update((a, b))
                circuits.append(Circuit(ocs.name, a, b))
    return circuits


def _free_port(
    ports: dict[tuple[str, int, int], list[int]], used: set[int], ocs: str, block: int, side: int
) -> int | None:
    for p in ports.get((ocs, block, side), ()):
        if p not in used:
            return p
    return None
