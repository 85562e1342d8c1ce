"""Single safe swaps: the step a hot fabric can still take when no planned target can be staged.

A swap re-pairs two circuits of one OCS: ``a - x`` and ``b - y`` become ``a - b`` and
``x - y`` (north ports stay north, south stay south). Its stage drains the two old circuits
and then adds the two new ones, so it is safe when the MLU with the two drained stays within
``max(threshold / margin, MLU now)``; it is worth taking when the MLU after it is lower.

:func:`swap_steps` climbs: it takes the safe swap that lowers the MLU most, then looks again
from there, while the swaps keep lowering it and the budget lasts. Swaps are compared at
the level of block pairs (the MLU depends on circuit counts only), ranked so that circuits
go from cold pairs to hot ones, and checked by TE in that order. On small fabrics every
distinct swap is checked, so a safe improving swap is found whenever one exists; on large
ones only swaps that give a circuit to one of the hottest pairs are.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from optimizer import progress
from optimizer.budget import TimeBudget
from optimizer.fabric import Fabric, Side
from optimizer.staging import MluFunction, Stage, StagingPlan
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

#: Up to this many distinct (pair-level) swaps, all are checked; above it, only swaps giving
#: a circuit to one of the ``_HOT_PAIRS`` hottest pairs, and at most ``_MAX_CHECKS`` of them.
_ALL_SWAPS = 4000
_HOT_PAIRS = 24
_MAX_CHECKS = 400
_TOL = 1e-9
_GAIN = 1e-6  # a relative MLU drop below this is no improvement

Swap = tuple[tuple[Circuit, Circuit], tuple[Circuit, Circuit]]  # (removed, added)


def swap_steps(
    fabric: Fabric,
    current: Iterable[Circuit],
    matrices: Sequence[TrafficMatrix],
    evaluate: MluFunction,
    threshold: float,
    margin: float = 1.0,
    budget: TimeBudget | None = None,
    max_steps: int = 8,
) -> StagingPlan | None:
    """Up to ``max_steps`` safe swaps, each lowering the MLU; None when not even one does."""
    state = set(current)

    def mlu_of(circuits: set[Circuit]) -> float:
        topo = Topology.from_circuits(fabric, circuits)
        return max((evaluate(fabric, topo, tm) for tm in matrices if tm.total() > 0), default=0.0)

    mlu_now = start = mlu_of(state)
    stages: list[Stage] = []
    for _ in range(max_steps):
        if budget is not None and budget.expired():
            break
        limit = max(threshold / margin, mlu_now)
        progress.report("safe swaps", f"looking for swap {len(stages) + 1}, MLU {mlu_now:.4f}")
        found = best_swap(fabric, state, matrices, mlu_of, limit, mlu_now, budget)
        if found is None:
            break
        (removed, added), drained, after = found
        state = (state - set(removed)) | set(added)
        domain = fabric.ocs_named(removed[0].ocs).domain
        stages.append(Stage(domain, tuple(sorted(removed)), tuple(sorted(added)), mlu_now, drained, after))
        log.info("swap stage %d: MLU %.4f -> drained %.4f -> %.4f", len(stages), mlu_now, drained, after)
        mlu_now = after
    if not stages:
        return None
    return StagingPlan(
        stages=tuple(stages),
        threshold=threshold,
        start_mlu=start,
        final_topology=Topology.from_circuits(fabric, state),
        final_circuits=frozenset(state),
        final_mlu=mlu_now,
        margin=margin,
    )


def best_swap(
    fabric: Fabric,
    state: set[Circuit],
    matrices: Sequence[TrafficMatrix],
    mlu_of: Callable[[set[Circuit]], float],
    limit: float,
    mlu_now: float,
    budget: TimeBudget | None = None,
) -> tuple[Swap, float, float] | None:
    """The safe swap that lowers the MLU most: (swap, drained MLU, MLU after), or None."""
    heat = _heat(fabric, state, matrices)
    swaps = distinct_swaps(fabric, state)
    if len(swaps) > _ALL_SWAPS:
        hot = set(sorted(heat, key=lambda p: -heat[p])[:_HOT_PAIRS])
        swaps = {k: s for k, s in swaps.items() if any(p in hot for p in k[1])}
    ranked = sorted(swaps.items(), key=lambda kv: (-_gain(heat, kv[0]), kv[0]))
    if len(swaps) > _ALL_SWAPS:
        ranked = ranked[:_MAX_CHECKS]
    drained_mlu: dict[tuple[tuple[str, str], ...], float] = {}
    best: tuple[Swap, float, float] | None = None
    for (gone, _), swap in ranked:
        if budget is not None and budget.expired() and best is not None:
            break
        removed, added = swap
        drained = drained_mlu.get(gone)
        if drained is None:
            drained = drained_mlu[gone] = mlu_of(state - set(removed))
        if drained > limit + _TOL:
            continue
        after = mlu_of((state - set(removed)) | set(added))
        if after < mlu_now * (1 - _GAIN) and (best is None or after < best[2] - _TOL):
            best = (swap, drained, after)
    return best


def distinct_swaps(
    fabric: Fabric, state: set[Circuit]
) -> dict[tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]], Swap]:
    """One representative swap per (pairs losing a circuit, pairs gaining one), in a fixed order."""
    by_ocs: dict[str, list[tuple[int, int, str, str, Circuit]]] = {}
    for c in sorted(state):
        pa, pb = c.ends(fabric)
        if pb.side is Side.NORTH:
            pa, pb = pb, pa
        by_ocs.setdefault(c.ocs, []).append((pa.port, pb.port, pa.block, pb.block, c))
    out: dict[tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]], Swap] = {}
    for ocs in sorted(by_ocs):
        items = by_ocs[ocs]
        for i in range(len(items)):
            n1, s1, a, x, c1 = items[i]
            for j in range(i + 1, len(items)):
                n2, s2, b, y, c2 = items[j]
                if a == y or b == x:
                    continue
                gone = tuple(sorted((_pair(a, x), _pair(b, y))))
                new = tuple(sorted((_pair(a, y), _pair(b, x))))
                if gone == new:
                    continue
                key = (gone, new)
                if key not in out:
                    out[key] = ((c1, c2), (Circuit(ocs, n1, s2), Circuit(ocs, n2, s1)))
    return out


def _heat(
    fabric: Fabric, state: set[Circuit], matrices: Sequence[TrafficMatrix]
) -> dict[tuple[str, str], float]:
    """Per pair: direct demand (worst over the matrices, both ways) over direct capacity."""
    topo = Topology.from_circuits(fabric, state)
    demand = np.max([np.maximum(tm.gbps, tm.gbps.T) for tm in matrices], axis=0)
    names = fabric.block_names
    out: dict[tuple[str, str], float] = {}
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            cap = topo.counts[i, j] * fabric.link_speed_gbps(names[i], names[j])
            hot = float(demand[i, j]) / cap if cap else (math.inf if demand[i, j] else 0.0)
            out[_pair(names[i], names[j])] = hot
    return out


def _gain(heat: dict[tuple[str, str], float], key: tuple[tuple[tuple[str, str], ...], ...]) -> float:
    gone, new = key
    value = sum(min(heat.get(p, 0.0), 1e6) for p in new) - sum(min(heat.get(p, 0.0), 1e6) for p in gone)
    return value


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)
