"""What TE plans for: the predicted matrix of a policy, and the recent demand it reads."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.errors import ConfigError
from optimizer.te import Predictor, RecentDemand, TePolicy, TeSolver, predicted_matrix, route
from optimizer.topology import mesh_topology
from optimizer.traffic import TrafficMatrix, gravity_matrix, hotspot_matrix


def test_the_peak_predictor_takes_each_pair_s_peak_over_the_window_only(fabric4) -> None:
    old = hotspot_matrix(fabric4, 1, 0.9)
    recent = [gravity_matrix(fabric4, s, 0.3) for s in range(3)]
    demand = RecentDemand((old, *recent))
    peak = predicted_matrix(demand, TePolicy(predictor=Predictor.PEAK, window=3))
    assert np.array_equal(peak.gbps, np.max([m.gbps for m in recent], axis=0))  # the old one is out
    assert predicted_matrix(demand, TePolicy()) is recent[-1]


def test_blocks_out_are_zeroed_in_every_recent_matrix(fabric4) -> None:
    demand = RecentDemand(tuple(gravity_matrix(fabric4, s, 0.3) for s in range(2)))
    out = demand.without(["b2"])
    for m in out.matrices:
        assert not m.gbps[1].any() and not m.gbps[:, 1].any()
        assert m.gbps[0, 2] > 0
    assert demand.without([]) is demand


def test_route_with_a_full_hedge_splits_by_path_capacity(fabric4) -> None:
    gbps = np.zeros((4, 4))
    gbps[0, 1] = 10.0
    tm = TrafficMatrix(fabric4.block_names, gbps)
    mesh = mesh_topology(fabric4)
    c = np.asarray(mesh.counts, dtype=float)
    capacity = {"b2": c[0, 1], "b3": min(c[0, 2], c[2, 1]), "b4": min(c[0, 3], c[3, 1])}
    hedged = route(TeSolver(fabric4, hedge=1.0), mesh, RecentDemand.of(tm), TePolicy(hedge=1.0))
    shares = {h.via: h.share for h in hedged.group("b1", "b2").next_hops}
    total = sum(capacity.values())
    assert shares == pytest.approx({via: cap / total for via, cap in capacity.items()}, abs=1e-6)


def test_policies_and_recent_demand_refuse_nonsense(fabric4) -> None:
    with pytest.raises(ConfigError, match="window"):
        TePolicy(window=0)
    with pytest.raises(ConfigError, match="hedge"):
        TePolicy(hedge=2.0)
    with pytest.raises(ValueError, match="at least one"):
        RecentDemand(())
