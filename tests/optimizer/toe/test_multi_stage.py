"""Stages that re-pair several circuits at once (optimizer/toe/multi_stage.py, issue 30 item 2):
where one swap at a time stops, a stage of three circuits (or two swaps of one failure domain)
goes lower, and every stage still passes the stage rule, replayed with the reference LP."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.budget import TimeBudget
from optimizer.fabric import Fabric
from optimizer.te import TeSolver
from optimizer.toe import swaps as swaps_module
from optimizer.toe import te_evaluator
from optimizer.toe.hose import block_demand, speed_matrix, spine_capacity
from optimizer.toe.multi_stage import MultiStageSearch
from optimizer.toe.sequence import sequence_steps
from optimizer.toe.swap_rank import SwapRanker
from optimizer.topology import Circuit, Topology, check_circuits, uniform_mesh
from optimizer.traffic import TrafficMatrix, ring_matrix
from tests.support.hot_fabrics import mesh_scaled, mixed_fabric, shift
from tests.support.te_reference import reference_mlu
from tests.support.toe_support import replay_stage_rule

THRESHOLD = 0.8


def _case(phase: int, load: float = 0.9) -> tuple[Fabric, TrafficMatrix]:
    """8 mixed 100G/200G blocks of 8 uplinks on two OCSes of one failure domain; ``phase`` 1:
    each block sends to the block two places on (a shift), 0: to the next (a ring)."""
    fabric = mixed_fabric(8, uplinks=8, ocs=2, domains=1)
    return fabric, mesh_scaled(fabric, ring_matrix(fabric, 0, 0.5, phase=phase), load)


def test_a_three_circuit_stage_goes_where_no_single_swap_does() -> None:
    fabric, tm = _case(phase=1)
    mesh = uniform_mesh(fabric)
    evaluate = te_evaluator(TeSolver(fabric))
    start = evaluate(fabric, Topology.from_circuits(fabric, mesh), tm)

    def mlu_of(circuits: set[Circuit]) -> float:
        return evaluate(fabric, Topology.from_circuits(fabric, circuits), tm)

    with pytest.MonkeyPatch.context() as m:  # every distinct swap from the mesh is checked
        m.setattr(swaps_module, "_ALL_SWAPS", 10**9)
        single = swaps_module.best_swap(fabric, set(mesh), [tm], mlu_of, max(THRESHOLD, start), start)
    swaps_only = sequence_steps(fabric, mesh, [tm], evaluate, THRESHOLD, multi=False)
    plan = sequence_steps(fabric, mesh, [tm], evaluate, THRESHOLD)
    assert plan is not None and swaps_only is not None and single is not None
    # the best single swap, and the whole sequence of single swaps, stop higher
    assert plan.final_mlu < single[2] * (1 - 1e-4)
    assert plan.final_mlu < swaps_only.final_mlu * (1 - 1e-4)
    assert max(len(s.remove) for s in plan.stages) >= 3
    for stage in plan.stages:  # each stage re-pairs ports of one failure domain
        assert len({fabric.ocs_named(c.ocs).domain for c in stage.remove + stage.add}) == 1
        assert len(stage.remove) == len(stage.add)
    final = replay_stage_rule(fabric, mesh, plan.stages, tm, THRESHOLD, exact_drain=True)
    assert final == set(plan.final_circuits)


def test_the_single_swap_sequence_is_kept_where_it_goes_further() -> None:
    """On the ring a large first stage lowers the limit of every stage after it: the swaps'
    three small steps reach lower, and the planner keeps them."""
    fabric, tm = _case(phase=0)
    mesh = uniform_mesh(fabric)
    evaluate = te_evaluator(TeSolver(fabric))
    swaps_only = sequence_steps(fabric, mesh, [tm], evaluate, THRESHOLD, multi=False)
    plan = sequence_steps(fabric, mesh, [tm], evaluate, THRESHOLD)
    assert plan is not None and swaps_only is not None
    assert plan.final_mlu <= swaps_only.final_mlu * (1 + 1e-9)
    replay_stage_rule(fabric, mesh, plan.stages, tm, THRESHOLD, exact_drain=True)


def test_every_move_found_is_safe_and_no_better_one_is_missed_among_swaps() -> None:
    """From the mesh of the shift case: the move found drains within the limit (TE), and no
    single swap of the exhaustive single-swap search has a lower MLU after it."""
    fabric, tm = _case(phase=1)
    mesh = set(uniform_mesh(fabric))
    evaluate = te_evaluator(TeSolver(fabric))
    counts = np.asarray(Topology.from_circuits(fabric, mesh).counts)

    def mlu_counts(c: np.ndarray) -> float:
        return evaluate(fabric, Topology(fabric.block_names, c), tm)

    def mlu_of(circuits: set[Circuit]) -> float:
        return evaluate(fabric, Topology.from_circuits(fabric, circuits), tm)

    start = mlu_counts(counts)
    limit = max(THRESHOLD, start)
    pair_demand = np.maximum(tm.gbps, tm.gbps.T)
    ranker = SwapRanker(fabric, counts, pair_demand, speed_matrix(fabric), block_demand([tm]),
                        spine_capacity(fabric))
    move = MultiStageSearch(fabric, mesh, ranker, mlu_counts, limit, start, TimeBudget(120)).best()
    assert move is not None
    drained = reference_mlu(fabric, tm, Topology.from_circuits(fabric, mesh - set(move.removed)))
    assert move.drained == pytest.approx(drained, rel=1e-4)
    assert move.drained <= limit + 1e-9
    after = (mesh - set(move.removed)) | set(move.added)
    check_circuits(fabric, tuple(after))
    assert move.after == pytest.approx(mlu_of(after), rel=1e-9)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(swaps_module, "_ALL_SWAPS", 10**9)
        single = swaps_module.best_swap(fabric, mesh, [tm], mlu_of, limit, start)
    assert single is not None and move.after <= single[2] * (1 + 1e-9)


@pytest.mark.slow
def test_hot16_shift_goes_past_the_single_swap_at_the_stage_limit() -> None:
    """hot-16 under the shift at mesh MLU 0.9, stage limit 0.8: single swaps stop after one
    step at 0.889; the stages of several circuits go lower, every stage within the rule."""
    fabric = mixed_fabric(16)
    tm = mesh_scaled(fabric, shift(fabric), 0.9)
    mesh = uniform_mesh(fabric)
    evaluate = te_evaluator(TeSolver(fabric))
    swaps_only = sequence_steps(fabric, mesh, [tm], evaluate, THRESHOLD, multi=False)
    plan = sequence_steps(fabric, mesh, [tm], evaluate, THRESHOLD)
    assert plan is not None and swaps_only is not None
    assert plan.final_mlu < swaps_only.final_mlu - 0.004
    replay_stage_rule(fabric, mesh, plan.stages, tm, THRESHOLD, exact_drain=True)
