"""The Prometheus metrics endpoint: the daemon's registry over HTTP (``GET /metrics``).

prometheus_client's WSGI app (``make_wsgi_app``: the exposition formats, compression, the
``name[]`` filter) under a threading WSGI server of ours instead of its ``start_http_server``,
which kept idle connections forever, one thread each (issue 32: 307 idle connections, 327
threads), and shook TLS hands in its accept loop. Here connections are bounded and must
deliver their request within a deadline (:mod:`controller.northbound.guarded_http`); the
address family follows the host (IPv4 or IPv6); TLS, with client certificates when
``client_ca`` is set. A plaintext endpoint beyond loopback is warned about, as the API is.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from prometheus_client import CollectorRegistry, make_wsgi_app

from controller.northbound.errors import NorthboundError
from controller.northbound.guarded_http import ConnectionGuard, GuardedHandler, GuardedServer
from controller.northbound.listen import ListenAddress
from southbound.tls import ServerTlsConfig, warn_if_exposed

log = logging.getLogger(__name__)

#: How often the server loop looks for connections past their deadline (and for stop()).
_POLL_INTERVAL_S = 0.25


class _Handler(GuardedHandler, WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        log.debug("metrics %s: " + format, self.client_address[0], *args)


class _Server(GuardedServer, ThreadingMixIn, WSGIServer):
    daemon_threads = True
    busy_message = b"busy: every connection is answering a scrape; try again\n"


class _Server6(_Server):
    address_family = socket.AF_INET6


class MetricsHttpServer:
    """A running metrics endpoint; ``address`` has the bound port (also when 0 was asked)."""

    def __init__(self, httpd: _Server, host: str, tls: bool) -> None:
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(_POLL_INTERVAL_S,), name="metrics-http", daemon=True
        )
        self._thread.start()
        self.address = ListenAddress(host, int(httpd.server_port))
        self.scheme = "https" if tls else "http"
        self._stopped = False
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.address}/metrics"

    @property
    def guard(self) -> ConnectionGuard:
        return self._httpd.guard

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


def _ssl_context(tls: ServerTlsConfig) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(tls.cert), str(tls.key))
    if tls.client_ca is not None:
        context.load_verify_locations(cafile=str(tls.client_ca))
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def start_metrics_http(
    registry: CollectorRegistry,
    address: ListenAddress,
    tls: ServerTlsConfig | None = None,
    guard: ConnectionGuard | None = None,
) -> MetricsHttpServer:
    """Serve ``registry`` at ``address`` (port 0 picks a free port) in a background thread;
    over HTTPS with ``tls`` (and only to scrapers with a certificate ``tls.client_ca`` signed,
    when it is set). ``guard``: the connection bounds (the defaults of guarded_http)."""
    warn_if_exposed("the metrics endpoint (the fabric's state, read-only)", address.host, tls)
    try:
        context = _ssl_context(tls) if tls is not None else None
        family = socket.getaddrinfo(address.host, address.port, type=socket.SOCK_STREAM,
                                    flags=socket.AI_PASSIVE)[0][0]
        server_class = _Server6 if family == socket.AF_INET6 else _Server
        httpd = server_class((address.host, address.port), _Handler)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        why = getattr(exc, "strerror", None) or exc
        raise NorthboundError(f"cannot serve metrics on {address}: {why}") from exc
    httpd.guard = guard or ConnectionGuard()
    httpd.ssl_context = context
    httpd.set_app(make_wsgi_app(registry))
    server = MetricsHttpServer(httpd, address.host, tls is not None)
    log.info("metrics endpoint on %s", server.url)
    return server
