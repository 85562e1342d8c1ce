"""Driver behaviour when devices are down, slow or fail: clear errors, bounded time."""

from __future__ import annotations

import random
import threading
import time
from concurrent import futures

import grpc
import pytest

from southbound.errors import (
    ApplyFailed,
    ApplyOutcome,
    DeviceError,
    DeviceUnavailable,
    ErrorCode,
    Fenced,
    InvalidRequest,
    StaleGeneration,
)
from southbound.grpc_native.ocs_client import OcsClient
from southbound.grpc_native.rpc import CallOptions, RetryPolicy, RpcCaller
from southbound.grpc_native.status import map_rpc_error
from southbound.grpc_native.switch_client import SwitchClient
from southbound.types import CrossConnect
from tests.support.southbound_fixtures import FAST, served_ocs, served_switch


def test_down_device_raises_device_unavailable_after_bounded_retries() -> None:
    with served_ocs() as (_, agent, _, _):
        address = agent.address
    options = CallOptions(deadline_s=1.0, retry=RetryPolicy(max_attempts=3, initial_backoff_s=0.05))
    with OcsClient(address, name="gone", options=options) as client:
        started = time.monotonic()
        with pytest.raises(DeviceUnavailable) as info:
            client.device_info()
        elapsed = time.monotonic() - started
        assert not client.is_serving()
    assert info.value.device == "gone"
    assert info.value.code is ErrorCode.UNAVAILABLE
    assert info.value.transport_code == grpc.StatusCode.UNAVAILABLE
    assert elapsed < 5.0


def test_apply_to_a_down_device_reports_unknown_outcome() -> None:
    with served_ocs() as (_, agent, client, _):
        agent.stop()
        with pytest.raises(ApplyFailed) as info:
            client.apply(expected_generation=1, add=[CrossConnect(0, 8)])
    assert info.value.outcome is ApplyOutcome.UNKNOWN
    assert isinstance(info.value.cause, DeviceUnavailable)


def test_killed_agent_comes_back_on_the_same_address_with_its_state() -> None:
    patient = CallOptions(2.0, RetryPolicy(max_attempts=8, initial_backoff_s=0.1, max_backoff_s=0.5))
    with served_ocs(switching_time_s=0.0) as (_, agent, fast_client, _):
        fast_client.apply(expected_generation=1, add=[CrossConnect(0, 8)])
        address = agent.address
        with OcsClient(address, options=patient) as client:
            assert client.cross_connects().generation == 2
            agent.stop()
            with pytest.raises(DeviceUnavailable):
                fast_client.cross_connects()
            assert agent.start() == address
            table = client.cross_connects()  # the retries outlast the channel's reconnect
        assert table.cross_connects == {CrossConnect(0, 8)} and table.generation == 2


def test_slow_device_hits_the_deadline_instead_of_hanging() -> None:
    release = threading.Event()
    calls: list[float] = []

    def hang(request: bytes, context: grpc.ServicerContext) -> bytes:
        calls.append(time.monotonic())
        release.wait(10)
        return b""

    handler = grpc.method_handlers_generic_handler(
        "heliostat.southbound.v1.OcsService",
        {"GetDeviceInfo": grpc.unary_unary_rpc_method_handler(hang)},
    )
    server = grpc.server(futures.ThreadPoolExecutor(4))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        options = CallOptions(deadline_s=0.2, retry=RetryPolicy(max_attempts=3))
        with OcsClient(f"127.0.0.1:{port}", name="slow", options=options) as client:
            started = time.monotonic()
            with pytest.raises(DeviceUnavailable) as info:
                client.device_info()
            elapsed = time.monotonic() - started
    finally:
        release.set()
        server.stop(0)
    assert info.value.code is ErrorCode.DEADLINE
    assert info.value.transport_code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert len(calls) == 1  # DEADLINE_EXCEEDED is not retried
    assert elapsed < 3.0


def test_unimplemented_is_a_device_error() -> None:
    server = grpc.server(futures.ThreadPoolExecutor(2))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with (
            SwitchClient(f"127.0.0.1:{port}", name="empty", options=FAST) as client,
            pytest.raises(DeviceError) as info,
        ):
            client.device_info()
    finally:
        server.stop(0)
    assert info.value.code is ErrorCode.UNSUPPORTED
    assert info.value.transport_code == grpc.StatusCode.UNIMPLEMENTED
    assert not isinstance(info.value, DeviceUnavailable)


class _FakeRpcError(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str = "", metadata: tuple = ()) -> None:
        self._code, self._details, self._metadata = code, details, metadata

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> tuple:
        return self._metadata


def test_caller_retries_unavailable_with_growing_backoff_then_succeeds() -> None:
    calls: list[float] = []
    sleeps: list[float] = []

    def flaky(request: object, timeout: float) -> str:
        calls.append(timeout)
        if len(calls) < 3:
            raise _FakeRpcError(grpc.StatusCode.UNAVAILABLE, "connection refused")
        return "ok"

    policy = RetryPolicy(max_attempts=4, initial_backoff_s=0.1, multiplier=2.0)
    caller = RpcCaller("dev", CallOptions(0.5, policy), sleep=sleeps.append,
                       rng=random.Random(1))
    assert caller.call(flaky, None) == "ok"
    assert calls == [0.5, 0.5, 0.5]  # the deadline is on every attempt
    assert len(sleeps) == 2
    assert 0.05 <= sleeps[0] <= 0.1 and 0.1 <= sleeps[1] <= 0.2


def test_caller_gives_up_after_max_attempts_and_never_retries_other_codes() -> None:
    attempts = {"n": 0}

    def down(request: object, timeout: float) -> str:
        attempts["n"] += 1
        raise _FakeRpcError(grpc.StatusCode.UNAVAILABLE)

    caller = RpcCaller("dev", CallOptions(0.5, RetryPolicy(max_attempts=3)), sleep=lambda s: None)
    with pytest.raises(DeviceUnavailable):
        caller.call(down, None)
    assert attempts["n"] == 3

    attempts["n"] = 0

    def invalid(request: object, timeout: float) -> str:
        attempts["n"] += 1
        raise _FakeRpcError(grpc.StatusCode.INVALID_ARGUMENT, "bad port")

    with pytest.raises(InvalidRequest, match="bad port"):
        caller.call(invalid, None)
    assert attempts["n"] == 1


@pytest.mark.parametrize(
    ("status", "kind", "code"),
    [
        (grpc.StatusCode.UNAVAILABLE, DeviceUnavailable, ErrorCode.UNAVAILABLE),
        (grpc.StatusCode.DEADLINE_EXCEEDED, DeviceUnavailable, ErrorCode.DEADLINE),
        (grpc.StatusCode.FAILED_PRECONDITION, StaleGeneration, ErrorCode.CONFLICT),
        (grpc.StatusCode.INVALID_ARGUMENT, InvalidRequest, ErrorCode.INVALID),
        (grpc.StatusCode.ABORTED, DeviceError, ErrorCode.ABORTED),
        (grpc.StatusCode.NOT_FOUND, DeviceError, ErrorCode.NOT_FOUND),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, DeviceError, ErrorCode.OVERLOADED),
        (grpc.StatusCode.PERMISSION_DENIED, DeviceError, ErrorCode.DENIED),
        (grpc.StatusCode.UNAUTHENTICATED, DeviceError, ErrorCode.DENIED),
        (grpc.StatusCode.UNIMPLEMENTED, DeviceError, ErrorCode.UNSUPPORTED),
        (grpc.StatusCode.INTERNAL, DeviceError, ErrorCode.INTERNAL),
        (grpc.StatusCode.UNKNOWN, DeviceError, ErrorCode.INTERNAL),
    ],
)
def test_error_mapping(status: grpc.StatusCode, kind: type, code: ErrorCode) -> None:
    error = map_rpc_error(_FakeRpcError(status, "why", (("heliostat-generation", "7"),)), "dev-1")
    assert type(error) is kind
    assert error.code is code and error.transport_code == status
    assert error.device == "dev-1" and "why" in str(error)
    if kind is StaleGeneration:
        assert error.current_generation == 7


def test_a_refusal_naming_an_epoch_is_fenced_not_stale() -> None:
    metadata = (("heliostat-epoch", "9"), ("heliostat-generation", "7"))
    error = map_rpc_error(_FakeRpcError(grpc.StatusCode.FAILED_PRECONDITION, "old leader", metadata), "d")
    assert isinstance(error, Fenced) and error.code is ErrorCode.FENCED and error.highest_epoch == 9


def test_switch_set_groups_to_a_down_device_is_apply_failed() -> None:
    with served_switch() as (_, agent, client, _):
        agent.stop()
        with pytest.raises(ApplyFailed) as info:
            client.set_groups(expected_generation=1, source={"b": {"b": 1}})
    assert info.value.outcome is ApplyOutcome.UNKNOWN


def test_retry_policy_rejects_nonsense() -> None:
    from southbound.options import RetryPolicyError

    with pytest.raises(RetryPolicyError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(RetryPolicyError):
        CallOptions(deadline_s=0)
