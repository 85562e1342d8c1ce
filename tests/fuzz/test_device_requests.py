"""Fuzzing the device servers' request messages over real loopback gRPC, with a fixed budget:
every answer is OK or a deliberate refusal (INVALID_ARGUMENT, FAILED_PRECONDITION,
RESOURCE_EXHAUSTED), never UNKNOWN or INTERNAL (a traceback in a servicer), within the
deadline, and a refused request changes nothing on the device."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from southbound.grpc_native.pb import ocs_pb2, ocs_pb2_grpc, packet_switch_pb2, packet_switch_pb2_grpc
from tests.fuzz.test_parsers import FUZZ
from tests.support.southbound_fixtures import BLOCKS, served_ocs, served_switch

REFUSALS = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
}
U32 = st.one_of(st.integers(0, 40), st.integers(0, 2**32 - 1))
U64 = st.one_of(st.integers(0, 4), st.integers(0, 2**64 - 1))
IDS = st.one_of(st.just(""), st.sampled_from(["r1", "r2"]), st.text(max_size=300))
NAMES = st.one_of(st.sampled_from([*BLOCKS, "s1", ""]), st.text(max_size=20))


@pytest.fixture(scope="module")
def ocs() -> Iterator[tuple]:
    with served_ocs(radix=16) as (device, agent, _, _), grpc.insecure_channel(agent.address) as channel:
        yield device, ocs_pb2_grpc.OcsServiceStub(channel)


@pytest.fixture(scope="module")
def switch() -> Iterator[tuple]:
    with served_switch() as (device, agent, _, _), grpc.insecure_channel(agent.address) as channel:
        yield device, packet_switch_pb2_grpc.PacketSwitchServiceStub(channel)


def _call(method, request) -> grpc.StatusCode:
    try:
        method(request, timeout=5)
    except grpc.RpcError as exc:
        code = exc.code()
        assert code in REFUSALS, f"{code}: {exc.details()}"
        return code
    return grpc.StatusCode.OK


def _ocs_state(device) -> tuple:
    generation, items = device.cross_connects()
    return generation, sorted((c.a, c.b) for c, _ in items)


CROSS_CONNECTS = st.lists(
    st.builds(lambda a, b: ocs_pb2.CrossConnect(port_a=a, port_b=b), U32, U32), max_size=6
)


def test_ocs_requests(ocs) -> None:
    device, stub = ocs

    @FUZZ
    @given(
        request_id=IDS,
        generation=st.one_of(st.just(None), U64),
        remove=CROSS_CONNECTS,
        add=CROSS_CONNECTS,
        ports=st.lists(U32, max_size=40),
    )
    def run(request_id, generation, remove, add, ports) -> None:
        before = _ocs_state(device)
        expected = before[0] if generation is None else generation
        request = ocs_pb2.ApplyCrossConnectsRequest(
            request_id=request_id, expected_generation=expected, remove=remove, add=add
        )
        if _call(stub.ApplyCrossConnects, request) is not grpc.StatusCode.OK:
            assert _ocs_state(device) == before
        _call(stub.GetPortStatus, ocs_pb2.GetPortStatusRequest(ports=ports))

    run()


def _switch_state(device) -> tuple:
    generation, source, transit, used = device.groups()
    drained = [p["port"] for p in device.ports() if p["drained"]]
    return generation, source, transit, used, drained


GROUPS = st.lists(
    st.builds(
        lambda dest, hops: packet_switch_pb2.NextHopGroup(destination_block=dest, next_hops=hops),
        NAMES,
        st.lists(st.builds(lambda via, w: packet_switch_pb2.NextHop(via_block=via, weight=w), NAMES, U32),
                 max_size=4),
    ),
    max_size=5,
)


def test_switch_requests(switch) -> None:
    device, stub = switch

    @FUZZ
    @given(
        request_id=IDS,
        generation=st.one_of(st.just(None), U64),
        replace=st.booleans(),
        source=GROUPS,
        transit=GROUPS,
        deletes=st.lists(NAMES, max_size=3),
        ports=st.lists(U32, max_size=12),
        drain=st.booleans(),
    )
    def run(request_id, generation, replace, source, transit, deletes, ports, drain) -> None:
        before = _switch_state(device)
        request = packet_switch_pb2.SetNextHopGroupsRequest(
            request_id=request_id, expected_generation=before[0] if generation is None else generation,
            replace=replace, source=source, transit=transit, delete_source=deletes, delete_transit=deletes,
        )
        if _call(stub.SetNextHopGroups, request) is not grpc.StatusCode.OK:
            assert _switch_state(device) == before
        before = _switch_state(device)
        method = stub.DrainPorts if drain else stub.UndrainPorts
        if _call(method, packet_switch_pb2.DrainPortsRequest(ports=ports)) is not grpc.StatusCode.OK:
            assert _switch_state(device) == before
        for read in (stub.ListPorts, stub.GetCounters, stub.GetNextHopGroups, stub.GetDeviceInfo):
            assert _call(read, _empty(read)) is grpc.StatusCode.OK

    run()


def _empty(method) -> object:
    names = {
        "ListPorts": packet_switch_pb2.ListPortsRequest,
        "GetCounters": packet_switch_pb2.GetCountersRequest,
        "GetNextHopGroups": packet_switch_pb2.GetNextHopGroupsRequest,
        "GetDeviceInfo": packet_switch_pb2.GetSwitchDeviceInfoRequest,
    }
    name = method._method.decode().rsplit("/", 1)[1]
    return names[name]()
