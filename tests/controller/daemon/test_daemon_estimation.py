"""The daemon's matrix when blocks report only port counters: tomogravity over pushed groups."""

from __future__ import annotations

import numpy as np

from controller.device_view import circuit_ends
from controller.sensing.inferred_matrix import infer_matrix, routing_of_groups
from controller.te_loop.te_push import group_tables
from optimizer.te import solve_te
from optimizer.topology import Circuit, Topology, uniform_mesh
from optimizer.traffic import TrafficMatrix, gravity_matrix
from tests.support import shipped_fabric

FABRIC = shipped_fabric("fabric-8")
MESH = tuple(uniform_mesh(FABRIC))


def port_rates_for(tables: dict, tm: TrafficMatrix, circuits: tuple[Circuit, ...]) -> dict:
    """Each trunk's load (from the groups) spread evenly over its ports, as counters would show."""
    routing = routing_of_groups(tables)
    load: dict[tuple[str, str], float] = {}
    for (src, dst), fractions in routing.items():
        demand = tm.gbps[tm.blocks.index(src), tm.blocks.index(dst)]
        for link, share in fractions.items():
            load[link] = load.get(link, 0.0) + demand * share
    members: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for c in circuits:
        (ba, pa), (bb, pb) = circuit_ends(FABRIC, c)
        members.setdefault((ba, bb), []).append((ba, pa))
        members.setdefault((bb, ba), []).append((bb, pb))
    return {port: load.get(link, 0.0) / len(ports) for link, ports in members.items() for port in ports}


def test_direct_routing_gives_back_the_exact_matrix() -> None:
    tm = gravity_matrix(FABRIC, seed=3, load=0.3)
    names = FABRIC.block_names
    tables = {a: {b: {b: 1} for b in names if b != a} for a in names}
    estimate = infer_matrix(FABRIC, tables, MESH, port_rates_for(tables, tm, MESH))
    assert np.allclose(estimate.matrix.gbps, tm.gbps, rtol=1e-3, atol=1e-3)
    assert estimate.identifiable


def test_with_transit_the_estimate_explains_every_trunk_load() -> None:
    tm = gravity_matrix(FABRIC, seed=5, load=0.6)
    result = solve_te(FABRIC, Topology.from_circuits(FABRIC, MESH), tm, spine=())
    tables = group_tables(result, FABRIC.block_names)
    assert any(len(hops) > 1 for groups in tables.values() for hops in groups.values())  # transit used
    rates = port_rates_for(tables, tm, MESH)
    estimate = infer_matrix(FABRIC, tables, MESH, rates)
    assert estimate.max_residual_gbps < 1e-3 * max(rates.values()) * 4
    assert abs(estimate.matrix.total() - tm.total()) < 0.05 * tm.total()


def test_a_trunk_with_an_unmeasured_port_is_left_out() -> None:
    tm = gravity_matrix(FABRIC, seed=3, load=0.3)
    names = FABRIC.block_names
    tables = {a: {b: {b: 1} for b in names if b != a} for a in names}
    rates = port_rates_for(tables, tm, MESH)
    (block, port), _ = circuit_ends(FABRIC, MESH[0])
    del rates[(block, port)]
    estimate = infer_matrix(FABRIC, tables, MESH, rates)
    assert estimate.measurements == len(names) * (len(names) - 1) - 1


def test_on_a_hybrid_fabric_spine_trunks_are_measured_too() -> None:
    """Groups that send part of each pair over the spine: the spine switches' port rates
    (spine -> block) and the blocks' spine ports (block -> spine) enter the fit, so the
    estimate explains every trunk and gives back the total."""
    from optimizer.spine import spine_links
    from tests.support import shipped_fabric as fabric_named

    hybrid = fabric_named("fabric-hybrid-8")
    mesh = tuple(uniform_mesh(hybrid))
    tm = gravity_matrix(hybrid, seed=7, load=0.5)
    tables = group_tables(solve_te(hybrid, Topology.from_circuits(hybrid, mesh), tm), hybrid.block_names)
    assert any(v.startswith("s") for groups in tables.values() for hops in groups.values() for v in hops)
    routing = routing_of_groups(tables)
    load: dict[tuple[str, str], float] = {}
    for (src, dst), fractions in routing.items():
        for link, share in fractions.items():
            load[link] = load.get(link, 0.0) + tm.gbps[tm.blocks.index(src), tm.blocks.index(dst)] * share
    members: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for c in mesh:
        (ba, pa), (bb, pb) = circuit_ends(hybrid, c)
        members.setdefault((ba, bb), []).append((ba, pa))
        members.setdefault((bb, ba), []).append((bb, pb))
    links = spine_links(hybrid)
    for lk in links:
        members.setdefault((lk.block, lk.spine), []).append((lk.block, lk.block_port))
        members.setdefault((lk.spine, lk.block), []).append((lk.spine, lk.spine_port))
    rates = {port: load.get(link, 0.0) / len(ports) for link, ports in members.items() for port in ports}
    with_spine = infer_matrix(hybrid, tables, mesh, rates, links)
    without = infer_matrix(hybrid, tables, mesh, rates)
    assert with_spine.measurements > without.measurements  # the spine trunks the groups use
    assert with_spine.max_residual_gbps < 1e-3 * max(rates.values()) * 4
    assert abs(with_spine.matrix.total() - tm.total()) < 0.05 * tm.total()
