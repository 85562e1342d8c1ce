"""Rounding can strand a pair with no path of two hops; reach_two_hops mends it by swaps."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.config import generate_fabric
from optimizer.toe import plan_topology
from optimizer.toe.reach import reach_two_hops, unreachable_pairs
from optimizer.toe.rounding import removed_count
from optimizer.topology import mesh_topology
from optimizer.traffic import TrafficMatrix


def _pairs_topology(n: int, degree: int, spare: int) -> np.ndarray:
    """Blocks paired (0-1, 2-3, ...), each pair sharing all but ``spare`` circuits; the spare
    ports join each block to the next pair's first block (a few two-hop paths, not all)."""
    counts = np.zeros((n, n), dtype=np.int64)
    for a in range(0, n, 2):
        counts[a, a + 1] = counts[a + 1, a] = degree - spare
    for a in range(n):
        b = (a + 2) % n
        counts[a, b] += spare
        counts[b, a] += spare
    return counts


def test_a_stranded_pair_gets_a_two_hop_path_and_degrees_stay() -> None:
    counts = _pairs_topology(8, 12, 1)
    demand = np.ones((8, 8)) - np.eye(8)
    assert unreachable_pairs(counts, demand).any()  # the premise: rounding's kind of result
    fixed, swaps = reach_two_hops(counts, demand)
    assert swaps > 0
    assert not unreachable_pairs(fixed, demand).any()
    assert np.array_equal(fixed.sum(axis=1), counts.sum(axis=1))  # every block keeps its ports
    assert np.array_equal(fixed, fixed.T)
    assert ((fixed > 0) | (counts == 0)).all()  # no pair that had a circuit lost its last one


def test_pairs_without_demand_are_left_alone() -> None:
    counts = _pairs_topology(8, 12, 1)
    demand = np.zeros((8, 8))
    demand[0, 1] = 5.0
    fixed, swaps = reach_two_hops(counts, demand)
    assert swaps == 0
    assert np.array_equal(fixed, counts)


def test_the_change_limit_is_kept() -> None:
    current = _pairs_topology(8, 12, 1)
    demand = np.ones((8, 8)) - np.eye(8)
    fixed, swaps = reach_two_hops(current, demand, current, max_removed=0)
    assert swaps == 0  # every swap removes two of today's circuits
    assert removed_count(current, fixed) == 0


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 5), st.integers(4, 16), st.integers(0, 3))
def test_any_paired_topology_is_mended_within_its_degrees(half: int, degree: int, spare: int) -> None:
    n = 2 * half
    counts = _pairs_topology(n, degree, min(spare, degree - 1))
    demand = np.ones((n, n)) - np.eye(n)
    fixed, _ = reach_two_hops(counts, demand)
    assert np.array_equal(fixed.sum(axis=1), counts.sum(axis=1))
    assert (fixed >= 0).all()
    if min(spare, degree - 1) > 0 and degree >= 4:
        assert not unreachable_pairs(fixed, demand).any()


def test_plan_for_hot_pairs_and_a_thin_background_is_not_thrown_away() -> None:
    # 8 blocks in hot pairs, 8 Gbit/s of background between every pair: the LP gives the
    # background slivers of circuits that rounding floors to nothing
    fabric = generate_fabric(8, 16, 4, 40)
    n = fabric.n_blocks
    gbps = np.full((n, n), 8.0) - 8.0 * np.eye(n)
    for a in range(0, n, 2):
        gbps[a, a + 1] = gbps[a + 1, a] = 1200.0
    plan = plan_topology(fabric, TrafficMatrix(fabric.block_names, gbps))
    counts = np.asarray(plan.topology.counts)
    assert not unreachable_pairs(counts, gbps).any()
    assert plan.throughput_scale > plan.current_throughput_scale * 1.2  # not today's mesh kept
    assert not np.array_equal(counts, np.asarray(mesh_topology(fabric).counts))
