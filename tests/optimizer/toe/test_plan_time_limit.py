"""The plan's time limit holds in staging, the safe-sequence search and the merge (issue 31: a job's
arrival at 64 blocks took over 25 minutes to plan, each stage check a TE solve on an overloaded
fabric). Every TE check here moves a fake clock on by ``STEP`` seconds, so the tests count checks,
not wall time: the planner may overshoot its limit by the checks it makes between two looks at
the budget (at most two), never by more."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from optimizer.budget import TimeBudget
from optimizer.errors import InfeasibleError
from optimizer.fabric import Fabric
from optimizer.staging import Stage, StagingPlan, StagingTimedOut, stage_changes
from optimizer.te import TeSolver
from optimizer.toe import ToeKnobs, plan_target, te_evaluator
from optimizer.toe.merge import merge_stages
from optimizer.toe.sequence import onward_steps, sequence_steps
from optimizer.toe.window import staging_window
from optimizer.topology import Topology, mesh_topology, uniform_mesh
from optimizer.traffic import TrafficMatrix, hotspot_matrix
from tests.support.toe_support import staged_change

STEP = 5.0  # seconds of fake time one TE check costs
LIMIT = 60.0
OVERSHOOT = 2 * STEP  # two checks at most between two looks at the budget


class SlowTe:
    """A min-MLU function whose every call costs ``STEP`` seconds on its own fake clock."""

    def __init__(self, mlu_of) -> None:  # type: ignore[no-untyped-def]
        self.mlu_of = mlu_of
        self.now = 0.0
        self.calls = 0

    def clock(self) -> float:
        return self.now

    def __call__(self, fabric: Fabric, topology: Topology, tm: TrafficMatrix) -> float:
        self.calls += 1
        self.now += STEP
        return float(self.mlu_of(fabric, topology, tm))


def _overloaded(full: int):  # type: ignore[no-untyped-def]
    """A stand-in TE for a fabric over the stage limit: MLU 1.07 on every circuit, and each
    circuit drained raises it by 0.03, so no drain keeps the rule."""

    def mlu(fabric, topology, tm) -> float:  # type: ignore[no-untyped-def]
        return 1.07 + 0.03 * (full - int(np.triu(np.asarray(topology.counts), 1).sum()))

    return mlu


def _lowering(full: int, target: Topology, per_circuit: float = 0.03):  # type: ignore[no-untyped-def]
    """Each circuit drained raises the MLU by ``per_circuit`` from 0.5 (at 0.03, ten at a time
    within 0.8), and every pair unit closer to ``target`` lowers it a little."""

    def mlu(fabric, topology, tm) -> float:  # type: ignore[no-untyped-def]
        counts = np.asarray(topology.counts)
        gap = float(np.abs(counts - np.asarray(target.counts)).sum())
        return 0.5 + per_circuit * (full - int(np.triu(counts, 1).sum())) + 1e-3 * gap

    return mlu


def test_staging_an_overloaded_fabric_stops_at_the_time_limit(fabric8) -> None:
    """No drain keeps the rule: the old search went on, one stage per failure domain sought
    before the limit counted, through every domain's prefixes and single circuits; now it stops
    at the limit with no stage and says so."""
    current, target, tm = staged_change(fabric8)
    te = SlowTe(_overloaded(len(current)))
    budget = TimeBudget(LIMIT, te.clock)
    with pytest.raises(StagingTimedOut, match=r"the plan's time limit \(60 s\) ran out after 0 stages"):
        stage_changes(fabric8, current, target, tm, te, threshold=0.8, partial=True, budget=budget)
    assert te.now <= LIMIT + OVERSHOOT


def test_staging_out_of_time_keeps_the_stages_it_found_and_says_why(fabric8) -> None:
    current, target, tm = staged_change(fabric8)
    te = SlowTe(_lowering(len(current), Topology.from_circuits(fabric8, target)))
    whole = stage_changes(fabric8, current, target, tm, te, threshold=0.8, partial=True)
    assert whole.complete and te.now > 7 * STEP  # untimed, the change takes more checks than below
    te.now = 0.0
    budget = TimeBudget(7 * STEP - 1, te.clock)
    plan = stage_changes(fabric8, current, target, tm, te, threshold=0.8, partial=True, budget=budget)
    assert te.now <= budget.seconds + OVERSHOOT
    assert not plan.complete and 0 < len(plan.stages) < len(whole.stages)
    assert plan.final_mlu < plan.start_mlu
    assert re.search(r"wait for a later plan: the plan's time limit \(34 s\) ran out after \d+ stages",
                     plan.blocked or "")


def test_a_whole_staging_out_of_time_is_an_error_not_a_partial_plan(fabric8) -> None:
    current, target, tm = staged_change(fabric8)
    te = SlowTe(_lowering(len(current), Topology.from_circuits(fabric8, target)))
    with pytest.raises(StagingTimedOut, match="cannot stage the change whole: the plan's time limit"):
        stage_changes(fabric8, current, target, tm, te, threshold=0.8,
                      budget=TimeBudget(3 * STEP - 1, te.clock))
    assert te.now <= 3 * STEP - 1 + OVERSHOOT


def test_the_sequence_search_makes_no_check_on_a_spent_budget(fabric8) -> None:
    current, _, tm = staged_change(fabric8)
    te = SlowTe(_overloaded(len(current)))
    spent = TimeBudget(LIMIT, te.clock)
    te.now = LIMIT
    assert sequence_steps(fabric8, current, [tm], te, 0.8, budget=spent) is None
    stage = Stage(0, (), (), 1.0, 1.0, 0.9)
    today = Topology.from_circuits(fabric8, current)
    partial = StagingPlan((stage,), 0.8, 1.0, today, frozenset(current), 0.9)
    assert onward_steps(fabric8, current, partial, [tm], te, 0.8, 1.0, spent) is None
    assert te.calls == 0


def test_a_merge_that_runs_out_of_time_keeps_the_stages(fabric8) -> None:
    """Two stages of domain 0 with one of domain 1 between them: merging the two re-checks the
    one between; when the budget runs out before that re-check the stages stay as they were."""
    current, target, tm = staged_change(fabric8)
    lowering = _lowering(len(current), Topology.from_circuits(fabric8, target))
    plan = stage_changes(fabric8, current, target, tm, lowering, threshold=0.8)
    lowering = _lowering(len(current), Topology.from_circuits(fabric8, target), per_circuit=0.003)
    zero = [s for s in plan.stages if s.domain == 0]
    one = [s for s in plan.stages if s.domain == 1]
    assert len(zero) >= 2 and one
    # other OCSes: a stage of domain 1 may run between those of domain 0 (the plan ends the same)
    interleaved = replace(plan, stages=(zero[0], one[0], *zero[1:], *one[1:]))
    te = SlowTe(lowering)
    budget = TimeBudget(2 * STEP - 1, te.clock)  # the merged stage's two checks, then spent
    kept = merge_stages(fabric8, current, interleaved, [tm], te, budget)
    assert te.calls == 2
    assert kept.stages == interleaved.stages
    untimed = merge_stages(fabric8, current, interleaved, [tm], lowering)
    assert len(untimed.stages) < len(interleaved.stages)  # with time, the two stages do merge


@pytest.mark.slow
def test_planning_on_a_hot_fabric_with_slow_te_checks_stops_at_the_time_limit(hybrid8) -> None:
    """The whole plan (the real LP, mapping, staging, safe sequence, merge) with real TE checks
    that each cost 5 s of fake time: a hotspot at MLU 0.9 where the target cannot be staged
    whole. The plan ends within its limit (and two checks) with a safe partial plan that says
    why, or an error that says the time ran out."""
    solver = TeSolver(hybrid8)
    tm = hotspot_matrix(hybrid8, 0, 0.5)
    tm = tm.scaled(0.9 / solver.min_mlu(mesh_topology(hybrid8), tm))
    real = te_evaluator(solver)
    te = SlowTe(real)
    try:
        target = plan_target(hybrid8, [tm], uniform_mesh(hybrid8), ToeKnobs(time_limit=LIMIT), te,
                             threshold=0.8, clock=te.clock)
    except InfeasibleError as exc:
        assert "time limit" in str(exc)
    else:
        staging = target.staging
        assert staging is not None
        for stage in staging.stages:
            assert stage.mlu_drained <= max(0.8, stage.mlu_start) + 1e-9
        assert staging.complete or staging.blocked
    assert te.calls > 1 and te.now <= LIMIT + OVERSHOOT, te.now


def test_a_staging_window_out_of_time_is_none(fabric8) -> None:
    """``heliostat toe defer``'s search: a budget spent within a scale's staging ends the search
    (no window found in time) instead of staging on past the limit."""
    current, target, tm = staged_change(fabric8)
    te = SlowTe(_lowering(len(current), Topology.from_circuits(fabric8, target)))
    budget = TimeBudget(3 * STEP - 1, te.clock)
    assert staging_window(fabric8, current, target, [tm], te, 0.8, budget=budget) is None
    assert 0 < te.now <= budget.seconds + OVERSHOOT
