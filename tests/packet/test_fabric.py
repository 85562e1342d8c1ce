"""Packet-level fabric: built from scratch, configured through the drivers, every host
reaches every other host; the devices file drives it through the driver registry; the OCS
agent keeps the southbound contract (compare-and-set, replays, INVALID_ARGUMENT) and its
bridge holds exactly the flow pairs of its cross-connects; counters count."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from southbound.devices import load_devices_file
from southbound.errors import InvalidRequest, StaleGeneration
from southbound.grpc_native.ocs_client import OcsClient
from southbound.grpc_native.switch_client import SwitchClient
from southbound.registry import default_registry
from southbound.types import CrossConnect
from tests.support.packet_fixtures import (
    Running,
    ping_failures,
    requires_packet_fabric,
    send_flows,
)

pytestmark = [pytest.mark.mininet, requires_packet_fabric]




def bridge_cross_connects(bridge: str) -> set[tuple[int, int]]:
    """(in OCS port, out OCS port) of every forwarding flow on an OCS bridge."""
    dump = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", bridge],
                          capture_output=True, text=True, check=True).stdout
    pairs = set()
    for line in dump.splitlines():
        if "in_port=" in line and "actions=output:" in line:
            in_port = int(line.split("in_port=")[1].split(",")[0].split()[0])
            out_port = int(line.split("actions=output:")[1].split(",")[0])
            pairs.add((in_port - 1, out_port - 1))
    return pairs


def test_every_host_pings_every_other_host(fabric: Running) -> None:
    net, _ = fabric
    assert len(net.host_pids) == 8
    assert ping_failures(net) == []


def test_blocks_see_the_neighbours_the_circuits_make(fabric: Running) -> None:
    net, circuits = fabric
    for c in circuits:
        a, b = c.ends(net.fabric)
        ports = {p.port: p for p in net.driver(a.block).ports()}  # type: ignore[union-attr]
        assert ports[a.block_port].oper_up
        assert (ports[a.block_port].peer_block, ports[a.block_port].peer_port) == (b.block, b.block_port)


def test_devices_file_drives_the_fabric_through_the_registry(
        fabric: Running) -> None:
    net, circuits = fabric
    devices = load_devices_file(net.devices_file)
    assert {d.kind for d in devices.values()} == {"ocs", "block"}
    assert set(devices) == {*net.fabric.block_names, *(o.name for o in net.fabric.ocs)}
    registry = default_registry()
    for device in devices.values():
        # the standard protocols: P4Runtime and gNMI for a block, NETCONF for an OCS
        if device.kind == "ocs":
            with registry.ocs(device) as ocs:
                assert type(ocs).__name__ == "NetconfOcs"
                assert ocs.device_info().name == device.name
                table = ocs.cross_connects()
                want = {CrossConnect(c.a, c.b) for c in circuits if c.ocs == device.name}
                assert table.cross_connects == want and not table.switching
        else:
            with registry.switch(device) as switch:
                assert {device.route(c).transport for c in ("groups", "counters")} == {"p4runtime", "gnmi"}
                assert len(switch.ports()) == 8 and switch.budget().max_group_weight > 0
                assert switch.groups().generation >= 1
        with SwitchClient(device.address) if device.kind == "block" else OcsClient(device.address) as native:
            assert native.is_serving() and native.device_info().name == device.name  # our API beside them


def test_ocs_bridge_holds_exactly_the_cross_connect_flow_pairs(
        fabric: Running) -> None:
    net, circuits = fabric
    for ocs in net.fabric.ocs:
        want = {(c.a, c.b) for c in circuits if c.ocs == ocs.name}
        want |= {(b, a) for a, b in want}
        assert bridge_cross_connects(net.plan.switch_of(ocs.name)) == want


def test_ocs_refuses_bad_requests_and_changes_nothing(
        fabric: Running) -> None:
    net, circuits = fabric
    ocs = net.driver("ocs1")
    assert isinstance(ocs, OcsClient)
    bridge = net.plan.switch_of("ocs1")
    before_table, before_flows = ocs.cross_connects(), bridge_cross_connects(bridge)
    used = next(c for c in circuits if c.ocs == "ocs1")
    bad_requests = {  # the mesh uses every port of the OCS, so all of them are taken
        "unknown port": [CrossConnect(3, 99)],
        "ports already in circuits": [CrossConnect(0, 8)],
        "a port joined to itself": [CrossConnect(used.a, used.a)],
    }
    for what, add in bad_requests.items():
        with pytest.raises(InvalidRequest):
            ocs.apply(expected_generation=before_table.generation, add=add)
        assert ocs.cross_connects() == before_table, what
        assert bridge_cross_connects(bridge) == before_flows, what
    with pytest.raises(StaleGeneration):
        ocs.apply(expected_generation=before_table.generation - 1,
                  remove=[CrossConnect(used.a, used.b)])
    assert bridge_cross_connects(bridge) == before_flows


def test_ocs_apply_is_compare_and_set_and_replays_once(
        fabric: Running) -> None:
    net, circuits = fabric
    ocs = net.driver("ocs2")
    assert isinstance(ocs, OcsClient)
    bridge = net.plan.switch_of("ocs2")
    circuit = next(c for c in circuits if c.ocs == "ocs2")
    connect = CrossConnect(circuit.a, circuit.b)
    generation = ocs.cross_connects().generation
    removed = ocs.apply(expected_generation=generation, remove=[connect], request_id="rm-1")
    assert (circuit.a, circuit.b) not in bridge_cross_connects(bridge)
    replay = ocs.apply(expected_generation=generation, remove=[connect], request_id="rm-1")
    assert replay.replayed and replay.generation == removed.generation
    events = ocs.events()
    ups: list[CrossConnect] = []
    reader = threading.Thread(target=lambda: ups.extend(
        e.cross_connect for e in events if e.kind == "circuit_up" and e.cross_connect))
    reader.start()
    try:
        restored = ocs.apply(expected_generation=removed.generation, add=[connect])
        assert restored.generation == removed.generation + 1
        switching = ocs.device_info().switching_time_s
        assert switching == pytest.approx(0.05)
        # the mirrors are moving: the circuit is there but carries nothing yet
        assert ocs.cross_connects().switching == {connect}
        assert (circuit.a, circuit.b) not in bridge_cross_connects(bridge)
        time.sleep(switching + 0.2)
        assert not ocs.cross_connects().switching
        assert {(circuit.a, circuit.b), (circuit.b, circuit.a)} <= bridge_cross_connects(bridge)
    finally:
        events.cancel()
        reader.join(5)
    assert ups == [connect]
    status = {s.port: s for s in ocs.port_status([circuit.a, circuit.b])}
    assert status[circuit.a].connected_port == circuit.b and status[circuit.a].oper_up
    assert status[circuit.a].rx_power_dbm > -40 and status[circuit.a].tx_power_dbm > -40


def test_counters_count_egress_per_destination_and_ports(
        fabric: Running) -> None:
    net, _ = fabric
    b1 = net.driver("b1")
    assert isinstance(b1, SwitchClient)
    before = b1.counters()
    sent = send_flows(net, net.hosts_of("b1")[0], net.hosts_of("b2")[0], flows=500,
                      src_port_base=40000)
    time.sleep(1.5)  # OVS refreshes flow statistics about once a second
    after = b1.counters()
    frame_bytes = 200 + 42  # UDP payload + UDP/IP/Ethernet headers
    egress = after.egress_bytes["b2"] - before.egress_bytes["b2"]
    assert sent * frame_bytes <= egress <= sent * frame_bytes * 1.05
    assert after.egress_bytes["b3"] >= before.egress_bytes["b3"]
    tx = sum(after.ports[p].tx_packets - before.ports[p].tx_packets for p in after.ports)
    assert tx >= sent
    assert after.no_route_drops == before.no_route_drops
    for p in after.ports:
        assert after.ports[p].tx_bytes >= before.ports[p].tx_bytes
        assert after.ports[p].rx_bytes >= before.ports[p].rx_bytes


def group_buckets(bridge: str, group: int) -> list[int]:
    """Output ports of the buckets of one select group on a block bridge."""
    dump = subprocess.run(["ovs-ofctl", "-O", "OpenFlow15", "dump-groups", bridge, str(group)],
                          capture_output=True, text=True, check=True).stdout
    lines = [line for line in dump.splitlines() if f"group_id={group}," in line]
    assert len(lines) == 1, dump
    return [int(part.split(",")[0]) for part in lines[0].split("actions=output:")[1:]]


def test_drain_removes_buckets_and_unroutable_traffic_is_counted(fabric: Running) -> None:
    net, _ = fabric
    b1 = net.driver("b1")
    assert isinstance(b1, SwitchClient)
    bridge = net.plan.switch_of("b1")
    to_b3 = sorted(p.port for p in b1.ports() if p.peer_block == "b3")
    b1.set_groups(expected_generation=b1.groups().generation, source={"b3": {"b3": 1}},
                  replace=False)
    assert set(group_buckets(bridge, 1002)) == {p + 1 for p in to_b3}  # direct only
    assert set(b1.drain(to_b3[:1])) == set(to_b3[:1])
    assert set(group_buckets(bridge, 1002)) == {p + 1 for p in to_b3[1:]}
    assert to_b3[0] + 1 not in group_buckets(bridge, 2002)  # the transit group too
    assert b1.drain(to_b3[1:]) == frozenset(to_b3)
    assert group_buckets(bridge, 1002) == [] and group_buckets(bridge, 2002) == []
    assert {p.port for p in b1.ports() if p.drained} == set(to_b3)
    try:
        before = b1.counters()
        sent = send_flows(net, net.hosts_of("b1")[0], net.hosts_of("b3")[0], flows=200,
                          src_port_base=42000, rate_pps=1000)
        time.sleep(1.5)
        after = b1.counters()
        frame_bytes = 200 + 42
        assert after.no_route_drops - before.no_route_drops == sent * frame_bytes
        assert after.egress_bytes["b3"] - before.egress_bytes["b3"] == sent * frame_bytes
        failed = net.host_run(net.hosts_of("b1")[0],
                              ["ping", "-c1", "-W1", net.host_ip(net.hosts_of("b3")[0])])
        assert failed.returncode != 0
    finally:
        assert b1.undrain(to_b3) == frozenset()
    assert set(group_buckets(bridge, 1002)) == {p + 1 for p in to_b3}
    assert ping_failures(net) == []
