"""The planner's side of deferred plans (controller/reconfig/toe_run.py), on the real solver: a
hot fabric's target is deferred instead of applied or lost, and re-staged against newer
predictions: applied (every stage within the stage rule) once the load leaves room, dropped
when the matrix moved so that it is no longer a gain or maintenance took part of it, expired
when its time is up."""

from __future__ import annotations

import pytest

from controller.reconfig.deferred import Verdict
from controller.reconfig.in_service import planning_view
from controller.reconfig.toe_run import ToePlanner
from optimizer.fabric import Fabric
from optimizer.policy import ReconfigurePolicy
from optimizer.topology import uniform_mesh
from optimizer.traffic import uniform_matrix
from tests.support.hot_fabrics import mesh_scaled, mixed_fabric, shift, skewed

FABRIC = mixed_fabric(8)
LIVE = frozenset(uniform_mesh(FABRIC))
POLICY = ReconfigurePolicy(min_gain=0.1, min_interval_s=600.0)
STAGE_MLU = 0.8
# the shift: the safe stages found one by one gain less than the 10% minimum (the ring now gains 11%)
HOT = mesh_scaled(FABRIC, shift(FABRIC), 0.9)


def _planner(fabric: Fabric = FABRIC, time_limit: float = 20.0) -> ToePlanner:
    return ToePlanner(fabric, STAGE_MLU, time_limit=time_limit, deferred_ttl=900.0)


def test_a_target_no_safe_step_gets_to_is_deferred_and_applied_when_the_load_falls() -> None:
    planner = _planner()
    proposal = planner.propose("auto", HOT, LIVE, 0.0, None, POLICY)
    deferred = proposal.deferred
    assert not proposal.verdict.apply and deferred is not None
    assert "deferred until the predicted load leaves room" in proposal.verdict.reason
    assert deferred.target != LIVE and deferred.target_mlu < deferred.current_mlu * (1 - POLICY.min_gain)
    assert deferred.misfit.mlu > deferred.misfit.limit  # the stage that does not fit, with its figures
    # still hot: it waits, and says which stage does not fit
    check, plan = planner.restage(deferred, HOT, LIVE, 300.0, None, POLICY)
    assert check.verdict is Verdict.WAIT and plan is None and check.plan.checks == 1
    assert check.plan.misfit.mlu > check.plan.misfit.limit
    # the load falls by half: every stage fits and the plan is applied, to the deferred target
    quiet = HOT.scaled(0.5)
    check, plan = planner.restage(check.plan, quiet, LIVE, 600.0, None, POLICY)
    assert check.verdict is Verdict.APPLY and plan is not None and plan.stages
    assert "applied after 600 s" in check.reason
    reached = set(LIVE)
    for stage in plan.stages:
        assert stage.mlu_drained is not None and stage.mlu_start is not None
        assert stage.mlu_drained <= max(STAGE_MLU / planner.wcmp_margin, stage.mlu_start) + 1e-9
        reached = (reached - set(stage.remove)) | set(stage.add)
    assert reached == deferred.target
    assert plan.planned_mlu is not None and plan.current_mlu is not None
    assert plan.planned_mlu < plan.current_mlu * (1 - POLICY.min_gain)


def test_a_deferred_target_is_dropped_when_the_matrix_moved_or_maintenance_took_part_of_it() -> None:
    planner = _planner()
    deferred = planner.propose("auto", HOT, LIVE, 0.0, None, POLICY).deferred
    assert deferred is not None
    moved = uniform_matrix(FABRIC, 0.3)  # the ring is gone: the mesh suits the new matrix best
    check, plan = planner.restage(deferred, moved, LIVE, 300.0, None, POLICY)
    assert check.verdict is Verdict.DROPPED and plan is None and "no longer a gain" in check.reason
    changed_ocs = sorted({c.ocs for c in deferred.target ^ LIVE})[0]
    view = planning_view(FABRIC, LIVE, ocs_out=[changed_ocs])
    check, plan = planner.restage(deferred, HOT.scaled(0.5), LIVE, 300.0, None, POLICY, view=view)
    assert check.verdict is Verdict.DROPPED and plan is None and "maintenance" in check.reason
    check, plan = planner.restage(deferred, HOT.scaled(0.5), LIVE, 900.0, None, POLICY)
    assert check.verdict is Verdict.EXPIRED and plan is None


def test_operator_requests_and_deferral_off_defer_nothing() -> None:
    assert _planner().propose("operator", HOT, LIVE, 0.0, None, POLICY).deferred is None
    off = ToePlanner(FABRIC, STAGE_MLU, time_limit=20.0, deferred_ttl=0.0)
    assert off.propose("auto", HOT, LIVE, 0.0, None, POLICY).deferred is None


@pytest.mark.slow
def test_a_plan_that_cannot_be_staged_at_all_is_deferred_not_failed() -> None:
    """hot-16 under a skewed matrix at mesh MLU 1.2: no stage and no swap is safe, so planning
    raises StagingBlocked (heliostat toe refuses it); the daemon's planner defers the target."""
    fabric = mixed_fabric(16)
    live = frozenset(uniform_mesh(fabric))
    hot = mesh_scaled(fabric, skewed(fabric), 1.2)
    proposal = _planner(fabric, time_limit=30.0).propose("auto", hot, live, 0.0, None, POLICY)
    deferred = proposal.deferred
    assert not proposal.verdict.apply and not proposal.plan.stages and deferred is not None
    assert "cannot be staged at today's load" in proposal.verdict.reason
    assert deferred.target_mlu < deferred.current_mlu * (1 - POLICY.min_gain)
    assert deferred.misfit.mlu > deferred.misfit.limit >= STAGE_MLU / 1.02


def test_a_restage_out_of_time_keeps_the_deferred_plan_waiting() -> None:
    """Re-staging runs under the plan's time limit too: when it runs out before the stages are
    all checked, the deferred plan is neither applied half-checked nor dropped; it waits, and
    says why it was not re-staged."""
    deferred = _planner().propose("auto", HOT, LIVE, 0.0, None, POLICY).deferred
    assert deferred is not None
    ticks = [0.0]

    def slow_clock() -> float:  # each look at the clock finds another 20 s gone
        ticks[0] += 20.0
        return ticks[0]

    slow = ToePlanner(FABRIC, STAGE_MLU, time_limit=20.0, clock=slow_clock, deferred_ttl=900.0)
    quiet = HOT.scaled(0.5)  # where the plan is applied with time to stage it (the first test)
    check, plan = slow.restage(deferred, quiet, LIVE, 600.0, None, POLICY)
    assert check.verdict is Verdict.WAIT and plan is None and check.plan.checks == 1
    assert "not re-staged this time" in check.reason and "time limit (20 s) ran out" in check.reason
