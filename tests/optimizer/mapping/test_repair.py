"""Mapping by repair (optimizer/mapping/repair.py) and the wiring lower bound
(benchmarks/mapping_bound.py) on Jupiter-shaped fabrics: one north and one south port per
block per OCS, where the pair-level bound is out of reach."""

from __future__ import annotations

import numpy as np
import pytest

import optimizer.mapping.mapper as mapping_module
from benchmarks.mapping_bound import wiring_lower_bound
from benchmarks.mapping_optimum import exact_removed
from optimizer.fabric import Side
from optimizer.mapping import MappingOptions, map_topology
from optimizer.mapping.ports import build_port_model
from optimizer.mapping.repair import repair_from_current
from optimizer.topology import Circuit, Topology, mesh_topology, uniform_mesh
from tests.support.circuit_checker import check_mapping
from tests.support.mapping_helpers import as_pairs, jupiter_like, perturb


def swapped_on_one_ocs(fabric, circuits: list[Circuit]) -> Topology:
    """The topology after swapping two circuits a->b, c->d of the first OCS into a->d, c->b."""
    block_of = {(w.ocs, w.port): fabric.block_index(w.block) for w in fabric.wiring}
    north = {(w.ocs, w.port) for w in fabric.wiring if w.side is Side.NORTH}

    def ends(c: Circuit) -> tuple[int, int]:
        """(north block, south block)"""
        n_port, s_port = (c.a, c.b) if (c.ocs, c.a) in north else (c.b, c.a)
        return block_of[(c.ocs, n_port)], block_of[(c.ocs, s_port)]

    first = sorted(c for c in circuits if c.ocs == fabric.ocs[0].name)
    counts = np.array(Topology.from_circuits(fabric, circuits).counts)
    for i, one in enumerate(first):
        for two in first[i + 1:]:
            (a, b), (c, d) = ends(one), ends(two)
            if len({a, b, c, d}) == 4:
                for x, y, step in ((a, b, -1), (c, d, -1), (a, d, 1), (c, b, 1)):
                    counts[x, y] += step
                    counts[y, x] += step
                return Topology(fabric.block_names, counts)
    raise AssertionError("no two disjoint circuits on the first OCS")


def without_repair(monkeypatch) -> None:
    """The mapper as it was before the repair: recolouring from today's circuits only (the
    repairs, per domain and global, stop at once without moving anything)."""
    def no_repair(ocs_list, pairs, *args, **kwargs):
        job = [np.zeros((pairs.shape[0],) * 2, dtype=np.int64) for _ in ocs_list]
        for counts, o in zip(job, ocs_list, strict=True):
            for (a, b), cur in o.current.items():
                counts[a, b] = len(cur)
        return job, False
    monkeypatch.setattr(mapping_module, "repair_from_current", no_repair)


def test_a_swap_on_one_ocs_is_undone_with_two_tear_downs() -> None:
    fabric = jupiter_like()
    mesh = uniform_mesh(fabric)
    target = swapped_on_one_ocs(fabric, mesh)
    result = map_topology(fabric, target, mesh)
    assert result.lower_bound == 2
    assert result.removed == 2
    assert check_mapping(fabric, result.circuits, as_pairs(target)) == []


def test_repair_reaches_the_target_within_every_ocs_budget() -> None:
    fabric = jupiter_like()
    mesh = uniform_mesh(fabric)
    target = perturb(mesh_topology(fabric), 12, np.random.default_rng(3))
    model = build_port_model(fabric, mesh)
    wanted = np.asarray(target.counts)
    counts, complete = repair_from_current(model.ocs, wanted)
    assert complete
    placed = sum(counts)
    assert np.array_equal(placed + placed.T, wanted)
    for o, c in zip(model.ocs, counts, strict=True):
        assert (c.sum(axis=1) <= [o.north_budget(a) for a in range(fabric.n_blocks)]).all()
        assert (c.sum(axis=0) <= [o.south_budget(b) for b in range(fabric.n_blocks)]).all()
        assert np.diag(c).sum() == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_repair_tears_down_fewer_circuits_than_recolouring_alone(seed: int, monkeypatch) -> None:
    """Small changes on a 16-block Jupiter-shaped fabric (64 OCS): starting from today's
    circuits beats rebuilding each domain from its pair counts. (The dive and the exact
    re-solve are off: each is tested on its own, and either can be the best candidate.)"""
    fabric = jupiter_like(blocks=16, ocs=64)
    mesh = uniform_mesh(fabric)
    target = perturb(mesh_topology(fabric), 40, np.random.default_rng(seed))
    with_repair = map_topology(
        fabric, target, mesh, options=MappingOptions(dive=False, resolve_domains=False)
    )
    assert check_mapping(fabric, with_repair.circuits, as_pairs(target)) == []
    without_repair(monkeypatch)
    before = map_topology(fabric, target, mesh, options=MappingOptions(dive=False, resolve_domains=False))
    assert with_repair.removed < before.removed


def test_wiring_bound_lies_between_the_pair_bound_and_the_exact_optimum() -> None:
    """On a fabric with one port per side per OCS the pair-level bound is not reachable;
    the wiring bound is above it and never above the exact (MIP) optimum."""
    fabric = jupiter_like(blocks=6, ocs=8, domains=2)
    mesh = uniform_mesh(fabric)
    target = perturb(mesh_topology(fabric), 6, np.random.default_rng(5))
    result = map_topology(fabric, target, mesh)
    optimum, status = exact_removed(fabric, target, mesh, time_limit=60.0)
    if optimum is None:
        pytest.fail(f"the exact MIP did not finish: {status}")
    bound = wiring_lower_bound(fabric, target, mesh, result.kept, iterations=300)
    assert result.lower_bound <= bound <= optimum <= result.removed
    assert bound > result.lower_bound


def test_global_repair_lets_a_change_land_in_the_cheapest_domain(monkeypatch) -> None:
    """16 blocks on 32 OCSes in 4 domains, ten pair swaps: repairing over all OCSes at once
    (each domain within its limits) tears down fewer circuits than splitting the change
    over the domains first and repairing each, and is valid and balanced. (On 16 OCSes the
    mesh joins every pair with one or two circuits since issue 13, and both ways remove the
    same number there.)"""
    fabric = jupiter_like(blocks=16, ocs=32)
    mesh = uniform_mesh(fabric)
    target = perturb(mesh_topology(fabric), 10, np.random.default_rng(1))
    # without the regrouping pass, which can move changes between domains too (test_regroup.py),
    # the exact re-solve of each domain (test_resolve.py) and the dive (test_dive.py), each a
    # candidate that can beat both repairs
    both = map_topology(
        fabric, target, mesh, options=MappingOptions(regroup_ocs=False, resolve_domains=False, dive=False)
    )
    assert check_mapping(fabric, both.circuits, as_pairs(target)) == []
    assert both.domain_balanced
    monkeypatch.setattr(mapping_module, "_repair_globally", lambda *args: None)
    per_domain = map_topology(
        fabric, target, mesh, options=MappingOptions(regroup_ocs=False, resolve_domains=False, dive=False)
    )
    assert both.removed < per_domain.removed
