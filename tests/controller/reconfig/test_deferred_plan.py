"""The deferred-plan rule (controller/reconfig/deferred.py), pure: times, MLUs and staging outcomes
as plain values. A hot fabric's target waits while a stage would break the stage rule at the
predicted load, is applied once every stage fits, and is dropped when it expires or stops being
a gain."""

from __future__ import annotations

import pytest

from controller.reconfig.deferred import (
    DeferredPlan,
    DeferredPlanError,
    StageMisfit,
    Verdict,
    defer,
    judge,
)
from optimizer.policy import ReconfigurePolicy
from optimizer.staging import Stage, StagingBlocked, StagingPlan
from optimizer.topology import Topology, uniform_mesh
from tests.support.hot_fabrics import mixed_fabric
from tests.support.toe_support import swap_rewire

FABRIC = mixed_fabric(4, uplinks=8, ocs=2)
LIVE = frozenset(uniform_mesh(FABRIC))
POLICY = ReconfigurePolicy(min_gain=0.1, min_interval_s=600.0)
STAGE_LIMIT = 0.8
MARGIN = 1.02
TTL = 900.0
INTERVAL = 300.0


#: Today's mesh with one pair of circuits on an OCS re-paired (a swap): four circuits changed.
TARGET = frozenset(swap_rewire(FABRIC, LIVE, 1, seed=3))


def _misfit(mlu: float) -> StageMisfit:
    return StageMisfit.of(StagingBlocked(0, ("a0", "a1"), mlu, STAGE_LIMIT / MARGIN, STAGE_LIMIT, MARGIN))


def _staging(start: float, drained: float, final: float) -> StagingPlan:
    """A complete staging of the change: one stage whose drained MLU is ``drained``."""
    remove, add = tuple(sorted(LIVE - TARGET)), tuple(sorted(TARGET - LIVE))
    return StagingPlan(
        stages=(Stage(0, remove, add, start, drained, final),),
        threshold=STAGE_LIMIT,
        start_mlu=start,
        final_topology=Topology.from_circuits(FABRIC, TARGET),
        final_circuits=TARGET,
        final_mlu=final,
        margin=MARGIN,
    )


def _restaged(load: float, drained_per_load: float = 0.95) -> StagingPlan | StageMisfit:
    """What re-staging gives at a predicted ``load`` (today's MLU): the change's one stage
    drains to ``drained_per_load * load``, within the rule only while that stays under
    ``max(STAGE_LIMIT / MARGIN, load)``."""
    drained = drained_per_load * load * 1.2
    if drained <= max(STAGE_LIMIT / MARGIN, load):
        return _staging(load, drained, 0.7 * load)
    return _misfit(drained)


def _deferred_at(now: float, load: float = 0.95) -> DeferredPlan:
    plan = defer(TARGET, LIVE, load, 0.7 * load, _misfit(1.14 * load), now, TTL, POLICY)
    assert plan is not None
    return plan


def test_a_target_worth_applying_is_deferred_with_its_reason_and_time() -> None:
    plan = _deferred_at(100.0)
    assert plan.since == 100.0 and plan.expires_at == 100.0 + TTL
    assert plan.changed == len(TARGET ^ LIVE) == 4
    assert plan.waited(250.0) == 150.0
    facts = plan.facts()
    assert facts["since"] == 100.0 and facts["expires_at"] == 1000.0
    assert facts["stage_mlu"] == pytest.approx(1.14 * 0.95, abs=1e-6)
    assert facts["stage_limit"] == pytest.approx(STAGE_LIMIT / MARGIN, abs=1e-6)
    assert "a0 and a1" in facts["why"] and "stage limit 0.8" in facts["why"]


def test_nothing_is_deferred_when_off_no_gain_or_no_change() -> None:
    misfit = _misfit(1.1)
    assert defer(TARGET, LIVE, 0.95, 0.6, misfit, 0.0, 0.0, POLICY) is None  # ttl 0: off
    assert defer(TARGET, LIVE, 0.95, 0.9, misfit, 0.0, TTL, POLICY) is None  # 5% < 10% gain
    assert defer(LIVE, LIVE, 0.95, 0.6, misfit, 0.0, TTL, POLICY) is None  # changes nothing


def test_load_ramping_down_waits_then_applies_when_the_room_appears() -> None:
    """Checked every ToE interval while the predicted load falls: it waits while the stage's
    drained MLU is over the limit and is applied at the first check where every stage fits."""
    plan = _deferred_at(0.0)
    loads = [0.95, 0.9, 0.8, 0.7, 0.6]
    verdicts = []
    for k, load in enumerate(loads[1:], start=1):
        now = k * INTERVAL * 0.5
        staged = _restaged(load)
        check = judge(plan, now, load, 0.7 * load, staged, POLICY)
        verdicts.append(check.verdict)
        if check.verdict is Verdict.APPLY:
            assert isinstance(staged, StagingPlan) and staged.complete
            for stage in staged.stages:  # the stage rule holds on the prediction it was applied for
                assert stage.mlu_drained <= max(STAGE_LIMIT / MARGIN, stage.mlu_start) + 1e-12
            assert "applied after" in check.reason and check.plan.checks == k
            break
        assert isinstance(staged, StageMisfit)
        assert check.keep and check.plan.misfit == staged and f"{staged.mlu:.4f}" in check.reason
        plan = check.plan
    assert verdicts[-1] is Verdict.APPLY
    assert all(v is Verdict.WAIT for v in verdicts[:-1]) and len(verdicts) >= 2


def test_load_that_never_leaves_room_expires_and_nothing_is_applied() -> None:
    plan = _deferred_at(0.0)
    now, outcomes = 0.0, []
    while True:
        now += INTERVAL
        staged = None if now >= plan.expires_at else _restaged(0.95)
        check = judge(plan, now, 0.95, 0.66, staged, POLICY)
        outcomes.append(check.verdict)
        if not check.keep:
            break
        plan = check.plan
    assert outcomes[-1] is Verdict.EXPIRED and Verdict.APPLY not in outcomes
    assert now == TTL and "expired after 900 s" in check.reason


def test_a_plan_that_stops_being_a_gain_is_dropped_even_when_it_could_be_staged() -> None:
    plan = _deferred_at(0.0)
    # the matrix moved: today's topology now does about as well as the target
    check = judge(plan, INTERVAL, 0.5, 0.48, _staging(0.5, 0.5, 0.48), POLICY)
    assert check.verdict is Verdict.DROPPED
    assert "no longer a gain" in check.reason and "0.5000 -> 0.4800" in check.reason


def test_a_target_the_fabric_cannot_take_is_dropped() -> None:
    check = judge(_deferred_at(0.0), INTERVAL, 0.95, 0.6, None, POLICY, problem="maintenance began")
    assert check.verdict is Verdict.DROPPED and "maintenance began" in check.reason


def test_room_inside_the_policy_interval_waits_for_it() -> None:
    plan = _deferred_at(0.0)
    check = judge(plan, 300.0, 0.6, 0.42, _staging(0.6, 0.6, 0.42), POLICY, last_reconfig_at=100.0)
    assert check.verdict is Verdict.WAIT and "minimum interval" in check.reason
    check = judge(plan, 800.0, 0.6, 0.42, _staging(0.6, 0.6, 0.42), POLICY, last_reconfig_at=100.0)
    assert check.verdict is Verdict.APPLY


def test_an_unexpired_plan_needs_the_figures() -> None:
    with pytest.raises(ValueError, match="today's and the target's MLU"):
        judge(_deferred_at(0.0), 10.0, None, None, None, POLICY)


def test_journal_round_trip_and_named_errors() -> None:
    plan = judge(_deferred_at(5.0), 305.0, 0.9, 0.63, _misfit(1.0), POLICY).plan
    assert DeferredPlan.from_json(plan.to_json()) == plan
    broken = plan.to_json()
    broken["misfit"]["pair"] = ["a0"]
    with pytest.raises(DeferredPlanError, match=r"deferred_plan\.misfit\.pair"):
        DeferredPlan.from_json(broken)
    broken = plan.to_json()
    broken["since"] = "yesterday"
    with pytest.raises(DeferredPlanError, match=r"deferred_plan\.since: expected a number"):
        DeferredPlan.from_json(broken)
    with pytest.raises(DeferredPlanError, match=r"deferred_plan\.target\[0\]"):
        DeferredPlan.from_json({**plan.to_json(), "target": [["o0", 1]]})
