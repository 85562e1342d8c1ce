"""The flow-level data plane: loads, drops, blackholes and conservation."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulation.dataplane import (
    BLACKHOLE_REASONS,
    BYTES_PER_GBIT,
    FabricIndex,
    ForwardingTables,
    OpticalState,
    PortFault,
    compute_step,
    link_view,
)
from emulation.fabric import EmulatedFabric
from optimizer.config import generate_fabric
from optimizer.fabric import Block, Ocs, build_fabric
from optimizer.topology import Circuit, uniform_mesh
from optimizer.traffic import uniform_matrix

GB = BYTES_PER_GBIT  # bytes in one Gbit


def three_blocks() -> EmulatedFabric:
    """b1, b2, b3 with 4 uplinks each on one 12-port OCS; two 100G circuits per pair.

    Block ports -> OCS ports: b1 0,1,6,7; b2 2,3,8,9; b3 4,5,10,11.
    b1-b2: b1 ports 0,1 <-> b2 ports 2,3; b1-b3: b1 2,3 <-> b3 0,1; b2-b3: b2 0,1 <-> b3 2,3.
    """
    fabric = build_fabric("tri", [Block(f"b{i}", 4) for i in (1, 2, 3)], [Ocs("o1", 12)])
    circuits = [Circuit("o1", a, b) for a, b in ((0, 8), (1, 9), (6, 4), (7, 5), (2, 10), (3, 11))]
    return EmulatedFabric(fabric, circuits=circuits)


def demand(**pairs: float) -> np.ndarray:
    d = np.zeros((3, 3))
    for key, gbps in pairs.items():
        s, t = key.split("_")
        d[int(s[1]) - 1, int(t[1]) - 1] = gbps
    return d


def assert_conserved(stats: object) -> None:
    total = stats.delivered_bytes + stats.dropped_bytes + stats.blackholed_bytes  # type: ignore[attr-defined]
    assert total == pytest.approx(stats.offered_bytes, rel=1e-9, abs=1e-3)  # type: ignore[attr-defined]


def test_the_wiring_gives_two_circuits_per_pair() -> None:
    fab = three_blocks()
    peers = fab.link_state("b1")
    assert peers.peer_node.tolist() == [1, 1, 2, 2]
    assert peers.peer_port.tolist() == [2, 3, 0, 1]


def test_direct_traffic_under_capacity_is_delivered() -> None:
    fab = three_blocks()
    fab.set_demand(demand(b1_b2=150))
    fab.step(2.0)
    s = fab.stats()
    assert s.offered_bytes == pytest.approx(300 * GB)
    assert s.delivered_bytes == pytest.approx(300 * GB)
    assert s.dropped_bytes == 0 and s.blackholed_bytes == 0
    assert s.mlu == pytest.approx(0.75)
    link = s.links[("b1", "b2")]
    assert link.capacity_gbps == 200 and link.utilization == pytest.approx(0.75)


def test_load_over_capacity_is_dropped() -> None:
    fab = three_blocks()
    fab.set_demand(demand(b1_b2=300))
    fab.step(1.0)
    s = fab.stats()
    assert s.dropped_bytes == pytest.approx(100 * GB)
    assert s.delivered_bytes == pytest.approx(200 * GB)
    assert s.mlu == pytest.approx(1.5)
    assert s.links[("b1", "b2")].dropped_bytes == pytest.approx(100 * GB)


def test_transit_split_loads_both_hops() -> None:
    fab = three_blocks()
    fab.switches["b1"].set_groups("r", 1, {"b2": {"b2": 1, "b3": 1}}, {}, replace=True)
    fab.set_demand(demand(b1_b2=300, b3_b2=40))
    fab.step(1.0)
    s = fab.stats()
    assert s.dropped_bytes == 0 and s.blackholed_bytes == 0
    assert s.delivered_bytes == pytest.approx(340 * GB)
    assert s.links[("b1", "b2")].offered_gbps == pytest.approx(150)
    assert s.links[("b1", "b3")].offered_gbps == pytest.approx(150)
    assert s.links[("b3", "b2")].offered_gbps == pytest.approx(190)  # 40 own + 150 transit
    assert s.mlu == pytest.approx(190 / 200)


def test_congested_first_hop_thins_the_second() -> None:
    fab = three_blocks()
    fab.switches["b1"].set_groups("r", 1, {"b2": {"b3": 1}}, {}, replace=True)
    fab.set_demand(demand(b1_b2=400))
    fab.step(1.0)
    s = fab.stats()
    assert s.links[("b1", "b3")].dropped_bytes == pytest.approx(200 * GB)
    assert s.links[("b3", "b2")].carried_bytes == pytest.approx(200 * GB)
    assert s.delivered_bytes == pytest.approx(200 * GB)
    assert_conserved(s)


def test_fully_drained_next_hop_blackholes_as_drained_and_regrouping_avoids_it() -> None:
    fab = three_blocks()
    fab.switches["b1"].drain([0, 1])
    fab.set_demand(demand(b1_b2=100))
    fab.step(1.0)
    s = fab.stats()
    assert s.blackholed_by_reason["drained"] == pytest.approx(100 * GB)
    assert s.delivered_bytes == 0
    fab.switches["b1"].set_groups("r", 1, {"b2": {"b3": 1}}, {}, replace=True)
    fab.step(1.0)
    s2 = fab.stats()
    assert s2.blackholed_bytes == pytest.approx(100 * GB)  # nothing new
    assert s2.delivered_bytes == pytest.approx(100 * GB)


def test_partly_drained_trunk_moves_traffic_to_the_other_member() -> None:
    fab = three_blocks()
    fab.switches["b1"].drain([0])
    fab.set_demand(demand(b1_b2=150))
    fab.step(1.0)
    s = fab.stats()
    assert s.blackholed_bytes == 0
    assert s.links[("b1", "b2")].capacity_gbps == 100  # one live member left
    assert s.dropped_bytes == pytest.approx(50 * GB)


def test_cut_fibre_blackholes_its_share_as_link_down() -> None:
    fab = three_blocks()
    fab.fail_link("b1", 0)
    fab.set_demand(demand(b1_b2=100))
    fab.step(1.0)
    s = fab.stats()
    assert s.blackholed_by_reason["link_down"] == pytest.approx(50 * GB)
    assert s.delivered_bytes == pytest.approx(50 * GB)
    assert fab.link_state("b1").peer_node[0] == -1
    assert fab.links().fault[0] == PortFault.LINK_DOWN
    fab.restore_link("b1", 0)
    fab.step(1.0)
    assert fab.stats().delivered_bytes == pytest.approx(150 * GB)


def test_ocs_power_loss_blackholes_everything_as_no_circuit() -> None:
    fab = three_blocks()
    fab.set_demand(demand(b1_b2=100, b2_b3=50))
    fab.fail_ocs("o1")
    fab.step(1.0)
    s = fab.stats()
    assert s.blackholed_by_reason["no_circuit"] == pytest.approx(150 * GB)
    assert s.delivered_bytes == 0


def test_switching_circuit_carries_nothing_until_it_settles() -> None:
    fab = three_blocks()
    ocs = fab.ocs["o1"]
    ocs.apply("re", 1, remove=[(1, 9)], add=[(1, 9)])  # re-made: switching for 50 ms
    fab.set_demand(demand(b1_b2=100))
    fab.step(1.0)
    s = fab.stats()
    assert s.blackholed_by_reason["switching"] == pytest.approx(50 * 0.05 * GB)
    assert s.delivered_bytes == pytest.approx(100 * GB - 50 * 0.05 * GB)
    assert fab.clock.now() == pytest.approx(1.0)


def test_draining_before_switching_loses_nothing() -> None:
    fab = three_blocks()
    fab.set_demand(demand(b1_b2=100))
    # b1 port 1 <-> b2 port 3 is the circuit (1, 9): drain both ends, switch, undrain.
    fab.switches["b1"].drain([1])
    fab.switches["b2"].drain([3])
    fab.ocs["o1"].apply("re", 1, remove=[(1, 9)], add=[(1, 9)])
    fab.step(0.5)
    fab.switches["b1"].undrain([1])
    fab.switches["b2"].undrain([3])
    fab.step(0.5)
    s = fab.stats()
    assert s.blackholed_bytes == 0 and s.dropped_bytes == 0
    assert s.links[("b1", "b2")].capacity_gbps == 200


def test_circuit_to_another_block_is_misdirected_until_reinstalled() -> None:
    fab = three_blocks()
    # b1 port 1 (OCS 1) now goes to b3 port 3 (OCS 11); b2 port 1 (OCS 3) to b2? no: to OCS 9.
    fab.ocs["o1"].apply("x", 1, remove=[(1, 9), (3, 11)], add=[(1, 11), (3, 9)])
    fab.set_demand(demand(b1_b2=100))
    fab.step(0.1)
    s = fab.stats()
    assert s.blackholed_by_reason["switching"] > 0
    fab.step(0.9)
    s = fab.stats()
    assert s.blackholed_by_reason["misdirected"] == pytest.approx(50 * 0.95 * GB)
    assert_conserved(s)


def test_counters_follow_the_traffic_and_are_monotonic() -> None:
    fab = three_blocks()
    fab.set_demand(demand(b1_b2=300, b2_b1=80))
    previous = None
    for _ in range(3):
        fab.step(1.0)
        counters = fab.switches["b1"].counters()
        if previous is not None:
            for key in ("tx_bytes", "rx_bytes", "tx_drop_bytes", "tx_packets"):
                assert (counters[key] >= previous[key]).all()
        previous = counters
    s = fab.stats()
    c1, c2 = fab.switches["b1"].counters(), fab.switches["b2"].counters()
    assert int(c1["tx_bytes"].sum()) == pytest.approx(s.links[("b1", "b2")].carried_bytes, abs=4)
    assert int(c2["rx_bytes"][[2, 3]].sum()) == pytest.approx(600 * GB, abs=4)
    assert int(c1["tx_drop_bytes"].sum()) == pytest.approx(300 * GB, abs=4)
    assert c1["egress"] == {"b2": int(900 * GB), "b3": 0}
    assert int(c2["tx_bytes"].sum()) == pytest.approx(240 * GB, abs=4)
    assert c1["tx_packets"].sum() == pytest.approx(600 * GB / 1000, abs=4)


def test_demand_schedule_changes_over_emulated_time() -> None:
    fab = three_blocks()
    fab.set_demand([(0.0, demand(b1_b2=100)), (1.5, demand(b1_b2=10))])
    fab.step(3.0)
    assert fab.stats().offered_bytes == pytest.approx((150 + 15) * GB)
    fab.set_demand(lambda t: demand(b2_b3=t))  # a function of time
    fab.step(1.0)
    assert fab.stats().offered_bytes == pytest.approx((165 + 3) * GB)


def test_traffic_matrix_objects_are_accepted() -> None:
    fab = three_blocks()
    fab.set_demand(uniform_matrix(fab.fabric, 0.25))  # each block sends 100G, 50G per peer
    fab.step(1.0)
    s = fab.stats()
    assert s.offered_bytes == pytest.approx(300 * GB)
    assert s.mlu == pytest.approx(0.25)


def test_64_block_fabric_steps_quickly_and_conserves() -> None:
    fab = EmulatedFabric.from_config("configs/fabric-64.yaml")
    fab.set_demand(uniform_matrix(fab.fabric, 0.6))
    started = time.perf_counter()
    fab.step(1.0)
    elapsed = time.perf_counter() - started
    s = fab.stats()
    assert s.offered_bytes > 0
    assert_conserved(s)
    assert s.blackholed_bytes == 0
    assert 0.5 < s.mlu < 0.7
    assert elapsed < 2.0


# -- conservation on random fabrics ------------------------------------------------------


@st.composite
def random_cases(draw: st.DrawFn) -> tuple[object, ...]:
    n_blocks = draw(st.integers(2, 6))
    n_ocs = draw(st.integers(1, 3))
    share = draw(st.sampled_from([2, 4]))
    spare = draw(st.integers(0, 2))
    spines = draw(st.integers(0, 2))
    seed = draw(st.integers(0, 2**32 - 1))
    fabric = generate_fabric(
        blocks=n_blocks, uplinks=share * n_ocs, ocs=n_ocs, ports=n_blocks * share + 2 * spare,
        spines=spines, spine_links=draw(st.integers(1, 3)) if spines else 0,
    )
    return fabric, seed


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_cases())
def test_bytes_in_equal_delivered_plus_dropped_plus_blackholed(case: tuple[object, ...]) -> None:
    fabric, seed = case
    rng = np.random.default_rng(seed)
    index = FabricIndex.from_fabric(fabric)  # type: ignore[arg-type]
    n, m = index.n_blocks, index.n_nodes
    circuits = [c for c in uniform_mesh(fabric) if rng.random() < 0.8]  # type: ignore[arg-type]
    peer = np.full(index.n_ocs_ports, -1)
    switching = np.zeros(index.n_ocs_ports, dtype=bool)
    for c in circuits:
        o = fabric.ocs_index(c.ocs)  # type: ignore[attr-defined]
        qa, qb = index.ocs_port(o, c.a), index.ocs_port(o, c.b)
        peer[qa], peer[qb] = qb, qa
        if rng.random() < 0.15:
            switching[[qa, qb]] = True
    fibre_ok = rng.random(index.n_ocs_ports) > 0.1
    spine_ok = rng.random(index.n_ports) > 0.2
    links = link_view(index, OpticalState(peer, switching, fibre_ok), spine_ok)

    source = np.zeros((n, n, m))
    for s in range(n):
        for d in range(n):
            w = rng.random(m) * (rng.random(m) < 0.5)
            w[s] = 0.0
            if w.sum() == 0:
                w[d] = 1.0
            source[s, d] = w / w.sum()
    corrupt = rng.random(index.n_ports) < 0.15
    installed = np.where(corrupt, rng.integers(-1, m, index.n_ports), links.peer_node)
    drained = rng.random(index.n_ports) < 0.15
    tables = ForwardingTables(source, installed, drained)
    demand_gbps = rng.random((n, n)) * rng.choice([10.0, 100.0, 1000.0])
    dt = float(rng.choice([0.05, 1.0, 7.5]))

    r = compute_step(index, links, tables, demand_gbps, dt)

    np.fill_diagonal(demand_gbps, 0)
    assert r.offered_bytes == pytest.approx(demand_gbps.sum() * dt * GB)
    total = r.delivered_bytes + r.dropped_bytes + r.blackholed_bytes
    assert total == pytest.approx(r.offered_bytes, rel=1e-9, abs=1e-3)
    assert min(r.delivered_bytes, r.dropped_bytes, r.blackholed_bytes) >= 0
    assert sum(r.blackholed_by_reason[k] for k in BLACKHOLE_REASONS) == pytest.approx(
        r.blackholed_bytes, rel=1e-9, abs=1e-3
    )
    # links never carry more than they can
    assert (r.link_carried_bytes <= r.link_capacity_gbps * dt * GB * (1 + 1e-9) + 1e-6).all()
    assert r.link_dropped_bytes.sum() == pytest.approx(r.dropped_bytes, rel=1e-9, abs=1e-3)
    # ports: what blocks send on block links arrives at the far end
    block_links = links.peer_port >= 0
    sent_to_blocks = r.port_tx_bytes[block_links].sum()
    received_from_blocks = r.port_rx_bytes[index.spine_peer < 0].sum()
    assert received_from_blocks == pytest.approx(sent_to_blocks, rel=1e-9, abs=1e-3)
    assert r.port_tx_bytes.sum() == pytest.approx(r.link_carried_bytes[:n].sum(), rel=1e-9, abs=1e-3)
    assert r.port_rx_bytes[index.spine_peer >= 0].sum() == pytest.approx(
        r.link_carried_bytes[n:].sum(), rel=1e-9, abs=1e-3
    )
    assert (r.port_tx_bytes >= 0).all() and (r.port_tx_drop_bytes >= 0).all()
    np.testing.assert_allclose(r.egress_bytes.sum(axis=1), demand_gbps.sum(axis=1) * dt * GB)


# -- the hybrid fabric: static spine links beside the OCS layer ---------------------------


def hybrid() -> EmulatedFabric:
    return EmulatedFabric.from_config("configs/fabric-hybrid-8.yaml")


def test_spine_ports_follow_the_uplinks_and_report_the_spine_as_peer() -> None:
    fab = hybrid()
    ports = fab.switches["b1"].ports()
    assert len(ports) == 32 + 8
    assert [p["peer"] for p in ports[32:]] == [("s1", i) for i in range(4)] + [
        ("s2", i) for i in range(4)
    ]
    assert [p["peer"] for p in fab.switches["b2"].ports()[32:34]] == [("s1", 4), ("s1", 5)]


def test_traffic_via_a_spine_crosses_both_spine_links() -> None:
    fab = hybrid()
    fab.switches["b1"].set_groups("r", 1, {"b2": {"b2": 1, "s1": 1}}, {}, replace=True)
    d = np.zeros((8, 8))
    d[0, 1] = 600.0  # 300 direct, 300 via s1 (4 x 100G both ways)
    fab.set_demand(d)
    fab.step(1.0)
    s = fab.stats()
    assert s.links[("b1", "s1")].offered_gbps == pytest.approx(300)
    assert s.links[("b1", "s1")].capacity_gbps == 400
    assert s.links[("s1", "b2")].carried_bytes == pytest.approx(300 * GB)
    assert s.delivered_bytes == pytest.approx(600 * GB)
    rx = fab.switches["b2"].counters()["rx_bytes"]
    assert int(rx[32:36].sum()) == pytest.approx(300 * GB, abs=4)


def test_spine_congestion_drops_and_a_cut_spine_link_blackholes() -> None:
    fab = hybrid()
    fab.switches["b7"].set_groups("r", 1, {"b8": {"s2": 1}}, {}, replace=True)
    d = np.zeros((8, 8))
    d[6, 7] = 500.0  # b7 and b8 are 200G blocks but the spine runs at 100G: 400G fits
    fab.set_demand(d)
    fab.step(1.0)
    s = fab.stats()
    assert s.links[("b7", "s2")].capacity_gbps == 400
    assert s.dropped_bytes == pytest.approx(100 * GB)
    fab.fail_link("b7", 36)  # b7's first link to s2
    fab.step(1.0)
    s2 = fab.stats()
    assert s2.blackholed_by_reason["link_down"] == pytest.approx(125 * GB)
    assert fab.switches["b7"].ports()[36]["peer"] is None
    fab.restore_link("b7", 36)
    assert fab.switches["b7"].ports()[36]["peer"] == ("s2", 24)


def test_transit_groups_may_not_use_a_spine() -> None:
    from emulation.errors import MalformedRequest

    fab = hybrid()
    with pytest.raises(MalformedRequest, match="only go direct"):
        fab.switches["b1"].set_groups("r", 1, {}, {"b2": {"s1": 1}}, replace=True)
