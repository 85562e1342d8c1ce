"""Stages checked on the traffic flowing while they run (issue 31, the 16-block hot job mix).

A plan for announced jobs is made for the planning demand (the traffic measured now plus the
due jobs'), but its stages run before the due jobs start. A stage that certainly ends before
a job starts is checked on the traffic flowing then; a stage that may meet it on that traffic
and on the job's too, each against its own limit (:mod:`optimizer.staging.traffic`). On
fabric-8 with a hot matching job due, the planning demand puts the mesh at MLU 0.89, over the
stage limit 0.8: checked on it, no stage may raise it and the change stops after one step;
checked on the traffic flowing before the job (MLU 0.23) the whole change is staged. Every
stage is replayed with the reference LP, on each matrix it must be safe for."""

from __future__ import annotations

import pytest

from optimizer.errors import InfeasibleError
from optimizer.fabric import Fabric
from optimizer.staging import StageTiming, StageTraffic
from optimizer.te import TeSolver
from optimizer.toe import ToeKnobs, plan_target
from optimizer.toe.reconfigure import te_evaluator
from optimizer.topology import Circuit, uniform_mesh
from optimizer.traffic import TrafficMatrix
from tests.support.toe_support import due_matching_job, replay_stage_rule

THRESHOLD = 0.8


def _plan(fabric: Fabric, mesh: list[Circuit], planned: TrafficMatrix, traffic: StageTraffic | None):  # type: ignore[no-untyped-def]
    evaluate = te_evaluator(TeSolver(fabric))
    return plan_target(fabric, [planned], mesh, ToeKnobs(time_limit=60), evaluate, threshold=THRESHOLD,
                       traffic=traffic)


def test_stages_that_end_before_the_job_starts_are_checked_on_the_traffic_flowing_then(fabric8) -> None:
    mesh = uniform_mesh(fabric8)
    flowing, planned = due_matching_job(fabric8)
    today = _plan(fabric8, mesh, planned, None).staging
    every_stage_before = StageTraffic(((100, (flowing,)),))
    target = _plan(fabric8, mesh, planned, every_stage_before)
    plan = target.staging
    assert plan is not None and today is not None
    # on the planning demand the mesh is over the stage limit: no drain may raise it, one step only
    assert today.start_mlu > THRESHOLD and not today.complete
    # on the traffic flowing before the job every drain fits: the whole target, staged
    assert plan.complete and plan.final_circuits == frozenset(target.mapping.circuits)
    assert plan.final_mlu == pytest.approx(target.toe.mlu, rel=1e-6)
    assert plan.final_mlu < today.final_mlu * 0.9
    reached = replay_stage_rule(fabric8, mesh, plan.stages, planned, THRESHOLD, checked=lambda k: [flowing])
    assert reached == set(plan.final_circuits)
    # the stages are recorded as checked on other traffic than the plan's, with where they started
    assert all(s.mlu_checked_start is not None and s.mlu_checked_start < THRESHOLD for s in plan.stages)
    # and a drain on the planning demand would have broken the rule there: the rule made the difference
    with pytest.raises(AssertionError):
        replay_stage_rule(fabric8, mesh, plan.stages, planned, THRESHOLD)


def test_a_stage_that_may_meet_the_job_is_safe_for_its_traffic_and_for_the_traffic_before(fabric8) -> None:
    mesh = uniform_mesh(fabric8)
    flowing, planned = due_matching_job(fabric8)
    first_stage_before = StageTraffic(((1, (flowing,)),))
    plan = _plan(fabric8, mesh, planned, first_stage_before).staging
    assert plan is not None and len(plan.stages) >= 2
    # stage 0 ends before the job starts; every later stage may run before it or after it
    replay_stage_rule(fabric8, mesh, plan.stages, planned, THRESHOLD,
                      checked=lambda k: [flowing] if k == 0 else [flowing, planned])
    assert plan.stages[0].mlu_checked_start is not None
    today = _plan(fabric8, mesh, planned, None).staging
    assert today is not None and plan.final_mlu < today.final_mlu


def test_with_no_due_job_the_rule_is_the_plans_own(fabric8) -> None:
    mesh = uniform_mesh(fabric8)
    _, planned = due_matching_job(fabric8)
    a = _plan(fabric8, mesh, planned, None).staging
    b = _plan(fabric8, mesh, planned, StageTraffic(())).staging
    assert a is not None and b is not None
    assert a.stages == b.stages and a.final_circuits == b.final_circuits
    assert all(s.mlu_checked_start is None for s in b.stages)


def test_stages_before_a_start_count_the_plans_time_limit_and_each_stage_at_its_timeouts() -> None:
    timing = StageTiming(plan_seconds=60, stage_seconds=270)
    assert timing.stages_before(600) == 2  # stage 1 ends by 60 + 2 * 270 = 600 at the latest
    assert timing.stages_before(599) == 1
    assert timing.stages_before(329) == 0
    assert timing.stages_before(-30) == 0  # a job already late: every stage counts it
    with pytest.raises(InfeasibleError, match="stage_seconds"):
        StageTiming(60, 0)
    with pytest.raises(InfeasibleError, match="plan_seconds"):
        StageTiming(-1, 270)


def test_windows_name_the_stage_they_hold_and_a_later_search_keeps_the_earlier_slots(fabric8) -> None:
    a, b = due_matching_job(fabric8)
    traffic = StageTraffic(((1, (a,)), (3, (b,))))
    assert [traffic.window(k) for k in range(5)] == [0, 1, 1, 2, 2]
    later = traffic.after(2)
    assert later.windows == ((0, (a,)), (1, (b,)))
    with pytest.raises(InfeasibleError, match="in order"):
        StageTraffic(((3, (a,)), (1, (b,))))
