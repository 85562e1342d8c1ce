"""The starved-block repair after ToE rounding (optimizer.toe.repair), alone and inside plan_topology."""

from __future__ import annotations

import numpy as np
import pytest

import optimizer.toe.plan as toe
from optimizer.toe import ToeKnobs, plan_topology, te_min_mlu, worst_scale
from optimizer.toe.repair import repair_starved_blocks
from optimizer.toe.rounding import port_budget, removed_count
from optimizer.topology import Topology, mesh_topology
from optimizer.traffic import TrafficMatrix, gravity_matrix, hotspot_matrix
from tests.support import shipped_fabric
from tests.support.toe_support import B7, STARVED

FABRIC = shipped_fabric("fabric-8")
BUDGET = port_budget(FABRIC)



def te_scale(tm: TrafficMatrix):
    evaluate = te_min_mlu()
    return lambda counts: worst_scale(FABRIC, Topology(FABRIC.block_names, counts), [tm], evaluate)


def test_the_starved_rounding_is_what_the_repair_is_for():
    spare = BUDGET - STARVED.sum(axis=1)
    assert spare[B7] == 4 and np.delete(spare, B7).tolist() == [0] * 7
    assert np.array_equal(STARVED, STARVED.T)


def test_a_starved_block_gets_its_ports_when_te_says_it_is_better():
    tm = hotspot_matrix(FABRIC, seed=1, load=0.6)
    scale_of = te_scale(tm)
    repair = repair_starved_blocks(STARVED, BUDGET, mesh_topology(FABRIC).counts, tm.gbps, scale_of)
    counts = repair.counts
    assert len(repair.trades) == 2  # two ports per trade
    assert np.array_equal(counts, counts.T) and not np.diag(counts).any() and (counts >= 0).all()
    assert (counts.sum(axis=1) <= BUDGET).all() and counts.sum(axis=1)[B7] == BUDGET[B7]
    assert (counts[STARVED > 0] >= 1).all()  # no pair loses its last circuit
    assert repair.scale == pytest.approx(scale_of(counts))
    before, after = 1 / scale_of(STARVED), 1 / repair.scale
    assert after < before - 0.05  # the MLU, as the daemon's own fix measured it
    assert all(t.scale_after > t.scale_before for t in repair.trades)


def test_a_trade_that_does_not_raise_the_scale_is_not_made():
    tm = hotspot_matrix(FABRIC, seed=1, load=0.6)
    calls: list[np.ndarray] = []

    def flat(counts: np.ndarray) -> float:
        calls.append(counts)
        return 1.0

    repair = repair_starved_blocks(STARVED, BUDGET, STARVED, tm.gbps, flat)
    assert repair.trades == () and np.array_equal(repair.counts, STARVED)
    assert len(calls) == 2  # today's rounding, then the one trade tried


def test_nothing_is_evaluated_when_no_block_has_two_free_ports():
    def never(counts: np.ndarray) -> float:
        raise AssertionError("evaluated")

    mesh = mesh_topology(FABRIC).counts
    repair = repair_starved_blocks(mesh, BUDGET, mesh, np.ones((8, 8)), never)
    assert repair.trades == () and repair.scale is None and np.array_equal(repair.counts, mesh)


def test_a_trade_never_breaks_the_change_limit():
    tm = hotspot_matrix(FABRIC, seed=1, load=0.6)
    scale_of = te_scale(tm)
    # today is the starved rounding itself: every trade removes one of today's circuits
    limited = repair_starved_blocks(STARVED, BUDGET, STARVED, tm.gbps, scale_of, max_removed=1)
    assert len(limited.trades) == 1 and removed_count(STARVED, limited.counts) == 1
    frozen = repair_starved_blocks(STARVED, BUDGET, STARVED, tm.gbps, scale_of, max_removed=0)
    assert frozen.trades == () and np.array_equal(frozen.counts, STARVED)


def test_plan_topology_repairs_the_rounding_and_reports_the_trades(monkeypatch):
    tm = hotspot_matrix(FABRIC, seed=1, load=0.6)
    monkeypatch.setattr(toe, "round_topology", lambda *args, **kwargs: STARVED.copy())
    plan = plan_topology(FABRIC, tm)
    assert plan.repair_trades == 2 and plan.to_json()["repair_trades"] == 2
    assert plan.topology.counts.sum(axis=1)[B7] == BUDGET[B7]
    assert plan.throughput_scale == pytest.approx(
        worst_scale(FABRIC, plan.topology, [tm], te_min_mlu()), rel=1e-6
    )


def test_plan_topology_keeps_free_ports_when_trading_for_them_does_not_help():
    # Re-planning yesterday's hotspot topology for a gravity matrix: rounding leaves b5 with
    # 10 free ports, but the plan already reaches the egress bound (scale 2 at load 0.5).
    yesterday = plan_topology(FABRIC, hotspot_matrix(FABRIC, seed=0, load=0.6)).topology
    plan = plan_topology(FABRIC, gravity_matrix(FABRIC, seed=0, skew=2.0), yesterday, ToeKnobs())
    spare = BUDGET - plan.topology.counts.sum(axis=1)
    assert spare.max() >= 2
    assert plan.repair_trades == 0 and plan.to_json()["repair_trades"] == 0
    assert plan.throughput_scale == pytest.approx(2.0, rel=1e-6)
