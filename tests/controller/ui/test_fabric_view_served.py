"""The fabric view, its drill-downs and operator events on a real daemon over emulated fabric-4:
the JSON endpoints, the gRPC API (GetFabricView, GetLink, GetDevice, WatchEvents) and
``heliostat ctl link`` / ``ctl device`` answer the same, unknown names are named, and a drain
shows: the OCS marked, its circuits drained, the circuit count following it, an operator
event in the list and on the stream."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
import yaml

from controller.cli import main
from controller.commands.run import start_api_servers, start_status_page
from controller.config import load_controller_config
from controller.daemon import Daemon
from controller.northbound import ControllerClient
from controller.northbound.api import ApiError, ApiErrorCode, MaintenanceKind
from controller.northbound.events import EventHub
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2 as pb
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2_grpc as pb_grpc
from optimizer.traffic import uniform_matrix
from tests.controller.ui.test_web import get, get_json, steady
from tests.support import CONFIGS
from tests.support.daemon_support import controller_config, running_fabric, wait_for


@dataclass
class Served:
    daemon: Daemon
    url: str
    client: ControllerClient
    grpc_address: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("fabric-view")
    with running_fabric(CONFIGS / "fabric-4.yaml", tmp) as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, load=0.4))
        path = controller_config(tmp, CONFIGS / "fabric-4.yaml", tmp / "devices.yaml")
        data = yaml.safe_load(path.read_text())
        data["listen"]["web"] = "127.0.0.1:0"
        path.write_text(yaml.safe_dump(data))
        events = EventHub()
        daemon = Daemon(load_controller_config(path), listener=events.publish)
        daemon.start()
        servers = start_api_servers(daemon, events)
        page = start_status_page(daemon, servers)
        loop = threading.Thread(target=daemon.run, daemon=True)
        loop.start()
        client = ControllerClient(str(servers.grpc_address))
        try:
            loaded = lambda: daemon.board.get("te_runs") > 0 and len(daemon.recorder.loads) >= 3  # noqa: E731
            wait_for(loaded, 60, what="a TE run and three polls of the loads")
            yield Served(daemon, page.url, client, str(servers.grpc_address))
        finally:
            client.close()
            daemon.stop()
            loop.join(timeout=30)
            page.stop()
            servers.stop()
            daemon.close()


def test_the_view_is_the_fabric_with_every_circuit_once(served: Served) -> None:
    view, web = steady(served.client.fabric_view, lambda: get_json(served.url + "api/fabric-view"))
    for entry in (view, web):
        entry.pop("time")
        for link in entry["links"]:  # the loads move with every poll; the structure does not
            for key in ("load_gbps", "utilisation"):
                link.pop(key)
        for device in (*entry["blocks"], *entry["ocs"]):
            for key in ("load_gbps", "utilisation"):
                device.pop(key)
    assert web == view
    assert [b["name"] for b in view["blocks"]] == ["b1", "b2", "b3", "b4"]
    assert [o["name"] for o in view["ocs"]] == ["ocs1", "ocs2"]
    circuits = get_json(served.url + "api/topology")["circuits"]
    per_link = sum(x["circuits"]["installed"] for x in view["links"])
    assert view["circuits"]["installed"] == len(circuits) == per_link
    on_ocs = {o["name"]: o["circuits"]["installed"] for o in view["ocs"]}
    assert on_ocs == {name: sum(c["ocs"] == name for c in circuits) for name in on_ocs}
    live = get_json(served.url + "api/fabric-view")
    lean = get_json(served.url + "api/fabric-view?by_ocs=0")
    assert [(x["a"], x["b"]) for x in lean["links"]] == [(x["a"], x["b"]) for x in live["links"]]
    assert not any("by_ocs" in x for x in lean["links"]) and all(x["by_ocs"] for x in live["links"])
    assert any(x["load_gbps"] and x["capacity_gbps"] for x in live["links"])  # demand 0.4 is on the wires


def test_drill_downs_over_grpc_web_and_ctl(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    link = get_json(served.url + "api/link?a=b2&b=b1")
    assert (link["a"], link["b"]) == ("b1", "b2") and len(link["history"]) >= 3
    assert link["capacity_gbps"] == 100.0 * link["circuits"]["carrying"]
    assert {c["ocs"] for c in link["circuit_list"]} <= {"ocs1", "ocs2"}
    by_grpc = served.client.link("b1", "b2")
    assert by_grpc["circuit_list"] == link["circuit_list"]
    device = served.client.device("ocs1")
    assert device["kind"] == "ocs" and device["state"] == "up"
    assert all(c["ocs"] == "ocs1" for c in device["circuit_list"]) and device["circuit_list"]
    assert len(device["history"]) >= 3 and device["history"][-1]["capacity_gbps"]
    assert main(["ctl", "--address", served.grpc_address, "device", "ocs1"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("ocs ocs1: up") and "carrying traffic" in text and "load over the last" in text
    assert main(["ctl", "--address", served.grpc_address, "--timeout", "10", "link", "b1", "b3",
                 "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["a"], data["b"]) == ("b1", "b3") and data["circuit_list"]


def test_unknown_names_are_not_found_naming_them(served: Served) -> None:
    status, _headers, body = get(served.url + "api/device?name=ocs9")
    assert status == 404 and "ocs9" in json.loads(body)["message"]
    status, _headers, body = get(served.url + "api/link?a=b1&b=b9")
    assert status == 404 and "b9" in json.loads(body)["message"]
    status, _headers, body = get(served.url + "api/link?a=b1")
    assert status == 400 and json.loads(body)["message"].startswith("b:")
    status, _headers, body = get(served.url + "api/link?a=b1&b=b1")
    assert status == 400 and "two blocks" in json.loads(body)["message"]
    with pytest.raises(ApiError) as caught:
        served.client.device("ocs9")
    assert caught.value.code is ApiErrorCode.NOT_FOUND and "ocs9" in caught.value.message
    with grpc.insecure_channel(served.grpc_address) as channel, pytest.raises(grpc.RpcError) as raw:
        pb_grpc.ControllerServiceStub(channel).GetLink(pb.GetLinkRequest(a="b1", b=""), timeout=10)
    assert raw.value.code() == grpc.StatusCode.INVALID_ARGUMENT and raw.value.details().startswith("b:")


def test_a_drain_shows_in_the_view_the_count_and_the_events(served: Served) -> None:
    daemon, client = served.daemon, served.client
    stream = client.watch_events([pb.EVENT_KIND_OPERATOR])
    got: list[pb.Event] = []
    reader = threading.Thread(target=lambda: got.extend([next(stream)]), daemon=True)
    reader.start()
    on_ocs2 = sum(c.ocs == "ocs2" for c in daemon.installed)
    try:
        client.set_maintenance(MaintenanceKind.OCS, "ocs2", True, force=True)

        def drained() -> dict | None:
            view = get_json(served.url + "api/fabric-view")
            return view if view["circuits"]["drained"] == on_ocs2 else None

        view = wait_for(drained, 60, what="the drain in the view")
        ocs = {o["name"]: o for o in view["ocs"]}
        assert ocs["ocs2"]["maintenance"] and ocs["ocs2"]["circuits"]["carrying"] == 0
        total = view["circuits"]["installed"]
        assert view["circuits"]["carrying"] == total - on_ocs2 and view["circuits"]["up"] == total
        carrying = lambda: get_json(served.url + "api/status")["details"]["circuits_carrying"]  # noqa: E731
        wait_for(lambda: carrying() == total - on_ocs2, 30, what="the status's count following the drain")
        details = served.client.status().details
        assert details["circuits_up"] == total  # up, though TE no longer routes over ocs2's
        assert details["circuits_carrying"] == total - on_ocs2
        events = get_json(served.url + "api/events?limit=50")["events"]
        drain = next(e for e in events if e["kind"] == "operator")
        assert drain["details"]["action"] == "drain" and drain["details"]["target"] == "ocs:ocs2"
        assert drain["details"]["forced"] is True and drain["level"] == "warning"
        reader.join(15)
        assert got and got[0].operator.action == "drain" and got[0].operator.target == "ocs:ocs2"
        assert got[0].kind == pb.EVENT_KIND_OPERATOR and "ocs:ocs2" in got[0].message
    finally:
        client.set_maintenance(MaintenanceKind.OCS, "ocs2", False)
    client.pause_toe()
    client.resume_toe()
    reviewed = client.trigger_toe(dry_run=True)  # a plan to review: the dry run's
    operator = [e["details"] for e in get_json(served.url + "api/events?limit=50")["events"]
                if e["kind"] == "operator"]
    assert [d["action"] for d in operator[:4]] == ["review", "resume", "pause", "undrain"]
    assert operator[0]["target"] == (reviewed.plan_id or "") and operator[0]["result"] == reviewed.message
    wait_for(lambda: get_json(served.url + "api/fabric-view")["circuits"]["drained"] == 0, 60,
             what="the undrain in the view")
