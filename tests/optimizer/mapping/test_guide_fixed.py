"""Domains too big to re-solve whole: the dive's LP guide holds the arcs it settles and a MIP
places the rest (optimizer/mapping/dive.py: guide_fixed; regroup.py: resolve_fixed)."""

from __future__ import annotations

import numpy as np

import optimizer.mapping.mapper as mapping_module
from optimizer.mapping import MappingOptions, build_port_model, map_topology
from optimizer.mapping.regroup import resolve_domain, resolve_fixed
from optimizer.topology import uniform_mesh
from tests.support.circuit_checker import check_mapping
from tests.support.mapping_helpers import as_pairs, gravity_topology, jupiter_like


def _domain(fabric, circuits, today, domain):  # type: ignore[no-untyped-def]
    """A domain's OCSes scored against ``today``, the directed counts of ``circuits`` on them,
    and their pair counts."""
    model = build_port_model(fabric, sorted(circuits))
    ocs_list = [o for o in model.ocs if o.domain == domain]
    per_ocs = []
    for o in ocs_list:
        counts = np.zeros((fabric.n_blocks,) * 2, dtype=np.int64)
        for (a, b), cur in o.current.items():
            counts[a, b] = len(cur)
        per_ocs.append(counts)
    now = build_port_model(fabric, sorted(today))
    for o in ocs_list:
        o.current = next(t for t in now.ocs if t.name == o.name).current
    return ocs_list, per_ocs, sum(c + c.T for c in per_ocs)


def test_the_guide_fixed_candidate_tears_down_fewer_where_the_domain_is_not_resolved(monkeypatch) -> None:
    """8 blocks on 32 OCSes, mesh -> a skewed gravity topology, the domains taken as too big for
    the exact re-solve (as 32-block domains are): the guide-fixed candidate is used and tears down
    fewer circuits than the other candidates, and its circuits realise the target."""
    fabric = jupiter_like(blocks=8, ocs=32)
    mesh = uniform_mesh(fabric)
    target = gravity_topology(fabric, np.random.default_rng(1), 1.0)
    monkeypatch.setattr(mapping_module, "DOMAIN_COLUMNS", 10)
    with_it = map_topology(fabric, target, mesh)
    monkeypatch.setattr(mapping_module, "guide_fixes", lambda *args: False)
    without = map_topology(fabric, target, mesh)
    assert check_mapping(fabric, with_it.circuits, as_pairs(target)) == []
    assert with_it.balance_violations == without.balance_violations
    assert with_it.removed < without.removed


def test_fixed_arcs_are_held_and_the_rest_placed_exactly() -> None:
    """Holding the arcs an optimum keeps on half the OCSes, the rest placed by the MIP keeps as
    many of today's circuits as the optimum; holding more of a pair than it has gives None."""
    fabric = jupiter_like(blocks=8, ocs=32)
    mesh = uniform_mesh(fabric)
    target = gravity_topology(fabric, np.random.default_rng(1), 1.0)
    mapped = map_topology(fabric, target, mesh, options=MappingOptions(resolve_domains=False))
    ocs_list, per_ocs, pairs = _domain(fabric, mapped.circuits, mesh, fabric.domains[0])
    optimum = resolve_domain(ocs_list, per_ocs, pairs, 60.0, nodes=10_000)
    assert optimum is not None
    held = [c if i % 2 == 0 else np.zeros_like(c) for i, c in enumerate(optimum)]
    solved = resolve_fixed(ocs_list, held, pairs, 60.0, nodes=10_000)
    assert solved is not None
    for i, (c, h) in enumerate(zip(solved, held, strict=True)):
        assert (c >= h).all(), f"OCS {i} lost a held arc"
        assert c.sum(axis=1).max() <= 1 and c.sum(axis=0).max() <= 1  # one north, one south port
    assert np.array_equal(sum(c + c.T for c in solved), pairs)

    def kept(counts):  # type: ignore[no-untyped-def]
        return sum(o.kept(c) for o, c in zip(ocs_list, counts, strict=True))

    assert kept(solved) == kept(optimum)
    too_much = [c.copy() for c in held]
    a, b = np.argwhere(optimum[0])[0]
    too_much[1][a, b] += int(pairs[a, b])  # the pair's every circuit, and one more held already
    assert resolve_fixed(ocs_list, too_much, pairs, 60.0) is None
