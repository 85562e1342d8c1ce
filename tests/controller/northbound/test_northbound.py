"""The northbound gRPC API over loopback: round trips, error mapping, health, reflection, metrics."""

from __future__ import annotations

import logging
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from controller.metrics import ControllerMetrics
from controller.northbound import (
    ControllerClient,
    ControllerUnreachable,
    NorthboundError,
    NorthboundServers,
    convert,
    start_northbound,
)
from controller.northbound.api import ApiError, ApiErrorCode, MaintenanceKind, Phase, StatusSnapshot
from controller.northbound.errors import API_ERROR_METADATA_KEY, STATUS_OF_API_ERROR
from controller.northbound.proto import TREE
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2 as pb
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2_grpc as pb_grpc
from controller.northbound.server import DEFAULT_HISTORY_LIMIT
from optimizer.errors import ConfigError
from optimizer.fabric import Block, Fabric, Ocs
from southbound.options import RetryPolicy
from southbound.tls import ServerTlsConfig, TlsConfig
from tests.support.northbound_fake import (
    HISTORY,
    MATRICES,
    PLAN,
    TOPOLOGY,
    FakeControllerApi,
    client_for,
    serving,
)
from tests.support.tls_ca import SERVER_NAME, make_pki

Served = tuple[FakeControllerApi, NorthboundServers, ControllerClient]


@pytest.fixture
def served() -> Iterator[Served]:
    with serving() as (api, servers, _metrics), client_for(servers) as client:
        yield api, servers, client


@pytest.fixture
def stub(served: Served) -> Iterator[pb_grpc.ControllerServiceStub]:
    with grpc.insecure_channel(str(served[1].grpc_address)) as channel:
        yield pb_grpc.ControllerServiceStub(channel)


# -- round trips ------------------------------------------------------------------------------


def test_status_round_trips_with_the_metrics_address(served: Served) -> None:
    api, servers, client = served
    report = client.status_report()
    assert report.status == api.status()
    assert report.status.phase is Phase.IDLE
    assert report.status.last_toe_time is None and report.status.mlu == pytest.approx(0.4213)
    assert report.metrics_address == str(servers.metrics_address)
    assert servers.metrics_port and servers.metrics_port > 0


def test_status_in_flight_with_every_field_set(served: Served) -> None:
    api, _servers, client = served
    api.snapshot = StatusSnapshot(
        phase=Phase.RECONFIGURING,
        fabric="fake-4",
        toe_paused=True,
        te_runs=2**40,
        toe_runs=3,
        last_te_time=1.5,
        last_toe_time=2.5,
        mlu=0.0,
        measured_mlu=float("inf"),
        predicted_mlu=0.75,
        reconfiguration_id=42,
        stage=0,
        stages_total=3,
        step="qualify",
        last_error="ocs2: UNAVAILABLE",
        details={"nested": {"list": [1, 2.5, None]}},
    )
    api.maintenance = ["block:b3", "ocs:ocs2"]
    status = client.status()
    assert status == replace(api.snapshot, maintenance=("block:b3", "ocs:ocs2"))
    assert status.stage == 0 and status.mlu == 0.0  # zero is not "unset"


def test_every_phase_has_a_proto_value() -> None:
    for phase in Phase:
        assert convert.phase_from_pb(convert.phase_to_pb(phase)) is phase


def test_topology_and_circuits_round_trip(served: Served) -> None:
    _api, _servers, client = served
    assert client.topology() == TOPOLOGY


def test_matrices_round_trip_and_missing_prediction(served: Served) -> None:
    api, _servers, client = served
    assert client.matrices() == MATRICES
    api.matrices_data = {"current": {"b1": {"b2": 1.0}}, "prediction": None, "time": None}
    assert client.matrices() == api.matrices_data


def test_history_newest_first_with_limit(served: Served) -> None:
    api, _servers, client = served
    assert client.history() == HISTORY
    assert client.history(limit=2) == HISTORY[:2]
    assert api.calls_to("history") == [(DEFAULT_HISTORY_LIMIT,), (2,)]


def test_toe_dry_run_returns_the_plan_and_last_plan_keeps_it(served: Served) -> None:
    _api, _servers, client = served
    with pytest.raises(ApiError) as missing:
        client.last_plan()
    assert missing.value.code is ApiErrorCode.NOT_FOUND and "no ToE plan" in missing.value.message
    result = client.trigger_toe(dry_run=True)
    assert result.accepted and result.dry_run and result.plan == PLAN
    assert client.last_plan() == PLAN


def test_toe_run_is_queued_once(served: Served) -> None:
    api, _servers, client = served
    result = client.trigger_toe()
    assert result.accepted and not result.dry_run and result.plan is None
    assert result.message == "ToE run queued"
    with pytest.raises(ApiError) as again:
        client.trigger_toe()
    assert again.value.code is ApiErrorCode.FAILED_PRECONDITION
    assert api.calls_to("trigger_toe") == [(False,), (False,)]  # actions are not retried


def test_pause_and_resume_show_in_status(served: Served) -> None:
    _api, _servers, client = served
    client.pause_toe()
    assert client.status().toe_paused
    client.resume_toe()
    assert not client.status().toe_paused


def test_drain_and_undrain_a_block_and_an_ocs(served: Served) -> None:
    api, _servers, client = served
    assert client.set_maintenance(MaintenanceKind.BLOCK, "b3", True) == "drain of block b3 queued"
    client.set_maintenance(MaintenanceKind.OCS, "ocs2", True)
    assert client.status().maintenance == ("block:b3", "ocs:ocs2")
    client.set_maintenance(MaintenanceKind.BLOCK, "b3", False)
    assert client.status().maintenance == ("ocs:ocs2",)
    assert api.calls_to("set_maintenance")[0] == (MaintenanceKind.BLOCK, "b3", True)
    assert api.last_force is False
    client.set_maintenance(MaintenanceKind.OCS, "ocs1", True, force=True)
    assert api.last_force is True


def test_plan_with_numpy_values_travels_as_plain_json(served: Served) -> None:
    api, _servers, client = served
    api.plan = {"mlu": np.float64(0.5), "circuits": np.int64(7), "row": np.array([1, 2]), "set": {"b"}}
    assert client.last_plan() == {"mlu": 0.5, "circuits": 7, "row": [1, 2], "set": ["b"]}


def test_a_plan_larger_than_grpc_default_message_size_travels(served: Served) -> None:
    api, _servers, client = served
    circuit = {"ocs": "ocs17", "a": {"block": "b12", "port": 101}, "b": {"block": "b40", "port": 35}}
    stage = {"remove": [circuit] * 2000, "add": [circuit] * 2000}
    api.plan = {"stages": [{"domain": d % 4, **stage} for d in range(16)]}
    assert len(convert.dump_json(api.plan, "plan")) > 5 * 1024 * 1024
    assert client.last_plan() == api.plan


# -- bad requests -----------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [-1, 0, 1001])
def test_bad_history_limit_is_invalid_argument_naming_limit(served: Served, limit: int) -> None:
    api, _servers, client = served
    with pytest.raises(ApiError) as error:
        client.history(limit=limit)
    assert error.value.code is ApiErrorCode.INVALID_ARGUMENT
    assert error.value.message.startswith("limit: ") and str(limit) in error.value.message
    assert api.calls_to("history") == []


@pytest.mark.parametrize("name", ["", "   "])
def test_empty_maintenance_name_is_invalid_argument(served: Served, name: str) -> None:
    api, _servers, client = served
    with pytest.raises(ApiError) as error:
        client.set_maintenance(MaintenanceKind.OCS, name, True)
    assert error.value.code is ApiErrorCode.INVALID_ARGUMENT and error.value.message.startswith("name: ")
    assert api.calls_to("set_maintenance") == []


def test_unknown_name_refused_by_the_daemon_arrives_as_invalid_argument(served: Served) -> None:
    _api, _servers, client = served
    with pytest.raises(ApiError) as error:
        client.set_maintenance(MaintenanceKind.BLOCK, "b99", True)
    assert error.value.code is ApiErrorCode.INVALID_ARGUMENT
    assert error.value.message == "name: no block 'b99' in fabric fake-4"


def test_unknown_name_refused_by_the_server_when_it_knows_the_fabric() -> None:
    fabric = Fabric(
        name="tiny", blocks=(Block("b1", 4), Block("b2", 4)), ocs=(Ocs("ocs1", 8), Ocs("ocs2", 8))
    )
    with serving(fabric=fabric) as (api, servers, _m), client_for(servers) as client:
        unknown = (
            (MaintenanceKind.BLOCK, "b3", "name: fabric 'tiny' has no block 'b3'"),
            (MaintenanceKind.OCS, "ocs9", "name: fabric 'tiny' has no OCS 'ocs9'"),
        )
        for kind, name, message in unknown:
            with pytest.raises(ApiError) as error:
                client.set_maintenance(kind, name, True)
            assert error.value.code is ApiErrorCode.INVALID_ARGUMENT and error.value.message == message
        assert api.calls_to("set_maintenance") == []
        client.set_maintenance(MaintenanceKind.OCS, "ocs2", True)
        assert api.calls_to("set_maintenance") == [(MaintenanceKind.OCS, "ocs2", True)]


def test_unset_maintenance_kind_is_invalid_argument(stub: pb_grpc.ControllerServiceStub) -> None:
    with pytest.raises(grpc.RpcError) as error:
        stub.SetMaintenance(pb.SetMaintenanceRequest(name="b1", drained=True), timeout=5)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.value.details().startswith("kind: ")


# -- error mapping ----------------------------------------------------------------------------


@pytest.mark.parametrize("code", list(ApiErrorCode))
def test_api_errors_map_to_status_codes(
    served: Served, stub: pb_grpc.ControllerServiceStub, code: ApiErrorCode
) -> None:
    api, _servers, client = served
    api.fail["status"] = ApiError(code, f"refused with {code.value}")
    with pytest.raises(grpc.RpcError) as raw:
        stub.GetStatus(pb.GetStatusRequest(), timeout=5)
    assert raw.value.code() == STATUS_OF_API_ERROR[code]
    assert raw.value.details() == f"refused with {code.value}"
    assert (API_ERROR_METADATA_KEY, code.value) in tuple(raw.value.trailing_metadata())
    with pytest.raises(ApiError) as mapped:
        client.status()
    assert mapped.value.code is code and mapped.value.message == f"refused with {code.value}"


def test_unavailable_reads_are_retried_then_reported(served: Served) -> None:
    api, servers, _client = served
    api.fail["topology"] = ApiError(ApiErrorCode.UNAVAILABLE, "the daemon is starting")
    retry = RetryPolicy(max_attempts=3, initial_backoff_s=0.01, max_backoff_s=0.01)
    with client_for(servers, read_retry=retry) as client, pytest.raises(ApiError) as error:
        client.topology()
    assert error.value.code is ApiErrorCode.UNAVAILABLE
    assert len(api.calls_to("topology")) == 3


def test_unexpected_exception_is_internal_logged_and_the_server_keeps_serving(
    served: Served, stub: pb_grpc.ControllerServiceStub, caplog: pytest.LogCaptureFixture
) -> None:
    api, _servers, client = served
    api.fail["matrices"] = ZeroDivisionError("division by zero in the estimator")
    with caplog.at_level(logging.ERROR, logger="controller.northbound.server"), pytest.raises(
        grpc.RpcError
    ) as error:
        stub.GetMatrices(pb.GetMatricesRequest(), timeout=5)
    assert error.value.code() == grpc.StatusCode.INTERNAL
    assert "ZeroDivisionError: division by zero in the estimator" in error.value.details()
    assert any("GetMatrices failed" in r.getMessage() and r.exc_info for r in caplog.records)
    del api.fail["matrices"]
    assert client.matrices() == MATRICES
    assert client.status().fabric == "fake-4"


@pytest.mark.parametrize(
    "bad, where",
    [
        ({"circuits": []}, "'topology' is missing"),
        ({"topology": {"links": [{"a": "b1"}]}, "circuits": []}, "malformed"),
        ({"topology": {"links": []}, "circuits": "none"}, "topology.circuits: expected a list"),
    ],
)
def test_malformed_daemon_values_are_internal_naming_the_part(
    served: Served, stub: pb_grpc.ControllerServiceStub, bad: Any, where: str
) -> None:
    api, _servers, _client = served
    api.topology_data = bad
    with pytest.raises(grpc.RpcError) as error:
        stub.GetTopology(pb.GetTopologyRequest(), timeout=5)
    assert error.value.code() == grpc.StatusCode.INTERNAL
    assert "ConversionError" in error.value.details() and where in error.value.details()


def test_a_slow_call_hits_the_client_deadline_and_others_still_answer(served: Served) -> None:
    api, servers, client = served
    with api.holding("last_plan"), client_for(servers, deadline_s=0.3) as impatient:
        with pytest.raises(ControllerUnreachable, match=r"did not answer within 0\.3 s"):
            impatient.last_plan()
        assert client.status().fabric == "fake-4"


def test_a_dry_run_gets_its_own_longer_deadline(served: Served) -> None:
    api, servers, _client = served
    with api.holding("trigger_toe"), client_for(servers, deadline_s=0.2, dry_run_deadline_s=10) as client:
        release = threading.Timer(0.6, api.hold.set)  # the plan takes longer than deadline_s
        release.start()
        try:
            assert client.trigger_toe(dry_run=True).plan == PLAN
        finally:
            release.cancel()


def test_unreachable_controller_is_a_clear_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        with ControllerClient(f"127.0.0.1:{port}", read_retry=RetryPolicy(max_attempts=1)) as client:
            with pytest.raises(ControllerUnreachable) as error:
                client.status()
            assert str(error.value).startswith(f"cannot reach the controller at 127.0.0.1:{port}")
            assert not client.is_serving()


# -- health, reflection -----------------------------------------------------------------------


def test_health_serving_then_not_after_stop() -> None:
    with serving() as (_api, servers, _m):
        with grpc.insecure_channel(str(servers.grpc_address)) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            for service in ("", convert.SERVICE_NAME):
                reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
        with client_for(servers, read_retry=RetryPolicy(max_attempts=1)) as client:
            assert client.is_serving()
            servers.stop()
            servers.stop()  # stopping twice is harmless
            assert not client.is_serving()


def test_reflection_lists_and_describes_the_service(served: Served) -> None:
    with grpc.insecure_channel(str(served[1].grpc_address)) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        requests = [
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(file_containing_symbol=convert.SERVICE_NAME),
        ]
        listed, described = list(stub.ServerReflectionInfo(iter(requests), timeout=5))
    names = {s.name for s in listed.list_services_response.service}
    assert {"heliostat.controller.v1.ControllerService", "grpc.health.v1.Health"} <= names
    files = described.file_descriptor_response.file_descriptor_proto
    assert any(b"heliostat/controller/v1/controller.proto" in f for f in files)


def test_reflection_v1_beside_v1alpha(served: Served) -> None:
    """grpc.reflection.v1 (what current clients ask first) answers like v1alpha: same messages."""
    with grpc.insecure_channel(str(served[1].grpc_address)) as channel:
        call = channel.stream_stream(
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )
        requests = [
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(file_containing_symbol="heliostat.controller.v1.Event"),
        ]
        listed, described = list(call(iter(requests), timeout=5))
    names = {s.name for s in listed.list_services_response.service}
    assert {"heliostat.controller.v1.ControllerService", "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection"} <= names
    files = described.file_descriptor_response.file_descriptor_proto
    assert any(b"WatchEvents" in f for f in files)


# -- metrics ----------------------------------------------------------------------------------


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as reply:
        assert reply.status == 200
        return reply.read().decode()


def test_metrics_endpoint_serves_the_registry_live() -> None:
    with serving() as (_api, servers, metrics):
        url = f"http://{servers.metrics_address}/metrics"
        text = _get(url)
        for name in ("heliostat_te_runs_total", "heliostat_mlu_ratio", "heliostat_toe_runs_total"):
            assert f"# TYPE {name.removesuffix('_total')}" in text
        assert "heliostat_reconfig_stage 0.0" in text and "heliostat_reconfig_stages 0.0" in text
        assert 'heliostat_reconfig_step{heliostat_reconfig_step="none"} 1.0' in text
        assert "_created" not in text and "process_cpu_seconds_total" in text
        assert 'heliostat_build_info{python_version="' in text
        assert 'heliostat_te_solve_seconds_bucket{le="0.5"}' in text
        metrics.te_runs.inc(3)
        metrics.mlu.set(0.625)
        metrics.te_solve_seconds.observe(0.2)
        text = _get(url)
        assert "heliostat_te_runs_total 3.0" in text
        assert "heliostat_mlu_ratio 0.625" in text
        assert "heliostat_te_solve_seconds_count 1.0" in text
        servers.stop()
        with pytest.raises(urllib.error.URLError):
            _get(url)


def test_without_a_metrics_address_only_grpc_is_served() -> None:
    with start_northbound(FakeControllerApi(), "127.0.0.1:0") as servers:
        assert servers.metrics_address is None
        with client_for(servers) as client:
            assert client.status_report().metrics_address == ""
    with client_for(servers, read_retry=RetryPolicy(max_attempts=1)) as client:
        assert not client.is_serving()  # leaving the block stopped it


# -- start-up failures --------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_grpc_port_in_use_fails_cleanly_and_releases_the_metrics_port() -> None:
    with serving() as (_api, first, _m):
        metrics_port = _free_port()
        with pytest.raises(NorthboundError, match=f"northbound API on 127.0.0.1:{first.grpc_port}"):
            start_northbound(
                FakeControllerApi(), str(first.grpc_address), ControllerMetrics(), f"127.0.0.1:{metrics_port}"
            )
        with socket.socket() as sock:  # the failed start left nothing listening on it
            sock.bind(("127.0.0.1", metrics_port))


def test_metrics_port_in_use_fails_naming_the_address() -> None:
    with serving() as (_api, first, _m), pytest.raises(NorthboundError) as error:
        start_northbound(FakeControllerApi(), "127.0.0.1:0", ControllerMetrics(), first.metrics_address)
    assert str(error.value).startswith(f"cannot serve metrics on {first.metrics_address}")


def test_bad_listen_address_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"listen\.northbound"):
        start_northbound(FakeControllerApi(), "localhost")


def test_many_concurrent_calls_are_served(served: Served) -> None:
    _api, servers, _client = served
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            with client_for(servers) as client:
                for _ in range(5):
                    assert client.topology() == TOPOLOGY
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors


# -- stubs -------------------------------------------------------------------------------------


def test_the_controller_proto_lives_with_the_northbound_package() -> None:
    files = {str(p) for p in TREE.proto_files()}
    assert files == {"heliostat/controller/v1/controller.proto"}
    service = pb.DESCRIPTOR.services_by_name["ControllerService"]
    assert pb.DESCRIPTOR.package == "heliostat.controller.v1"
    assert {m.name for m in service.methods} == {
        "GetStatus",
        "GetTopology",
        "GetMatrices",
        "ListReconfigurations",
        "TriggerToe",
        "PauseToe",
        "ResumeToe",
        "SetMaintenance",
        "GetLastPlan",
        "GetReconfiguration",
        "WatchEvents",
        "GetFabricView",
        "GetLink",
        "GetDevice",
        "AddJob",
        "RemoveJob",
        "ListJobs",
    }
    assert service.methods_by_name["WatchEvents"].server_streaming


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback")
def test_ipv6_listen_addresses() -> None:
    servers = start_northbound(FakeControllerApi(), "[::1]:0", ControllerMetrics(), "[::1]:0")
    try:
        assert str(servers.grpc_address).startswith("[::1]:")
        with client_for(servers) as client:
            assert client.status_report().metrics_address == str(servers.metrics_address)
        assert "heliostat_mlu_ratio" in _get(f"http://{servers.metrics_address}/metrics")
    finally:
        servers.stop(grace_s=0)


def test_mutual_tls(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    server_tls = ServerTlsConfig(pki.server_cert, pki.server_key, client_ca=pki.ca_cert)
    with serving(tls=server_tls) as (_api, servers, _m):
        good = TlsConfig(pki.ca_cert, pki.client_cert, pki.client_key, server_name=SERVER_NAME)
        with client_for(servers, tls=good) as client:
            assert client.status().fabric == "fake-4"
        anonymous = TlsConfig(pki.ca_cert, server_name=SERVER_NAME)  # no client certificate
        refused = client_for(servers, tls=anonymous, read_retry=RetryPolicy(max_attempts=1))
        with refused, pytest.raises(ControllerUnreachable):
            refused.status()
