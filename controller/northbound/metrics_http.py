"""The Prometheus metrics endpoint: the daemon's registry over HTTP (``GET /metrics``)."""

from __future__ import annotations

import logging
import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server

from controller.config import ListenAddress
from controller.northbound.errors import NorthboundError

log = logging.getLogger(__name__)


class MetricsHttpServer:
    """A running metrics endpoint; ``address`` has the bound port (also when 0 was asked)."""

    def __init__(self, httpd: WSGIServer, thread: threading.Thread, host: str) -> None:
        self._httpd = httpd
        self._thread = thread
        self.address = ListenAddress(host, int(httpd.server_port))
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
        httpd, thread = start_http_server(address.port, address.host, registry=registry)
    except OSError as exc:
        raise NorthboundError(f"cannot serve metrics on {address}: {exc.strerror or exc}") from exc
    server = MetricsHttpServer(httpd, thread, address.host)
    log.info("metrics endpoint on %s", server.url)
    return server
