"""Group transitions: the bound on old/new mixes, and intermediates that keep it in limit."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from controller.te_push import group_tables
from controller.transition import fractions, mix_utilisation, source_loads, transition_steps
from optimizer.config import load_fabric
from optimizer.te import solve_te
from optimizer.topology import Topology, uniform_mesh
from optimizer.traffic import hotspot_matrix

ROOT = Path(__file__).resolve().parent.parent
FABRIC = load_fabric(ROOT / "configs" / "fabric-8.yaml")
BLOCKS = FABRIC.block_names
MESH = Topology.from_circuits(FABRIC, uniform_mesh(FABRIC))
SPEED = 100.0


def test_loads_count_first_and_second_hops_per_source() -> None:
    demand = np.zeros((8, 8))
    demand[0, 2] = 90.0
    tables = {"b1": {"b3": {"b2": 2, "b3": 1}}}  # 2/3 through b2, 1/3 direct
    loads = source_loads(fractions(tables, BLOCKS), demand)
    assert np.isclose(loads[0, 0, 1], 60.0) and np.isclose(loads[0, 1, 2], 60.0)
    assert np.isclose(loads[0, 0, 2], 30.0)
    assert np.isclose(loads.sum(), 150.0)  # 60 twice (two hops) + 30 direct
    # Destinations without a group go direct.
    demand[3, 4] = 10.0
    assert np.isclose(source_loads(fractions({}, BLOCKS), demand)[3, 3, 4], 10.0)


def test_a_mix_can_exceed_both_plans_and_the_steps_keep_it_near_them() -> None:
    # As in a stage's drain: TE on the topology without ocs1's circuits, pushed while those
    # circuits still carry traffic (the full mesh is the capacity during the push).
    tm = hotspot_matrix(FABRIC, seed=3, load=0.6)
    demand = np.asarray(tm.gbps)
    capacity = MESH.counts * SPEED
    drained = Topology.from_circuits(FABRIC, [c for c in uniform_mesh(FABRIC) if c.ocs != "ocs1"])
    old = group_tables(solve_te(FABRIC, MESH, tm, spine=()), BLOCKS)
    new = group_tables(solve_te(FABRIC, drained, tm, spine=()), BLOCKS)
    a, b = source_loads(fractions(old, BLOCKS), demand), source_loads(fractions(new, BLOCKS), demand)
    ends = max(mix_utilisation(a, a, capacity), mix_utilisation(b, b, capacity))
    jump = mix_utilisation(a, b, capacity)
    assert jump > 1.0 > ends  # jumping could overload a link that neither plan overloads
    steps = transition_steps(old, new, BLOCKS, demand, capacity, limit=ends + 1e-9)
    assert steps[-1] == new and len(steps) > 2
    sequence = [fractions(old, BLOCKS)] + [fractions(t, BLOCKS) for t in steps]
    loads = [source_loads(x, demand) for x in sequence]
    worst = max(mix_utilisation(loads[k], loads[k + 1], capacity) for k in range(len(loads) - 1))
    assert worst <= ends * 1.05
    assert all(sum(hops.values()) <= 128 for t in steps for g in t.values() for hops in g.values())


def test_no_intermediates_when_the_jump_is_safe_or_nothing_was_pushed_before() -> None:
    tm = hotspot_matrix(FABRIC, seed=1, load=0.3)
    tables = group_tables(solve_te(FABRIC, MESH, tm, spine=()), BLOCKS)
    capacity = MESH.counts * SPEED
    assert transition_steps(tables, tables, BLOCKS, tm.gbps, capacity, limit=0.8) == [tables]
    assert transition_steps(None, tables, BLOCKS, tm.gbps, capacity, limit=0.8) == [tables]
