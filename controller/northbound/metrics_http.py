"""The Prometheus metrics endpoint: the daemon's registry over HTTP (``GET /metrics``).

prometheus_client's own server (``start_http_server``: a threading WSGI server that picks the
address family of the host, IPv4 or IPv6, and serves TLS, with client certificates if asked),
not one of ours. This module only binds it to the configured address, reports the bound port
and stops it.
"""

from __future__ import annotations

import logging
import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server

from controller.northbound.errors import NorthboundError
from controller.northbound.listen import ListenAddress
from southbound.tls import ServerTlsConfig

log = logging.getLogger(__name__)


class MetricsHttpServer:
    """A running metrics endpoint; ``address`` has the bound port (also when 0 was asked)."""

    def __init__(self, httpd: WSGIServer, thread: threading.Thread, host: str, tls: bool) -> None:
        self._httpd = httpd
        self._thread = thread
        self.address = ListenAddress(host, int(httpd.server_port))
        self.scheme = "https" if tls else "http"
        self._stopped = False
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.address}/metrics"

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


def start_metrics_http(
    registry: CollectorRegistry, address: ListenAddress, tls: ServerTlsConfig | None = None
) -> MetricsHttpServer:
    """Serve ``registry`` at ``address`` (port 0 picks a free port) in a background thread;
    over HTTPS with ``tls`` (and only to scrapers with a certificate ``tls.client_ca`` signed,
    when it is set)."""
    options: dict[str, object] = {}
    if tls is not None:
        options = {"certfile": str(tls.cert), "keyfile": str(tls.key)}
        if tls.client_ca is not None:
            options |= {"client_cafile": str(tls.client_ca), "client_auth_required": True}
    try:
        httpd, thread = start_http_server(address.port, address.host, registry, **options)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        why = getattr(exc, "strerror", None) or exc
        raise NorthboundError(f"cannot serve metrics on {address}: {why}") from exc
    server = MetricsHttpServer(httpd, thread, address.host, tls is not None)
    log.info("metrics endpoint on %s", server.url)
    return server
