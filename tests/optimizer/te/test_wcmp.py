"""WCMP weight reduction: integer weights within the budget, with bounded over-subscription."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.config import generate_fabric, load_fabric
from optimizer.errors import ConfigError
from optimizer.te import solve_te
from optimizer.te.wcmp import oversubscription, reduce_weights
from optimizer.traffic import gravity_matrix, hotspot_matrix, ring_matrix


def brute_force_best(fractions: np.ndarray, budget: int) -> float:
    """The least over-subscription of any integer weights with total 1..budget."""
    best = np.inf
    members = len(fractions)
    for weights in itertools.product(range(budget + 1), repeat=members):
        total = sum(weights)
        if 1 <= total <= budget:
            best = min(best, float(oversubscription(np.array([weights]), fractions[None, :])[0]))
    return best


def test_exact_fractions_get_the_smallest_exact_weights() -> None:
    reduced = reduce_weights(np.array([[0.5, 0.3, 0.2], [0.25, 0.25, 0.5], [1.0, 0.0, 0.0]]), 128, 1.0)
    assert reduced.weights.tolist() == [[5, 3, 2], [1, 1, 2], [1, 0, 0]]
    assert reduced.oversubscription == pytest.approx([1.0, 1.0, 1.0])


def test_smallest_weights_within_the_bound() -> None:
    # 0.613 / 0.387: 5/3 is within 2% (0.625 / 0.613 = 1.0196); no smaller total is.
    reduced = reduce_weights(np.array([[0.613, 0.387]]), 128, 1.02)
    assert reduced.weights.tolist() == [[5, 3]]
    assert reduced.oversubscription[0] == pytest.approx(0.625 / 0.613)
    tighter = reduce_weights(np.array([[0.613, 0.387]]), 128, 1.001)
    assert tighter.weights.sum() > 8 and tighter.oversubscription[0] <= 1.001


def test_budget_too_small_gives_the_least_over_subscription_it_can() -> None:
    fractions = np.array([0.45, 0.35, 0.2])
    reduced = reduce_weights(fractions[None, :], 4, 1.0)
    assert reduced.weights.sum() <= 4
    assert reduced.oversubscription[0] > 1.0
    assert reduced.oversubscription[0] == pytest.approx(brute_force_best(fractions, 4))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=4).filter(lambda xs: sum(xs) > 0.01),
    st.integers(1, 7),
)
def test_reduction_is_as_good_as_brute_force(raw: list[float], budget: int) -> None:
    fractions = np.array(raw) / sum(raw)
    reduced = reduce_weights(fractions[None, :], budget, 1.0)
    weights = reduced.weights[0]
    assert weights.dtype.kind == "i" and (weights >= 0).all()
    assert 1 <= weights.sum() <= budget
    assert (weights[fractions == 0] == 0).all()
    assert reduced.oversubscription[0] == pytest.approx(brute_force_best(fractions, budget), rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.001, 1.0), min_size=2, max_size=12),
    st.integers(8, 128),
    st.floats(1.0, 1.2),
)
def test_reported_over_subscription_is_the_real_one(raw: list[float], budget: int, bound: float) -> None:
    fractions = np.array([raw]) / sum(raw)
    reduced = reduce_weights(fractions, budget, bound)
    assert reduced.weights.sum() <= budget
    assert reduced.oversubscription[0] == pytest.approx(oversubscription(reduced.weights, fractions)[0])
    # The bound is met whenever some total within the budget meets it.
    if brute_force_feasible(fractions[0], budget, bound):
        assert reduced.oversubscription[0] <= bound * (1 + 1e-9)


def brute_force_feasible(fractions: np.ndarray, budget: int, bound: float) -> bool:
    """Is there a total W <= budget whose greedy (optimal) weights meet the bound?"""
    for total in range(1, budget + 1):
        weights = np.zeros(len(fractions), dtype=np.int64)
        for _ in range(total):
            weights[np.argmin((weights + 1) / fractions)] += 1
        if oversubscription(weights[None, :], fractions[None, :])[0] <= bound * (1 + 1e-9):
            return True
    return False


def test_invalid_budget_or_bound() -> None:
    with pytest.raises(ConfigError, match="table_size"):
        reduce_weights(np.ones((1, 2)), 0)
    with pytest.raises(ConfigError, match="max_oversubscription"):
        reduce_weights(np.ones((1, 2)), 8, 0.9)


@pytest.mark.parametrize("kind", ["gravity", "hotspot", "ring"])
@pytest.mark.parametrize("table_size", [16, 128])
def test_plan_weights_fit_and_bound_the_quantised_mlu(kind: str, table_size: int) -> None:
    fab = load_fabric("configs/fabric-hybrid-8.yaml")
    tm = {
        "gravity": gravity_matrix(fab, seed=4, load=0.7, skew=1.5),
        "hotspot": hotspot_matrix(fab, seed=4, load=0.9),
        "ring": ring_matrix(fab, seed=4, load=0.9),
    }[kind]
    result = solve_te(fab, None, tm, table_size=table_size)
    for group in result.groups:
        weights = [h.weight for h in group.next_hops]
        assert all(isinstance(w, int) and w > 0 for w in weights)
        assert sum(weights) <= table_size
        assert group.oversubscription >= 1.0
    with_demand = [g.oversubscription for g in result.groups if g.demand_gbps > 0]
    assert result.oversubscription == pytest.approx(max(with_demand))
    assert result.mlu_quantized >= result.mlu * (1 - 1e-9)  # the LP is optimal
    # No link takes more than the load the groups' planned shares put on it times the worst
    # over-subscription (the shares are the LP's, or the link repair's where it re-planned).
    planned = _planned_loads(result)
    for link in result.links:
        assert link.load_gbps <= planned[link.src, link.dst] * result.oversubscription + 1e-6
    if table_size == 128:
        assert result.mlu_quantized <= result.mlu * 1.02 * (1 + 1e-9)


def _planned_loads(result) -> dict[tuple[str, str], float]:  # type: ignore[no-untyped-def]
    loads: dict[tuple[str, str], float] = {(link.src, link.dst): 0.0 for link in result.links}
    for g in result.groups:
        for h in g.next_hops:
            gbps = g.demand_gbps * h.share
            if h.via == g.dst:
                loads[g.src, g.dst] += gbps
            else:
                loads[g.src, h.via] += gbps
                loads[h.via, g.dst] += gbps
    return loads


def test_every_block_pair_has_a_group_even_without_demand() -> None:
    fab = load_fabric("configs/fabric-8.yaml")
    result = solve_te(fab, None, ring_matrix(fab, seed=1, load=0.3))
    assert len(result.groups) == 8 * 7
    idle = [g for g in result.groups if g.demand_gbps == 0]
    assert len(idle) == 8 * 6
    # Idle pairs split in proportion to path capacity (the oblivious hedge), direct included.
    assert all(g.dst in {h.via for h in g.next_hops} for g in idle)


def test_groups_too_wide_for_the_table_route_better_than_ecmp() -> None:
    # A ring spreads each pair over all 15 paths; 16 entries cannot follow the LP's unequal
    # split. Rounding each group alone loads some link more than ECMP over the same paths
    # (the old plan fell back to ECMP: 1.92); rounding them together on link loads beats it.
    fab = generate_fabric(16, 128, 32, 136, 4)
    tm = ring_matrix(fab, seed=1, load=0.9)
    result = solve_te(fab, None, tm, table_size=16)
    assert result.baseline_mlu == pytest.approx(1.92)
    assert result.mlu_quantized <= 1.8 + 1e-9
    for group in result.groups:
        assert group.entries <= 16
        assert sum(h.share for h in group.next_hops) == pytest.approx(1.0)
