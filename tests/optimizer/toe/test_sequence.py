"""Safe sequences of stages (issue 30): where one step alone does not lower the MLU the search
still finds the way, every stage keeps the stage rule (checked by an independent TE), spare
ports are used before anything is drained, a hose-bound block proves when nothing can be done,
and the rounded topology is never taken when it is worse than today's."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.fabric import Block, Ocs, build_fabric
from optimizer.te import TeSolver
from optimizer.toe import ToeKnobs, plan_topology, te_evaluator
from optimizer.toe import plan as plan_module
from optimizer.toe import swaps as swaps_module
from optimizer.toe.hose import block_demand, hose_floors, hose_limit
from optimizer.toe.sequence import sequence_steps
from optimizer.topology import Topology, mesh_topology, uniform_mesh
from optimizer.traffic import TrafficMatrix, ring_matrix
from tests.support.hot_fabrics import mesh_scaled, mixed_fabric, skewed
from tests.support.toe_support import replay_stage_rule

THRESHOLD = 0.8


def _shift_case(load: float) -> tuple:  # type: ignore[type-arg]
    """6 blocks of 10 uplinks on one OCS (two circuits per pair), each block sending to the
    block two places on: every hot pair needs more circuits before the MLU falls."""
    fabric = mixed_fabric(6, uplinks=10, ocs=1, domains=1, speeds=(100.0,))
    tm = mesh_scaled(fabric, ring_matrix(fabric, 0, 0.5, phase=1), load)
    return fabric, tm


def test_a_two_step_sequence_is_found_where_no_single_swap_lowers_the_mlu() -> None:
    fabric, tm = _shift_case(0.7)
    mesh = uniform_mesh(fabric)
    evaluate = te_evaluator(TeSolver(fabric))
    start = evaluate(fabric, mesh_topology(fabric), tm)

    def mlu_of(circuits):  # type: ignore[no-untyped-def]
        return evaluate(fabric, Topology.from_circuits(fabric, circuits), tm)

    with pytest.MonkeyPatch.context() as m:  # every distinct swap is checked
        m.setattr(swaps_module, "_ALL_SWAPS", 10**9)
        single = swaps_module.best_swap(fabric, set(mesh), [tm], mlu_of, max(THRESHOLD, start), start)
    assert single is None  # one step alone does not help

    plan = sequence_steps(fabric, mesh, [tm], evaluate, THRESHOLD)
    assert plan is not None
    assert len(plan.stages) >= 2
    assert plan.stages[0].mlu_after == pytest.approx(start, rel=1e-6)  # the first step only prepares
    assert plan.final_mlu < start - 0.05
    final = replay_stage_rule(fabric, mesh, plan.stages, tm, THRESHOLD)
    assert final == set(plan.final_circuits)


def test_a_hot_sequence_keeps_the_mlu_where_the_stage_starts() -> None:
    """Over the stage limit the rule is "never worse than now": the sequence still lowers the
    MLU when the operator's limit (at most 1) leaves room for its drains."""
    fabric, tm = _shift_case(0.9)
    mesh = uniform_mesh(fabric)
    plan = sequence_steps(fabric, mesh, [tm], te_evaluator(TeSolver(fabric)), 1.0)
    assert plan is not None and plan.final_mlu < 0.9 - 0.05
    replay_stage_rule(fabric, mesh, plan.stages, tm, 1.0)


def test_spare_ports_make_before_break() -> None:
    """A block pair with free ports gets its new circuit before anything is drained."""
    fabric, tm = _shift_case(0.7)
    mesh = sorted(uniform_mesh(fabric))
    names = fabric.block_names
    hot = {(names[i], names[j]) for i, j in zip(*np.nonzero(tm.gbps), strict=True)}
    # take away two circuits of hot pairs: their four ports are spare
    gone = [c for c in mesh if tuple(c.blocks(fabric)) in hot or tuple(reversed(c.blocks(fabric))) in hot][:2]
    today = [c for c in mesh if c not in gone]
    evaluate = te_evaluator(TeSolver(fabric))
    start = evaluate(fabric, Topology.from_circuits(fabric, today), tm)
    plan = sequence_steps(fabric, today, [tm], evaluate, THRESHOLD)
    assert plan is not None
    first = plan.stages[0]
    assert not first.remove and first.add  # made, nothing broken
    assert first.mlu_drained == pytest.approx(start)
    for c in first.add:
        a, b = c.blocks(fabric)
        assert (a, b) in hot or (b, a) in hot
    replay_stage_rule(fabric, today, plan.stages, tm, THRESHOLD)


def test_a_hose_bound_block_proves_that_no_safe_sequence_lowers_the_mlu() -> None:
    """hot-16 under the skewed matrix at mesh MLU 0.9: block a09 (200G, 8 of its 16 circuits
    at 100G) sends exactly 0.9 of its capacity; every drain of one of its circuits raises the
    MLU over 0.9 (checked by TE), so nothing safe can lower the MLU at the stage limit 0.8.
    With a stage limit of 1 the drain fits, no proof holds and the search finds the way."""
    fabric = mixed_fabric(16)
    tm = mesh_scaled(fabric, skewed(fabric), 0.9)
    mesh = uniform_mesh(fabric)
    evaluate = te_evaluator(TeSolver(fabric))
    start = evaluate(fabric, mesh_topology(fabric), tm)
    proof = hose_limit(fabric, mesh, [tm], start, THRESHOLD)
    assert proof is not None and proof.block == "a09"
    assert proof.mlu == pytest.approx(start, rel=1e-6)
    assert proof.drained_mlu == pytest.approx(0.9 * 2400 / 2300, rel=1e-6)
    for c in [c for c in mesh if "a09" in c.blocks(fabric)][:6]:
        drained = evaluate(fabric, Topology.from_circuits(fabric, set(mesh) - {c}), tm)
        assert drained >= proof.drained_mlu * (1 - 1e-6) - 1e-9 and drained > start
    assert hose_limit(fabric, mesh, [tm], start, 1.0) is None
    plan = sequence_steps(fabric, mesh, [tm], evaluate, 1.0)
    assert plan is not None and plan.final_mlu < 0.85
    floors = hose_floors(fabric, np.asarray(plan.final_topology.counts), block_demand([tm]))
    assert plan.final_mlu >= floors.max() * (1 - 1e-6)  # the floor is a lower bound


def test_the_rounded_topology_is_never_kept_when_worse_than_todays(monkeypatch) -> None:
    fabric, tm = _shift_case(0.9)
    mesh = uniform_mesh(fabric)
    today = np.asarray(mesh_topology(fabric).counts)

    def bad_rounding(relaxed, budget, current, combined, limit):  # type: ignore[no-untyped-def]
        hot = (combined + combined.T) > 0
        return np.where(hot, current - 1, current)  # every hot pair loses a circuit

    monkeypatch.setattr(plan_module, "round_topology", bad_rounding)
    real = te_evaluator(TeSolver(fabric))
    today_mlu = real(fabric, mesh_topology(fabric), tm)

    def evaluate(fab, topology, matrix):  # type: ignore[no-untyped-def]
        # any other topology is judged 0.2% worse than today's: within the old 0.5% tolerance
        same = np.array_equal(np.asarray(topology.counts), today)
        return today_mlu if same else today_mlu * 1.002

    plan = plan_topology(fabric, tm, mesh, ToeKnobs(), evaluate)
    assert np.array_equal(np.asarray(plan.topology.counts), today)
    assert plan.throughput_scale == pytest.approx(plan.current_throughput_scale)


def test_the_hose_floor_is_a_lower_bound_on_a_small_fabric() -> None:
    blocks = [Block(f"b{i}", 4, 100.0 if i % 2 else 200.0) for i in range(4)]
    fabric = build_fabric("small", blocks, [Ocs("o0", 16, 0), Ocs("o1", 16, 1)])
    gbps = np.array([[0, 300, 100, 50], [200, 0, 40, 40], [60, 30, 0, 20], [10, 10, 10, 0]], dtype=float)
    tm = TrafficMatrix(fabric.block_names, gbps)
    topo = mesh_topology(fabric)
    floors = hose_floors(fabric, np.asarray(topo.counts), block_demand([tm]))
    assert TeSolver(fabric).min_mlu(topo, tm) >= floors.max() * (1 - 1e-9)


@pytest.mark.parametrize(("load", "threshold"), [(0.7, THRESHOLD), (0.9, 1.0)])
def test_the_planner_finds_the_sequence_where_its_target_does_not_help(load: float, threshold: float) -> None:
    """plan_target (``heliostat toe`` and the daemon) on the 6-block shift: its rounded target
    does not lower the MLU, no single swap does, and it still returns safe stages that do."""
    from optimizer.toe import plan_target

    fabric, tm = _shift_case(load)
    mesh = uniform_mesh(fabric)
    evaluate = te_evaluator(TeSolver(fabric))
    target = plan_target(fabric, [tm], mesh, ToeKnobs(time_limit=60), evaluate, threshold=threshold)
    staging = target.staging
    assert staging is not None and len(staging.stages) >= 2
    assert staging.final_mlu < load - 0.05
    assert "safe stages found one by one" in (staging.blocked or "")
    final = replay_stage_rule(fabric, mesh, staging.stages, tm, threshold)
    assert final == set(staging.final_circuits)
