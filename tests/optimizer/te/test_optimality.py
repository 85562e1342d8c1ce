"""TE's LP optimum against hand-worked cases and an independent arc-flow LP."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.config import generate_fabric, load_fabric
from optimizer.errors import ConfigError, InfeasibleError
from optimizer.fabric import SpineSwitch
from optimizer.te import TeSolver, ecmp_mlu, min_mlu, solve_te
from optimizer.te import lp as te_lp
from optimizer.te import solve as te_solve
from optimizer.topology import Topology, mesh_topology
from optimizer.traffic import TrafficMatrix, gravity_matrix, hotspot_matrix, paired_matrix, ring_matrix
from tests.support import CONFIGS, shipped_fabric
from tests.support.te_instances import matrix, random_instance, small_fabric, topology
from tests.support.te_reference import reference_mlu
from tests.support.te_reference_arc import arc_min_mlu

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # PuLP 3.3 warns of its 4.0 API


def test_one_transit_path_doubles_the_capacity() -> None:
    # 300 Gbit/s from b1 to b2: 100 direct and 100 through b3 give MLU 1.5.
    fab = small_fabric(3)
    topo = topology(fab, {("b1", "b2"): 1, ("b1", "b3"): 1, ("b2", "b3"): 1})
    tm = matrix(fab, {("b1", "b2"): 300.0})
    result = solve_te(fab, topo, tm)
    assert result.mlu == pytest.approx(1.5, rel=1e-6)
    assert result.scale_factor == pytest.approx(1 / 1.5, rel=1e-6)
    assert {h.via for h in result.group("b1", "b2").next_hops} == {"b2", "b3"}
    assert result.stretch == pytest.approx(1.5, rel=1e-3)  # half direct, half via b3


def test_spine_path_adds_capacity_at_the_slower_speed() -> None:
    # A 400G spine switch with one link to each 100G block adds 100 Gbit/s: MLU 300/300.
    spine = [SpineSwitch("s1", (("b1", 1), ("b2", 1)), 400.0)]
    fab = small_fabric(3, spine=spine)
    topo = topology(fab, {("b1", "b2"): 1, ("b1", "b3"): 1, ("b2", "b3"): 1})
    tm = matrix(fab, {("b1", "b2"): 300.0})
    result = solve_te(fab, topo, tm)
    assert result.mlu == pytest.approx(1.0, rel=1e-6)
    assert "s1" in {h.via for h in result.group("b1", "b2").next_hops}
    assert solve_te(fab, topo, tm, spine=()).mlu == pytest.approx(1.5, rel=1e-6)


def test_link_runs_at_the_slower_end() -> None:
    fab = small_fabric(2, speeds=[100.0, 400.0])
    topo = topology(fab, {("b1", "b2"): 2})
    result = solve_te(fab, topo, matrix(fab, {("b2", "b1"): 100.0}))
    assert result.mlu == pytest.approx(0.5, rel=1e-6)  # 2 x 100G, not 2 x 400G
    (link,) = [link for link in result.links if (link.src, link.dst) == ("b2", "b1")]
    assert link.capacity_gbps == pytest.approx(200.0)


def test_uncongested_traffic_stays_direct() -> None:
    # Plain min-MLU would be indifferent; the secondary term keeps light traffic on 1 hop.
    fab = small_fabric(4)
    topo = topology(fab, {(a, b): 2 for a in fab.block_names for b in fab.block_names if a < b})
    tm = matrix(fab, {("b1", "b2"): 50.0, ("b3", "b4"): 30.0, ("b2", "b3"): 400.0})
    result = solve_te(fab, topo, tm)
    assert result.group("b1", "b2").next_hops[0].via == "b2"
    assert len(result.group("b1", "b2").next_hops) == 1
    assert result.stretch_lp < 2.0


@pytest.mark.parametrize("seed", range(12))
def test_matches_independent_arc_lp(seed: int) -> None:
    fab, topo, tm = random_instance(seed)
    try:
        expected = arc_min_mlu(fab, topo, tm)
    except RuntimeError:
        with pytest.raises(InfeasibleError):
            solve_te(fab, topo, tm)
        return
    result = solve_te(fab, topo, tm)
    assert result.mlu == pytest.approx(expected, rel=1e-4, abs=1e-9)
    assert min_mlu(fab, topo, tm) == pytest.approx(expected, rel=1e-4, abs=1e-9)


@pytest.mark.parametrize("config", ["fabric-8.yaml", "fabric-hybrid-8.yaml"])
@pytest.mark.parametrize("kind", ["gravity", "hotspot", "ring"])
def test_shipped_fabrics_match_arc_lp(config: str, kind: str) -> None:
    fab = load_fabric(f"{CONFIGS}/{config}")
    tm = {
        "gravity": gravity_matrix(fab, seed=5, load=0.8, skew=1.5),
        "hotspot": hotspot_matrix(fab, seed=5, load=0.9),
        "ring": ring_matrix(fab, seed=5, load=0.9),
    }[kind]
    topo = mesh_topology(fab)
    result = solve_te(fab, topo, tm)
    assert result.mlu == pytest.approx(arc_min_mlu(fab, topo, tm), rel=1e-4)
    assert result.mlu <= result.baseline_mlu + 1e-9  # the optimum beats ECMP on the same mesh


@pytest.mark.parametrize("seeded", [True, False])
def test_matches_plain_path_lp_at_16_blocks(seeded: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    fab = generate_fabric(16, 128, 32, 136, 4)
    tm = hotspot_matrix(fab, seed=3, load=0.9)
    if not seeded:
        # A first master of direct paths only: pricing has to find every transit path.
        monkeypatch.setattr(te_lp, "INITIAL_TWO_HOP_PATHS", 0)
        monkeypatch.setattr(te_lp, "FLOOR_COVER", 0.0)
    result = solve_te(fab, None, tm)
    assert result.mlu == pytest.approx(reference_mlu(fab, tm), rel=1e-5)
    assert result.lp_optimal
    if not seeded:
        assert result.lp_rounds > 1
    # Far fewer columns than the 240 x 15 candidate paths of the full LP.
    assert result.lp_columns < 0.5 * 240 * 15


def test_hybrid_fabric_routes_over_the_spine() -> None:
    fab = load_fabric(f"{CONFIGS}/fabric-hybrid-8.yaml")
    tm = hotspot_matrix(fab, seed=1, load=0.9)
    result = solve_te(fab, None, tm)
    spine_vias = {h.via for g in result.groups if g.demand_gbps > 0 for h in g.next_hops} & {"s1", "s2"}
    assert spine_vias == {"s1", "s2"}
    spine_links = [link for link in result.links if "s1" in (link.src, link.dst)]
    assert len(spine_links) == 16 and max(link.load_gbps for link in spine_links) > 0
    assert result.mlu < solve_te(fab, None, tm, spine=()).mlu


def test_overloaded_matrix_reports_the_scale_factor_that_fits() -> None:
    fab = load_fabric(f"{CONFIGS}/fabric-8.yaml")
    base = gravity_matrix(fab, seed=2, load=0.5)
    over = base.scaled(4.0)
    result = solve_te(fab, None, over)
    assert result.mlu > 1.0
    assert result.scale_factor == pytest.approx(1.0 / result.mlu)
    # Scaling the matrix by the reported factor makes it fit exactly.
    assert min_mlu(fab, None, over.scaled(result.scale_factor)) == pytest.approx(1.0, rel=1e-6)


def test_zero_matrix_has_zero_mlu_and_no_scale_factor() -> None:
    fab = load_fabric(f"{CONFIGS}/fabric-4.yaml")
    result = solve_te(fab, None, TrafficMatrix.zeros(fab.block_names))
    assert result.mlu == 0.0 and result.mlu_quantized == 0.0
    assert result.scale_factor is None
    assert result.to_json()["routing"]["scale_factor"] is None


def test_demand_without_any_path_is_infeasible() -> None:
    fab = small_fabric(4)
    topo = topology(fab, {("b1", "b2"): 2, ("b3", "b4"): 2})
    tm = matrix(fab, {("b1", "b2"): 10.0, ("b1", "b3"): 10.0, ("b4", "b2"): 5.0})
    with pytest.raises(InfeasibleError, match=r"b1->b3.*b4->b2"):
        solve_te(fab, topo, tm)
    with pytest.raises(InfeasibleError, match="b1->b3"):
        min_mlu(fab, topo, tm)


def test_invalid_parameters_raise_config_errors() -> None:
    fab = small_fabric(3)
    tm = matrix(fab, {("b1", "b2"): 10.0})
    for hedge in (0.0, -0.5, 1.5):
        with pytest.raises(ConfigError, match="hedge"):
            solve_te(fab, None, tm, hedge=hedge)
    with pytest.raises(ConfigError, match="table_size"):
        solve_te(fab, None, tm, table_size=0)
    other = small_fabric(4)
    with pytest.raises(ConfigError, match="blocks"):
        solve_te(fab, mesh_topology(other), tm)
    too_many = Topology.from_links(fab.block_names, [("b1", "b2", 17)])  # 16 uplinks per block
    with pytest.raises(ConfigError, match="uplinks"):
        solve_te(fab, too_many, tm)


def test_warm_started_solver_gives_the_same_optimum() -> None:
    fab = generate_fabric(16, 128, 32, 136, 4)
    solver = TeSolver(fab)
    matrices = [gravity_matrix(fab, seed=s, load=0.9, skew=1.5) for s in range(3)]
    cold = [min_mlu(fab, None, tm) for tm in matrices]
    warm_results = [solver.solve(None, tm) for tm in matrices]
    assert [r.mlu for r in warm_results] == pytest.approx(cold, rel=1e-7)
    # Re-solving the same matrix from the pool needs a single master solve.
    assert solver.solve(None, matrices[-1]).lp_rounds == 1
    # Staging-like calls on a degraded topology reuse the same solver.
    counts = solver.mesh.counts.copy()
    counts[0, 1] = counts[1, 0] = 0
    degraded = Topology(fab.block_names, counts)
    assert solver.min_mlu(degraded, matrices[0]) == pytest.approx(min_mlu(fab, degraded, matrices[0]))
    assert solver.min_mlu(degraded, matrices[0]) >= cold[0] - 1e-9


def test_ecmp_baseline_is_the_equal_split() -> None:
    fab = small_fabric(3)
    topo = topology(fab, {("b1", "b2"): 1, ("b1", "b3"): 1, ("b2", "b3"): 1})
    tm = matrix(fab, {("b1", "b2"): 300.0})
    # Equal split: 150 direct, 150 via b3 on 100G links.
    assert ecmp_mlu(fab, tm, topology=topo) == pytest.approx(1.5)
    tm2 = matrix(fab, {("b1", "b2"): 300.0, ("b3", "b1"): 100.0})
    # b3->b2 carries 150 (b1's transit half) + 50 (b3's transit half to b1) = 200.
    assert ecmp_mlu(fab, tm2, topology=topo) == pytest.approx(2.0)
    # The optimum sends b3->b1 direct and splits b1->b2 evenly: 150 on every busy link.
    assert solve_te(fab, topo, tm2).mlu == pytest.approx(1.5)


def test_stretch_counts_block_hops() -> None:
    fab = small_fabric(3)
    topo = topology(fab, {("b1", "b3"): 1, ("b2", "b3"): 1})  # no direct b1-b2 link
    result = solve_te(fab, topo, matrix(fab, {("b1", "b2"): 50.0, ("b1", "b3"): 50.0}))
    assert result.stretch == pytest.approx(1.5)  # half the traffic takes two hops
    assert np.isclose(result.mlu, 1.0)


def test_weights_by_source_lists_every_group() -> None:
    fab = load_fabric(f"{CONFIGS}/fabric-hybrid-8.yaml")
    result = solve_te(fab, None, hotspot_matrix(fab, seed=1, load=0.9))
    tables = result.weights_by_source()
    assert set(tables) == set(fab.block_names)
    assert sum(len(t) for t in tables.values()) == len(result.groups)
    g = result.groups[0]
    assert tables[g.src][g.dst] == {h.via: h.weight for h in g.next_hops}
    no_spine = result.weights_by_source(include_spine=False)
    assert all(not set(hops) & {"s1", "s2"} for t in no_spine.values() for hops in t.values())


@pytest.mark.slow
def test_jupiter_scale_matches_the_plain_path_lp() -> None:
    # The headline claim of the benchmark, as a regression guard (PuLP + CBC takes ~20 s).
    fab = load_fabric(f"{CONFIGS}/fabric-64.yaml")
    tm = hotspot_matrix(fab, seed=1, load=0.9)
    result = solve_te(fab, None, tm)
    assert result.mlu == pytest.approx(reference_mlu(fab, tm), rel=1e-5)
    assert result.lp_optimal
    assert result.lp_columns < 0.1 * 4032 * 63
    assert all(g.entries <= 128 for g in result.groups)


def test_a_fabric_without_circuits_is_infeasible_or_idle_not_a_crash() -> None:
    fabric = shipped_fabric("fabric-4")
    empty = Topology.empty(fabric.block_names)
    assert min_mlu(fabric, empty, TrafficMatrix.zeros(fabric.block_names)) == 0.0
    with pytest.raises(InfeasibleError, match="b1->b2"):
        min_mlu(fabric, empty, matrix(fabric, {("b1", "b2"): 10.0}))


def test_a_degenerate_master_falls_back_to_the_interior_point_method(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With an iteration limit of one, every master stops early: column generation goes on by
    # the interior point method, to the same optimum as the plain path LP.
    fab = generate_fabric(16, 128, 32, 136, 4)
    tm = hotspot_matrix(fab, seed=3, load=0.9)
    expected = reference_mlu(fab, tm)
    monkeypatch.setattr(te_lp, "MIN_SIMPLEX_ITERATIONS", 1)
    monkeypatch.setattr(te_lp, "SIMPLEX_ITERATIONS_PER_ROW", 0.0)
    solver = TeSolver(fab)
    result = solver.solve(None, tm)
    assert result.mlu == pytest.approx(expected, rel=1e-5)
    assert result.lp_optimal
    assert "interior point" in result.method
    assert result.lp_columns < 240 * 15  # priced in, not every candidate path
    assert result.mlu_quantized <= result.mlu * 1.1
    # The pool remembers: the next solves go straight to the interior point method, then
    # the simplex is tried again (and, here, stops early again).
    assert solver._pool is not None and solver._pool.ipm_solves == te_lp.IPM_SOLVES_REMEMBERED
    for left in range(te_lp.IPM_SOLVES_REMEMBERED - 1, -1, -1):
        assert solver.min_mlu(None, tm.scaled(1.01)) == pytest.approx(1.01 * expected, rel=1e-5)
        assert solver._pool.ipm_solves == left
    solver.min_mlu(None, tm)
    assert solver._pool.ipm_solves == te_lp.IPM_SOLVES_REMEMBERED


def test_blocks_paired_off_on_a_large_fabric_go_to_the_interior_point_method_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 48 blocks (4,512 rows): paired off, each pair's commodity needs over a quarter of its
    # paths at the MLU lower bound; a hotspot matrix (a few hot blocks) does not look so.
    fab = generate_fabric(48, 256, 128, 136, 4)
    mesh = mesh_topology(fab)
    paired = paired_matrix(fab, seed=1, load=0.9)
    for tm, degenerate in ((paired, True), (hotspot_matrix(fab, seed=1, load=0.9), False)):
        inst = te_solve._instance(fab, mesh, tm, None)
        lower = te_lp.mlu_lower_bound(inst.graph, inst.comm)
        rows = inst.graph.n_links + inst.comm.count
        assert te_lp.looks_degenerate(inst.comm_paths, inst.comm.demand_gbps, lower, rows) is degenerate
    result = TeSolver(fab).solve(None, paired)
    assert "interior point" in result.method and result.lp_optimal
    assert result.lp_columns < 0.5 * 48 * 47 * 47
    # the simplex alone (as the LP's reference here: PuLP + CBC takes minutes at 48 blocks)
    monkeypatch.setattr(te_lp, "IPM_FIRST_ROWS", 10**9)
    monkeypatch.setattr(te_lp, "SIMPLEX_ITERATIONS_PER_ROW", 1e6)
    simplex = TeSolver(fab).solve(None, paired)
    assert simplex.method == "min_mlu"
    assert result.mlu == pytest.approx(simplex.mlu, rel=te_lp.LAGRANGIAN_GAP)


def test_an_ordinary_master_stays_on_the_simplex() -> None:
    fab = generate_fabric(16, 128, 32, 136, 4)
    result = TeSolver(fab).solve(None, hotspot_matrix(fab, seed=3, load=0.9))
    assert result.method == "min_mlu"
    assert result.lp_columns < 0.5 * 240 * 15
