"""The topology LP's choice of solver per column generation round (optimizer/toe/lp/solver.py):
which rounds go to IPM with crossover, and that they reach the simplex's optimum."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.config import generate_fabric
from optimizer.toe import ToeKnobs
from optimizer.toe.lp import ToeLp
from optimizer.toe.lp import columns as lp_columns
from optimizer.toe.lp import solver as lp_solver
from optimizer.toe.plan import build_problem
from optimizer.topology import mesh_topology
from optimizer.traffic import TrafficMatrix


def test_big_growth_goes_to_ipm_and_then_every_big_round() -> None:
    pays = lp_solver._ipm_pays
    # growth: at least _IPM_MIN_ADDED paths and over a quarter of those already in the LP
    assert pays(5000, 10_000, degenerate=False)
    assert not pays(5000, 30_000, degenerate=False)  # big, but a small growth
    assert not pays(3000, 1000, degenerate=False)  # a big growth of few paths
    # after such a round: every round of at least _IPM_DEGENERATE_ADDED paths
    assert pays(5000, 30_000, degenerate=True)
    assert pays(2000, 60_000, degenerate=True)
    assert not pays(1999, 60_000, degenerate=True)


def _ring_plan(blocks: int) -> ToeLp:
    fabric = generate_fabric(blocks, 16, 8, 2 * blocks, 2)
    n = fabric.n_blocks
    gbps = np.full((n, n), 2.0)
    for i in range(n):  # a ring of hot pairs far over their direct circuits
        gbps[i, (i + 1) % n] = gbps[(i + 1) % n, i] = 800.0
    np.fill_diagonal(gbps, 0.0)
    demand = TrafficMatrix(fabric.block_names, gbps)
    return ToeLp(build_problem(fabric, [demand], mesh_topology(fabric), ToeKnobs()))


@pytest.mark.parametrize("blocks", [8, 12])
def test_rounds_by_ipm_reach_the_simplex_optimum(blocks: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # transit paths priced in round by round, as at 64 blocks (small fabrics get them all at once)
    monkeypatch.setattr(lp_columns, "_SEED_ALL_UP_TO", 3)
    by_simplex = _ring_plan(blocks)
    by_simplex.solve()
    # every round that adds a path goes to IPM with crossover
    monkeypatch.setattr(lp_solver, "_IPM_MIN_ADDED", 1)
    monkeypatch.setattr(lp_solver, "_IPM_AFTER_GROWTH", 0.0)
    monkeypatch.setattr(lp_solver, "_IPM_DEGENERATE_ADDED", 1)
    by_ipm = _ring_plan(blocks)
    runs: list[bool] = []
    run = by_ipm._run

    def counted() -> None:
        runs.append(by_ipm._ipm_next)
        run()

    monkeypatch.setattr(by_ipm, "_run", counted)
    by_ipm.solve()
    assert by_ipm.converged and by_simplex.converged
    assert any(runs[1:]), "no round went to IPM"
    assert by_ipm._degenerate
    assert by_ipm.theta() == pytest.approx(by_simplex.theta(), rel=1e-7)
    assert by_ipm.theta() > 0.0
