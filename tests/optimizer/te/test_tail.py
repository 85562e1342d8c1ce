"""The tail term of the scenario TE (optimizer/te/scenarios.py: cvar, tail_risk, ``tail``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.errors import ConfigError
from optimizer.te import TePolicy
from optimizer.te.paths import all_pairs, build_link_graph, candidate_paths
from optimizer.te.scenarios import PathOperator, cvar, hose_bounds, path_caps, solve_scenarios, tail_risk
from optimizer.topology import mesh_topology
from optimizer.traffic import TrafficMatrix, uniform_matrix

_ratios = st.lists(st.floats(0.5, 3.0), min_size=1, max_size=12)


def _rockafellar_uryasev(ratios: np.ndarray, shares: np.ndarray, mass: float) -> float:
    """CVaR as min over t of t + E[(r - t)+] / mass: the minimum is at one of the ratios."""
    return min(float(t + shares @ np.maximum(ratios - t, 0.0) / mass) for t in ratios)


@settings(max_examples=80, deadline=None)
@given(_ratios, st.floats(0.05, 1.0), st.integers(0, 2**31))
def test_cvar_is_the_mean_of_the_worst_mass(values, mass, seed) -> None:
    ratios = np.array(values)
    shares = np.random.default_rng(seed).random(len(ratios)) + 0.1
    shares /= shares.sum()
    value, weights = cvar(ratios, shares, mass)
    assert value == pytest.approx(_rockafellar_uryasev(ratios, shares, mass), abs=1e-9)
    assert weights.sum() == pytest.approx(1.0)
    assert (weights <= shares / mass + 1e-12).all()  # no ratio counts more than its share allows
    assert float(weights @ ratios) == pytest.approx(value)
    assert ratios.max() + 1e-12 >= value >= float(shares @ ratios) - 1e-12


@settings(max_examples=60, deadline=None)
@given(_ratios, st.floats(0.05, 0.5), st.floats(1e-3, 0.05))
def test_the_smooth_cvar_is_just_above_the_cvar_and_its_gradient_is_its_derivative(values, mass, mu) -> None:
    ratios = np.array(values)
    shares = np.full(len(ratios), 1.0 / len(ratios))
    exact, _ = cvar(ratios, shares, mass)
    smooth, weights = cvar(ratios, shares, mass, mu)
    assert exact - 1e-9 <= smooth <= exact + mu * np.log(2.0) / mass + 1e-9
    direction = np.random.default_rng(len(values)).standard_normal(len(ratios))
    h = 1e-7
    up = cvar(ratios + h * direction, shares, mass, mu)[0]
    down = cvar(ratios - h * direction, shares, mass, mu)[0]
    numeric = (up - down) / (2 * h)
    assert float(weights @ direction) == pytest.approx(numeric, rel=1e-4, abs=1e-6)


def test_tail_risk_mixes_the_mean_and_the_worst() -> None:
    ratios = np.array([1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 3.0])
    shares = np.full(10, 0.1)
    assert tail_risk(ratios, shares, 0.0)[0] == pytest.approx(ratios.mean())
    # the worst 5% (TAIL_MASS) is the 3.0 alone
    assert tail_risk(ratios, shares, 0.5)[0] == pytest.approx(0.5 * ratios.mean() + 0.5 * 3.0)


def test_a_tail_share_lowers_the_worst_scenario_s_ratio(fabric8) -> None:
    # Nine matrices of one heavy pair (best spread over every two-hop path) and one even
    # matrix (best sent direct, every link busy): the mean routes the nine and lets the even
    # one be; with a share of the objective on the worst few (the even one), the routing
    # gives it a lower ratio.
    graph = build_link_graph(fabric8, mesh_topology(fabric8))
    src, dst = all_pairs(fabric8.n_blocks)
    paths = candidate_paths(graph, src, dst)
    operator = PathOperator(graph, paths)
    even = uniform_matrix(fabric8, 0.6)
    gbps = np.zeros_like(np.array(even.gbps))
    gbps[0, 1] = 0.8 * float(np.array(even.gbps)[0].sum())
    heavy = TrafficMatrix(fabric8.block_names, gbps)
    demands = np.array([m.gbps[src, dst] for m in [*(heavy.scaled(1.0 + 0.01 * k) for k in range(9)), even]])
    scale = hose_bounds(graph, demands, src, dst)
    caps = path_caps(paths, None)
    shares = np.full(len(demands), 0.1)

    def ratios(tail: float) -> np.ndarray:
        fractions = solve_scenarios(operator, demands, scale, caps, tail=tail).fractions
        out: np.ndarray = operator.utilisation(fractions, demands).max(axis=1) / scale
        return out

    plain, half, most = ratios(0.0), ratios(0.5), ratios(0.9)
    assert plain.argmax() == len(demands) - 1  # the even matrix is the worst under the mean
    assert half.max() < plain.max() - 0.05
    assert most.max() < half.max() - 0.05  # more weight on the tail, a lower worst
    # each solve is at least as good as the other on its own objective
    assert tail_risk(half, shares, 0.5)[0] <= tail_risk(plain, shares, 0.5)[0] + 1e-9
    assert tail_risk(most, shares, 0.9)[0] <= tail_risk(half, shares, 0.9)[0] + 1e-9


def test_the_policy_refuses_a_tail_outside_its_range() -> None:
    with pytest.raises(ConfigError, match="tail"):
        TePolicy(tail=1.0)
    with pytest.raises(ConfigError, match="tail"):
        TePolicy(tail=-0.1)
