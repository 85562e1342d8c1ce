"""Which circuits a stage drains first, and which swaps are tried when no prefix of them passes.

:func:`lightest_first` orders the removals so that each leaves its block pair least loaded;
:func:`swap_units` lists the swaps (the removals that free one added circuit's ports, with every
addition they make possible) and :func:`_best_swap` checks the hottest-first of them by TE.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from optimizer.budget import TimeBudget
from optimizer.fabric import Fabric
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

_TOL = 1e-9
#: Swaps checked by TE each time whole prefixes are blocked (ranked hot-first), and how many
#: safe ones are enough to pick the best of.
SWAP_TRIES = 24
_SAFE_SWAPS_ENOUGH = 4


def _best_swap(
    fabric: Fabric,
    state: set[Circuit],
    pending_remove: set[Circuit],
    pending_add: set[Circuit],
    matrices: Sequence[TrafficMatrix],
    limit: float,
    mlu_now: float,
    mlu_of: Callable[[set[Circuit]], float],
    budget: TimeBudget | None = None,
    *,
    drain_of: Callable[[set[Circuit]], float] | None = None,
) -> tuple[tuple[Circuit, ...], tuple[Circuit, ...], float, float] | None:
    """The safe swap (removals freeing one added circuit's ports, plus every added circuit
    they make possible) that leaves the lowest MLU: (removed, added, drained MLU, MLU after).
    The drain is checked by ``drain_of`` (the stage's matrices; default ``mlu_of``), the MLU
    after by ``mlu_of``.

    Candidates are ranked by how hot the pairs gaining circuits are against the pairs losing
    them (direct demand over direct capacity, worst over the matrices); the first
    :data:`SWAP_TRIES` are checked by TE, stopping once a few safe ones are found.
    """
    units = swap_units(fabric, state, pending_remove, pending_add)
    if not units:
        return None
    drain_of = drain_of or mlu_of
    heat = _pair_heat(fabric, state, matrices)
    ranked = sorted(units, key=lambda u: (-_unit_gain(fabric, heat, u), sorted(u[0])))
    best: tuple[tuple[Circuit, ...], tuple[Circuit, ...], float, float] | None = None
    safe = 0
    for removed, added in ranked[:SWAP_TRIES]:
        if budget is not None and budget.expired():
            break
        drained = state - set(removed)
        mlu_drained = drain_of(drained)
        if mlu_drained > limit + _TOL:
            continue
        after = mlu_of(drained | set(added))
        safe += 1
        if best is None or (after, mlu_drained) < (best[3], best[2]):
            best = (removed, added, mlu_drained, after)
        if safe >= _SAFE_SWAPS_ENOUGH and best[3] < mlu_now - _TOL:
            break
    return best


def swap_units(
    fabric: Fabric, state: set[Circuit], pending_remove: set[Circuit], pending_add: set[Circuit]
) -> list[tuple[tuple[Circuit, ...], tuple[Circuit, ...]]]:
    """(removals, additions) per added circuit: the removals that free its ports, and every
    pending addition whose ports are then free. Additions blocked by a circuit that stays
    are skipped; units with the same removals are listed once."""
    holder: dict[tuple[str, int], Circuit] = {}
    for c in state:
        holder[(c.ocs, c.a)] = c
        holder[(c.ocs, c.b)] = c
    by_ocs: dict[str, list[Circuit]] = {}
    for c in pending_add:
        by_ocs.setdefault(c.ocs, []).append(c)
    units: dict[frozenset[Circuit], tuple[tuple[Circuit, ...], tuple[Circuit, ...]]] = {}
    for add in sorted(pending_add):
        blockers = {holder[p] for p in ((add.ocs, add.a), (add.ocs, add.b)) if p in holder}
        if not blockers <= pending_remove:
            continue
        key = frozenset(blockers)
        if key in units:
            continue
        freed = {(c.ocs, p) for c in blockers for p in (c.a, c.b)}
        enabled = tuple(
            sorted(
                c
                for c in by_ocs[add.ocs]
                if all(((c.ocs, p) in freed or (c.ocs, p) not in holder) for p in (c.a, c.b))
            )
        )
        units[key] = (tuple(sorted(blockers)), _port_disjoint(enabled))
    return list(units.values())


def _port_disjoint(circuits: tuple[Circuit, ...]) -> tuple[Circuit, ...]:
    used: set[tuple[str, int]] = set()
    out = []
    for c in circuits:
        if _ports_free(c, used):
            out.append(c)
            used.update(((c.ocs, c.a), (c.ocs, c.b)))
    return tuple(out)


def _pair_heat(
    fabric: Fabric, state: set[Circuit], matrices: Sequence[TrafficMatrix]
) -> Callable[[tuple[str, str], int], float]:
    """Direct demand over direct capacity of a pair with ``delta`` more circuits than today."""
    topo = Topology.from_circuits(fabric, state)
    demand = np.max([np.maximum(tm.gbps, tm.gbps.T) for tm in matrices], axis=0)

    def heat(pair: tuple[str, str], delta: int) -> float:
        i, j = fabric.block_index(pair[0]), fabric.block_index(pair[1])
        count = int(topo.counts[i, j]) + delta
        cap = max(count, 0) * fabric.link_speed_gbps(*pair)
        return float(demand[i, j]) / max(cap, 1e-9) if demand[i, j] > 0 else 0.0

    return heat


def _unit_gain(
    fabric: Fabric,
    heat: Callable[[tuple[str, str], int], float],
    unit: tuple[tuple[Circuit, ...], tuple[Circuit, ...]],
) -> float:
    """Heat taken off the pairs gaining a circuit less heat put on those losing one."""
    removed, added = unit
    gain = 0.0
    for c in added:
        pair = _pair(fabric, c)
        gain += min(heat(pair, 0), 1e6) - heat(pair, 1)
    for c in removed:
        pair = _pair(fabric, c)
        gain -= min(heat(pair, -1), 1e6) - heat(pair, 0)
    return gain


def lightest_first(
    fabric: Fabric, state: set[Circuit], pending: set[Circuit], matrices: Sequence[TrafficMatrix]
) -> list[Circuit]:
    """Removals ordered so that each next one leaves its block pair least loaded.

    A pair's load is estimated from its own demand over its remaining direct capacity
    (worst over the matrices): removing from idle pairs first, and spreading removals over
    pairs rather than emptying one, is what keeps drained MLU low.
    """
    names = fabric.block_names
    index = {b: i for i, b in enumerate(names)}
    topo = Topology.from_circuits(fabric, state)
    demand = np.max([np.maximum(tm.gbps, tm.gbps.T) for tm in matrices], axis=0)
    by_pair: dict[tuple[int, int], list[Circuit]] = {}
    for c in sorted(pending):
        a, b = c.blocks(fabric)
        i, j = sorted((index[a], index[b]))
        by_pair.setdefault((i, j), []).append(c)
    left = {p: int(topo.counts[p]) for p in by_pair}

    def load_after_one_more(p: tuple[int, int]) -> float:
        remaining = left[p] - 1
        speed = fabric.link_speed_gbps(names[p[0]], names[p[1]])
        return math.inf if remaining <= 0 and demand[p] > 0 else demand[p] / max(remaining * speed, 1e-9)

    heap = [(load_after_one_more(p), p) for p in by_pair]
    heapq.heapify(heap)
    order: list[Circuit] = []
    while heap:
        _, p = heapq.heappop(heap)
        order.append(by_pair[p].pop())
        left[p] -= 1
        if by_pair[p]:
            heapq.heappush(heap, (load_after_one_more(p), p))
    return order


def _pair(fabric: Fabric, c: Circuit) -> tuple[str, str]:
    a, b = c.blocks(fabric)
    return (a, b) if fabric.block_index(a) < fabric.block_index(b) else (b, a)


def _used_ports(circuits: Iterable[Circuit]) -> set[tuple[str, int]]:
    used: set[tuple[str, int]] = set()
    for c in circuits:
        used.add((c.ocs, c.a))
        used.add((c.ocs, c.b))
    return used


def _ports_free(c: Circuit, used: set[tuple[str, int]]) -> bool:
    return (c.ocs, c.a) not in used and (c.ocs, c.b) not in used
