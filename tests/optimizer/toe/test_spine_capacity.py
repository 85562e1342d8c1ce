"""ToE counts the spine's capacity: a matrix the spine serves well needs fewer circuits.

On ``configs/fabric-hybrid-8.yaml`` a hot pair (b1, b2) beside light all-to-all traffic is
planned with the fabric's spine and with the same fabric stripped of it: with the spine the
plan gives the hot pair fewer direct circuits, changes fewer circuits from the mesh and
routes at a lower MLU, which the spine paths' capacity explains (the TE oracle routes the
planned topology with the spine at the planned MLU).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from optimizer.fabric import Fabric
from optimizer.te import min_mlu
from optimizer.toe import ToeKnobs, plan_target
from optimizer.topology import Topology, uniform_mesh
from optimizer.traffic import TrafficMatrix


def hot_pair(fabric: Fabric, hot_gbps: float) -> TrafficMatrix:
    n = fabric.n_blocks
    gbps = np.full((n, n), 30.0)
    np.fill_diagonal(gbps, 0.0)
    gbps[0, 1] = gbps[1, 0] = hot_gbps
    return TrafficMatrix(fabric.block_names, gbps)


@pytest.mark.parametrize("hot_gbps", [600.0, 900.0])
def test_a_matrix_the_spine_serves_well_needs_fewer_circuits(hybrid8: Fabric, hot_gbps: float) -> None:
    bare = dataclasses.replace(hybrid8, spine=())
    mesh = tuple(uniform_mesh(hybrid8))
    tm = hot_pair(hybrid8, hot_gbps)

    def evaluate(fabric: Fabric, topology: Topology, matrix: TrafficMatrix) -> float:
        return min_mlu(fabric, topology, matrix)

    plans = {
        name: plan_target(fabric, [tm], mesh, ToeKnobs(time_limit=60), evaluate)
        for name, fabric in (("spine", hybrid8), ("bare", bare))
    }
    with_spine, without = plans["spine"], plans["bare"]
    assert with_spine.mapping.topology.count("b1", "b2") < without.mapping.topology.count("b1", "b2")
    changed = {k: p.mapping.removed + p.mapping.added for k, p in plans.items()}
    assert changed["spine"] < changed["bare"]
    assert with_spine.toe.mlu < without.toe.mlu
    # The planned MLU is what TE gets on the planned topology with the spine, not without it.
    topology = with_spine.mapping.topology
    assert min_mlu(hybrid8, topology, tm) == pytest.approx(with_spine.toe.mlu, rel=1e-6)
    assert min_mlu(hybrid8, topology, tm, spine=()) > with_spine.toe.mlu * 1.05
