"""Fuzzing the northbound API's request messages against a real daemon (started, its loop not
running, so every accepted request stays in its queue where the test can count it): each
answer is OK or a deliberate refusal, never INTERNAL/UNKNOWN, and a refused request queues
nothing and journals nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.config import load_controller_config
from controller.daemon import Daemon
from controller.northbound import start_northbound
from controller.northbound.daemon_api import DaemonApi
from controller.northbound.events import EventHub
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2 as pb
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2_grpc as pb_grpc
from tests.fuzz.test_parsers import FUZZ
from tests.support.daemon_support import CONFIGS, controller_config, running_fabric

REFUSALS = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, pb_grpc.ControllerServiceStub]]:
    tmp = tmp_path_factory.mktemp("nb-fuzz")
    fabric_file = CONFIGS / "fabric-4.yaml"
    with running_fabric(fabric_file, tmp) as fabric:
        daemon = Daemon(load_controller_config(controller_config(tmp, fabric_file, fabric.devices_file)))
        daemon.start()
        servers = start_northbound(DaemonApi(daemon), "127.0.0.1:0", fabric=daemon.fabric, events=EventHub())
        try:
            with grpc.insecure_channel(str(servers.grpc_address)) as channel:
                yield daemon, pb_grpc.ControllerServiceStub(channel)
        finally:
            servers.stop(grace_s=0)
            daemon.close()


def _journaled(daemon: Daemon) -> tuple:
    journal = daemon.journal
    assert journal is not None
    return tuple(journal.get_state(k) for k in ("maintenance", "toe_paused", "toe_requested"))


def _already(daemon: Daemon, kind: int, name: str, drained: bool) -> bool:
    """Whether the device is already drained (``drained``) or in service (not ``drained``)."""
    from controller.decision import Maintenance, MaintenanceTarget

    target = Maintenance(MaintenanceTarget.BLOCK if kind == 1 else MaintenanceTarget.OCS, name)
    return (target in daemon.state.maintenance) == drained


def _call(method, request) -> grpc.StatusCode:
    try:
        method(request, timeout=5)
    except grpc.RpcError as exc:
        assert exc.code() in REFUSALS, f"{exc.code()}: {exc.details()}"
        return exc.code()
    return grpc.StatusCode.OK


def test_northbound_requests(api: tuple, tmp_path: Path) -> None:
    daemon, stub = api
    names = st.one_of(st.sampled_from(["b1", "b2", "ocs1", "ocs2", "", " ", "b1\n"]), st.text(max_size=200))

    @FUZZ
    @given(
        kind=st.integers(-5, 5),
        name=names,
        drained=st.booleans(),
        limit=st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
        action=st.sampled_from(["maintenance", "history", "pause", "resume", "toe", "reads"]),
    )
    def run(kind, name, drained, limit, action) -> None:
        queued, journaled = daemon.requests.qsize(), _journaled(daemon)
        if action == "maintenance":
            request = pb.SetMaintenanceRequest(kind=kind, name=name, drained=drained)
            code = _call(stub.SetMaintenance, request)
        elif action == "history":
            request = pb.ListReconfigurationsRequest() if limit is None else pb.ListReconfigurationsRequest(
                limit=limit)
            code = _call(stub.ListReconfigurations, request)
        elif action == "pause":
            code = _call(stub.PauseToe, pb.PauseToeRequest())
        elif action == "resume":
            code = _call(stub.ResumeToe, pb.ResumeToeRequest())
        elif action == "toe":
            code = _call(stub.TriggerToe, pb.TriggerToeRequest(dry_run=False))
        else:
            reads = ((stub.GetStatus, pb.GetStatusRequest), (stub.GetTopology, pb.GetTopologyRequest),
                     (stub.GetMatrices, pb.GetMatricesRequest), (stub.GetFabricView, pb.GetFabricViewRequest))
            for method, message in reads:
                assert _call(method, message()) is grpc.StatusCode.OK
            return
        if code is not grpc.StatusCode.OK:
            assert daemon.requests.qsize() == queued and _journaled(daemon) == journaled
        elif action == "maintenance" and _already(daemon, kind, name, drained):
            assert daemon.requests.qsize() == queued  # already in that state: said so, nothing queued
        elif action != "history":
            assert daemon.requests.qsize() == queued + 1

    run()


#: The longest error a refusal may carry: names and ids are quoted by a short prefix only.
MAX_DETAILS = 400


def _refused_briefly(method, request) -> grpc.StatusCode:  # type: ignore[no-untyped-def]
    try:
        method(request, timeout=5)
    except grpc.RpcError as exc:
        assert exc.code() in REFUSALS, f"{exc.code()}: {exc.details()[:200]}"
        assert len(exc.details()) <= MAX_DETAILS, f"{len(exc.details())}-character details"
        return exc.code()
    return grpc.StatusCode.OK


def test_northbound_ids_names_plans_and_event_kinds(api: tuple) -> None:
    """Issue 32: ids over the whole uint64 range, names of any length, plan ids, and
    WatchEvents kinds; every answer is OK or a short refusal and nothing is queued."""
    daemon, stub = api
    kinds = st.lists(st.integers(-(2**31), 2**31 - 1) | st.sampled_from(list(pb.EventKind.values())),
                     max_size=8)

    @FUZZ
    @given(
        intent=st.integers(0, 2**64 - 1) | st.sampled_from([2**63 - 1, 2**63, 2**64 - 1]),
        name=st.text(min_size=60, max_size=3000) | st.just("b" * 100_000),
        plan_id=st.text(max_size=300),
        kinds=kinds,
        action=st.sampled_from(["reconfig", "maintenance", "plan", "watch", "drill"]),
    )
    def run(intent, name, plan_id, kinds, action) -> None:
        queued, journaled = daemon.requests.qsize(), _journaled(daemon)
        if action == "reconfig":
            code = _refused_briefly(stub.GetReconfiguration, pb.GetReconfigurationRequest(id=intent))
            assert code is not grpc.StatusCode.OK  # the daemon journaled no reconfiguration
        elif action == "maintenance":
            request = pb.SetMaintenanceRequest(kind=pb.MAINTENANCE_KIND_BLOCK, name=name, drained=True)
            assert _refused_briefly(stub.SetMaintenance, request) is grpc.StatusCode.INVALID_ARGUMENT
        elif action == "plan":
            if not plan_id:
                return  # an empty plan id with dry_run would plan: not this test's business
            request = pb.TriggerToeRequest(dry_run=True, plan_id=plan_id)
            assert _refused_briefly(stub.TriggerToe, request) is not grpc.StatusCode.OK
        elif action == "drill":  # the drill-downs name what they do not know, briefly
            for method, request in ((stub.GetDevice, pb.GetDeviceRequest(name=name)),
                                    (stub.GetLink, pb.GetLinkRequest(a="b1", b=name))):
                code = _refused_briefly(method, request)
                assert code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND)
        else:
            valid = set(kinds) <= set(pb.EventKind.values()) - {pb.EVENT_KIND_UNSPECIFIED}
            stream = stub.WatchEvents(pb.WatchEventsRequest(kinds=kinds), timeout=0.3)
            try:
                for _ in stream:
                    pass
            except grpc.RpcError as exc:
                expected = grpc.StatusCode.DEADLINE_EXCEEDED if valid else grpc.StatusCode.INVALID_ARGUMENT
                assert exc.code() in (expected, grpc.StatusCode.RESOURCE_EXHAUSTED), exc.details()[:200]
        assert daemon.requests.qsize() == queued and _journaled(daemon) == journaled

    run()
