"""The look-ahead proof of how far safe stages get (benchmarks/hot/lookahead.py, issue 30): it
finds every stage the planner's search takes (never a worse best than the search reaches), and
where no two circuits of one OCS can be drained within the limit it proves at once that no
safe sequence exists, as the search finds none."""

from __future__ import annotations

import pytest

from benchmarks.hot.lookahead import prove
from optimizer.te import TeSolver
from optimizer.toe import te_evaluator
from optimizer.toe.sequence import sequence_steps
from optimizer.topology import uniform_mesh
from optimizer.traffic import ring_matrix
from tests.support.hot_fabrics import mesh_scaled, mixed_fabric


def _shift(blocks: int, uplinks: int, load: float):  # type: ignore[no-untyped-def]
    fabric = mixed_fabric(blocks, uplinks=uplinks, ocs=1, domains=1, speeds=(100.0,))
    return fabric, mesh_scaled(fabric, ring_matrix(fabric, 0, 0.5, phase=1), load)


def test_with_no_safe_two_circuit_drain_nothing_is_reachable_proven() -> None:
    fabric, tm = _shift(5, 8, 0.9)
    proof = prove(fabric, [tm], 0.8)
    assert proof.proven and proof.safe_drains == 0 and proof.topologies == 0
    assert proof.best == pytest.approx(0.9)
    assert sequence_steps(fabric, uniform_mesh(fabric), [tm], te_evaluator(TeSolver(fabric)), 0.8) is None


@pytest.mark.slow
def test_the_enumeration_reaches_at_least_what_the_search_does() -> None:
    fabric, tm = _shift(6, 6, 0.9)
    found = sequence_steps(fabric, uniform_mesh(fabric), [tm], te_evaluator(TeSolver(fabric)), 1.0)
    assert found is not None and found.final_mlu < 0.9 - 0.05
    proof = prove(fabric, [tm], 1.0, max_topologies=300)
    assert proof.safe_drains > 0 and proof.topologies > 0
    assert proof.best <= found.final_mlu * (1 + 1e-6)
    assert proof.best_depth <= len(found.stages)
