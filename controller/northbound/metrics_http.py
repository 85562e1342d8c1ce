"""The Prometheus metrics endpoint: the daemon's registry over HTTP (``GET /metrics``).

prometheus_client's WSGI app on a threading ``wsgiref`` server of our own, so that it binds
exactly the configured address (IPv4 or IPv6) and stops within a tenth of a second.
"""

from __future__ import annotations

import logging
import socket
import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from controller.config import ListenAddress
from controller.northbound.errors import NorthboundError

log = logging.getLogger(__name__)

_POLL_INTERVAL_S = 0.05  # how quickly stop() is noticed


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _ThreadingServer6(_ThreadingServer):
    address_family = socket.AF_INET6


def _server_class(host: str) -> type[_ThreadingServer]:
    """The server class for the address family ``host`` resolves to."""
    family = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
    return _ThreadingServer6 if family == socket.AF_INET6 else _ThreadingServer


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        log.debug("metrics %s: " + format, self.client_address[0], *args)


class MetricsHttpServer:
    """A running metrics endpoint; ``address`` has the bound port (also when 0 was asked)."""

    def __init__(self, httpd: WSGIServer, host: str) -> None:
        self._httpd = httpd
        self.address = ListenAddress(host, int(httpd.server_port))
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(_POLL_INTERVAL_S,), name="metrics-http", daemon=True
        )
        self._thread.start()
        self._stopped = False
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://{self.address}/metrics"

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop serving and close the socket; calling it again does nothing."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout_s)
        log.debug("metrics endpoint %s stopped", self.address)


def start_metrics_http(registry: CollectorRegistry, address: ListenAddress) -> MetricsHttpServer:
    """Serve ``registry`` at ``address`` (port 0 picks a free port) in a background thread."""
    try:
        httpd = make_server(
            address.host,
            address.port,
            make_wsgi_app(registry),
            _server_class(address.host),
            handler_class=_QuietHandler,
        )
    except OSError as exc:
        raise NorthboundError(f"cannot serve metrics on {address}: {exc.strerror or exc}") from exc
    server = MetricsHttpServer(httpd, address.host)
    log.info("metrics endpoint on %s", server.url)
    return server
