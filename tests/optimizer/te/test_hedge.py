"""Hedging: x_p <= D C_p / (B S); S = 1 is oblivious load balancing."""

from __future__ import annotations

import itertools

import pytest

from optimizer.config import generate_fabric, load_fabric
from optimizer.te import min_mlu, solve_te
from optimizer.traffic import gravity_matrix, hotspot_matrix
from tests.support.te_instances import matrix, small_fabric, topology
from tests.support.te_reference import reference_mlu

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # PuLP 3.3 warns of its 4.0 API

# b1->b2 has three paths: direct (2 circuits, 200G), via b3 (100G), via b4 (min(100G, 300G)).
LINKS = {("b1", "b2"): 2, ("b1", "b3"): 1, ("b3", "b2"): 1, ("b1", "b4"): 1, ("b4", "b2"): 3}


def shares(result, src: str, dst: str) -> dict[str, float]:
    return {h.via: h.share for h in result.group(src, dst).next_hops}


def test_full_hedge_splits_in_proportion_to_path_capacity() -> None:
    fab = small_fabric(4)
    topo = topology(fab, LINKS)
    # A second demand loads the direct link, which plain min-MLU would route around.
    tm = matrix(fab, {("b1", "b2"): 100.0, ("b4", "b2"): 250.0})
    plain = solve_te(fab, topo, tm)
    hedged = solve_te(fab, topo, tm, hedge=1.0)
    assert shares(hedged, "b1", "b2") == pytest.approx({"b2": 0.5, "b3": 0.25, "b4": 0.25}, abs=1e-9)
    weights = {h.via: h.weight for h in hedged.group("b1", "b2").next_hops}
    assert weights == {"b2": 2, "b3": 1, "b4": 1}
    assert shares(plain, "b1", "b2") != pytest.approx(shares(hedged, "b1", "b2"), abs=1e-3)
    assert hedged.mlu >= plain.mlu - 1e-12


def test_partial_hedge_caps_each_path_at_its_share_over_s() -> None:
    fab = small_fabric(4)
    topo = topology(fab, LINKS)
    tm = matrix(fab, {("b1", "b2"): 300.0, ("b3", "b2"): 90.0})
    for s in (0.5, 0.8):
        got = shares(solve_te(fab, topo, tm, hedge=s), "b1", "b2")
        capacity_share = {"b2": 0.5, "b3": 0.25, "b4": 0.25}
        for via, share in got.items():
            assert share <= capacity_share[via] / s + 1e-9


def test_more_hedging_never_lowers_the_mlu() -> None:
    fab = load_fabric("configs/fabric-hybrid-8.yaml")
    tm = hotspot_matrix(fab, seed=2, load=0.8)
    mlus = [min_mlu(fab, None, tm, hedge=s) for s in (None, 0.1, 0.3, 0.6, 1.0)]
    for looser, tighter in itertools.pairwise(mlus):
        assert tighter >= looser * (1 - 1e-9)
    assert mlus[-1] > mlus[0] * 1.01


@pytest.mark.parametrize("hedge", [0.3, 0.7, 1.0])
def test_hedged_optimum_matches_the_plain_path_lp(hedge: float) -> None:
    fab = load_fabric("configs/fabric-hybrid-8.yaml")
    tm = gravity_matrix(fab, seed=6, load=0.8, skew=1.5)
    assert min_mlu(fab, None, tm, hedge=hedge) == pytest.approx(
        reference_mlu(fab, tm, hedge=hedge), rel=1e-5
    )


@pytest.mark.parametrize("hedge", [0.5, 0.9])
def test_hedged_optimum_at_16_blocks(hedge: float) -> None:
    # Large enough that most paths sit at their bound outside the master.
    fab = generate_fabric(16, 128, 32, 136, 4)
    tm = hotspot_matrix(fab, seed=8, load=0.9)
    assert min_mlu(fab, None, tm, hedge=hedge) == pytest.approx(
        reference_mlu(fab, tm, hedge=hedge), rel=1e-5
    )
