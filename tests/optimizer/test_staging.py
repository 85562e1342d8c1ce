"""Staging: domain-confined stages whose drained topology keeps MLU within the limit."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.errors import InfeasibleError
from optimizer.fabric import Side
from optimizer.staging import StagingBlocked, stage_changes
from optimizer.toe import lp_min_mlu, te_min_mlu
from optimizer.topology import Circuit, Topology, uniform_mesh
from optimizer.traffic import TrafficMatrix, gravity_matrix
from tests.support.toe_support import swap_rewire, wiring_problems


def _replay(fabric, current, plan):
    """Apply the stages in order, checking every intermediate state independently."""
    state = set(current)
    for stage in plan.stages:
        ocs_domains = {fabric.ocs_named(c.ocs).domain for c in stage.remove + stage.add}
        assert ocs_domains <= {stage.domain}, "a stage touches two failure domains"
        assert set(stage.remove) <= state
        drained = state - set(stage.remove)
        used = {(c.ocs, p) for c in drained for p in (c.a, c.b)}
        for c in stage.add:
            assert (c.ocs, c.a) not in used and (c.ocs, c.b) not in used, "added before its ports were freed"
        state = drained | set(stage.add)
        assert wiring_problems(fabric, state) == []
        yield stage, drained


@pytest.mark.parametrize(("seed", "threshold", "load"), [(1, 0.8, 0.4), (2, 0.6, 0.5), (3, 0.7, 0.6)])
def test_every_stage_keeps_drained_mlu_within_the_limit(fabric8, seed, threshold, load):
    current = uniform_mesh(fabric8)
    target = swap_rewire(fabric8, current, swaps=12, seed=seed)
    tm = gravity_matrix(fabric8, seed=seed, load=load, skew=1.0)
    plan = stage_changes(fabric8, current, target, tm, te_min_mlu(), threshold=threshold)
    assert len(plan.stages) >= 2
    for stage, drained in _replay(fabric8, current, plan):
        assert stage.mlu_drained <= max(threshold, stage.mlu_start) + 1e-9
        # the reported drained MLU is the drained topology's own (checked by an independent LP)
        independent = lp_min_mlu(fabric8, Topology.from_circuits(fabric8, drained), tm)
        assert stage.mlu_drained == pytest.approx(independent, rel=1e-5)
    assert set(target) == set(plan.final_circuits)


def test_a_tight_threshold_blocks_rather_than_emit_an_unsafe_stage(fabric8):
    current = uniform_mesh(fabric8)
    target = swap_rewire(fabric8, current, swaps=12, seed=3)
    tm = gravity_matrix(fabric8, seed=3, load=0.5, skew=1.0)
    with pytest.raises(StagingBlocked) as info:
        stage_changes(fabric8, current, target, tm, te_min_mlu(), threshold=0.3)
    assert info.value.mlu > info.value.limit == pytest.approx(0.5)
    assert info.value.pair[0] in fabric8.block_names and info.value.pair[1] in fabric8.block_names


def test_whole_domains_move_at_once_when_there_is_slack(fabric8):
    current = uniform_mesh(fabric8)
    target = swap_rewire(fabric8, current, swaps=10, seed=7)
    changed_domains = {fabric8.ocs_named(c.ocs).domain for c in set(current) ^ set(target)}
    tm = gravity_matrix(fabric8, seed=1, load=0.1)
    plan = stage_changes(fabric8, current, target, tm, te_min_mlu())
    assert [s.domain for s in plan.stages] == sorted(changed_domains)


def test_a_domain_is_split_when_draining_all_of_it_would_overload(fabric8):
    current = uniform_mesh(fabric8)
    target = swap_rewire(fabric8, current, swaps=30, seed=11)
    tm = gravity_matrix(fabric8, seed=4, load=0.5, skew=0.5)
    evaluate = te_min_mlu()
    start = evaluate(fabric8, Topology.from_circuits(fabric8, current), tm)
    removed_d0 = {c for c in set(current) - set(target) if fabric8.ocs_named(c.ocs).domain == 0}
    whole = evaluate(fabric8, Topology.from_circuits(fabric8, set(current) - removed_d0), tm)
    assert whole > start * 1.02  # the premise: draining the whole domain costs something
    threshold = (start + whole) / 2
    plan = stage_changes(fabric8, current, target, tm, evaluate, threshold=threshold)
    assert len(plan.stages) > len(fabric8.domains)
    for stage, _ in _replay(fabric8, current, plan):
        assert stage.mlu_drained <= max(threshold, stage.mlu_start) + 1e-9


def _north_south_blocks(fabric, c):
    pa, pb = c.ends(fabric)
    return (pa.block, pb.block) if pa.side is Side.NORTH else (pb.block, pa.block)


def test_blocked_staging_names_the_block_pair(fabric4):
    current = list(uniform_mesh(fabric4))
    on_ocs1 = [c for c in current if c.ocs == "ocs1"]
    hot = next(c for c in on_ocs1 if _north_south_blocks(fabric4, c) == ("b1", "b2"))
    idle = next(c for c in on_ocs1 if _north_south_blocks(fabric4, c) == ("b3", "b4"))
    hot_n, hot_s = (hot.a, hot.b) if fabric4.wired_port("ocs1", hot.a).side is Side.NORTH else (hot.b, hot.a)
    idle_n, idle_s = (
        (idle.a, idle.b) if fabric4.wired_port("ocs1", idle.a).side is Side.NORTH else (idle.b, idle.a)
    )
    target = [c for c in current if c not in (hot, idle)] + [
        Circuit("ocs1", hot_n, idle_s),
        Circuit("ocs1", idle_n, hot_s),
    ]
    gbps = np.zeros((4, 4))
    gbps[0, 1] = 100.0
    evaluate = te_min_mlu()
    unit = evaluate(
        fabric4, Topology.from_circuits(fabric4, current), TrafficMatrix(fabric4.block_names, gbps)
    )
    tm = TrafficMatrix(fabric4.block_names, gbps * 0.79 / unit)  # start MLU 0.79, just under 0.8
    with pytest.raises(StagingBlocked) as info:
        stage_changes(fabric4, current, target, tm, evaluate, threshold=0.8)
    assert info.value.pair == ("b1", "b2")
    assert info.value.domain == 0
    assert "b1 and b2" in str(info.value)


def test_a_congested_fabric_is_staged_without_getting_worse(fabric8):
    current = uniform_mesh(fabric8)
    idle = {"b5", "b6", "b7", "b8"}
    target = swap_rewire(fabric8, current, swaps=6, seed=5, blocks=idle)
    gbps = np.zeros((8, 8))
    gbps[0, 1] = gbps[1, 0] = 4000.0  # b1 <-> b2, far over what the mesh carries at 0.8
    tm = TrafficMatrix(fabric8.block_names, gbps)
    plan = stage_changes(fabric8, current, target, tm, te_min_mlu(), threshold=0.8)
    assert plan.start_mlu > 0.8
    assert plan.stages
    for stage, _ in _replay(fabric8, current, plan):
        assert stage.mlu_drained <= stage.mlu_start + 1e-9
    # the same congested fabric refuses a change that drains the hot pair's paths
    hot_target = swap_rewire(fabric8, current, swaps=6, seed=5, blocks={"b1", "b2", "b3", "b4"})
    with pytest.raises(StagingBlocked):
        stage_changes(fabric8, current, hot_target, tm, te_min_mlu(), threshold=0.8)


def test_no_change_gives_no_stages_and_bad_threshold_is_an_error(fabric8):
    current = uniform_mesh(fabric8)
    tm = gravity_matrix(fabric8, seed=1)
    plan = stage_changes(fabric8, current, current, tm, te_min_mlu())
    assert plan.stages == ()
    assert plan.final_mlu == pytest.approx(plan.start_mlu)
    with pytest.raises(InfeasibleError, match="threshold"):
        stage_changes(fabric8, current, current, tm, te_min_mlu(), threshold=0.0)


def _fake_te(full: int, target: Topology | None = None):
    """A stand-in TE for the staging's control flow: each circuit below ``full`` raises the MLU
    by 0.03 (so a 0.8 limit drains at most ten at a time); with ``target``, every pair unit
    closer to it lowers the MLU a little."""

    def evaluate(fabric, topology, tm) -> float:  # type: ignore[no-untyped-def]
        counts = np.asarray(topology.counts)
        mlu = 0.5 + 0.03 * (full - int(np.triu(counts, 1).sum()))
        if target is not None:
            mlu += 1e-3 * float(np.abs(counts - np.asarray(target.counts)).sum())
        return mlu

    return evaluate


def test_staging_out_of_patience_stops_only_while_no_stage_lowered_the_mlu(fabric8):
    from optimizer.budget import TimeBudget
    from optimizer.staging import StagingTimedOut

    current = uniform_mesh(fabric8)
    target = swap_rewire(fabric8, current, swaps=12, seed=3)
    tm = gravity_matrix(fabric8, seed=3, load=0.5, skew=1.0)
    now = [0.0]
    budget = TimeBudget(60, lambda: now[0])
    patience = budget.portion(0.5)
    now[0] = 40.0  # past the patience (30 s), within the budget
    domains = len({fabric8.ocs_named(c.ocs).domain for c in set(current) ^ set(target)})

    # stages that only hold the MLU: cut once every domain had one, naming the share that ran out
    holding = _fake_te(len(current))
    whole = stage_changes(fabric8, current, target, tm, holding, threshold=0.8, partial=True, budget=budget)
    assert len(whole.stages) > domains  # the change takes more stages than that
    with pytest.raises(StagingTimedOut, match=r"its share \(30 s\) of the plan's time limit \(60 s\) ran out "
                       rf"after {domains} stages, and no stage lowered the MLU"):
        stage_changes(fabric8, current, target, tm, holding, threshold=0.8, partial=True, budget=budget,
                      patience=patience)

    # stages that lower it: the patience does not stop them
    lowering = _fake_te(len(current), Topology.from_circuits(fabric8, target))
    plan = stage_changes(fabric8, current, target, tm, lowering, threshold=0.8, partial=True, budget=budget,
                         patience=patience)
    assert plan.complete and set(plan.final_circuits) == set(target)
