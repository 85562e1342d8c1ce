"""Tomogravity: recovering a known matrix from link loads and routing fractions.

Tolerances: when the measurements determine the matrix, the estimate is within 1e-4 of
the largest demand on every pair (the regulariser's bias is of order lambda^2 = 1e-6).
When they do not, the estimate fits every measurement to 1e-3 of the largest load and is
never further from the truth than the gravity prior (in the prior's weighted norm, which
is the norm the fit projects in).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.sensing.estimation import EstimationError
from controller.sensing.tomogravity import (
    aggregate_link_loads,
    direct_routing,
    gravity_prior,
    routing_from_paths,
    tomogravity,
)
from optimizer.config import generate_fabric
from optimizer.traffic import TrafficMatrix, gravity_matrix, hotspot_matrix
from tests.support import shipped_fabric

FABRIC_4 = shipped_fabric("fabric-4")
FABRIC_8 = shipped_fabric("fabric-8")


def link_loads(tm: TrafficMatrix, routing: Mapping[tuple[str, str], Mapping[Hashable, float]]) -> dict:
    loads: dict[Hashable, float] = {}
    for (src, dst), fractions in routing.items():
        for link, fraction in fractions.items():
            loads[link] = loads.get(link, 0.0) + fraction * tm.demand(src, dst)
    return loads


def transit_routing(blocks: tuple[str, ...], seed: int) -> dict:
    """3/4 of each pair direct, 1/4 through one random transit block."""
    rng = np.random.default_rng(seed)
    paths = {}
    for a in blocks:
        for b in blocks:
            if a != b:
                k = str(rng.choice([x for x in blocks if x not in (a, b)]))
                paths[(a, b)] = [((a, b), 3.0), ((a, k, b), 1.0)]
    return routing_from_paths(paths)


def per_block_routing(routing: Mapping[tuple[str, str], Mapping[tuple[str, str], float]]) -> dict:
    """Only per-block uplink totals are known: a link id is the sending block."""
    out: dict = {}
    for pair, fractions in routing.items():
        agg: dict[str, float] = {}
        for (a, _b), f in fractions.items():
            agg[a] = agg.get(a, 0.0) + f
        out[pair] = agg
    return out


def totals(tm: TrafficMatrix) -> tuple[dict[str, float], dict[str, float]]:
    egress = {b: float(tm.gbps[i].sum()) for i, b in enumerate(tm.blocks)}
    ingress = {b: float(tm.gbps[:, i].sum()) for i, b in enumerate(tm.blocks)}
    return egress, ingress


def test_routing_from_paths_gives_fractions_per_link() -> None:
    routing = routing_from_paths({("b1", "b3"): [(("b1", "b3"), 3), (("b1", "b2", "b3"), 1)]})
    assert routing == {("b1", "b3"): {("b1", "b3"): 0.75, ("b1", "b2"): 0.25, ("b2", "b3"): 0.25}}
    with pytest.raises(EstimationError):
        routing_from_paths({("b1", "b3"): [(("b1", "b2"), 1)]})


def test_direct_routing_is_identifiable_and_recovered_exactly() -> None:
    tm = hotspot_matrix(FABRIC_4, seed=3, load=0.6)
    routing = direct_routing(FABRIC_4.block_names)
    est = tomogravity(FABRIC_4.block_names, routing, link_loads(tm, routing))
    assert est.identifiable is True
    assert np.abs(est.matrix.gbps - tm.gbps).max() <= 1e-4 * tm.gbps.max()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_transit_routing_on_fabric_8_is_recovered(seed: int) -> None:
    tm = hotspot_matrix(FABRIC_8, seed=seed, load=0.5)
    routing = transit_routing(FABRIC_8.block_names, seed)
    est = tomogravity(FABRIC_8.block_names, routing, link_loads(tm, routing))
    assert est.identifiable is True
    assert np.abs(est.matrix.gbps - tm.gbps).max() <= 1e-4 * tm.gbps.max()
    assert est.max_residual_gbps <= 1e-4 * tm.gbps.max()


def test_gravity_traffic_is_recovered_from_per_block_loads_and_totals() -> None:
    tm = gravity_matrix(FABRIC_8, seed=5, load=0.5)
    routing = per_block_routing(transit_routing(FABRIC_8.block_names, 5))
    egress, ingress = totals(tm)
    est = tomogravity(FABRIC_8.block_names, routing, link_loads(tm, routing), egress, ingress)
    assert est.identifiable is False
    # A gravity matrix is its own gravity prior: the estimate is the truth.
    assert np.abs(est.prior.gbps - tm.gbps).max() <= 1e-6 * tm.gbps.max()
    assert np.abs(est.matrix.gbps - tm.gbps).max() <= 1e-3 * tm.gbps.max()


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(min_value=0, max_value=10_000), with_totals=st.booleans())
def test_underdetermined_estimate_fits_the_loads_and_beats_the_prior(seed: int, with_totals: bool) -> None:
    rng = np.random.default_rng(seed)
    names = FABRIC_4.block_names
    arr = rng.uniform(0.0, 50.0, size=(4, 4)) * (rng.random((4, 4)) < 0.7)
    np.fill_diagonal(arr, 0.0)
    tm = TrafficMatrix(names, arr)
    routing = per_block_routing(transit_routing(names, seed))
    egress, ingress = totals(tm) if with_totals else (None, None)
    loads = link_loads(tm, routing)
    est = tomogravity(names, routing, loads, egress, ingress)
    scale = max(max(loads.values()), 1e-9)
    assert est.max_residual_gbps <= 1e-3 * scale
    assert (est.matrix.gbps >= 0).all()
    g = est.prior.gbps
    weight = 1.0 / np.maximum(g, 1e-3 * max(g.max(), 1e-9))
    err_est = float((weight * (est.matrix.gbps - arr) ** 2).sum())
    err_prior = float((weight * (g - arr) ** 2).sum())
    assert err_est <= err_prior * (1 + 1e-3) + 1e-6 * scale


def test_gravity_prior_matches_both_marginals_with_a_zero_diagonal() -> None:
    names = ("a", "b", "c", "d")
    egress = {"a": 10.0, "b": 20.0, "c": 30.0, "d": 40.0}
    ingress = {"a": 40.0, "b": 30.0, "c": 20.0, "d": 10.0}
    g = gravity_prior(names, egress, ingress).gbps
    assert np.allclose(g.sum(axis=1), [10, 20, 30, 40], rtol=1e-6)
    assert np.allclose(g.sum(axis=0), [40, 30, 20, 10], rtol=1e-6)
    assert not np.diag(g).any()


def test_missing_link_measurements_are_left_out_of_the_fit() -> None:
    tm = hotspot_matrix(FABRIC_4, seed=1)
    routing = direct_routing(FABRIC_4.block_names)
    loads = link_loads(tm, routing)
    del loads[("b1", "b2")]
    est = tomogravity(FABRIC_4.block_names, routing, loads)
    assert est.identifiable is False and est.measurements == 11
    mask = np.ones((4, 4), dtype=bool)
    mask[0, 1] = False
    assert np.abs(est.matrix.gbps - tm.gbps)[mask].max() <= 1e-4 * tm.gbps.max()


def test_large_fabric_uses_the_sparse_solver() -> None:
    fabric = generate_fabric(blocks=64, uplinks=8, ocs=4, ports=512)
    tm = gravity_matrix(fabric, seed=2)
    routing = transit_routing(fabric.block_names, 2)
    est = tomogravity(fabric.block_names, routing, link_loads(tm, routing))
    assert est.identifiable is None  # too large to check the rank
    assert np.abs(est.matrix.gbps - tm.gbps).max() <= 1e-3 * tm.gbps.max()


def test_bad_inputs_are_named() -> None:
    names = FABRIC_4.block_names
    routing = direct_routing(names)
    with pytest.raises(EstimationError, match="finite number"):
        tomogravity(names, routing, {("b1", "b2"): -1.0})
    with pytest.raises(EstimationError, match="unknown block"):
        tomogravity(names, routing, {}, egress={"zz": 1.0})
    with pytest.raises(EstimationError, match="not a pair"):
        tomogravity(names, {("b1", "b1"): {("b1", "b1"): 1.0}}, {})


def test_port_rates_add_up_to_link_loads_and_partly_measured_links_are_left_out() -> None:
    port_links = {("b1", port): ("b1", "b2" if port < 2 else "b3") for port in range(4)}
    rates = {("b1", 0): 10.0, ("b1", 1): 5.0, ("b1", 2): 7.0, ("b9", 0): 1.0}
    assert aggregate_link_loads(rates, port_links) == {("b1", "b2"): 15.0}
