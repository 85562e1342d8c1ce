"""Spine switches as emulated devices: served over gRPC, and the data plane follows their state."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from emulation.dataplane import BYTES_PER_GBIT, FabricIndex
from emulation.errors import MalformedRequest
from emulation.fabric import EmulatedFabric
from optimizer.config import load_fabric
from optimizer.spine import spine_in_service, spine_links, spine_port_count
from southbound.devices import load_devices_file
from southbound.errors import InvalidRequest
from tests.support import ROOT

GB = BYTES_PER_GBIT
HYBRID = ROOT / "configs" / "fabric-hybrid-8.yaml"


def hybrid() -> EmulatedFabric:
    return EmulatedFabric.from_config(HYBRID)


def test_the_spine_numbering_is_the_data_planes() -> None:
    fabric = load_fabric(HYBRID)
    index = FabricIndex.from_fabric(fabric)
    links = spine_links(fabric)
    assert len(links) == 64 and spine_port_count(fabric, "s2") == 32
    for link in links:
        x = index.spines.index(link.spine)
        g = int(index.spine_port_block_port[index.spine_port_offset[x] + link.spine_port])
        assert index.blocks[int(index.port_block[g])] == link.block
        assert g - int(index.port_offset[fabric.block_index(link.block)]) == link.block_port
    # s1 port 5 is b2's second link to s1, on b2's port 33 (after its 32 uplinks)
    assert next(lk for lk in links if lk.spine == "s1" and lk.spine_port == 5).block_port == 33
    half = spine_in_service(fabric, [lk for lk in links if lk.block != "b3" or lk.spine_port % 2], out=["s2"])
    assert [s.name for s in half] == ["s1"] and half[0].links_to("b3") == 2 and half[0].links_to("b1") == 4


def test_spine_switches_are_served_and_listed_by_reflection(tmp_path) -> None:
    with EmulatedFabric.from_config(HYBRID, devices_file=tmp_path / "devices.yaml") as fab:
        devices = load_devices_file(fab.devices_file)
        assert {n: d.kind for n, d in devices.items() if d.kind == "spine"} == {"s1": "spine", "s2": "spine"}
        with grpc.insecure_channel(devices["s1"].address) as channel:
            services = set(ProtoReflectionDescriptorDatabase(channel).get_services())
        assert "heliostat.southbound.v1.PacketSwitchService" in services
        with fab.switch_client("s2") as client:
            info = client.device_info()
            assert (info.role, info.block, info.num_ports) == ("spine", "s2", 32)
            ports = client.ports()
            assert [(p.peer_block, p.peer_port) for p in ports[:5]] == [
                ("b1", 36), ("b1", 37), ("b1", 38), ("b1", 39), ("b2", 36)
            ]
            with pytest.raises(InvalidRequest, match="originates no traffic"):
                client.set_groups(expected_generation=info.generation, source={"b1": {"b1": 1}})
            with pytest.raises(InvalidRequest, match="only go direct"):
                client.set_groups(expected_generation=info.generation, transit={"b1": {"b2": 1}})
            done = client.set_groups(expected_generation=info.generation, transit={"b1": {"b1": 1}})
            assert client.groups().transit == {"b1": {"b1": 1}} and done.generation == info.generation + 1
        with fab.switch_client("b1") as client:
            assert client.device_info().role == "block"


def test_spine_counters_count_what_it_forwarded() -> None:
    fab = hybrid()
    fab.switches["b1"].set_groups("r", 1, {"b2": {"s1": 1}, "b3": {"s1": 1, "s2": 1}}, {}, replace=True)
    d = np.zeros((8, 8))
    d[0, 1], d[0, 2] = 200.0, 100.0
    fab.set_demand(d)
    fab.step(2.0)
    c1, c2 = fab.spines["s1"].counters(), fab.spines["s2"].counters()
    assert c1["egress"]["b2"] == pytest.approx(400 * GB, rel=1e-9)
    assert c1["egress"]["b3"] == pytest.approx(100 * GB, rel=1e-9)
    assert c2["egress"]["b3"] == pytest.approx(100 * GB, rel=1e-9) and c2["egress"]["b2"] == 0
    # s1 received on its ports from b1 (0..3) what it sends on its ports to b2 (4..7)
    assert int(c1["rx_bytes"][0:4].sum()) == pytest.approx(500 * GB, rel=1e-9)
    assert int(c1["tx_bytes"][4:8].sum()) == pytest.approx(400 * GB, rel=1e-9)
    assert int(fab.switches["b2"].counters()["rx_bytes"][32:36].sum()) == pytest.approx(400 * GB, rel=1e-9)
    assert fab.stats().delivered_bytes == pytest.approx(600 * GB)


def test_a_spine_drain_blackholes_and_its_groups_decide_the_members() -> None:
    fab = hybrid()
    fab.switches["b1"].set_groups("r", 1, {"b2": {"s1": 1}}, {}, replace=True)
    d = np.zeros((8, 8))
    d[0, 1] = 200.0
    fab.set_demand(d)
    s1 = fab.spines["s1"]
    s1.drain([4, 5])  # two of its four ports to b2: the other two carry it all
    fab.step(1.0)
    stats = fab.stats()
    assert stats.blackholed_bytes == 0 and stats.links[("s1", "b2")].capacity_gbps == 200
    assert stats.links[("s1", "b2")].utilization == pytest.approx(1.0)
    s1.drain([6, 7])  # every member to b2 drained: what b1 still sends there is lost
    fab.step(1.0)
    assert fab.stats().blackholed_by_reason["drained"] == pytest.approx(200 * GB)
    s1.undrain([4, 5, 6, 7])
    # A link that goes down stays a member (and blackholes its share) until the groups are set.
    fab.fail_link("s1", 4)
    assert s1.ports()[4]["peer"] is None and fab.switches["b2"].ports()[32]["peer"] is None
    before = fab.stats().blackholed_by_reason["link_down"]
    fab.step(1.0)
    assert fab.stats().blackholed_by_reason["link_down"] - before == pytest.approx(50 * GB)
    s1.set_groups("g", s1.generation, {}, {"b2": {"b2": 1}}, replace=True)
    before = fab.stats().blackholed_bytes
    fab.step(1.0)
    assert fab.stats().blackholed_bytes == pytest.approx(before)
    assert fab.stats().links[("s1", "b2")].capacity_gbps == 300


def test_a_spine_refuses_source_groups_in_process() -> None:
    fab = hybrid()
    with pytest.raises(MalformedRequest, match="originates no traffic"):
        fab.spines["s1"].set_groups("r", 1, {"b2": {"b2": 1}}, {}, replace=True)
