"""Fewer stages: the stages of one failure domain merged where the merge is still safe.

The sequence search (:mod:`optimizer.toe.sequence`) finds stages one swap at a time, so a hot
fabric's plan can take 20 stages, each a drain, a wait and a check on the fabric. A stage and
the next stage of the same failure domain can run as one: from the topology ``before`` the
first, the merged stage drains what the two remove (net) and then makes what they add (net):
its circuits' ports are free once the drain is done, as the OCSes of that domain end exactly
as after the second stage. It is merged only when the stage rule still holds: the MLU with
the merged drain within ``max(threshold / margin, MLU where the merged stage starts)``,
checked by TE (on the traffic each stage is checked against, :mod:`optimizer.staging.traffic`,
at its place in the plan: a stage moved earlier by a merge was checked on at least the traffic
that may flow there). Stages of other domains in between touch other OCSes and run after the merged
stage, each checked again from its new start (the MLU there may be lower, and the limit with
it). Merges are made greedily, earliest stage first, as long as they pass; the topology after
the later stage is unchanged, so the plan ends where it did. Pure: no I/O, the only clock
the budget's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace

from optimizer.budget import TimeBudget
from optimizer.fabric import Fabric
from optimizer.staging import MluFunction, Stage, StageChecks, StageRule, StageTraffic, StagingPlan
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
    *,
    traffic: StageTraffic | None = None,
) -> StagingPlan:
    """``plan`` (whose stages start from ``current``) with each stage merged into the previous
    stage of its failure domain wherever the merge keeps the stage rule; ``plan`` itself when
    none can be (or the budget is spent before the first check).

    Stages of other domains between the two (they touch other OCSes, so they still apply) then
    run after the merged stage, on a topology that already has the later stage's circuits:
    each of them is checked again, from its new start. The topology after the later stage,
    and so the plan's end, is the same."""
    if len(plan.stages) < 2:
        return plan
    checks = StageChecks(fabric, evaluate, matrices, plan.threshold / plan.margin, traffic)

    start = frozenset(current)
    stages = list(plan.stages)
    i = 0
    while i < len(stages):
        later = next((k for k in range(i + 1, len(stages)) if stages[k].domain == stages[i].domain), None)
        if later is None or _spent(budget):
            i += 1
            continue
        before = _replay(start, stages[:i])
        moved = _merged(before, stages, i, later, _Checks(fabric, checks), budget)
        if moved is None:
            i += 1
        else:
            stages = moved
    if _replay(start, stages) != plan.final_circuits:  # pragma: no cover - the same end by construction
        raise RuntimeError("internal error: the merged stages do not lead to the plan's final circuits")
    if len(stages) < len(plan.stages):
        log.info("staging: %d stages merged into %d within their failure domains", len(plan.stages),
                 len(stages))
    return replace(plan, stages=tuple(s for s in stages if s.remove or s.add))


def _apply(state: frozenset[Circuit], stage: Stage) -> frozenset[Circuit]:
    return (state - set(stage.remove)) | set(stage.add)


def _replay(state: frozenset[Circuit], stages: Iterable[Stage]) -> frozenset[Circuit]:
    for stage in stages:
        state = _apply(state, stage)
    return state


class _Checks:
    """The merge's TE checks by circuits: the plan's MLU (infinite where a merged drain strands
    demand: not merged) and stage ``k``'s rule from a topology."""

    def __init__(self, fabric: Fabric, checks: StageChecks) -> None:
        self.fabric, self.checks = fabric, checks

    def plan(self, circuits: frozenset[Circuit]) -> float:
        return self.checks.plan_mlu(Topology.from_circuits(self.fabric, circuits))

    def passes(self, k: int, start: frozenset[Circuit], plan_mlu: float, drained: frozenset[Circuit],
               ) -> tuple[float, StageRule] | None:
        """Stage ``k`` from ``start`` (MLU ``plan_mlu`` on the plan's matrices) drained to
        ``drained``: its drained MLU (:class:`~optimizer.staging.StageRule`) and rule, or None
        when it breaks the rule."""
        rule = self.checks.rule(k, Topology.from_circuits(self.fabric, start), plan_mlu)
        value = rule.begin if drained == start else rule.drained(Topology.from_circuits(self.fabric, drained))
        return None if value > rule.limit + _TOL else (value, rule)


def _merged(
    before: frozenset[Circuit],
    stages: list[Stage],
    i: int,
    j: int,
    check: _Checks,
    budget: TimeBudget | None = None,
) -> list[Stage] | None:
    """``stages`` with stage ``j`` merged into stage ``i`` (one domain, ``before`` the topology
    stage ``i`` starts from) and the stages between re-checked after it; None when the merged
    stage or one of those between breaks the stage rule, or ``budget`` runs out before every
    re-check is made (the stages are then kept as they are)."""
    first, second = stages[i], stages[j]
    joined = _apply(_apply(before, first), second)
    removed = tuple(sorted(before - joined))
    added = tuple(sorted(joined - before))
    merged = check.passes(i, before, first.mlu_start, before & joined)
    if merged is None:
        return None
    drained, rule = merged
    after = second.mlu_after if j == i + 1 else check.plan(joined)
    out = [Stage(first.domain, removed, added, first.mlu_start, drained, after, rule.checked_start)]
    state, mlu_now = joined, after
    for k, stage in enumerate(stages[i + 1 : j], start=i + 1):  # other domains: still there to change
        if _spent(budget):
            return None
        cut = state - set(stage.remove)
        between = check.passes(k, state, mlu_now, cut)
        if between is None:
            return None
        mlu_drained, rule = between
        state = cut | set(stage.add)
        mlu_after = check.plan(state)
        out.append(Stage(stage.domain, stage.remove, stage.add, mlu_now, mlu_drained, mlu_after,
                         rule.checked_start))
        mlu_now = mlu_after
    return stages[:i] + out + stages[j + 1 :]


def _spent(budget: TimeBudget | None) -> bool:
    return budget is not None and budget.expired()
