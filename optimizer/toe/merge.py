"""Fewer stages: consecutive stages of one failure domain merged where the merge is still safe.

The sequence search (:mod:`optimizer.toe.sequence`) finds stages one swap at a time, so a hot
fabric's plan can take 20 stages, each a drain, a wait and a check on the fabric. Two
consecutive stages of one failure domain can run as one: from the topology ``before`` the
first to the topology ``after`` the second, the merged stage drains ``before - after`` and then
makes ``after - before`` (their ports are free once the drain is done: ``after`` is a valid
topology and keeps no other circuit on them). It is merged only when the stage rule still
holds: the MLU with ``before & after`` (the merged drain) within ``max(threshold / margin, MLU
where the merged stage starts)``, checked by TE. A run is extended greedily, stage by stage;
the topology after every merged stage is one the unmerged plan reached, so the final MLU is
unchanged. Pure: no I/O, the only clock the budget's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from optimizer.budget import TimeBudget
from optimizer.fabric import Fabric
from optimizer.staging import MluFunction, Stage, StagingPlan
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

_TOL = 1e-9


def merge_stages(
    fabric: Fabric,
    current: Iterable[Circuit],
    plan: StagingPlan,
    matrices: Sequence[TrafficMatrix],
    evaluate: MluFunction,
    budget: TimeBudget | None = None,
) -> StagingPlan:
    """``plan`` (whose stages start from ``current``) with consecutive stages of one failure
    domain merged wherever the merged drain passes the stage rule; ``plan`` itself when none
    can be (or the budget is spent before the first check)."""
    if len(plan.stages) < 2:
        return plan
    matrices = [m for m in matrices if m.total() > 0]
    lp_limit = plan.threshold / plan.margin

    def mlu_of(circuits: frozenset[Circuit]) -> float:
        topo = Topology.from_circuits(fabric, circuits)
        return max((evaluate(fabric, topo, tm) for tm in matrices), default=0.0)

    merged: list[Stage] = []
    run_start = frozenset(current)  # the topology before the run being merged
    state = run_start
    run: Stage | None = None
    for stage in plan.stages:
        after = (state - set(stage.remove)) | set(stage.add)
        if run is not None and stage.domain == run.domain and not _spent(budget):
            joined = _joined(run, stage, run_start, after, lp_limit, mlu_of)
            if joined is not None:
                run, state = joined, after
                continue
        if run is not None:
            merged.append(run)
        run, run_start, state = stage, state, after
    if run is not None:
        merged.append(run)
    if state != plan.final_circuits:  # pragma: no cover - the stages replay to the plan's end
        raise RuntimeError("internal error: the stages do not lead to the plan's final circuits")
    if len(merged) < len(plan.stages):
        log.info("staging: %d stages merged into %d within their failure domains", len(plan.stages),
                 len(merged))
    return replace(plan, stages=tuple(s for s in merged if s.remove or s.add))


def _joined(
    run: Stage,
    stage: Stage,
    before: frozenset[Circuit],
    after: frozenset[Circuit],
    lp_limit: float,
    mlu_of: Callable[[frozenset[Circuit]], float],
) -> Stage | None:
    """``run`` and the next ``stage`` as one stage from ``before`` to ``after``, or None when
    its drain breaks the stage rule."""
    removed = tuple(sorted(before - after))
    added = tuple(sorted(after - before))
    drained = before & after
    mlu_drained = run.mlu_start if not removed else mlu_of(drained)
    if mlu_drained > max(lp_limit, run.mlu_start) + _TOL:
        return None
    return Stage(run.domain, removed, added, run.mlu_start, mlu_drained, stage.mlu_after)


def _spent(budget: TimeBudget | None) -> bool:
    return budget is not None and budget.expired()

