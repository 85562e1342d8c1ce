"""Property tests: on random fabrics the mapping's circuits pass the independent checker.

Random block counts, uplinks, OCS counts, domains and OCS sides (split, any, mixed);
random targets and random current states (nothing, the uniform mesh, a part of it, or a
previous mapping of another topology).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optimizer.errors import InfeasibleError
from optimizer.fabric import Block, Ocs, OcsSides, build_fabric
from optimizer.mapping import MappingOptions, map_topology
from optimizer.topology import Topology, uniform_mesh
from tests.support.circuit_checker import (
    check_mapping,
    circuit_rows,
    domain_balance_problems,
    ocs_rows,
    wiring_rows,
)
from tests.support.mapping_helpers import as_pairs, perturb, random_topology


@st.composite
def fabrics(draw):
    n_blocks = draw(st.integers(2, 7))
    n_ocs = draw(st.integers(1, 4))
    mode = draw(st.sampled_from(["split", "any", "mixed"]))
    share = draw(st.sampled_from([2, 4])) if mode != "any" else draw(st.integers(1, 4))
    spare = draw(st.integers(0, 3))
    domains = draw(st.integers(1, n_ocs))
    blocks = [Block(f"b{i}", share * n_ocs) for i in range(n_blocks)]
    ocs = []
    for o in range(n_ocs):
        sides = OcsSides.SPLIT if mode == "split" or (mode == "mixed" and o % 2 == 0) else OcsSides.ANY
        ocs.append(Ocs(f"o{o}", share * n_blocks + 2 * spare, domain=o * domains // n_ocs, sides=sides))
    return build_fabric("random", blocks, ocs)


def _current(fabric, kind: str, rng: np.random.Generator):
    if kind == "empty":
        return ()
    mesh = uniform_mesh(fabric)
    if kind == "mesh":
        return mesh
    if kind == "part":
        return tuple(c for c in mesh if rng.random() < 0.6)
    other = random_topology(fabric, rng, fill=float(rng.uniform(0.3, 1.0)))
    try:
        return map_topology(fabric, other, mesh).circuits
    except InfeasibleError:
        return mesh


def _odd_any_shares(fabric) -> bool:
    share = fabric.blocks[0].uplinks // len(fabric.ocs)
    return any(o.sides is OcsSides.ANY for o in fabric.ocs) and share % 2 == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fabric=fabrics(),
    seed=st.integers(0, 2**32 - 1),
    fill=st.floats(0.2, 1.0),
    current_kind=st.sampled_from(["empty", "mesh", "part", "other"]),
)
def test_mapping_random_fabrics_pass_the_independent_checker(fabric, seed, fill, current_kind):
    rng = np.random.default_rng(seed)
    target = random_topology(fabric, rng, fill=fill)
    current = _current(fabric, current_kind, rng)
    try:
        result = map_topology(fabric, target, current)
    except InfeasibleError:
        # Only 'any' OCSes with an odd per-block share can make a target within the
        # port counts impossible (it is then an edge-colouring problem).
        assert _odd_any_shares(fabric)
        return
    problems = check_mapping(fabric, result.circuits, as_pairs(target))
    assert not problems, problems[:5]
    assert result.kept + result.removed == len(set(current))
    assert result.kept + result.added == len(result.circuits)
    assert result.removed >= result.lower_bound
    reported = {(v.a, v.b, v.domain) for v in result.balance_violations}
    found = domain_balance_problems(wiring_rows(fabric), ocs_rows(fabric), circuit_rows(result.circuits))
    assert len(found) == len(reported)

    again = map_topology(fabric, target, result.circuits)
    assert (again.removed, again.added) == (0, 0), "an unchanged topology must not rewire"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fabric=fabrics(), seed=st.integers(0, 2**32 - 1))
def test_mapping_random_fabrics_balance_pairs_when_ports_are_spare(fabric, seed):
    """With a quarter of the ports unused there is room to balance every changed pair."""
    if _odd_any_shares(fabric):
        return
    rng = np.random.default_rng(seed)
    target = random_topology(fabric, rng, fill=0.75)
    result = map_topology(fabric, target, (), options=MappingOptions(rebalance=True))
    assert not check_mapping(fabric, result.circuits, as_pairs(target))
    assert result.domain_balanced, result.balance_violations


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fabric=fabrics(), seed=st.integers(0, 2**32 - 1), swaps=st.integers(0, 12))
def test_mapping_perturbed_mesh_is_valid_and_unchanged_pairs_stay(fabric, seed, swaps):
    if _odd_any_shares(fabric):
        return
    rng = np.random.default_rng(seed)
    mesh = uniform_mesh(fabric)
    base = Topology.from_circuits(fabric, mesh)
    target = perturb(base, swaps, rng)
    result = map_topology(fabric, target, mesh)
    assert not check_mapping(fabric, result.circuits, as_pairs(target))
    if swaps == 0 or np.array_equal(target.counts, base.counts):
        assert result.removed == result.added == 0
