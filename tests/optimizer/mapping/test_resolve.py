"""A whole failure domain re-solved exactly (optimizer/mapping/regroup.py: resolve_domain)."""

from __future__ import annotations

import numpy as np

import benchmarks.mapping_optimum as mapping_optimum
import optimizer.mapping.mapper as mapping_module
from optimizer.fabric import Block, Ocs, OcsSides, build_fabric
from optimizer.mapping import MappingOptions, build_port_model, map_topology
from optimizer.mapping.mapper import domain_pair_counts
from optimizer.mapping.regroup import resolve_domain
from optimizer.topology import Topology, mesh_topology, uniform_mesh
from tests.support.circuit_checker import check_mapping
from tests.support.mapping_helpers import as_pairs, gravity_topology, jupiter_like, perturb


def test_each_domain_reaches_the_exact_optimum_of_its_split(monkeypatch) -> None:
    """8 blocks on 32 OCSes (one north and one south port per block per OCS), mesh -> a skewed
    gravity topology: with the re-solve the mapping tears down fewer circuits than without, and
    exactly as few as the exact MIP over every port (benchmarks/mapping_optimum.py, another
    formulation) can with the same pair counts in each domain."""
    fabric = jupiter_like(blocks=8, ocs=32)
    mesh = uniform_mesh(fabric)
    target = gravity_topology(fabric, np.random.default_rng(1), 1.0)
    without = map_topology(fabric, target, mesh, options=MappingOptions(resolve_domains=False))
    resolved = map_topology(fabric, target, mesh)
    assert check_mapping(fabric, resolved.circuits, as_pairs(target)) == []
    assert resolved.balance_violations == without.balance_violations
    assert resolved.removed < without.removed
    # the same split over the domains: the re-solve keeps each domain's pair counts
    per_domain = domain_pair_counts(fabric, resolved.circuits)
    assert all(np.array_equal(per_domain[d].counts, t.counts)
               for d, t in domain_pair_counts(fabric, without.circuits).items())
    split = np.stack([np.asarray(per_domain[d].counts) for d in sorted(per_domain)])

    class _Layout:
        limit = split

    monkeypatch.setattr(mapping_optimum, "domain_layout", lambda *args, **kwargs: _Layout())
    best, status = mapping_optimum.exact_removed(fabric, target, mesh, time_limit=60.0)
    assert best is not None, status
    assert resolved.removed == best


def test_a_domain_too_big_to_solve_is_left_as_mapped(monkeypatch) -> None:
    """Above DOMAIN_COLUMNS the domain keeps its best polynomial candidate: the same circuits as
    without the re-solve."""
    fabric = jupiter_like(blocks=8, ocs=32)
    mesh = uniform_mesh(fabric)
    target = gravity_topology(fabric, np.random.default_rng(1), 1.0)
    monkeypatch.setattr(mapping_module, "DOMAIN_COLUMNS", 10)
    # (where the guide-fixed MIP would run instead: tests/optimizer/mapping/test_guide_fixed.py)
    monkeypatch.setattr(mapping_module, "guide_fixes", lambda *args: False)
    assert map_topology(
        fabric, target, mesh
    ).circuits == map_topology(fabric, target, mesh, options=MappingOptions(resolve_domains=False)).circuits


def test_a_domain_with_any_sided_ocses_is_not_resolved() -> None:
    """An ``any`` OCS's ports have no fixed side, which the MIP needs: no answer, and the mapping
    still realises the target."""
    blocks = [Block(f"b{i}", 4) for i in range(4)]
    fabric = build_fabric("any", blocks, [Ocs("o1", 8, 0, OcsSides.ANY), Ocs("o2", 8, 0, OcsSides.ANY)])
    mesh = uniform_mesh(fabric)
    model = build_port_model(fabric, mesh)
    zeros = [np.zeros((4, 4), dtype=np.int64) for _ in model.ocs]
    assert resolve_domain(model.ocs, zeros, np.ones((4, 4), dtype=np.int64), 10.0) is None
    target = Topology.from_links(fabric.block_names, [("b0", "b1", 2), ("b2", "b3", 2), ("b0", "b2", 1),
                                                      ("b1", "b3", 1), ("b0", "b3", 1), ("b1", "b2", 1)])
    result = map_topology(fabric, target, mesh)
    assert check_mapping(fabric, result.circuits, as_pairs(target)) == []


def test_balance_comes_before_circuits_kept(monkeypatch) -> None:
    """16 blocks on 32 OCSes, ten pair swaps: the split over the domains leaves a pair over a
    domain's limit, and the re-solved domains keep more circuits than the repair over all OCSes,
    which is balanced. The balanced mapping wins (it lost to the one keeping more before)."""
    fabric = jupiter_like(blocks=16, ocs=32)
    mesh = uniform_mesh(fabric)
    target = perturb(mesh_topology(fabric), 10, np.random.default_rng(1))
    result = map_topology(fabric, target, mesh, options=MappingOptions(regroup_ocs=False))
    assert check_mapping(fabric, result.circuits, as_pairs(target)) == []
    assert result.domain_balanced
    monkeypatch.setattr(mapping_module, "_repair_globally", lambda *args: None)
    unbalanced = map_topology(fabric, target, mesh, options=MappingOptions(regroup_ocs=False))
    assert not unbalanced.domain_balanced
    assert unbalanced.removed < result.removed
