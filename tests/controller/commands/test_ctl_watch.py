"""``ctl reconfig``, ``ctl watch`` (the WatchEvents stream), reads that retry while the
controller starts, and stage numbers that agree between ``ctl status`` and the metric.
Real gRPC on loopback, the fake ControllerApi behind it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import grpc
import pytest

from controller.commands.ctl import CTL_READ_RETRY
from controller.commands.ctl import tables as ctl_tables
from controller.metrics import ControllerMetrics
from controller.northbound import ControllerClient, start_northbound
from controller.northbound.api import Phase, StatusSnapshot
from controller.northbound.events import EventHub, event_message
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2 as pb
from tests.support import ROOT
from tests.support.cli_helpers import run_cli
from tests.support.daemon_support import free_port, wait_for
from tests.support.northbound_fake import RECONFIGURATION, FakeControllerApi, serving

TE = {"reason": "first run", "mlu": 0.5, "mlu_quantized": 0.51, "demand_gbps": 400.0, "circuits": 16,
      "seconds": 0.2}


@pytest.fixture
def served_with_events() -> Iterator[tuple[EventHub, str]]:
    hub = EventHub(max_watchers=2)
    with serving(events=hub) as (_api, servers, _metrics):
        yield hub, str(servers.grpc_address)


def test_reconfig_shows_stages_and_steps(served_with_events: tuple[EventHub, str]) -> None:
    _hub, address = served_with_events
    as_json = run_cli("ctl", "--address", address, "reconfig", "7", "--format", "json", check=True)
    data = json.loads(as_json.stdout)
    assert data == RECONFIGURATION
    text = run_cli("ctl", "--address", address, "reconfig", "7", check=True).stdout
    assert text.startswith("reconfiguration 7: rolled_back (auto)\n")
    assert "    2. domain 1: -0 +1 circuits, MLU 0.6000 -> drained 0.6000 -> 0.5200\n" in text
    failed = next(line for line in text.splitlines() if line.split()[:3] == ["2", "qualify", "failed"])
    assert failed.endswith("29 s  b4 port 7 dark")
    assert max(map(len, text.splitlines())) <= 100
    missing = run_cli("ctl", "--address", address, "reconfig", "8")
    assert missing.returncode == 1 and "not_found: no reconfiguration 8" in missing.stderr
    assert run_cli("ctl", "--address", address, "reconfig", "0").returncode == 2


def _watch(address: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "ctl", "--address", address, "watch", *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_watch_follows_events_as_lines_and_json(served_with_events: tuple[EventHub, str]) -> None:
    hub, address = served_with_events
    lines = _watch(address, "--count", "3")
    wait_for(lambda: hub.watchers == 1, 30, what="the watcher")
    hub.publish("te", TE)
    hub.publish("device_down", {"device": "ocs1", "error": "UNAVAILABLE: connection refused"})
    hub.publish("step", {"intent": 3, "stage": 0, "step": "drain", "event": "started"})
    out, err = lines.communicate(timeout=30)
    assert lines.returncode == 0, err
    shown = [line.split(None, 2)[1:] for line in out.splitlines()]
    assert shown == [
        ["te_run", "TE (first run): MLU 0.500, 400 Gbit/s over 16 circuits"],
        ["device", "ocs1 unreachable: UNAVAILABLE: connection refused"],
        ["step", "reconfiguration 3 stage 1: drain started"],
    ]
    wait_for(lambda: hub.watchers == 0, 30, what="the first watcher's stream to end")
    as_json = _watch(address, "--count", "1", "--kind", "reconfiguration", "--format", "json")
    wait_for(lambda: hub.watchers == 1, 30, what="the second watcher")
    hub.publish("te", TE)  # filtered out by --kind
    hub.publish("reconfiguration", {"intent": 3, "outcome": "rolled_back", "reason": "qualify failed"})
    out, err = as_json.communicate(timeout=30)
    event = json.loads(out)
    assert event["kind"] == "EVENT_KIND_RECONFIGURATION" and event["sequence"] == 5
    assert event["reconfiguration"] == {"reconfiguration_id": "3", "outcome": "rolled_back",
                                        "reason": "qualify failed"}


def test_watchers_are_bounded_and_streams_end_when_the_server_stops() -> None:
    hub = EventHub(max_watchers=1)
    with serving(events=hub) as (_api, servers, _metrics), ControllerClient(
        str(servers.grpc_address)
    ) as client:
        first = client.watch_events()
        got: list[pb.Event] = []
        reader = threading.Thread(target=lambda: got.extend(first), daemon=True)
        reader.start()
        wait_for(lambda: hub.watchers == 1, 30, what="the watcher")
        second = run_cli("ctl", "--address", str(servers.grpc_address), "watch")
        assert second.returncode == 1 and "1 clients watch the events already" in second.stderr
        hub.publish("leader", {"leader": "ctl-b", "previous": "ctl-a"})
        wait_for(lambda: got, 30, what="the leader event")
        started = time.monotonic()
        servers.stop(grace_s=5)
        reader.join(10)
        assert not reader.is_alive() and time.monotonic() - started < 3  # ended, not cut at the grace
    assert got[0].kind == pb.EVENT_KIND_LEADER and got[0].leader.leader == "ctl-b"


def test_event_messages_are_typed() -> None:
    te = event_message("te", TE)
    assert te.kind == pb.EVENT_KIND_TE_RUN and te.te_run.circuits == 16 and te.te_run.mlu == 0.5
    toe = event_message("toe", {"trigger": "auto", "apply": True, "reason": "gain 20%", "current_mlu": 0.9,
                                "planned_mlu": 0.6, "stages": 3, "changed": 12})
    assert toe.toe.apply and toe.toe.stages == 3 and toe.toe.circuits_changed == 12
    assert not event_message("toe", {"trigger": "auto", "apply": False, "reason": "x"}).toe.HasField("stages")
    assert event_message("stage", {"intent": 2, "stage": 1, "event": "done"}).step.stage == 2  # from 1
    other = event_message("restore", {"ocs": "ocs2", "circuits": 4})
    assert other.kind == pb.EVENT_KIND_FABRIC and other.message == "restore: circuits 4, ocs ocs2"
    leading = event_message("leading", {"epoch": 4, "replica": "replica-a"})  # issue 14's events
    assert leading.kind == pb.EVENT_KIND_LEADER and leading.leader.leader == "replica-a"
    assert event_message("standby", {"reason": "replica-b leads"}).message == "standby: replica-b leads"
    back = event_message("device_up", {"device": "b3"})
    assert back.device.up and back.message == "b3 is back"


def test_a_watcher_that_falls_behind_loses_events_not_the_loop() -> None:
    hub = EventHub()
    subscription = hub.subscribe([pb.EVENT_KIND_TE_RUN])
    for _ in range(1500):
        hub.publish("te", TE)  # never blocks, whoever watches
    hub.publish("device_up", {"device": "b1"})  # another kind: not queued for this watcher
    events = []
    while (event := subscription.next(0.01)) is not None:
        events.append(event)
    assert len(events) == 1000 and events[0].sequence == 1  # the backlog, then the rest dropped
    hub.close()
    with pytest.raises(StopIteration):
        subscription.next(1)


def test_ctl_reads_retry_while_the_controller_starts() -> None:
    port = free_port()
    servers = []

    def start_late() -> None:
        time.sleep(0.3)
        servers.append(start_northbound(FakeControllerApi(), f"127.0.0.1:{port}"))

    starter = threading.Thread(target=start_late)
    started = time.monotonic()
    starter.start()
    try:
        with ControllerClient(f"127.0.0.1:{port}", read_retry=CTL_READ_RETRY) as client:
            assert client.status().phase is Phase.IDLE  # the first attempts were refused
        assert time.monotonic() - started >= 0.3
    finally:
        starter.join()
        for server in servers:
            server.stop(grace_s=0)


def test_stage_numbers_agree_between_status_and_the_metric() -> None:
    metrics = ControllerMetrics(process=False)
    metrics.reconfiguration(1, 4, "apply_ocs")  # the daemon's stage index 1: the second stage
    snapshot = StatusSnapshot(Phase.RECONFIGURING, "f", False, 0, 0, reconfiguration_id=9, stage=1,
                              stages_total=4, step="apply_ocs")
    shown = ctl_tables._reconfiguration(snapshot)
    assert shown == "#9, stage 2 of 4, step apply_ocs"
    value = metrics.registry.get_sample_value
    assert value("heliostat_reconfig_stage") == 2 and value("heliostat_reconfig_stages") == 4
    assert value("heliostat_reconfig_step", {"heliostat_reconfig_step": "apply_ocs"}) == 1
    metrics.reconfiguration(None, None, None)
    assert value("heliostat_reconfig_stage") == 0 and value("heliostat_reconfig_stages") == 0


def test_watch_needs_a_server_that_streams() -> None:
    with serving() as (_api, servers, _metrics), ControllerClient(str(servers.grpc_address)) as client:
        with pytest.raises(Exception) as failure:
            next(iter(client.watch_events()))
        assert "does not stream its events" in str(failure.value)
        assert not isinstance(failure.value, grpc.RpcError)  # mapped to the client's own errors


def test_status_details_are_typed_and_times_are_timestamps() -> None:
    from controller.northbound import convert

    details = {"mlu_quantized": 0.61, "unreachable": ["b2"], "ocs_down": [], "circuits_installed": 128,
               "circuits_up": 126, "circuits_carrying": 120, "poll_seconds": 0.02, "unexplained_drains": 0,
               "journal_error": None,
               "health": "degraded", "degraded": ["1 of 12 devices unreachable: b2"], "solver": "highs"}
    status = StatusSnapshot(Phase.IDLE, "f", False, 3, 1, last_te_time=1_790_000_000.25, details=details)
    message = convert.status_to_pb(status)
    assert message.details.unreachable == ["b2"] and message.details.circuits_up == 126
    assert message.details.circuits_carrying == 120
    assert message.details.health == "degraded" and not message.details.HasField("journal_error")
    assert json.loads(message.details_json) == {"solver": "highs"}  # only what has no typed field
    assert message.last_te_at.ToNanoseconds() == 1_790_000_000_250_000_000
    assert not message.HasField("last_toe_at")
    back = convert.status_from_pb(message)
    assert back.details == details and back.last_te_time == 1_790_000_000.25
    untyped = convert.status_to_pb(StatusSnapshot(Phase.IDLE, "f", False, 0, 0, details={"x": 1}))
    assert not untyped.HasField("details") and convert.status_from_pb(untyped).details == {"x": 1}


def test_reconfiguration_round_trips_with_timestamps() -> None:
    from controller.northbound import convert

    message = convert.reconfiguration_to_pb(RECONFIGURATION)
    assert message.created.ToNanoseconds() == 1_790_000_000_000_000_000
    assert message.steps[-1].finished.ToNanoseconds() == 1_790_000_090_000_000_000
    assert convert.reconfiguration_from_pb(message) == RECONFIGURATION
    in_flight = {**RECONFIGURATION, "state": "in_progress", "finished": None, "steps": []}
    assert not convert.reconfiguration_to_pb(in_flight).HasField("finished")
