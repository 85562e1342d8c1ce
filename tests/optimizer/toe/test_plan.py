"""Topology engineering: the LP relaxation, rounding within port budgets, and the knobs."""

from __future__ import annotations

import numpy as np
import pulp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.config import generate_fabric
from optimizer.errors import ConfigError, InfeasibleError
from optimizer.fabric import Block, Ocs, OcsSides, build_fabric
from optimizer.toe import ToeKnobs, lp_min_mlu, plan_topology, worst_scale
from optimizer.toe.rounding import port_budget, removed_count, round_topology
from optimizer.topology import Topology, mesh_topology
from optimizer.traffic import TrafficMatrix, gravity_matrix, uniform_matrix

# -- rounding ---------------------------------------------------------------------------------


@st.composite
def fractional_topologies(draw):
    n = draw(st.integers(3, 9))
    budget = np.array(draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)), dtype=np.int64)
    raw = np.array(draw(st.lists(st.floats(0, 1), min_size=n * n, max_size=n * n))).reshape(n, n)
    raw = np.triu(raw, 1)
    raw = raw + raw.T
    # scale rows so every block stays within its budget (the LP guarantees this)
    rows = raw.sum(axis=1)
    factor = np.where(rows > 0, budget / np.maximum(rows, 1e-12), 0.0)
    scale = np.minimum(factor[:, None], factor[None, :])
    relaxed = raw * scale
    current = np.triu(
        np.array(draw(st.lists(st.integers(0, 3), min_size=n * n, max_size=n * n))).reshape(n, n), 1
    )
    current = current + current.T
    current = _trim(current, budget)
    demand = np.array(draw(st.lists(st.floats(0, 100), min_size=n * n, max_size=n * n))).reshape(n, n)
    np.fill_diagonal(demand, 0)
    return relaxed, budget, current, demand


def _trim(counts, budget):
    counts = counts.copy()
    for i in range(len(budget)):
        while counts[i].sum() > budget[i]:
            j = int(np.argmax(counts[i]))
            counts[i, j] -= 1
            counts[j, i] -= 1
    return counts


@settings(max_examples=80, deadline=None)
@given(fractional_topologies())
def test_rounding_keeps_every_block_within_its_ports(case):
    relaxed, budget, current, demand = case
    counts = round_topology(relaxed, budget, current, demand)
    assert counts.dtype.kind == "i"
    assert np.array_equal(counts, counts.T)
    assert not np.diag(counts).any()
    assert (counts >= 0).all()
    assert (counts.sum(axis=1) <= budget).all()
    # rounding only ever rounds up from the floor of the relaxation
    assert (counts >= np.floor(relaxed + 1e-6)).all()


@settings(max_examples=60, deadline=None)
@given(fractional_topologies(), st.integers(0, 6))
def test_rounding_respects_the_change_limit(case, max_removed):
    relaxed, budget, current, demand = case
    counts = round_topology(relaxed, budget, current, demand, max_removed=max_removed)
    assert removed_count(current, counts) <= max_removed
    assert (counts.sum(axis=1) <= budget).all()


def test_rounding_fills_free_ports_between_blocks_that_have_them():
    relaxed = np.array([[0, 1.5, 0.5], [1.5, 0, 0.5], [0.5, 0.5, 0]])
    counts = round_topology(relaxed, np.array([4, 4, 4]), np.zeros((3, 3), int), np.ones((3, 3)))
    assert counts.sum(axis=1).tolist() == [4, 4, 4]


def test_a_block_left_alone_with_free_ports_is_spliced_into_a_circuit():
    relaxed = np.array([[0, 1, 1, 0], [1, 0, 0, 0.9], [1, 0, 0, 0.9], [0, 0.9, 0.9, 0]])
    counts = round_topology(relaxed, np.array([4, 2, 2, 2]), np.zeros((4, 4), int), np.ones((4, 4)))
    assert counts.sum(axis=1).tolist() == [4, 2, 2, 2]
    assert counts[0, 1] + counts[0, 2] + counts[0, 3] == 4


def test_port_budget_counts_split_ports_and_drops_odd_shares_on_any_ocs():
    split = generate_fabric(4, 8, 2, 16, 1)
    assert port_budget(split).tolist() == [8, 8, 8, 8]
    blocks = [Block(f"b{i}", 6) for i in range(3)]
    any_ocs = build_fabric("any", blocks, [Ocs(f"o{i}", 12, sides=OcsSides.ANY) for i in range(2)])
    assert port_budget(any_ocs).tolist() == [4, 4, 4]  # 3 ports per OCS: only 2 count


# -- the relaxation and the plan -------------------------------------------------------------


def _pulp_min_mlu(fabric, topo, tm):
    """An independent path LP (PuLP + CBC): min MLU over direct and one-transit paths."""
    names = fabric.block_names
    n = len(names)
    cap = {
        (i, j): topo.counts[i, j] * fabric.link_speed_gbps(names[i], names[j])
        for i in range(n)
        for j in range(n)
    }
    prob = pulp.LpProblem("mlu", pulp.LpMinimize)
    u = pulp.LpVariable("u", lowBound=0)
    prob += u
    load = {e: [] for e in cap}
    for s in range(n):
        for d in range(n):
            demand = tm.gbps[s, d]
            if s == d or demand <= 0:
                continue
            paths = [[(s, d)]] + [[(s, k), (k, d)] for k in range(n) if k not in (s, d)]
            xs = []
            for p_i, path in enumerate(paths):
                x = pulp.LpVariable(f"x_{s}_{d}_{p_i}", lowBound=0)
                xs.append(x)
                for e in path:
                    load[e].append(x)
            prob += pulp.lpSum(xs) == demand
    for e, xs in load.items():
        if xs:
            prob += pulp.lpSum(xs) <= u * cap[e] if cap[e] > 0 else pulp.lpSum(xs) <= 0
    prob.solve(pulp.PULP_CBC_CMD(msg=False))
    return pulp.value(u)


def test_lp_min_mlu_agrees_with_an_independent_path_lp():
    fab = generate_fabric(5, 8, 2, 24, 1)
    topo = Topology.from_links(
        fab.block_names,
        [
            ("b1", "b2", 3),
            ("b2", "b3", 2),
            ("b3", "b4", 3),
            ("b4", "b5", 2),
            ("b1", "b5", 1),
            ("b1", "b3", 1),
        ],
    )
    tm = gravity_matrix(fab, seed=3, load=0.3, skew=1.0)
    assert lp_min_mlu(fab, topo, tm) == pytest.approx(_pulp_min_mlu(fab, topo, tm), rel=1e-6)


def _pairs_exchange(fabric, load=0.5, pairs=None):
    """Paired blocks (default 2i and 2i+1) swap ``load`` of their capacity both ways."""
    n = fabric.n_blocks
    pairs = pairs or [(i, i + 1) for i in range(0, n - 1, 2)]
    gbps = np.zeros((n, n))
    for i, j in pairs:
        cap = fabric.blocks[i].uplinks * fabric.blocks[i].speed_gbps
        gbps[i, j] = gbps[j, i] = load * cap
    return TrafficMatrix(fabric.block_names, gbps)


def test_plan_beats_the_mesh_on_a_matching_and_reports_an_honest_bound():
    fab = generate_fabric(8, 32, 4, 72, 2)
    tm = _pairs_exchange(fab)
    plan = plan_topology(fab, tm)
    mesh_scale = worst_scale(fab, mesh_topology(fab), [tm], lp_min_mlu)
    assert plan.throughput_scale > 1.5 * mesh_scale
    assert plan.throughput_scale <= plan.throughput_scale_relaxed * (1 + 1e-6)
    assert plan.throughput_scale >= 0.98 * plan.throughput_scale_relaxed
    # the reported scale is the rounded topology's own, re-evaluated
    assert plan.throughput_scale == pytest.approx(1 / lp_min_mlu(fab, plan.topology, tm), rel=1e-6)
    assert (plan.topology.degree() <= port_budget(fab)).all()


def test_plan_keeps_the_topology_when_it_is_already_right(fabric8):
    tm = uniform_matrix(fabric8, load=0.4)
    plan = plan_topology(fabric8, tm, current=mesh_topology(fabric8))
    assert plan.removed_lower_bound == 0
    assert np.array_equal(plan.topology.counts, mesh_topology(fabric8).counts)


def test_a_rounded_plan_worse_than_today_is_not_proposed():
    """The LP's plan is re-evaluated after rounding; if it then scales more than 0.5% below
    today's topology, today's is kept (throughput is the first objective)."""
    fab = generate_fabric(8, 32, 4, 72, 2)
    tm = _pairs_exchange(fab)
    today = mesh_topology(fab)

    def evaluate_favouring_today(fabric, topology, matrix):
        mlu = lp_min_mlu(fabric, topology, matrix)
        return mlu if np.array_equal(topology.counts, today.counts) else 10 * mlu

    plan = plan_topology(fab, tm, current=today, evaluate=evaluate_favouring_today)
    assert np.array_equal(plan.topology.counts, today.counts)
    assert plan.removed_lower_bound == 0
    assert plan.throughput_scale == pytest.approx(plan.current_throughput_scale)
    honest = plan_topology(fab, tm, current=today)
    assert not np.array_equal(honest.topology.counts, today.counts)


def test_several_matrices_plan_for_the_worst():
    fab = generate_fabric(6, 20, 2, 64, 1)
    a = _pairs_exchange(fab, pairs=[(0, 1), (2, 3), (4, 5)])
    b = _pairs_exchange(fab, pairs=[(0, 2), (1, 4), (3, 5)])
    both = plan_topology(fab, [a, b])
    only_a = plan_topology(fab, a)
    scale_a = 1 / lp_min_mlu(fab, both.topology, a)
    scale_b = 1 / lp_min_mlu(fab, both.topology, b)
    assert both.throughput_scale == pytest.approx(min(scale_a, scale_b), rel=1e-6)
    # the topology made for a alone serves b worse than the one made for both
    assert 1 / lp_min_mlu(fab, only_a.topology, b) < both.throughput_scale
    assert both.throughput_scale_relaxed <= only_a.throughput_scale_relaxed * (1 + 1e-9)


@pytest.mark.parametrize("max_change", [0.0, 0.02, 0.1])
def test_max_change_limits_the_circuits_removed(max_change):
    fab = generate_fabric(8, 32, 4, 72, 2)
    tm = _pairs_exchange(fab)
    current = mesh_topology(fab)
    unlimited = plan_topology(fab, tm, current)
    plan = plan_topology(fab, tm, current, ToeKnobs(max_change=max_change))
    limit = int(max_change * current.total_circuits())
    assert plan.max_removed == limit
    assert plan.removed_lower_bound <= limit < unlimited.removed_lower_bound
    assert plan.throughput_scale <= unlimited.throughput_scale + 1e-9
    if max_change == 0.0:
        assert np.array_equal(plan.topology.counts, current.counts)


def test_mesh_weight_pulls_the_plan_towards_the_mesh():
    fab = generate_fabric(8, 32, 4, 72, 2)
    tm = gravity_matrix(fab, seed=2, load=0.3, skew=1.5)
    mesh = mesh_topology(fab).counts
    free = plan_topology(fab, tm, Topology.empty(fab.block_names))
    near = plan_topology(fab, tm, Topology.empty(fab.block_names), ToeKnobs(mesh_weight=10.0))
    assert np.abs(near.topology.counts - mesh).sum() < np.abs(free.topology.counts - mesh).sum()
    assert near.throughput_scale >= 0.98 * free.throughput_scale_relaxed


# -- clear errors ------------------------------------------------------------------------------


def test_demand_to_a_block_without_ports_is_infeasible_and_named():
    blocks = [Block("b1", 8), Block("b2", 8), Block("b3", 8), Block("dark", 0)]
    fab = build_fabric("f", blocks, [Ocs("o1", 32), Ocs("o2", 32)])
    gbps = np.zeros((4, 4))
    gbps[0, 3] = 10.0
    with pytest.raises(InfeasibleError, match="dark has no OCS ports"):
        plan_topology(fab, TrafficMatrix(fab.block_names, gbps), current=Topology.empty(fab.block_names))


def test_more_circuits_than_ports_is_a_clear_error(fabric8):
    tm = uniform_matrix(fabric8)
    too_many = Topology.from_links(fabric8.block_names, [("b1", "b2", 40)])
    with pytest.raises(ConfigError, match="b1: 40 circuits but only 32 uplinks"):
        plan_topology(fabric8, tm, current=too_many)


def test_no_traffic_and_bad_knobs_are_errors(fabric8):
    with pytest.raises(InfeasibleError, match="no traffic"):
        plan_topology(fabric8, TrafficMatrix.zeros(fabric8.block_names))
    tm = uniform_matrix(fabric8)
    for knobs, key in (
        (ToeKnobs(max_change=1.5), "max_change"),
        (ToeKnobs(hedge=0.0), "hedge"),
        (ToeKnobs(mesh_weight=-1), "mesh_weight"),
    ):
        with pytest.raises(ConfigError, match=key):
            plan_topology(fabric8, tm, knobs=knobs)
    with pytest.raises(ConfigError, match="at least one"):
        plan_topology(fabric8, [])
