"""Fuzzing the HTTP endpoints (the status page, its JSON API, the metrics endpoint) of a real
daemon on 127.0.0.1 with raw requests sent whole, in pieces or abandoned, while a bounded
crowd of idle and dripping clients holds connections open (issue 32): every answer is a
well-formed HTTP answer other than a server error (501 for an unknown
method, 503 "busy" and 505 for an HTTP version it lacks allowed), and a plain GET is
answered at once afterwards. Bounded: ``HELIOSTAT_FUZZ_EXAMPLES`` requests, 16 slow clients
per server, each request's wait within the servers' request deadline."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.config import load_controller_config
from controller.daemon import Daemon
from controller.metrics import ControllerMetrics
from controller.northbound.daemon_api import DaemonApi
from controller.northbound.guarded_http import REQUEST_DEADLINE_S
from controller.northbound.listen import ListenAddress
from controller.northbound.metrics_http import start_metrics_http
from controller.ui.web import STATIC, Endpoints, start_web
from tests.fuzz.test_parsers import FUZZ
from tests.support.daemon_support import CONFIGS, controller_config, running_fabric

SLOW_CLIENTS = 16
PATHS = [*STATIC, *Endpoints(object()).routes, "/metrics", "/favicon.ico", "/api/history?limit=5",  # type: ignore[arg-type]
         "/api/events?limit=-1", "/api/history?limit=99999999", "/api/topology?circuits=0", "/../etc/passwd",
         "/api/device?name=ocs1", "/api/device?name=%00", "/api/link?a=b1&b=b2", "/api/link?a=b1&b=b1"]


@pytest.fixture(scope="module")
def ports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, int]]:
    tmp = tmp_path_factory.mktemp("http-fuzz")
    fabric_file = CONFIGS / "fabric-4.yaml"
    with running_fabric(fabric_file, tmp) as fabric:
        daemon = Daemon(load_controller_config(controller_config(tmp, fabric_file, fabric.devices_file)))
        daemon.start()
        metrics = start_metrics_http(ControllerMetrics().registry, ListenAddress("127.0.0.1", 0))
        page = start_web(DaemonApi(daemon), ListenAddress("127.0.0.1", 0), metrics.url)
        try:
            yield {"page": page.address.port, "metrics": metrics.address.port}
        finally:
            page.stop()
            metrics.stop()
            daemon.close()


@contextlib.contextmanager
def slow_crowd(ports: dict[str, int]) -> Iterator[None]:
    """Per server, half the clients idle after a partial request, half drip a byte a second."""
    stop = threading.Event()
    socks: list[socket.socket] = []
    for port in ports.values():
        for _ in range(SLOW_CLIENTS):
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Wait: ")
            socks.append(s)
    dripping = socks[::2]

    def drip() -> None:
        while not stop.wait(1.0):
            for s in dripping:
                with contextlib.suppress(OSError):
                    s.sendall(b"z")

    thread = threading.Thread(target=drip, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)
        for s in socks:
            s.close()


def _answer(port: int, data: bytes, pieces: int, abandon: bool) -> bytes | None:
    with socket.create_connection(("127.0.0.1", port), timeout=REQUEST_DEADLINE_S + 2) as s:
        step = max(1, len(data) // pieces)
        for i in range(0, len(data), step):
            with contextlib.suppress(OSError):  # the server may answer (and close) before the end
                s.sendall(data[i:i + step])
            if pieces > 1:
                time.sleep(0.01)
        if abandon:
            return None
        reply = b""
        with contextlib.suppress(ConnectionResetError, TimeoutError):
            while chunk := s.recv(65536):
                reply += chunk
        return reply


TEXT = st.text(st.characters(codec="latin-1", exclude_characters="\r\n"), max_size=80)


def test_http_endpoints_under_fuzz_and_slow_clients(ports: dict[str, int], tmp_path: Path) -> None:
    @FUZZ
    @given(
        server=st.sampled_from(["page", "metrics"]),
        method=st.sampled_from(["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "TRACE"]) | TEXT,
        path=st.sampled_from(PATHS) | TEXT.map(lambda t: "/" + t),
        version=st.sampled_from(["HTTP/1.0", "HTTP/1.1", "HTTP/2.0", "HTTP/0.9", ""]) | TEXT,
        headers=st.lists(st.tuples(TEXT, TEXT), max_size=6),
        garbage=st.none() | st.binary(max_size=300),
        pieces=st.integers(1, 4),
        abandon=st.booleans(),
    )
    def run(server, method, path, version, headers, garbage, pieces, abandon) -> None:
        if garbage is not None:
            data = garbage + b"\r\n\r\n"
        else:
            lines = [f"{method} {path} {version}".strip(), *(f"{k}: {v}" for k, v in headers)]
            data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        reply = _answer(ports[server], data, pieces, abandon)
        if reply is None or not reply:  # abandoned, or closed without an answer (HTTP/0.9 etc.)
            return
        head = reply.split(b"\r\n", 1)[0]
        if not head.startswith(b"HTTP/"):
            return  # an HTTP/0.9 answer: the body alone (http.server's, to a request it cannot place)
        status = int(head.split()[1])
        assert status < 500 or status in (501, 503, 505), reply[:300]  # no such method, busy, HTTP/2

    with slow_crowd(ports):
        run()
        for url in (f"http://127.0.0.1:{ports['page']}/api/status", f"http://127.0.0.1:{ports['metrics']}/metrics"):
            start = time.monotonic()
            with urllib.request.urlopen(url, timeout=5) as reply:
                assert reply.status == 200 and reply.read()
            assert time.monotonic() - start < 2.0
