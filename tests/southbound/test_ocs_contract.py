"""The OCS contract (CircuitSwitch + OcsEvents) against the emulated OCS, over real loopback
gRPC and over NETCONF (SSH): each test runs once per transport (the ``ocs`` fixture)."""

from __future__ import annotations

import threading

import grpc
import pytest
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from emulation.ocs_device import DARK_DBM, ApplyFault
from southbound.errors import ApplyFailed, ApplyOutcome, ErrorCode, InvalidRequest, StaleGeneration
from southbound.types import CrossConnect, OcsEvent
from tests.support.netconf_support import OCS_TRANSPORTS, OcsTransport
from tests.support.southbound_fixtures import served_ocs, wait_for

XC = CrossConnect


@pytest.fixture(params=sorted(OCS_TRANSPORTS))
def ocs(request: pytest.FixtureRequest) -> OcsTransport:
    return OCS_TRANSPORTS[request.param]


def test_device_info_reports_radix_sides_and_generation(ocs: OcsTransport) -> None:
    with ocs.serve(radix=16) as (_, _, client, _):
        info = client.device_info()
    assert info.name == "ocs-t"
    assert info.radix == 16
    assert info.sides == "north_south"
    assert info.north_ports == tuple(range(8))
    assert info.south_ports == tuple(range(8, 16))
    assert info.generation == 1
    assert info.switching_time_s == pytest.approx(0.05)
    assert info.powered


def test_apply_adds_and_removes_and_bumps_generation(ocs: OcsTransport) -> None:
    with ocs.serve() as (_, _, client, _):
        first = client.apply(expected_generation=1, add=[XC(0, 8), XC(9, 1)])
        assert first.generation == 2 and not first.replayed
        table = client.cross_connects()
        assert table.generation == 2
        assert table.cross_connects == {XC(0, 8), XC(1, 9)}
        second = client.apply(expected_generation=2, remove=[XC(8, 0)], add=[XC(0, 10)])
        assert second.generation == 3
        assert client.cross_connects().cross_connects == {XC(0, 10), XC(1, 9)}


def test_new_circuit_is_switching_until_the_switching_time_passes(ocs: OcsTransport) -> None:
    with ocs.serve(switching_time_s=0.05) as (_, _, client, clock):
        client.apply(expected_generation=1, add=[XC(2, 12)])
        assert client.cross_connects().switching == {XC(2, 12)}
        status = {p.port: p for p in client.port_status([2, 12])}
        assert not status[2].oper_up and status[2].tx_power_dbm == DARK_DBM
        clock.advance(0.049)
        assert client.cross_connects().switching == {XC(2, 12)}
        clock.advance(0.002)
        table = client.cross_connects()
        assert table.switching == frozenset() and table.established == {XC(2, 12)}
        status = {p.port: p for p in client.port_status([2, 12])}
        assert status[2].oper_up and status[2].connected_port == 12
        assert DARK_DBM < status[2].tx_power_dbm < status[12].rx_power_dbm


def test_port_status_lists_every_port_with_side_and_light(ocs: OcsTransport) -> None:
    with ocs.serve(radix=8, switching_time_s=0.0) as (_, _, client, _):
        client.apply(expected_generation=1, add=[XC(0, 4)])
        ports = client.port_status()
    assert [p.port for p in ports] == list(range(8))
    assert [p.side for p in ports] == ["north"] * 4 + ["south"] * 4
    assert all(p.rx_power_dbm > DARK_DBM for p in ports)  # every fibre brings light in
    assert [p.oper_up for p in ports] == [True, False, False, False, True, False, False, False]
    assert ports[1].tx_power_dbm == DARK_DBM and ports[1].connected_port is None


def test_replaying_a_request_returns_the_first_result_without_reapplying(ocs: OcsTransport) -> None:
    with ocs.serve() as (device, _, client, _):
        first = client.apply(expected_generation=1, add=[XC(0, 8)], request_id="req-1")
        again = client.apply(expected_generation=1, add=[XC(0, 8)], request_id="req-1")
        assert again.replayed and again.generation == first.generation == 2
        assert device.generation == 2
        assert client.cross_connects().cross_connects == {XC(0, 8)}


def test_stale_generation_is_refused_and_reports_the_current_one(ocs: OcsTransport) -> None:
    with ocs.serve() as (_, _, client, _):
        client.apply(expected_generation=1, add=[XC(0, 8)])
        with pytest.raises(StaleGeneration) as info:
            client.apply(expected_generation=1, add=[XC(1, 9)])
        assert info.value.current_generation == 2
        assert info.value.code is ErrorCode.CONFLICT
        assert info.value.transport_code == ocs.conflict
        assert client.cross_connects().cross_connects == {XC(0, 8)}


@pytest.mark.parametrize(
    ("remove", "add", "message"),
    [
        ([], [XC(0, 99)], "unknown port 99"),
        ([], [XC(0, 9)], "port 0 is already in a circuit"),
        ([], [XC(1, 2)], "both on the north side"),
        ([], [XC(10, 11)], "both on the south side"),
        ([XC(1, 9)], [], "no cross-connect 1-9"),
        ([], [XC(1, 9), XC(1, 10)], "port 1 is used twice"),
        ([], [XC(3, 3)], "joins a port to itself"),
    ],
)
def test_malformed_apply_is_invalid_argument_and_changes_nothing(
    remove: list[CrossConnect], add: list[CrossConnect], message: str, ocs: OcsTransport
) -> None:
    with ocs.serve() as (device, _, client, _):
        client.apply(expected_generation=1, add=[XC(0, 8)])
        before = client.cross_connects()
        with pytest.raises(InvalidRequest) as info:
            # a valid add rides along: it must not be applied either
            client.apply(expected_generation=2, remove=remove, add=[XC(5, 13), *add])
        assert message in str(info.value)
        assert info.value.code is ErrorCode.INVALID
        assert info.value.transport_code in ocs.invalid
        assert client.cross_connects() == before
        assert device.generation == 2


def test_sides_any_joins_ports_of_the_same_half(ocs: OcsTransport) -> None:
    with ocs.serve(sides="any") as (_, _, client, _):
        assert client.device_info().sides == "any"
        client.apply(expected_generation=1, add=[XC(1, 2)])
        assert client.cross_connects().cross_connects == {XC(1, 2)}


def test_apply_failing_halfway_rolls_back_and_the_driver_says_old_state(ocs: OcsTransport) -> None:
    with ocs.serve() as (device, _, client, _):
        client.apply(expected_generation=1, add=[XC(0, 8)])
        before = client.cross_connects()
        device.inject_apply_fault(ApplyFault.ROLLBACK)
        with pytest.raises(ApplyFailed) as info:
            client.apply(expected_generation=2, remove=[XC(0, 8)], add=[XC(1, 9), XC(2, 10)])
        assert info.value.outcome is ApplyOutcome.OLD_STATE
        assert info.value.cause.code is ErrorCode.ABORTED
        assert info.value.cause.transport_code == ocs.aborted
        assert client.cross_connects() == before


def test_apply_whose_reply_is_lost_is_reported_as_new_state_and_replays(ocs: OcsTransport) -> None:
    with ocs.serve() as (device, _, client, _):
        device.inject_apply_fault(ApplyFault.REPLY_LOST)
        with pytest.raises(ApplyFailed) as info:
            client.apply(expected_generation=1, add=[XC(1, 9), XC(2, 10)], request_id="r")
        assert info.value.outcome is ApplyOutcome.NEW_STATE
        assert client.cross_connects().cross_connects == {XC(1, 9), XC(2, 10)}
        again = client.apply(expected_generation=1, add=[XC(1, 9), XC(2, 10)], request_id="r")
        assert again.replayed and again.generation == 2 == device.generation


def _collect(stream_events: object, into: list[OcsEvent], ready: threading.Event) -> None:
    ready.set()
    for event in stream_events:  # type: ignore[attr-defined]
        into.append(event)


def test_event_stream_reports_circuit_up_down_and_power_loss(ocs: OcsTransport) -> None:
    with ocs.serve(switching_time_s=0.05) as (device, _, client, clock):
        stream = client.events()
        events: list[OcsEvent] = []
        ready = threading.Event()
        reader = threading.Thread(target=_collect, args=(stream, events, ready), daemon=True)
        reader.start()
        ready.wait(2)
        # The server subscribes when the call arrives; wait for that before changing state.
        wait_for(lambda: bool(device._subscribers), what="stream subscription")
        client.apply(expected_generation=1, add=[XC(0, 8), XC(1, 9)])
        clock.advance(0.05)
        wait_for(lambda: len(events) >= 2, what="circuit_up events")
        client.apply(expected_generation=2, remove=[XC(0, 8)])
        wait_for(lambda: len(events) >= 3, what="circuit_down event")
        device.lose_power()
        wait_for(lambda: len(events) >= 4, what="power_loss event")
        stream.cancel()
        reader.join(5)
    kinds = [e.kind for e in events]
    assert kinds == ["circuit_up", "circuit_up", "circuit_down", "power_loss"]
    assert {events[0].cross_connect, events[1].cross_connect} == {XC(0, 8), XC(1, 9)}
    assert events[0].time_s == pytest.approx(0.05)
    assert events[2].cross_connect == XC(0, 8) and events[2].reason == "removed"
    assert events[3].circuits_lost == 1
    assert [e.sequence for e in events] == sorted(e.sequence for e in events)
    assert not reader.is_alive()


def test_power_loss_drops_every_circuit_and_bumps_the_generation(ocs: OcsTransport) -> None:
    with ocs.serve(switching_time_s=0.0) as (device, _, client, _):
        client.apply(expected_generation=1, add=[XC(0, 8), XC(1, 9)])
        device.lose_power()
        table = client.cross_connects()
        assert table.cross_connects == frozenset() and table.generation == 3
        assert not client.device_info().powered
        assert all(not p.oper_up for p in client.port_status())


def test_health_and_reflection_are_served() -> None:
    with served_ocs() as (_, agent, client, _):
        assert client.is_serving()
        channel = grpc.insecure_channel(agent.address)
        try:
            services = set(ProtoReflectionDescriptorDatabase(channel).get_services())
        finally:
            channel.close()
    assert {
        "heliostat.southbound.v1.OcsService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
    } <= services


def test_concurrent_applies_on_one_generation_let_exactly_one_win(ocs: OcsTransport) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ocs.serve(radix=32) as (device, _, client, _):
        def attempt(i: int) -> str:
            try:
                client.apply(expected_generation=1, add=[XC(i, 16 + i)])
            except StaleGeneration:
                return "stale"
            return "won"

        with ThreadPoolExecutor(8) as pool:
            outcomes = list(pool.map(attempt, range(8)))
        table = client.cross_connects()
    assert outcomes.count("won") == 1 and outcomes.count("stale") == 7
    assert table.generation == 2 == device.generation
    assert len(table.cross_connects) == 1
