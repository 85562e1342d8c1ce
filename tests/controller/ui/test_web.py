"""The status page's JSON endpoints on a real daemon over an emulated fabric: the same facts
the gRPC API serves, read-only, bounded, with named errors; and the ``listen.web`` key."""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from controller.commands.run import start_api_servers, start_status_page
from controller.config import ListenAddress, controller_config_from_dict, load_controller_config
from controller.daemon import Daemon
from controller.northbound import ControllerClient
from controller.northbound.api import ApiError, ApiErrorCode
from controller.northbound.convert import status_to_json
from controller.northbound.guarded_http import PER_CLIENT
from controller.ui.facts import fabric_json
from controller.ui.recorder import Recorder
from controller.ui.web import STATIC, WebError, start_web, static_file
from optimizer.errors import ConfigError
from optimizer.traffic import uniform_matrix
from tests.support import CONFIGS
from tests.support.daemon_support import controller_config, running_fabric, wait_for


@dataclass
class Served:
    daemon: Daemon
    url: str
    client: ControllerClient


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``heliostat run``'s servers (gRPC, metrics, page) over a daemon on emulated fabric-4."""
    tmp = tmp_path_factory.mktemp("web")
    with running_fabric(CONFIGS / "fabric-4.yaml", tmp) as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, load=0.4))
        path = controller_config(tmp, CONFIGS / "fabric-4.yaml", tmp / "devices.yaml")
        data = yaml.safe_load(path.read_text())
        data["listen"]["web"] = "127.0.0.1:0"
        path.write_text(yaml.safe_dump(data))
        daemon = Daemon(load_controller_config(path))
        daemon.start()
        servers = start_api_servers(daemon)
        page = start_status_page(daemon, servers)
        loop = threading.Thread(target=daemon.run, daemon=True)
        loop.start()
        client = ControllerClient(str(servers.grpc_address))
        try:
            ready = lambda: daemon.board.get("te_runs") > 0 and len(daemon.recorder.samples(3)) == 3  # noqa: E731
            wait_for(ready, 30, what="a TE run and three polls")
            yield Served(daemon, page.url, client)
        finally:
            client.close()
            daemon.stop()
            loop.join(timeout=30)
            page.stop()
            servers.stop()
            daemon.close()


def get(url: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def get_json(url: str) -> Any:
    status, _headers, body = get(url)
    assert status == 200, body
    return json.loads(body)


def steady(read_grpc: Callable[[], Any], read_web: Callable[[], Any], tries: int = 50) -> tuple[Any, Any]:
    """A web answer read between two equal gRPC answers (the daemon did not move meanwhile)."""
    for _ in range(tries):
        before = read_grpc()
        web = read_web()
        if read_grpc() == before:
            return before, web
    raise AssertionError("the daemon never held still for three reads")


# -- the same facts as the gRPC API -----------------------------------------------------------


def test_status_is_the_grpc_status_as_ctl_prints_it(served: Served) -> None:
    status, web = steady(served.client.status, lambda: get_json(served.url + "api/status"))
    metrics_url = web.pop("metrics_url")
    assert web == json.loads(json.dumps(status_to_json(status)))
    assert web["mlu"] is not None and web["te_runs"] >= 1
    assert metrics_url.startswith("http://127.0.0.1:") and metrics_url.endswith("/metrics")


def test_topology_and_reconfigurations_are_the_grpc_ones(served: Served) -> None:
    topology, web = steady(served.client.topology, lambda: get_json(served.url + "api/topology"))
    assert web["topology"] == topology["topology"] and web["circuits"] == topology["circuits"]
    assert sum(link["count"] for link in web["topology"]["links"]) == len(web["circuits"]) > 0
    links_only = get_json(served.url + "api/topology?circuits=0")
    assert "circuits" not in links_only and links_only["topology"] == web["topology"]
    history, web = steady(
        lambda: served.client.history(10), lambda: get_json(served.url + "api/reconfigurations")
    )
    assert web["recent"] == history
    assert web["in_progress"] is None or web["in_progress"]["id"] == history[0]["id"]


def test_fabric_devices_events_and_history_describe_the_running_daemon(served: Served) -> None:
    assert get_json(served.url + "api/fabric") == fabric_json(served.daemon.fabric)
    devices = get_json(served.url + "api/devices")["devices"]
    assert {d["name"] for d in devices} == {"b1", "b2", "b3", "b4", "ocs1", "ocs2"}
    assert {d["state"] for d in devices} == {"up"}
    assert all(d["last_seen"] is not None for d in devices)
    events = get_json(served.url + "api/events?limit=200")["events"]
    kinds = {e["kind"] for e in events}
    assert {"started", "te"} <= kinds
    assert [e["seq"] for e in events] == sorted((e["seq"] for e in events), reverse=True)
    samples = get_json(served.url + "api/history?limit=3")["samples"]
    assert len(samples) == 3 and samples[0]["time"] < samples[-1]["time"]
    assert any(s["mlu"] is not None and s["demand_gbps"] for s in samples)


# -- the page ---------------------------------------------------------------------------------


def test_the_page_and_its_script_and_style_are_served_from_the_package(served: Served) -> None:
    status, headers, body = get(served.url)
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b'src="app.js"' in body and b'href="style.css"' in body
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    for path, (name, kind) in STATIC.items():
        status, headers, body = get(served.url + path.lstrip("/"))
        assert status == 200 and headers["Content-Type"] == kind and body == static_file(name)


def test_nothing_on_the_page_comes_from_the_internet() -> None:
    for name, _kind in STATIC.values():
        text = static_file(name).decode()
        assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/|@import", text, re.IGNORECASE), name


# -- read-only, bounded, named errors ---------------------------------------------------------


def test_only_get_and_head_are_answered(served: Served) -> None:
    status, headers, body = get(served.url + "api/status", method="POST")
    assert status == 405 and headers["Allow"] == "GET, HEAD" and b"read-only" in body
    status, headers, body = get(served.url + "api/status", method="HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 0


@pytest.mark.parametrize(
    "query", ["limit=0", "limit=721", "limit=abc", "limit=-1", "limit=99999999", "limit=%C2%B2", "limit="]
)
def test_a_bad_limit_is_refused_naming_it(served: Served, query: str) -> None:
    status, _headers, body = get(served.url + "api/history?" + query)
    assert status == 400
    answer = json.loads(body)
    assert answer["error"] == "invalid_argument" and "limit" in answer["message"]


def test_an_unknown_path_is_not_found(served: Served) -> None:
    status, _headers, body = get(served.url + "api/nothing")
    assert status == 404 and "api/nothing" in json.loads(body)["message"]


class _FailingApi:
    """Only to see how the server maps a refusal and a bug (the daemon is not under test)."""

    def status(self) -> Any:
        raise ApiError(ApiErrorCode.UNAVAILABLE, "the controller is starting")

    def topology(self) -> Any:
        raise RuntimeError("boom")

    def fabric_summary(self) -> Any:
        return {"name": "x"}


def test_refusals_map_to_http_codes_and_a_bug_does_not_stop_the_server() -> None:
    page = start_web(_FailingApi(), ListenAddress("127.0.0.1", 0))  # type: ignore[arg-type]
    try:
        status, _headers, body = get(page.url + "api/status")
        assert status == 503 and json.loads(body)["message"] == "the controller is starting"
        status, _headers, body = get(page.url + "api/topology")
        assert status == 500 and "RuntimeError: boom" in json.loads(body)["message"]
        assert get_json(page.url + "api/fabric") == {"name": "x"}
    finally:
        page.stop()
    page.stop()  # again: nothing happens


class _SlowApi:
    """Answers status only once released: requests pile up in the server."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.waiting = threading.Semaphore(0)

    def status(self) -> Any:
        self.waiting.release()
        self.release.wait(20)
        raise ApiError(ApiErrorCode.UNAVAILABLE, "released")


def test_requests_beyond_the_bound_are_refused_at_once_and_the_rest_answered() -> None:
    """One client's requests being answered fill its share of the connections; the next is
    refused at once (nothing waiting for its request could give way)."""
    api = _SlowApi()
    page = start_web(api, ListenAddress("127.0.0.1", 0))  # type: ignore[arg-type]
    answers: list[int] = []
    pending = [threading.Thread(target=lambda: answers.append(get(page.url + "api/status")[0]))
               for _ in range(PER_CLIENT)]
    try:
        for thread in pending:
            thread.start()
        for _ in range(PER_CLIENT):
            assert api.waiting.acquire(timeout=10)
        status, _headers, body = get(page.url + "api/status")
        assert status == 503 and "busy" in json.loads(body)["message"]
    finally:
        api.release.set()
        for thread in pending:
            thread.join(timeout=10)
        page.stop()
    assert answers == [503] * PER_CLIENT  # each answered, with the API's refusal


def test_a_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(WebError, match=rf"cannot serve the status page on 127\.0\.0\.1:{port}"):
            start_web(_FailingApi(), ListenAddress("127.0.0.1", port))  # type: ignore[arg-type]


# -- listen.web -------------------------------------------------------------------------------

MINIMAL = {"fabric": "f.yaml", "devices": "d.yaml", "store": "j.db"}


def test_listen_web_is_off_unless_configured_and_on_in_the_demo_config() -> None:
    assert controller_config_from_dict(MINIMAL, "c.yaml", Path("/base")).listen.web is None
    config = controller_config_from_dict({**MINIMAL, "listen": {"web": "[::1]:8080"}}, "c.yaml", Path("/"))
    assert config.listen.web == ListenAddress("::1", 8080)
    demo = load_controller_config(CONFIGS / "controller-demo.yaml")
    assert demo.listen.web == ListenAddress("127.0.0.1", 0)


@pytest.mark.parametrize(
    ("value", "problem"),
    [("8080", "expected host:port"), ("localhost:http", "the port must be a number"), (8080, "string")],
)
def test_a_bad_listen_web_names_the_key(value: object, problem: str) -> None:
    with pytest.raises(ConfigError, match=rf"c\.yaml: listen\.web: .*{problem}"):
        controller_config_from_dict({**MINIMAL, "listen": {"web": value}}, "c.yaml", Path("/base"))


def test_the_page_serves_ipv6_loopback() -> None:
    if not socket.has_ipv6:
        pytest.skip("this Python has no IPv6 support")
    try:
        page = start_web(_FailingApi(), ListenAddress("::1", 0))  # type: ignore[arg-type]
    except WebError as exc:
        pytest.skip(f"no IPv6 loopback on this machine: {exc}")
    try:
        assert page.url.startswith("http://[::1]:")
        assert get_json(page.url + "api/fabric") == {"name": "x"}
    finally:
        page.stop()


def test_a_page_beyond_loopback_is_served_with_a_security_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    daemon = SimpleNamespace(
        config=SimpleNamespace(listen=SimpleNamespace(web=ListenAddress("0.0.0.0", 0))), recorder=Recorder()
    )
    with caplog.at_level(logging.WARNING):
        page = start_status_page(daemon, None)  # type: ignore[arg-type]
    try:
        assert "SECURITY: the status page listens on 0.0.0.0 without authentication" in caplog.text
        assert page.address.host == "0.0.0.0" and page.address.port > 0
        logging.getLogger("controller.some_part").warning("a warning the page shows")
        assert daemon.recorder.events(1)[0]["details"]["message"] == "a warning the page shows"
    finally:
        page.stop()
    logging.getLogger("controller.some_part").warning("after the page stopped")
    assert daemon.recorder.events(1)[0]["details"]["message"] == "a warning the page shows"
