"""Single safe swaps: the step a hot fabric can still take when no planned target can be staged.

The planner now searches sequences of such swaps (:mod:`optimizer.toe.sequence`, which lists
them with :func:`distinct_swaps`); :func:`swap_steps` is the greedy single-swap climb it grew from.

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
        found = safe_swaps(fabric, state, matrices, mlu_of, limit, mlu_now, budget)
        if not found:
            break
        (removed, added), drained, after = _batch(fabric, state, found, mlu_of, limit, budget)
        state = (state - set(removed)) | set(added)
        domain = fabric.ocs_named(removed[0].ocs).domain
        stages.append(Stage(domain, tuple(sorted(removed)), tuple(sorted(added)), mlu_now, drained, after))
        log.info("swap stage %d: MLU %.4f -> drained %.4f -> %.4f", len(stages), mlu_now, drained, after)
        mlu_now = after
    if not stages:
        return None
    return StagingPlan.reaching(fabric, stages, state, start, mlu_now, threshold, margin)


def _batch(
    fabric: Fabric,
    state: set[Circuit],
    found: list[tuple[list[Swap], float, float]],
    mlu_of: Callable[[set[Circuit]], float],
    limit: float,
    budget: TimeBudget | None,
) -> tuple[tuple[tuple[Circuit, ...], tuple[Circuit, ...]], float, float]:
    """One stage from the best swap and, where they stay safe together and lower the MLU more,
    2, 4, 8... swaps of its failure domain (other instances of the safe swaps, best first, no
    circuit in two): a Jupiter-sized fabric moves a few circuits per swap, so one at a time
    would take hundreds of stages."""
    (first, *_), drained, after = found[0]
    domain = fabric.ocs_named(first[0][0].ocs).domain
    pool: list[Swap] = []
    used: set[Circuit] = set()
    instances = [list(i) for i, _, _ in found]
    while any(instances):
        for queue in instances:
            while queue:
                removed, added = queue.pop(0)
                if fabric.ocs_named(removed[0].ocs).domain == domain and not used & set(removed):
                    pool.append((removed, added))
                    used.update(removed)
                    break
    chosen: tuple[tuple[Circuit, ...], tuple[Circuit, ...]] = (tuple(first[0]), tuple(first[1]))
    size = 2
    while size <= len(pool) and (budget is None or not budget.expired()):
        out = tuple(c for r, _ in pool[:size] for c in r)
        into = tuple(c for _, a in pool[:size] for c in a)
        more_drained = mlu_of(state - set(out))
        if more_drained > limit + _TOL:
            break
        more_after = mlu_of((state - set(out)) | set(into))
        if more_after >= after - _TOL:
            break
        chosen, drained, after = (out, into), more_drained, more_after
        size *= 2
    return chosen, drained, after


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
    found = safe_swaps(fabric, state, matrices, mlu_of, limit, mlu_now, budget)
    if not found:
        return None
    swaps, drained, after = found[0]
    return swaps[0], drained, after


def safe_swaps(
    fabric: Fabric,
    state: set[Circuit],
    matrices: Sequence[TrafficMatrix],
    mlu_of: Callable[[set[Circuit]], float],
    limit: float,
    mlu_now: float,
    budget: TimeBudget | None = None,
) -> list[tuple[list[Swap], float, float]]:
    """Every safe swap that lowers the MLU, as (its instances on the OCSes, drained MLU, MLU
    after), the lowest MLU after first."""
    heat = _heat(fabric, state, matrices)
    swaps = distinct_swaps(fabric, state)
    if len(swaps) > _ALL_SWAPS:
        hot = set(sorted(heat, key=lambda p: -heat[p])[:_HOT_PAIRS])
        swaps = {k: s for k, s in swaps.items() if any(p in hot for p in k[1])}
    ranked = sorted(swaps.items(), key=lambda kv: (-_gain(heat, kv[0]), kv[0]))
    if len(swaps) > _ALL_SWAPS:
        ranked = ranked[:_MAX_CHECKS]
    drained_mlu: dict[tuple[tuple[str, str], ...], float] = {}
    safe: list[tuple[list[Swap], float, float]] = []
    for (gone, _), instances in ranked:
        if budget is not None and budget.expired():
            break  # the plan's time limit: what was found so far
        removed, added = instances[0]
        drained = drained_mlu.get(gone)
        if drained is None:
            drained = drained_mlu[gone] = mlu_of(state - set(removed))
        if drained > limit + _TOL:
            continue
        after = mlu_of((state - set(removed)) | set(added))
        if after < mlu_now * (1 - _GAIN):
            safe.append((instances, drained, after))
    safe.sort(key=lambda s: s[2])
    return safe


def distinct_swaps(
    fabric: Fabric, state: set[Circuit]
) -> dict[tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]], list[Swap]]:
    """Every swap, grouped by (pairs losing a circuit, pairs gaining one), in a fixed order: the
    first of each group stands for it (the MLU depends on the pair counts only)."""
    by_ocs: dict[str, list[tuple[int, int, str, str, Circuit]]] = {}
    for c in sorted(state):
        pa, pb = c.ends(fabric)
        if pb.side is Side.NORTH:
            pa, pb = pb, pa
        by_ocs.setdefault(c.ocs, []).append((pa.port, pb.port, pa.block, pb.block, c))
    out: dict[tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]], list[Swap]] = {}
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
                swap = ((c1, c2), (Circuit(ocs, n1, s2), Circuit(ocs, n2, s1)))
                out.setdefault((gone, new), []).append(swap)
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
