"""A sequence of safe stages towards a better topology, found one stage at a time (issue 30).

When the planned target cannot be staged whole on a hot fabric, the way there is searched as a
sequence, re-solving TE after every step. Each stage is one of:

- **make before break**: circuits added on free uplink ports (spare ports, or ports an earlier
  stage drained), hottest pairs first; nothing is drained, so the stage is always safe;
- **a swap** on one OCS: ``a - x, b - y`` become ``a - b, x - y``; its stage drains the two old
  circuits, and is safe when the MLU with them drained stays within ``max(threshold / margin,
  MLU now)``;
- on fabrics of up to :data:`~optimizer.toe.multi_stage.MAX_CIRCUITS` circuits, in a second
  search (the better of the two kept), a stage of several circuits: a swap, a rotation of three
  circuits of one OCS, or two of these within one failure domain, drained and checked whole
  (:mod:`optimizer.toe.multi_stage`).

Swaps are ranked by how much traffic they take off the pairs whose direct demand exceeds
their direct capacity (the *transit need*: what must cross a transit block), so circuits go
from cold pairs to hot ones; a swap whose drain the hose floor already proves unsafe
(:mod:`optimizer.toe.hose`) is not checked by TE. The swap that lowers the MLU most is
taken; where none lowers it alone, a safe swap that keeps the MLU and lowers the transit need
is taken instead (a look-ahead across a plateau: on a ring every hot pair must gain a circuit
before the MLU falls), at most ``patience`` such swaps in a row. The stages are cut after the
lowest MLU reached. Pure: no I/O, the only clock the budget's.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

import numpy as np

from optimizer import progress
from optimizer.budget import TimeBudget
from optimizer.fabric import Fabric, OcsSides, Side, WiredPort
from optimizer.staging import (
    MluFunction,
    Stage,
    StageChecks,
    StageRule,
    StageTraffic,
    StagingPlan,
    cut_at_lowest,
)
from optimizer.toe.hose import block_demand, speed_matrix, spine_capacity
from optimizer.toe.multi_stage import MAX_CIRCUITS, MultiStageSearch
from optimizer.toe.swap_rank import Swap, SwapRanker
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

_TOL = 1e-9
_GAIN = 1e-6  # a relative MLU drop below this is no improvement
#: Swaps checked by TE per stage at most (the budget bounds it too: on a hot fabric the one
#: safe swap may rank far down), and how many more are checked once an acceptable one is found.
MAX_CHECKS = 4000
ENOUGH_CHECKS = 12
#: Swaps in a row that only keep the MLU (and lower the transit need) before the search stops.
PATIENCE = 8
MAX_STAGES = 64
#: The share of the time left that the single-swap search gets when both searches run.
SWAPS_SHARE = 0.4

#: A stage found: (circuits removed, circuits added), MLU drained, MLU after, pair counts after.
Step = tuple[tuple[tuple[Circuit, ...], tuple[Circuit, ...]], float, float, np.ndarray]


def sequence_steps(
    fabric: Fabric,
    current: Iterable[Circuit],
    matrices: Sequence[TrafficMatrix],
    evaluate: MluFunction,
    threshold: float,
    margin: float = 1.0,
    budget: TimeBudget | None = None,
    *,
    max_stages: int = MAX_STAGES,
    patience: int = PATIENCE,
    max_checks: int = MAX_CHECKS,
    multi: bool = True,
    traffic: StageTraffic | None = None,
    offset: int = 0,
) -> StagingPlan | None:
    """Safe stages from ``current`` that lower the MLU, cut after the lowest MLU reached; None
    when no sequence found lowers it. With ``multi`` (on fabrics of up to
    :data:`~optimizer.toe.multi_stage.MAX_CIRCUITS` circuits) two searches run, the better
    kept: one of single swaps (first, with :data:`SWAPS_SHARE` of the time left) and one whose
    stages may re-pair several circuits (:mod:`optimizer.toe.multi_stage`): neither is always
    better, as a large first step lowers the limit of every stage after it. ``traffic``: what
    each stage's drain is checked against (:mod:`optimizer.staging.traffic`; ``offset`` stages
    of the plan come before these)."""
    current = tuple(current)
    multi = multi and len(current) <= MAX_CIRCUITS

    def search(part: TimeBudget | None, several: bool) -> StagingPlan | None:
        checks = StageChecks(fabric, evaluate, matrices, threshold / margin, traffic, offset)
        return _sequence(fabric, current, checks, threshold, margin, part, max_stages=max_stages,
                         patience=patience, max_checks=max_checks, multi=several)

    swaps_budget = budget.portion(SWAPS_SHARE) if budget is not None and multi else budget
    found = [search(swaps_budget, False)]
    if multi and (budget is None or not budget.expired()):
        found.append(search(budget, True))
    return min((p for p in found if p is not None), key=lambda p: (p.final_mlu, len(p.stages)), default=None)


def _sequence(
    fabric: Fabric,
    current: Iterable[Circuit],
    checks: StageChecks,
    threshold: float,
    margin: float,
    budget: TimeBudget | None,
    *,
    max_stages: int,
    patience: int,
    max_checks: int,
    multi: bool,
) -> StagingPlan | None:
    """One search: single swaps, or (``multi``) stages of several circuits too."""
    matrices = checks.plan
    if not matrices or (budget is not None and budget.expired()):  # not even today's MLU is solved
        return None
    names = fabric.block_names
    index = {b: i for i, b in enumerate(names)}
    speeds = speed_matrix(fabric)
    pair_demand = np.max([np.maximum(tm.gbps, tm.gbps.T) for tm in matrices], axis=0)
    demands = [block_demand(group) if group else np.zeros(len(names)) for group in checks.groups]
    spine = spine_capacity(fabric)

    def counts_of(circuits: Iterable[Circuit]) -> np.ndarray:
        return np.asarray(Topology.from_circuits(fabric, circuits).counts)

    def mlu_of(counts: np.ndarray) -> float:  # infinite where a drain strands demand: never safe
        return checks.plan_mlu(Topology(names, counts))

    state = set(current)
    counts = counts_of(state)
    mlu_now = start = mlu_of(counts)
    if math.isinf(start):  # today's circuits strand demand: no stage rule holds from there
        return None
    stages: list[Stage] = []
    states: list[frozenset[Circuit]] = []
    flat = 0
    while len(stages) < max_stages and flat <= patience:
        if budget is not None and budget.expired():
            break
        rule = checks.rule(len(stages), Topology(names, counts), mlu_now)
        limit = rule.limit

        def drain_of(counts: np.ndarray, rule: StageRule = rule) -> float:
            return rule.drained(Topology(names, counts))

        progress.report("safe sequence", f"stage {len(stages) + 1}, MLU {mlu_now:.4f}")
        adds = _free_adds(fabric, state, pair_demand, counts, speeds, index)
        if adds:
            after_state = state | set(adds)
            after_counts = counts_of(after_state)
            after = mlu_of(after_counts)
            removed: tuple[Circuit, ...] = ()
            drained = mlu_now
        else:
            # the hose floor of each group the drain is checked on, in the rule's terms
            demand = np.max([demands[g] * rule.scale(p) for p, g in enumerate(rule.groups)], axis=0)
            ranker = SwapRanker(fabric, counts, pair_demand, speeds, demand, spine)
            step: Step | None
            if multi:  # swaps and larger stages
                move = MultiStageSearch(fabric, state, ranker, mlu_of, limit, mlu_now, budget,
                                        drain_of=drain_of).best()
                step = None if move is None else ((move.removed, move.added), move.drained, move.after,
                                                  move.counts)
            else:
                step = _best_swap(ranker, state, limit, mlu_now, (mlu_of, drain_of), budget, max_checks)
            if step is None:
                break
            (removed, added), drained, after, after_counts = step
            adds = tuple(added)
            after_state = (state - set(removed)) | set(adds)
        domain = fabric.ocs_named((removed or adds)[0].ocs).domain
        stages.append(Stage(domain, tuple(sorted(removed)), tuple(sorted(adds)), mlu_now, drained, after,
                            rule.checked_start if removed else None))
        log.info("sequence stage %d: -%d +%d, MLU %.4f -> drained %.4f -> %.4f",
                 len(stages), len(removed), len(adds), mlu_now, drained, after)
        flat = 0 if after < mlu_now * (1 - _GAIN) else flat + 1
        state, counts, mlu_now = after_state, after_counts, after
        states.append(frozenset(state))
    return cut_at_lowest(fabric, stages, states, start, threshold, margin)


def _best_swap(
    ranker: SwapRanker,
    state: set[Circuit],
    limit: float,
    mlu_now: float,
    mlu: tuple[Callable[[np.ndarray], float], Callable[[np.ndarray], float]],
    budget: TimeBudget | None,
    max_checks: int,
) -> tuple[Swap, float, float, np.ndarray] | None:
    """The safe swap that lowers the MLU most or, failing that, keeps it and lowers the transit
    need most: (swap, drained MLU, MLU after, pair counts after). ``mlu``: the MLU on the plan's
    matrices (after) and the stage rule's drained MLU."""
    mlu_of, drain_of = mlu
    ranked = ranker.ranked(state, limit)
    best: tuple[tuple[float, float], Swap, float, float, np.ndarray] | None = None
    found_at = 0
    for checked, (gain, key, swap) in enumerate(ranked[:max_checks]):
        if budget is not None and budget.expired():
            break
        if best is not None and checked >= found_at + ENOUGH_CHECKS:
            break
        drained, after = ranker.counts_after(key)
        mlu_drained = drain_of(drained)
        if mlu_drained > limit + _TOL:
            continue
        mlu_after = mlu_of(after)
        if mlu_after > mlu_now * (1 + _TOL) or (gain <= _TOL and mlu_after >= mlu_now * (1 - _GAIN)):
            continue  # raises the MLU, or keeps it without moving a circuit from a cold pair to a hot one
        rank = (mlu_after, -gain)
        if best is None or rank < best[0]:
            found_at = found_at if best is not None else checked
            best = (rank, swap, mlu_drained, mlu_after, after)
    if best is None:
        return None
    return best[1], best[2], best[3], best[4]


def _free_adds(
    fabric: Fabric,
    state: set[Circuit],
    pair_demand: np.ndarray,
    counts: np.ndarray,
    speeds: np.ndarray,
    index: dict[str, int],
) -> tuple[Circuit, ...]:
    """Circuits that free uplink ports of one failure domain can carry between blocks with
    traffic for each other, hottest pairs first (each new circuit cools its pair)."""
    used = {(c.ocs, p) for c in state for p in (c.a, c.b)}
    counts = counts.copy()
    for domain in fabric.domains:
        chosen: list[Circuit] = []
        for ocs in fabric.ocs_in_domain(domain):
            free = [w for w in fabric.ports_on_ocs(ocs.name) if (ocs.name, w.port) not in used]
            while True:
                pick = _hottest_free_pair(free, ocs.sides, pair_demand, counts, speeds, index)
                if pick is None:
                    break
                pa, pb = pick
                chosen.append(Circuit(ocs.name, pa.port, pb.port))
                free = [w for w in free if w.port not in (pa.port, pb.port)]
                i, j = index[pa.block], index[pb.block]
                counts[i, j] += 1
                counts[j, i] += 1
        if chosen:
            return tuple(sorted(chosen))
    return ()


def _hottest_free_pair(
    free: list[WiredPort],
    sides: OcsSides,
    pair_demand: np.ndarray,
    counts: np.ndarray,
    speeds: np.ndarray,
    index: dict[str, int],
) -> tuple[WiredPort, WiredPort] | None:
    best: tuple[float, WiredPort, WiredPort] | None = None
    for k, pa in enumerate(free):
        for pb in free[k + 1:]:
            if pa.block == pb.block:
                continue
            if sides is OcsSides.SPLIT and {pa.side, pb.side} != {Side.NORTH, Side.SOUTH}:
                continue
            i, j = index[pa.block], index[pb.block]
            if pair_demand[i, j] <= 0:
                continue
            heat = pair_demand[i, j] / max(counts[i, j] * speeds[i, j], 1e-9)
            if best is None or heat > best[0]:
                best = (heat, pa, pb)
    return None if best is None else (best[1], best[2])


def onward_steps(
    fabric: Fabric,
    circuits: Sequence[Circuit],
    staging: StagingPlan,
    matrices: Sequence[TrafficMatrix],
    evaluate: MluFunction,
    threshold: float,
    margin: float,
    budget: TimeBudget,
    *,
    traffic: StageTraffic | None = None,
) -> StagingPlan | None:
    """The better of two searches of safe stages found one by one: on from the step a partial
    staging reached (its stages first) and from today's ``circuits`` (the staged step can be a
    corner the search does not get out of); None when neither lowers the MLU."""
    found: list[StagingPlan] = []
    if staging.stages and not budget.expired():
        more = sequence_steps(fabric, staging.final_circuits, matrices, evaluate, threshold, margin, budget,
                              traffic=traffic, offset=len(staging.stages))
        if more is not None:
            found.append(replace(more, stages=staging.stages + more.stages, start_mlu=staging.start_mlu))
    if not budget.expired():
        fresh = sequence_steps(fabric, circuits, matrices, evaluate, threshold, margin, budget,
                               traffic=traffic)
        if fresh is not None:
            found.append(fresh)
    return min(found, key=lambda p: (p.final_mlu, len(p.stages)), default=None)
