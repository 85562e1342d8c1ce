"""A replayed request must be the same request (issue 16: a second ApplyCrossConnects with the
same request id and generation but another body answered ``replayed: true`` and applied
nothing). Over real loopback gRPC against the emulated devices."""

from __future__ import annotations

import grpc
import pytest

from emulation.admission.idempotency import ReplayCache, request_digest
from emulation.admission.limits import MAX_REQUEST_ID_CHARS
from emulation.errors import MalformedRequest
from southbound.grpc_native.pb import ocs_pb2, ocs_pb2_grpc, packet_switch_pb2, packet_switch_pb2_grpc
from tests.support.southbound_fixtures import served_ocs, served_switch


def _apply(stub, request_id: str, generation: int, add: list[tuple[int, int]]):
    return stub.ApplyCrossConnects(ocs_pb2.ApplyCrossConnectsRequest(
        request_id=request_id, expected_generation=generation,
        add=[ocs_pb2.CrossConnect(port_a=a, port_b=b) for a, b in add]), timeout=5)


def test_an_ocs_replay_with_another_body_is_refused_and_changes_nothing() -> None:
    with served_ocs() as (device, agent, _, _), grpc.insecure_channel(agent.address) as channel:
        stub = ocs_pb2_grpc.OcsServiceStub(channel)
        first = _apply(stub, "r1", 1, [(0, 8)])
        assert (first.generation, first.replayed) == (2, False)
        again = _apply(stub, "r1", 1, [(8, 0)])  # the same circuit, written the other way round
        assert (again.generation, again.replayed) == (2, True)
        with pytest.raises(grpc.RpcError) as refused:
            _apply(stub, "r1", 1, [(1, 9)])
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "r1" in refused.value.details() and "different" in refused.value.details()
        _, items = device.cross_connects()
        assert {(c.a, c.b) for c, _ in items} == {(0, 8)}
        assert device.generation == 2


def test_a_switch_replay_with_other_groups_is_refused() -> None:
    with served_switch() as (device, agent, _, _), grpc.insecure_channel(agent.address) as channel:
        stub = packet_switch_pb2_grpc.PacketSwitchServiceStub(channel)

        def push(weight: int):
            group = packet_switch_pb2.NextHopGroup(
                destination_block="b", next_hops=[packet_switch_pb2.NextHop(via_block="b", weight=weight)])
            return stub.SetNextHopGroups(packet_switch_pb2.SetNextHopGroupsRequest(
                request_id="g1", expected_generation=1, source=[group], replace=True), timeout=5)

        assert push(2).replayed is False
        assert push(2).replayed is True
        with pytest.raises(grpc.RpcError) as refused:
            push(3)
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert device.groups()[1] == {"b": {"b": 2}}


def test_request_ids_have_a_length_limit() -> None:
    with served_ocs() as (device, agent, _, _), grpc.insecure_channel(agent.address) as channel:
        stub = ocs_pb2_grpc.OcsServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            _apply(stub, "x" * (MAX_REQUEST_ID_CHARS + 1), 1, [(0, 8)])
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert f"at most {MAX_REQUEST_ID_CHARS}" in refused.value.details()
        assert device.generation == 1
        assert _apply(stub, "x" * MAX_REQUEST_ID_CHARS, 1, [(0, 8)]).generation == 2


def test_the_cache_keeps_its_size_and_compares_digests() -> None:
    cache: ReplayCache[int] = ReplayCache(size=3)
    for k in range(5):
        cache.put(f"r{k}", 1, k, request_digest(k))
    assert cache.get("r0", 1, request_digest(0)) is None  # evicted
    assert cache.get("r4", 1, request_digest(4)) == 4
    with pytest.raises(MalformedRequest, match="different"):
        cache.get("r4", 1, request_digest(5))
    assert cache.get("", 1, request_digest(0)) is None  # no id: never a replay
    assert len(cache) == 3
