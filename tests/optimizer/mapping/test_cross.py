"""Exchanges across two OCSes (optimizer/mapping/cross.py): more circuits kept, nothing broken."""

from __future__ import annotations

import numpy as np

from optimizer.config import generate_fabric
from optimizer.mapping import MappingOptions, domain_balance_violations, map_topology
from optimizer.topology import Topology, uniform_mesh
from tests.support.mapping_helpers import gravity_topology
from tests.support.toe_support import wiring_problems


def test_exchanges_keep_more_and_the_topology_and_balance_hold() -> None:
    """8 blocks with four north and four south ports per OCS, mesh -> a skewed gravity topology:
    the exchanges keep 2 more of today's circuits (60 -> 58 removed when measured) and the
    result still realises the target, on valid ports, no further over the domain limits. (Without
    the exact re-solve of each domain, which on this small fabric leaves them nothing to gain.)"""
    fabric = generate_fabric(8, 64, 8, 72, domains=4)
    mesh = uniform_mesh(fabric)
    target = gravity_topology(fabric, np.random.default_rng(1), 1.0)
    without = map_topology(
        fabric, target, mesh, options=MappingOptions(rebalance=True, cross=False, resolve_domains=False)
    )
    with_cross = map_topology(
        fabric, target, mesh, options=MappingOptions(rebalance=True, resolve_domains=False)
    )
    assert with_cross.removed < without.removed
    assert wiring_problems(fabric, with_cross.circuits) == []
    realised = Topology.from_circuits(fabric, with_cross.circuits)
    assert np.array_equal(realised.counts, target.counts)
    assert len(domain_balance_violations(fabric, with_cross.circuits)) <= len(
        domain_balance_violations(fabric, without.circuits)
    )
