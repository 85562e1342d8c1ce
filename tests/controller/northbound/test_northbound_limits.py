"""Bounds at the northbound API (issue 32 items 3, 4 and 7): reconfiguration ids past what the
journal and the wire hold, names of any length, event kinds that do not exist and one client
holding every watch slot. Each is refused with a named, short error at both ends."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from controller.cli import main
from controller.northbound.api import ApiError, ApiErrorCode, MaintenanceKind
from controller.northbound.daemon_api import DaemonApi
from controller.northbound.events import EventHub, UnknownEventKinds, WatchersExhausted
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2 as pb
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2_grpc as pb_grpc
from optimizer.fabric import Block, Fabric, Ocs
from optimizer.limits import MAX_NAME_CHARS, MAX_RECORD_ID
from tests.support.daemon_support import wait_for
from tests.support.northbound_fake import client_for, serving

HUGE_NAME = "b" * 100_000
TINY = Fabric(name="tiny", blocks=(Block("b1", 4), Block("b2", 4)), ocs=(Ocs("ocs1", 8), Ocs("ocs2", 8)))


@pytest.fixture
def stub() -> Iterator[pb_grpc.ControllerServiceStub]:
    with serving(fabric=TINY) as (_api, servers, _m), grpc.insecure_channel(str(servers.grpc_address)) as ch:
        yield pb_grpc.ControllerServiceStub(ch)


def _daemon_api() -> DaemonApi:
    journal = SimpleNamespace(intent=lambda i: (_ for _ in ()).throw(AssertionError("journal reached")))
    daemon: Any = SimpleNamespace(journal=journal, board={"phase": "running"}, fabric=TINY)
    return DaemonApi(daemon)


# -- item 3: reconfiguration ids ----------------------------------------------------------------


@pytest.mark.parametrize("intent_id", [MAX_RECORD_ID + 1, 2**64, 0, -1, True])
def test_daemon_api_refuses_ids_the_journal_cannot_hold(intent_id: int) -> None:
    """Before: 2**63 reached SQLite and came back as INTERNAL OverflowError."""
    with pytest.raises(ApiError) as error:
        _daemon_api().reconfiguration(intent_id)
    assert error.value.code is ApiErrorCode.INVALID_ARGUMENT
    assert error.value.message.startswith("id: ") and str(MAX_RECORD_ID) in error.value.message


def test_server_refuses_an_id_past_int64(stub: pb_grpc.ControllerServiceStub) -> None:
    with pytest.raises(grpc.RpcError) as error:
        stub.GetReconfiguration(pb.GetReconfigurationRequest(id=MAX_RECORD_ID + 1), timeout=5)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.value.details().startswith("id: ")


@pytest.mark.parametrize("text", ["9223372036854775808", "18446744073709551616", "1" + "0" * 40])
def test_ctl_reconfig_with_a_huge_id_is_a_usage_error(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: 2**64 was a Python traceback (the request could not be built)."""
    assert main(["ctl", "--address", "127.0.0.1:1", "reconfig", text]) == 2
    err = capsys.readouterr().err
    assert "id" in err and str(MAX_RECORD_ID) in err and len(err) < 300


def test_client_refuses_an_id_before_building_the_request() -> None:
    with serving() as (api, servers, _m), client_for(servers) as client:
        with pytest.raises(ApiError) as error:
            client.reconfiguration(2**64)
        assert error.value.code is ApiErrorCode.INVALID_ARGUMENT
        assert api.calls_to("reconfiguration") == []


# -- item 4: names of any length -----------------------------------------------------------------


def test_server_refuses_a_huge_name_with_a_short_error(stub: pb_grpc.ControllerServiceStub) -> None:
    """Before: a 100,037-character error echoing the whole name."""
    request = pb.SetMaintenanceRequest(kind=pb.MAINTENANCE_KIND_BLOCK, name=HUGE_NAME, drained=True)
    with pytest.raises(grpc.RpcError) as error:
        stub.SetMaintenance(request, timeout=5)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = error.value.details()
    assert details.startswith("name: ") and len(details) < 200 and f"at most {MAX_NAME_CHARS}" in details


def test_daemon_api_refuses_a_huge_name_with_a_short_error() -> None:
    with pytest.raises(ApiError) as error:
        _daemon_api().set_maintenance(MaintenanceKind.BLOCK, HUGE_NAME, True)
    assert error.value.code is ApiErrorCode.INVALID_ARGUMENT and len(error.value.message) < 200


def test_ctl_drain_with_a_huge_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: RESOURCE_EXHAUSTED, "metadata size exceeds hard limit" (the echo in the reply)."""
    assert main(["ctl", "--address", "127.0.0.1:1", "drain", "block", HUGE_NAME]) == 2
    err = capsys.readouterr().err
    assert "name" in err and len(err) < 300


def test_client_refuses_a_huge_name_before_sending() -> None:
    with serving() as (api, servers, _m), client_for(servers) as client:
        with pytest.raises(ApiError) as error:
            client.set_maintenance(MaintenanceKind.BLOCK, HUGE_NAME, True)
        assert len(error.value.message) < 200 and api.calls_to("set_maintenance") == []


# -- item 7: event kinds and watchers per client ------------------------------------------------


def test_unknown_event_kinds_are_invalid_argument() -> None:
    """Before: kinds=[999] was accepted and held a watch slot."""
    hub = EventHub()
    with serving(events=hub) as (_api, servers, _m), grpc.insecure_channel(str(servers.grpc_address)) as ch:
        stream = pb_grpc.ControllerServiceStub(ch).WatchEvents(pb.WatchEventsRequest(kinds=[999]), timeout=5)
        with pytest.raises(grpc.RpcError) as error:
            next(iter(stream))
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "999" in error.value.details() and "EVENT_KIND_TE_RUN" in error.value.details()
        assert hub.watchers == 0
    with pytest.raises(UnknownEventKinds):
        EventHub().subscribe([pb.EVENT_KIND_UNSPECIFIED])


def _drain(stream: Any) -> None:
    with contextlib.suppress(grpc.RpcError):
        list(stream)


def test_one_client_gets_at_most_its_share_of_the_watch_slots() -> None:
    """Before: one client's four streams filled the limit and `ctl watch` was refused."""
    hub = EventHub(max_watchers=4)
    with serving(events=hub) as (_api, servers, _m), grpc.insecure_channel(str(servers.grpc_address)) as ch:
        stub = pb_grpc.ControllerServiceStub(ch)
        streams = [stub.WatchEvents(pb.WatchEventsRequest(), timeout=30) for _ in range(2)]
        readers = [threading.Thread(target=_drain, args=(s,), daemon=True) for s in streams]
        for r in readers:
            r.start()
        try:
            wait_for(lambda: hub.watchers == 2, 20, what="two watchers")
            third = stub.WatchEvents(pb.WatchEventsRequest(), timeout=5)
            with pytest.raises(grpc.RpcError) as error:
                next(iter(third))
            assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "per client" in error.value.details()
            assert hub.watchers == 2  # two slots stay for other clients
            hub.subscribe(client="another host").close()
        finally:
            for s in streams:
                s.cancel()


def test_hub_counts_watchers_per_client() -> None:
    hub = EventHub(max_watchers=4, per_client=2)
    held = [hub.subscribe(client="10.0.0.9") for _ in range(2)]
    with pytest.raises(WatchersExhausted, match="per client"):
        hub.subscribe(client="10.0.0.9")
    hub.subscribe(client="10.0.0.8")
    held[0].close()
    hub.subscribe(client="10.0.0.9")
