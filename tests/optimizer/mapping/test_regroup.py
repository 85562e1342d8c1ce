"""Re-mapping groups of OCSes and the new circuits exactly (optimizer/mapping/regroup.py)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.mapping_optimum import exact_removed
from optimizer.budget import TimeBudget
from optimizer.fabric import Fabric
from optimizer.mapping import MappingOptions, build_port_model, domain_layout, map_topology
from optimizer.mapping.ports import PortModel
from optimizer.mapping.regroup import regroup
from optimizer.topology import Circuit, Topology, mesh_topology, uniform_mesh
from tests.support.circuit_checker import check_mapping
from tests.support.mapping_helpers import as_pairs, jupiter_like, perturb


@pytest.mark.slow  # 3-12 s per seed: sixty MIPs on 16 OCSes
@pytest.mark.parametrize("seed", [1, 2])
def test_regrouping_tears_down_fewer_circuits_on_a_sparse_fabric(seed: int) -> None:
    """16 blocks on 16 OCSes (one north and one south port per block per OCS, 4 domains):
    pairs have about two circuits, fewer than the domains, so the split over the domains
    decides; regrouping moves circuits between domains and keeps more of today's, within
    1.25x the exact optimum (37 and 30 removed, benchmarks/RESULTS_mapping.md)."""
    fabric = jupiter_like(blocks=16, ocs=16)
    mesh = uniform_mesh(fabric)
    target = perturb(mesh_topology(fabric), 10, np.random.default_rng(seed))
    plain = map_topology(fabric, target, mesh, options=MappingOptions(rebalance=True, regroup_ocs=False))
    regrouped = map_topology(fabric, target, mesh, options=MappingOptions(rebalance=True))
    assert check_mapping(fabric, regrouped.circuits, as_pairs(target)) == []
    assert regrouped.removed < plain.removed
    assert regrouped.removed <= 1.25 * {1: 37, 2: 30}[seed]
    assert len(regrouped.balance_violations) <= len(plain.balance_violations)


@pytest.mark.parametrize("seed", [1, 4, 5])
def test_regrouping_reaches_the_exact_optimum_on_a_small_sparse_fabric(seed: int) -> None:
    """Eight blocks on eight OCSes in four domains (one north and one south port per block
    per OCS): the exact MIP over every port (benchmarks/mapping_optimum.py) finds the fewest
    circuits any balanced mapping removes; without the pass the mapping removes more, with
    it exactly that many, and every pair is balanced."""
    fabric = jupiter_like(blocks=8, ocs=8)
    mesh = uniform_mesh(fabric)
    target = perturb(mesh_topology(fabric), 4, np.random.default_rng(seed))
    best, status = exact_removed(fabric, target, mesh, time_limit=60.0)
    assert best is not None, status
    plain = map_topology(fabric, target, mesh, options=MappingOptions(rebalance=True, regroup_ocs=False))
    regrouped = map_topology(fabric, target, mesh, options=MappingOptions(rebalance=True))
    assert check_mapping(fabric, regrouped.circuits, as_pairs(target)) == []
    assert regrouped.balance_violations == ()
    assert plain.removed > best
    assert regrouped.removed == best


def _per_ocs_start(
    fabric: Fabric, target: Topology, mesh: list[Circuit]
) -> tuple[PortModel, list[np.ndarray], list[int], np.ndarray]:
    """The mapping without the pass, as the pass sees it: per-OCS directed counts, the OCS
    models, the domain of each OCS and the domains' pair limits."""
    start = map_topology(fabric, target, mesh, options=MappingOptions(rebalance=True, regroup_ocs=False))
    model = build_port_model(fabric, sorted(mesh))
    names = fabric.block_names
    n = len(names)
    index = {b: i for i, b in enumerate(names)}
    by_ocs = {o.name: np.zeros((n, n), dtype=np.int64) for o in model.ocs}
    for c in start.circuits:
        pa, pb = c.ends(fabric)
        north, south = (pa, pb) if pa.side.value == "north" else (pb, pa)
        by_ocs[c.ocs][index[north.block], index[south.block]] += 1
    per_ocs = [by_ocs[o.name] for o in model.ocs]
    domains = model.domains()
    domain_index = [domains.index(o.domain) for o in model.ocs]
    wanted = np.asarray(Topology.from_circuits(fabric, start.circuits).counts)
    limit = domain_layout(model, wanted, rebalance=True).limit
    return model, per_ocs, domain_index, limit


def test_regroup_never_keeps_fewer_and_keeps_the_pairs_and_domain_limits() -> None:
    """Straight on per-OCS counts: every pair's total is unchanged, every OCS within its
    ports, no domain over max(its limit, what it held), and at least as many kept."""
    fabric = jupiter_like(blocks=12, ocs=32)
    mesh = uniform_mesh(fabric)
    target = perturb(mesh_topology(fabric), 16, np.random.default_rng(3))
    model, per_ocs, domain_index, limit = _per_ocs_start(fabric, target, mesh)
    n = fabric.n_blocks
    domains = model.domains()
    after = regroup(model.ocs, per_ocs, domain_index, limit)

    def kept(counts: list[np.ndarray]) -> int:
        return sum(min(int(c[a, b]), len(cur)) for o, c in zip(model.ocs, counts, strict=True)
                   for (a, b), cur in o.current.items())

    assert kept(after) > kept(per_ocs)  # it gains here (and never keeps fewer: it only takes gains)
    total = sum(c + c.T for c in after)
    assert np.array_equal(total, sum(c + c.T for c in per_ocs))
    for o, c in zip(model.ocs, after, strict=True):
        assert all(c[a].sum() <= o.north_budget(a) and c[:, a].sum() <= o.south_budget(a) for a in range(n))
    for d in range(len(domains)):
        held = sum(c + c.T for c, di in zip(after, domain_index, strict=True) if di == d)
        before = sum(c + c.T for c, di in zip(per_ocs, domain_index, strict=True) if di == d)
        assert (held <= np.maximum(limit[d], before)).all()


def test_dense_fabrics_are_not_regrouped() -> None:
    """Eight blocks on 32 OCSes: about nine circuits per pair, more than two per domain:
    the pass does not run and the mapping is the same circuit for circuit."""
    fabric = jupiter_like(blocks=8, ocs=32)
    mesh = uniform_mesh(fabric)
    target = perturb(mesh_topology(fabric), 6, np.random.default_rng(1))
    with_pass = map_topology(fabric, target, mesh, options=MappingOptions(rebalance=True))
    without = map_topology(fabric, target, mesh, options=MappingOptions(rebalance=True, regroup_ocs=False))
    assert sorted(with_pass.circuits) == sorted(without.circuits)


def test_regrouping_gives_the_same_circuits_for_the_same_input() -> None:
    """Bounded by work (groups, MIP nodes), not by time: a plan reviewed is the plan applied."""
    fabric = jupiter_like(blocks=12, ocs=32)
    mesh = uniform_mesh(fabric)
    target = perturb(mesh_topology(fabric), 16, np.random.default_rng(2))
    first = map_topology(fabric, target, mesh, options=MappingOptions(rebalance=True))
    again = map_topology(fabric, target, mesh, options=MappingOptions(rebalance=True))
    assert sorted(first.circuits) == sorted(again.circuits)


def test_a_spent_budget_leaves_the_mapping_as_it_is() -> None:
    """The plan's time budget is a safety net: spent before the first MIP, nothing moves."""
    fabric = jupiter_like(blocks=12, ocs=32)
    mesh = uniform_mesh(fabric)
    target = perturb(mesh_topology(fabric), 16, np.random.default_rng(3))
    model, per_ocs, domain_index, limit = _per_ocs_start(fabric, target, mesh)
    now = [0.0]
    budget = TimeBudget(1.0, clock=lambda: now[0])
    now[0] = 2.0
    after = regroup(model.ocs, per_ocs, domain_index, limit, budget)
    assert all(np.array_equal(a, b) for a, b in zip(after, per_ocs, strict=True))


def test_regrouping_writes_nothing_to_stdout(capfd: pytest.CaptureFixture[str]) -> None:
    """`heliostat toe --json` prints its plan on stdout: the MIPs must not print a banner there
    (the public highspy.Highs class does, once per process)."""
    fabric = jupiter_like(blocks=8, ocs=8)
    mesh = uniform_mesh(fabric)
    target = perturb(mesh_topology(fabric), 4, np.random.default_rng(1))
    capfd.readouterr()
    regrouped = map_topology(fabric, target, mesh, options=MappingOptions(rebalance=True))
    assert regrouped.removed < map_topology(
        fabric, target, mesh, options=MappingOptions(rebalance=True, regroup_ocs=False)
    ).removed
    out, _ = capfd.readouterr()
    assert out == ""
