"""The ToE LP's time budget: a fake clock jumps past it at chosen points (no timed tests)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from optimizer.budget import TimeBudget
from optimizer.config import generate_fabric
from optimizer.errors import ConfigError
from optimizer.toe import (
    NEAR_OPTIMAL,
    STATUS_OPTIMAL,
    STATUS_TIME_LIMIT,
    ToeKnobs,
    build_problem,
    plan_topology,
    solve_relaxation,
)
from optimizer.toe.lp import ToeLp
from optimizer.toe.lp import columns as toe_lp
from optimizer.toe.rounding import port_budget, round_topology
from optimizer.topology import mesh_topology
from optimizer.traffic import TrafficMatrix


class FakeClock:
    """Stands still until told to jump (by call count or by hand), then stays far ahead."""

    def __init__(self, jump_at_call: int | None = None) -> None:
        self.now = 0.0
        self.calls = 0
        self.jump_at_call = jump_at_call

    def __call__(self) -> float:
        self.calls += 1
        if self.jump_at_call is not None and self.calls >= self.jump_at_call:
            self.jump()
        return self.now

    def jump(self) -> None:
        self.now = 1e6


@pytest.fixture(scope="module")
def case():
    """Paired blocks exchange half their capacity: the mesh serves it badly, so a plan rewires."""
    fab = generate_fabric(8, 32, 4, 72, 2)
    n = fab.n_blocks
    gbps = np.zeros((n, n))
    for i in range(0, n - 1, 2):
        gbps[i, i + 1] = gbps[i + 1, i] = 0.5 * fab.blocks[i].uplinks * fab.blocks[i].speed_gbps
    return fab, TrafficMatrix(fab.block_names, gbps), mesh_topology(fab)


@pytest.fixture(scope="module")
def full_plan(case):
    fab, tm, mesh = case
    return plan_topology(fab, tm, mesh, ToeKnobs(time_limit=1e9), clock=lambda: 0.0)


def _jump_after(monkeypatch, name: str, clock: FakeClock) -> None:
    """The clock jumps past the budget right after ToeLp.<name> (a stage change) runs."""
    original = getattr(ToeLp, name)

    def wrapped(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        clock.jump()
        return result

    monkeypatch.setattr(ToeLp, name, wrapped)


def test_a_generous_budget_gives_the_plan_without_a_budget(case, full_plan):
    fab, tm, mesh = case
    knobs = ToeKnobs()
    problem = build_problem(fab, [tm], mesh, knobs)
    outcome = solve_relaxation(problem, knobs, full_plan.current_throughput_scale, budget=None)
    expected = round_topology(outcome.relaxed.counts, problem.budget, problem.current, tm.gbps)
    assert np.array_equal(full_plan.topology.counts, expected)
    assert full_plan.throughput_scale_relaxed == outcome.bound
    assert full_plan.solver_status == STATUS_OPTIMAL and not full_plan.timed_out
    assert full_plan.cut_stage is None and full_plan.bound_proven
    assert full_plan.removed_lower_bound > 0  # the case does rewire
    data = full_plan.to_json()
    assert data["timed_out"] is False and data["solver_status"] == "optimal" and data["cut_stage"] is None


def test_budget_spent_before_stage_1_keeps_todays_topology(case, caplog):
    fab, tm, mesh = case
    clock = FakeClock(jump_at_call=2)  # call 1 starts the budget; the first LP run finds it spent
    with caplog.at_level("WARNING", logger="optimizer.toe.plan"):
        plan = plan_topology(fab, tm, mesh, ToeKnobs(time_limit=5), clock=clock)
    assert np.array_equal(plan.topology.counts, mesh.counts)
    assert plan.removed_lower_bound == 0
    assert plan.timed_out and plan.solver_status == STATUS_TIME_LIMIT and plan.cut_stage == "scale"
    assert plan.throughput_scale_relaxed is None and not plan.bound_proven and plan.rounding_gap is None
    assert plan.throughput_scale == plan.current_throughput_scale
    data = json.loads(json.dumps(plan.to_json()))  # valid JSON: no NaN
    assert data["timed_out"] is True and data["cut_stage"] == "scale"
    assert data["throughput_scale_relaxed"] is None and data["bound_proven"] is False
    assert any("stopped early" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)


def test_budget_spent_in_stage_1_after_a_round_uses_that_rounds_solution(case, monkeypatch):
    fab, tm, mesh = case
    monkeypatch.setattr(toe_lp, "_SEED_ALL_UP_TO", 0)  # no seeded transit paths: several rounds
    clock = FakeClock(jump_at_call=3)  # one LP run completes, the second finds the budget spent
    plan = plan_topology(fab, tm, mesh, ToeKnobs(time_limit=5), clock=clock)
    assert plan.timed_out and plan.cut_stage == "scale" and plan.throughput_scale_relaxed is None
    assert plan.lp_rounds == 1
    assert (plan.topology.degree() <= port_budget(fab)).all()
    # a restricted solution is used only when it is no worse than today's topology
    assert plan.throughput_scale >= plan.current_throughput_scale
    assert plan.removed_lower_bound > 0


def test_budget_spent_in_stage_2_keeps_stage_1s_scale(case, full_plan, monkeypatch):
    fab, tm, mesh = case
    clock = FakeClock()
    _jump_after(monkeypatch, "set_stage2", clock)
    plan = plan_topology(fab, tm, mesh, ToeKnobs(time_limit=5), clock=clock)
    assert plan.timed_out and plan.cut_stage == "stretch"
    assert plan.throughput_scale_relaxed == pytest.approx(full_plan.throughput_scale_relaxed, rel=1e-9)
    assert plan.throughput_scale >= 0.98 * NEAR_OPTIMAL * plan.throughput_scale_relaxed
    assert plan.throughput_scale <= plan.throughput_scale_relaxed * (1 + 1e-6)
    assert (plan.topology.degree() <= port_budget(fab)).all()
    assert plan.to_json()["cut_stage"] == "stretch"


def test_budget_spent_in_stage_3_keeps_stage_2s_solution(case, full_plan, monkeypatch):
    fab, tm, mesh = case
    clock = FakeClock()
    _jump_after(monkeypatch, "set_stage3", clock)
    plan = plan_topology(fab, tm, mesh, ToeKnobs(time_limit=5), clock=clock)
    assert plan.timed_out and plan.cut_stage == "change" and plan.bound_proven
    assert plan.throughput_scale >= 0.98 * NEAR_OPTIMAL * plan.throughput_scale_relaxed
    assert (plan.topology.degree() <= port_budget(fab)).all()
    # stage 3 would have minimised the change; without it the plan changes at least as much
    assert plan.removed_lower_bound >= full_plan.removed_lower_bound


def test_the_budget_counts_on_the_injected_clock():
    clock = FakeClock()
    budget = TimeBudget(2.5, clock)
    assert budget.remaining() == 2.5 and not budget.expired()
    clock.now = 2.0
    assert budget.remaining() == pytest.approx(0.5)
    clock.now = 2.5
    assert budget.expired()


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), float("inf"), "10", True])
def test_bad_time_limits_are_named(case, seconds):
    fab, tm, mesh = case
    with pytest.raises(ConfigError, match="time_limit"):
        ToeKnobs(time_limit=seconds).validate()
    with pytest.raises(ConfigError, match="<toe>: time_limit: must be"):
        plan_topology(fab, tm, mesh, ToeKnobs(time_limit=seconds))


def test_a_replan_under_a_tighter_change_limit_shares_the_first_plans_budget(case):
    """plan_target re-plans when the mapping removes more than the limit; the re-plan gets
    what is left of the one budget, not a budget of its own: spent, it keeps today's."""
    from optimizer.mapping import map_topology
    from optimizer.te import TeSolver
    from optimizer.toe.reconfigure import plan_target, te_evaluator
    from optimizer.topology import uniform_mesh

    fab, tm, _ = case
    clock = FakeClock()
    removed: list[int] = []

    def mapper_spending_the_budget(fabric, target, current):
        result = map_topology(fabric, target, current)
        removed.append(result.removed)
        if len(removed) == 1:
            clock.jump()  # the first plan and its mapping used the whole budget
            return replace(result, removed=limit + 1)  # one over the limit: re-plan tighter
        return result

    knobs = ToeKnobs(max_change=0.5, time_limit=5)
    circuits = uniform_mesh(fab)
    limit = int(0.5 * len(circuits))
    target = plan_target(fab, [tm], circuits, knobs, te_evaluator(TeSolver(fab)),
                         mapper_spending_the_budget, clock=clock)
    assert len(removed) == 2 and removed[0] > 0  # the first plan did rewire
    assert target.toe.timed_out and target.toe.cut_stage == "scale"
    assert target.mapping.removed == 0
    assert np.array_equal(target.toe.topology.counts, mesh_topology(fab).counts)


def test_the_daemons_ladder_of_change_limits_shares_one_budget(case, monkeypatch):
    """Staging blocks the first plan after the budget is spent: no smaller change limit is
    planned on the spent budget (its LP would answer today's topology, an empty plan that
    looked complete), and the daemon's planner refuses, saying the time ran out."""
    import optimizer.toe.reconfigure as reconfigure
    from controller.reconfig.toe_run import ToePlanner
    from optimizer.policy import ReconfigurePolicy
    from optimizer.staging import StagingBlocked
    from optimizer.topology import uniform_mesh

    fab, tm, _ = case
    clock = FakeClock()
    staged: list[int] = []

    def blocked_after_the_budget(fabric, current, target, *args, **kwargs):
        staged.append(len(set(target) - set(current)))
        clock.jump()
        raise StagingBlocked(0, (fab.block_names[0], fab.block_names[1]), 0.9, 0.8)

    monkeypatch.setattr(reconfigure, "stage_changes", blocked_after_the_budget)
    planner = ToePlanner(fab, 0.8, time_limit=5, clock=clock)
    mesh = frozenset(uniform_mesh(fab))
    with pytest.raises(StagingBlocked, match="time limit ran out before a safe sequence of stages"):
        planner.propose("auto", tm, mesh, 0.0, None, ReconfigurePolicy(0.05, 0.0))
    assert len(staged) == 1 and staged[0] > 0  # the full plan rewired, was blocked, and no other


def test_the_daemons_planner_passes_its_time_limit_to_toe(monkeypatch):
    import optimizer.toe.reconfigure as reconfigure
    from controller.reconfig.toe_run import ToePlanner
    from optimizer.config import load_fabric
    from optimizer.policy import ReconfigurePolicy
    from optimizer.topology import uniform_mesh
    from optimizer.traffic import uniform_matrix

    fabric = load_fabric("configs/fabric-8.yaml")
    seen: list[float] = []
    real = reconfigure.plan_topology

    def spy(fabric, demands, current, knobs, *args, **kwargs):
        seen.append(kwargs["budget"].seconds)
        return real(fabric, demands, current, knobs, *args, **kwargs)

    monkeypatch.setattr(reconfigure, "plan_topology", spy)
    planner = ToePlanner(fabric, 0.8, time_limit=7.5)
    tm = uniform_matrix(fabric, load=0.3)
    planner.propose("operator", tm, uniform_mesh(fabric), 0.0, None, ReconfigurePolicy(0.1, 3600.0))
    assert seen and all(s == pytest.approx(7.5 * reconfigure.LP_SHARE) for s in seen)  # the LP share
