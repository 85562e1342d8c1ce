"""A device server cannot be locked out (issue 16: eight idle ``StreamEvents`` calls took all 8
worker threads and the device answered nothing else; a 500k-port ``GetPortStatus`` cost 2.6 s
of server CPU). Over real loopback gRPC against the emulated devices."""

from __future__ import annotations

import time

import grpc
import pytest

from emulation.admission.limits import MAX_REQUEST_BYTES, STREAMS_PER_CLIENT, StreamGate, stream_capacity
from southbound.grpc_native.pb import ocs_pb2, ocs_pb2_grpc, packet_switch_pb2
from tests.support.southbound_fixtures import served_ocs, served_switch


def _streams(address: str, count: int) -> tuple[list[grpc.Channel], list]:
    """``count`` StreamEvents calls that never read, each on its own connection."""
    channels, calls = [], []
    for _ in range(count):
        channel = grpc.insecure_channel(address)
        calls.append(ocs_pb2_grpc.OcsServiceStub(channel).StreamEvents(ocs_pb2.StreamOcsEventsRequest(),
                                                                      timeout=30))
        channels.append(channel)
    return channels, calls


def _status(call) -> grpc.StatusCode | None:
    try:
        next(call)
    except grpc.RpcError as exc:
        return exc.code()
    except StopIteration:
        return grpc.StatusCode.OK
    return None


def test_idle_streams_leave_room_for_unary_calls() -> None:
    with served_ocs() as (_, agent, _, _):
        channels, calls = _streams(agent.address, 8)
        try:
            time.sleep(0.3)
            with grpc.insecure_channel(agent.address) as channel:
                stub = ocs_pb2_grpc.OcsServiceStub(channel)
                started = time.monotonic()
                info = stub.GetDeviceInfo(ocs_pb2.GetOcsDeviceInfoRequest(), timeout=3)
                assert info.name == "ocs-t"
                assert time.monotonic() - started < 1.0
            refused = [c for c in calls if c.done() and c.code() is grpc.StatusCode.RESOURCE_EXHAUSTED]
            # all from one host (loopback): the per-client bound comes first
            assert len(refused) == 8 - min(stream_capacity(8), STREAMS_PER_CLIENT)
            assert "event streams" in refused[0].details()
        finally:
            for c in calls:
                c.cancel()
            for ch in channels:
                ch.close()


def test_one_client_gets_a_bounded_share_of_the_streams() -> None:
    with served_ocs() as (_, agent, _, _), grpc.insecure_channel(agent.address) as channel:
        stub = ocs_pb2_grpc.OcsServiceStub(channel)
        calls = [stub.StreamEvents(ocs_pb2.StreamOcsEventsRequest(), timeout=30)
                 for _ in range(STREAMS_PER_CLIENT + 1)]
        try:
            time.sleep(0.3)
            refused = [c for c in calls if c.done() and c.code() is grpc.StatusCode.RESOURCE_EXHAUSTED]
            assert len(refused) == 1
            assert "per client" in refused[0].details()
        finally:
            for c in calls:
                c.cancel()


def test_a_request_naming_more_ports_than_the_device_has_is_refused_at_once() -> None:
    with served_ocs(radix=136) as (_, agent, _, _), grpc.insecure_channel(agent.address) as channel:
        stub = ocs_pb2_grpc.OcsServiceStub(channel)
        started = time.monotonic()
        with pytest.raises(grpc.RpcError) as refused:
            stub.GetPortStatus(ocs_pb2.GetPortStatusRequest(ports=[5] * 500_000), timeout=10)
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "at most 136" in refused.value.details()
        assert time.monotonic() - started < 1.0
        big = ocs_pb2.ApplyCrossConnectsRequest(request_id="x", expected_generation=1,
                                                add=[ocs_pb2.CrossConnect(port_a=1, port_b=70)] * 200)
        with pytest.raises(grpc.RpcError) as refused:
            stub.ApplyCrossConnects(big, timeout=10)
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT


def test_a_message_over_the_size_limit_is_refused() -> None:
    with served_ocs() as (device, agent, _, _), grpc.insecure_channel(agent.address) as channel:
        stub = ocs_pb2_grpc.OcsServiceStub(channel)
        request = ocs_pb2.ApplyCrossConnectsRequest(request_id="r" * (MAX_REQUEST_BYTES + 10),
                                                    expected_generation=1)
        with pytest.raises(grpc.RpcError) as refused:
            stub.ApplyCrossConnects(request, timeout=10)
        assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert device.generation == 1


def test_switch_requests_are_bounded_by_the_device() -> None:
    with served_switch() as (device, agent, _, _):
        from southbound.grpc_native.pb import packet_switch_pb2_grpc

        with grpc.insecure_channel(agent.address) as channel:
            stub = packet_switch_pb2_grpc.PacketSwitchServiceStub(channel)
            with pytest.raises(grpc.RpcError) as refused:
                stub.DrainPorts(packet_switch_pb2.DrainPortsRequest(ports=[0] * 100_000), timeout=10)
            assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            groups = [packet_switch_pb2.NextHopGroup(destination_block=f"x{i}") for i in range(5000)]
            with pytest.raises(grpc.RpcError) as refused:
                stub.SetNextHopGroups(packet_switch_pb2.SetNextHopGroupsRequest(
                    request_id="g", expected_generation=device.generation, source=groups), timeout=10)
            assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT


class _Context:
    """What StreamGate reads of a grpc.ServicerContext (its own unit test)."""

    def __init__(self, peer: str, cn: str | None = None) -> None:
        self._peer, self._cn = peer, cn
        self.aborted: tuple | None = None

    def peer(self) -> str:
        return self._peer

    def auth_context(self) -> dict:
        return {"x509_common_name": [self._cn.encode()]} if self._cn else {}

    def abort(self, code, details):
        self.aborted = (code, details)
        raise grpc.RpcError(details)


def test_the_gate_bounds_all_streams_and_each_clients_share() -> None:
    gate = StreamGate(total=3, per_client=2)
    held = []
    for peer in ("ipv4:10.0.0.1:1000", "ipv4:10.0.0.1:1001", "ipv4:10.0.0.2:5", "ipv6:[::1]:7"):
        ctx = _Context(peer)
        cm = gate.admit(ctx)
        try:
            cm.__enter__()
            held.append(cm)
        except grpc.RpcError:
            assert ctx.aborted[0] is grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "at most 3 event streams at once" in ctx.aborted[1]
    assert len(held) == 3
    third = _Context("ipv4:10.0.0.1:1002")
    held[2].__exit__(None, None, None)  # one stream ends: room for one more, but not 10.0.0.1's third
    with pytest.raises(grpc.RpcError):
        gate.admit(third).__enter__()
    assert "per client (ipv4:10.0.0.1)" in third.aborted[1]
    by_cert = _Context("ipv4:10.0.0.1:1003", cn="controller-2")  # mTLS: the certificate names the client
    gate.admit(by_cert).__enter__()
    assert by_cert.aborted is None
