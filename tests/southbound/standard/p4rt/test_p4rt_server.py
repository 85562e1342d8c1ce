"""The emulated P4Runtime server on its own terms: batch atomicity, per-entity errors (spec
§12.3), wildcard reads and the direct counters per destination block."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import grpc
import numpy as np
import pytest

from emulation.agent import SWITCH_SERVICE, DeviceAgent
from emulation.clock import EmulatedClock
from emulation.servicers import PacketSwitchServicer
from emulation.spine_device import SpineDevice
from emulation.standard.p4rt import add_p4runtime, start_p4runtime
from emulation.switch_device import StaticLinks
from southbound.devices import CapabilityRoute
from southbound.errors import InvalidRequest
from southbound.grpc_native import transport as grpc_transport
from southbound.grpc_native.pb import packet_switch_pb2_grpc
from southbound.registry import DriverRegistry
from southbound.standard.p4rt import encoding, transport
from southbound.standard.p4rt.counters import DestinationCounters
from southbound.standard.p4rt.driver import P4GroupWriter
from southbound.standard.p4rt.entries import Entry, entry, to_proto
from southbound.standard.p4rt.program import Program
from southbound.standard.p4rt.session import Arbitration, uint128
from southbound.standard.p4rt.status import update_errors
from southbound.standard.pb import p4runtime_pb2, p4runtime_pb2_grpc
from tests.support.p4rt_support import PREFIXES, block_switch, p4_device, served_p4_switch
from tests.support.southbound_fixtures import BLOCKS

pb = p4runtime_pb2
PROGRAM = Program.shipped()


@contextmanager
def primary_stub(address: str) -> Iterator[p4runtime_pb2_grpc.P4RuntimeStub]:
    """A raw stub whose channel is the primary (election id 1)."""
    channel = grpc.insecure_channel(address)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    session = Arbitration(stub, 1, "test")
    try:
        session.ensure_primary(1, 5.0)
        yield stub
    finally:
        session.close()
        channel.close()


def write(stub: p4runtime_pb2_grpc.P4RuntimeStub, updates: list[tuple[int, Entry]], atomicity: int) -> None:
    entities = [(kind, pb.Entity(table_entry=to_proto(PROGRAM, e))) for kind, e in updates]
    request = pb.WriteRequest(device_id=1, election_id=uint128(1), atomicity=atomicity,  # type: ignore[arg-type]
                              updates=[pb.Update(type=kind, entity=entity) for kind, entity in entities])  # type: ignore[arg-type]
    stub.Write(request, timeout=5)


def next_hop_entries(peer: str) -> list[Entry]:
    return [entry("router_interface_table", {"router_interface_id": f"rif-{peer}"}, "set_port_and_src_mac",
                  {"port": f"trunk-{peer}", "src_mac": 2}),
            entry("neighbor_table", {"router_interface_id": f"rif-{peer}", "neighbor_id": f"nbr-{peer}"},
                  "set_dst_mac", {"dst_mac": 3}),
            entry("nexthop_table", {"nexthop_id": f"nh-{peer}"}, "set_ip_nexthop",
                  {"router_interface_id": f"rif-{peer}", "neighbor_id": f"nbr-{peer}"})]


def route(dest: str, peer: str) -> list[Entry]:
    return [entry("vrf_table", {"vrf_id": encoding.SOURCE_VRF}, "NoAction"),
            entry("wcmp_group_table", {"wcmp_group_id": f"g-{dest}"},
                  members=(("set_nexthop_id", (("nexthop_id", f"nh-{peer}"),), 2),)),
            entry("ipv4_table", {"vrf_id": encoding.SOURCE_VRF, "ipv4_dst": PREFIXES[dest]},
                  "set_wcmp_group_id", {"wcmp_group_id": f"g-{dest}"})]


def test_rollback_on_error_keeps_nothing_and_names_each_update() -> None:
    with served_p4_switch() as (device, agent, driver, _), primary_stub(agent.address) as stub:
        good = [*next_hop_entries("b"), *route("b", "b")]
        bad = entry("router_interface_table", {"router_interface_id": "rif-x"}, "set_port_and_src_mac",
                    {"port": "Ethernet9", "src_mac": 2})
        updates = [(pb.Update.INSERT, e) for e in (*good, bad)]
        with pytest.raises(grpc.RpcError) as info:
            write(stub, updates, pb.WriteRequest.ROLLBACK_ON_ERROR)
        errors = update_errors(info.value)
        assert info.value.code() == grpc.StatusCode.UNKNOWN
        assert [(e.index, e.code) for e in errors if e.code != grpc.StatusCode.ABORTED] == [
            (len(good), grpc.StatusCode.INVALID_ARGUMENT)]
        assert {e.index for e in errors} == set(range(len(updates)))  # the rest: rolled back
        assert driver.read_entries() == [] and device.generation == 1
        write(stub, updates[:-1], pb.WriteRequest.ROLLBACK_ON_ERROR)
        assert device.groups()[1] == {"b": {"b": 2}} and device.generation == 2


def test_continue_on_error_keeps_the_updates_that_pass() -> None:
    with served_p4_switch() as (device, agent, driver, _), primary_stub(agent.address) as stub:
        dangling = entry("nexthop_table", {"nexthop_id": "nh-c"}, "set_ip_nexthop",
                         {"router_interface_id": "rif-c", "neighbor_id": "nbr-c"})
        updates = [(pb.Update.INSERT, e) for e in (*next_hop_entries("b"), dangling, *route("b", "b"))]
        with pytest.raises(grpc.RpcError) as info:
            write(stub, updates, pb.WriteRequest.CONTINUE_ON_ERROR)
        errors = update_errors(info.value)
        assert [(e.index, e.code) for e in errors] == [(3, grpc.StatusCode.NOT_FOUND)]
        assert "router interface 'rif-c'" in errors[0].message
        assert len(driver.read_entries()) == 6 and device.groups()[1] == {"b": {"b": 2}}


def test_direct_counters_report_bytes_per_destination_block() -> None:
    with served_p4_switch() as (device, agent, driver, _):
        driver.set_groups(expected_generation=1, source={"b": {"b": 1}, "c": {"c": 1, "d": 1}},
                          transit={"b": {"b": 1}})
        n = device.num_ports
        egress = np.array([0.0, 1500.0, 4000.0, 250.0])  # per block a, b, c, d
        device.add_traffic(np.zeros(n), np.zeros(n), np.zeros(n), egress, 0.0)
        with DestinationCounters(p4_device(agent.address)) as counters:
            first = counters.egress_bytes()
            device.add_traffic(np.zeros(n), np.zeros(n), np.zeros(n), egress, 0.0)
            second = counters.egress_bytes()
    assert first == {"b": 1500, "c": 4000}  # d has no route, so no counter
    assert second == {"b": 3000, "c": 8000}


def test_native_and_p4runtime_on_one_server_through_the_registry() -> None:
    device, _ = block_switch()
    def register(server: grpc.Server) -> None:
        packet_switch_pb2_grpc.add_PacketSwitchServiceServicer_to_server(PacketSwitchServicer(device), server)
        add_p4runtime(server, device, prefixes=PREFIXES)

    agent = DeviceAgent(device.name, "block", register, SWITCH_SERVICE)
    agent.start()
    try:
        # groups over P4Runtime, counters and drains over the native service, one address
        config = replace(p4_device(agent.address), address=agent.address, transport="grpc",
                         routes=(CapabilityRoute("groups", "p4runtime", agent.address),))
        registry = DriverRegistry()
        grpc_transport.register(registry)
        transport.register(registry)
        assert registry.transports() == {"grpc", "p4runtime"}
        with registry.switch(config) as switch:  # type: ignore[attr-defined]
            switch.set_groups(expected_generation=1, source={"b": {"b": 2, "c": 1}})
            assert isinstance(switch._groups, P4GroupWriter)
            assert switch.counters().egress_bytes == {"b": 0, "c": 0, "d": 0}  # the native counters
        assert device.groups()[1] == {"b": {"b": 2, "c": 1}}
    finally:
        agent.stop()



def test_a_spine_takes_transit_groups_and_refuses_source_groups() -> None:
    spine = SpineDevice("sp", BLOCKS, 8, 100.0, EmulatedClock(), StaticLinks((*BLOCKS, "sp"), 8))
    agent = start_p4runtime(spine)  # default prefixes of the fabric's blocks
    try:
        with P4GroupWriter(p4_device(agent.address, name="sp")) as driver:
            driver.set_groups(expected_generation=1, transit={"a": {"a": 1}, "c": {"c": 4}})
            with pytest.raises(InvalidRequest, match="a spine switch originates no traffic"):
                driver.set_groups(expected_generation=2, source={"b": {"b": 1}})
            assert driver.groups().transit == {"a": {"a": 1}, "c": {"c": 4}}
    finally:
        agent.stop()
    assert spine.groups()[2] == {"a": {"a": 1}, "c": {"c": 4}}


COMMIT = pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT


def test_pipeline_config_and_capabilities() -> None:
    with served_p4_switch(max_group_entries=64) as (_, agent, _, _), primary_stub(agent.address) as stub:
        assert stub.Capabilities(pb.CapabilitiesRequest(), timeout=5).p4runtime_api_version == "1.4.0"
        got = stub.GetForwardingPipelineConfig(pb.GetForwardingPipelineConfigRequest(device_id=1), timeout=5)
        assert Program(got.config.p4info).budget().max_group_weight == 64
        same = pb.ForwardingPipelineConfig(p4info=got.config.p4info,
                                           cookie=pb.ForwardingPipelineConfig.Cookie(cookie=77))
        stub.SetForwardingPipelineConfig(pb.SetForwardingPipelineConfigRequest(
            device_id=1, election_id=uint128(1), action=COMMIT,
            config=same), timeout=5)
        cookie = stub.GetForwardingPipelineConfig(pb.GetForwardingPipelineConfigRequest(
            device_id=1, response_type=pb.GetForwardingPipelineConfigRequest.COOKIE_ONLY), timeout=5)
        assert cookie.config.cookie.cookie == 77 and not cookie.config.HasField("p4info")
        other = pb.ForwardingPipelineConfig()
        with pytest.raises(grpc.RpcError) as info:
            stub.SetForwardingPipelineConfig(pb.SetForwardingPipelineConfigRequest(
                device_id=1, election_id=uint128(1), action=COMMIT,
                config=other), timeout=5)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
