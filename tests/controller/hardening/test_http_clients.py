"""Slow and idle clients against the status page and the metrics endpoint (issue 32 items 5
and 6): real servers on 127.0.0.1, clients bounded in count and time.

Before: 16 connections dripping a header byte every few seconds made every GET of the page
answer 503 for as long as they dripped (16 slots, a 10 s timeout per read and no deadline for
a request); prometheus_client's server kept idle metrics connections forever, a thread each."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from controller.metrics import ControllerMetrics
from controller.northbound.guarded_http import MAX_CONNECTIONS, PER_CLIENT, REQUEST_DEADLINE_S
from controller.northbound.listen import ListenAddress
from controller.northbound.metrics_http import start_metrics_http
from controller.ui.web import start_web


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            reply.read()
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@contextmanager
def _slow_clients(port: int, count: int, drip_s: float | None) -> Iterator[list[socket.socket]]:
    """``count`` connections that start a request and then drip a header byte every ``drip_s``
    (or stay idle when None); all closed on exit."""
    socks = []
    stop = threading.Event()
    try:
        for _ in range(count):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            socks.append(s)

        def drip() -> None:
            while drip_s is not None and not stop.wait(drip_s):
                for s in socks:
                    with contextlib.suppress(OSError):
                        s.sendall(b"a")

        dripper = threading.Thread(target=drip, daemon=True)
        dripper.start()
        yield socks
    finally:
        stop.set()
        for s in socks:
            s.close()


def _closed_by_server(sock: socket.socket, within_s: float) -> bool:
    sock.settimeout(within_s)
    try:
        while True:
            if not sock.recv(4096):
                return True
    except TimeoutError:
        return False
    except OSError:
        return True


def test_page_answers_while_slow_clients_drip_and_they_are_cut_at_the_deadline() -> None:
    page = start_web(object(), ListenAddress("127.0.0.1", 0))  # type: ignore[arg-type]  # "/" needs no API
    try:
        with _slow_clients(page.address.port, MAX_CONNECTIONS + 4, drip_s=0.5) as socks:
            time.sleep(0.3)
            answers = []
            for _ in range(5):
                answers.append(_status(page.url))
                time.sleep(0.2)
            assert answers == [200] * 5  # before: 503 while they dripped
            # a dripping connection is closed once its request is late, though it keeps sending
            assert _closed_by_server(socks[-1], REQUEST_DEADLINE_S + 3.0)
            assert _status(page.url) == 200
    finally:
        page.stop()


def test_metrics_idle_connections_are_bounded_and_closed() -> None:
    server = start_metrics_http(ControllerMetrics().registry, ListenAddress("127.0.0.1", 0))
    try:
        threads_before = threading.active_count()
        with _slow_clients(server.address.port, 60, drip_s=None) as socks:
            time.sleep(0.5)
            # before: one thread per idle connection (60 more); now at most one client's share
            assert threading.active_count() - threads_before <= PER_CLIENT + 1
            assert server.guard.open <= PER_CLIENT
            start = time.monotonic()
            with urllib.request.urlopen(server.url, timeout=5) as reply:
                assert b"heliostat_mlu_ratio" in reply.read()
            assert time.monotonic() - start < 1.0
            assert _closed_by_server(socks[-1], REQUEST_DEADLINE_S + 3.0)
        deadline = time.monotonic() + 5
        while server.guard.open and time.monotonic() < deadline:
            time.sleep(0.1)
        assert server.guard.open == 0
    finally:
        server.stop()
