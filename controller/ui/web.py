"""The status page and its JSON endpoints, served read-only at ``listen.web``.

Every endpoint calls :class:`~controller.northbound.api.ControllerApi` methods, the ones the gRPC
northbound server calls for the same facts (``/api/status`` is ``GetStatus`` as
``ctl status --format json`` prints it, ``/api/topology`` is ``GetTopology``,
``/api/reconfigurations`` lists what ``ListReconfigurations`` does): the page is a thin view.
The page itself (``static/``: one HTML file, two scripts and a style sheet) ships in the package
and is served with a content security policy that forbids anything from elsewhere.

The standard library's threading HTTP server in a background thread: GET and HEAD only,
bounded answers (``limit`` is checked against the API's bounds). Slow and idle clients are
held off by :mod:`controller.northbound.guarded_http`: a request arrives whole within a
deadline, a client holds at most a few connections, and a new client takes the place of a
connection still waiting for its request.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from controller.config import ListenAddress
from controller.northbound.api import ApiError, ApiErrorCode, ControllerApi
from controller.northbound.convert import dump_json, status_to_json
from controller.northbound.guarded_http import MAX_CONNECTIONS, ConnectionGuard, GuardedHandler, GuardedServer
from controller.ui.web_jobs import JOBS_PATH, JobWrites, list_jobs
from optimizer.errors import HeliostatError

log = logging.getLogger(__name__)

_POLL_INTERVAL_S = 0.05  # how quickly stop() is noticed (and connections past their deadline)
#: Connections served at once (a thread each) in all and per client; see guarded_http.
MAX_REQUESTS = MAX_CONNECTIONS

STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/fabric.js": ("fabric.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
}
#: Nothing but this server: no CDN, no inline script, no frame.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
HTTP_STATUS_OF_API_ERROR = {
    ApiErrorCode.INVALID_ARGUMENT: HTTPStatus.BAD_REQUEST,
    ApiErrorCode.NOT_FOUND: HTTPStatus.NOT_FOUND,
    ApiErrorCode.FAILED_PRECONDITION: HTTPStatus.CONFLICT,
    ApiErrorCode.UNAVAILABLE: HTTPStatus.SERVICE_UNAVAILABLE,
}
DEFAULT_LIMITS = {"history": 360, "events": 50, "reconfigurations": 10}


class WebError(HeliostatError):
    """The status page cannot be served (the address cannot be bound)."""


def static_file(name: str) -> bytes:
    """A file of the page, as shipped in the package (``controller/ui/static/``)."""
    return resources.files("controller.ui").joinpath("static", name).read_bytes()


class Endpoints:
    """The JSON documents by path; each is one or two ControllerApi calls."""

    def __init__(self, api: ControllerApi, metrics_url: str | None = None) -> None:
        self.api = api
        self.metrics_url = metrics_url
        self.routes: dict[str, Callable[[dict[str, list[str]]], Any]] = {
            "/api": self.index,
            "/api/status": self.status,
            "/api/topology": self.topology,
            "/api/matrices": lambda q: self.api.matrices(),
            "/api/history": lambda q: {"samples": self.api.mlu_history(_limit(q, "history"))},
            "/api/reconfigurations": self.reconfigurations,
            "/api/devices": lambda q: {"devices": self.api.devices()},
            "/api/events": lambda q: {"events": self.api.events(_limit(q, "events"))},
            "/api/fabric": lambda q: self.api.fabric_summary(),
            "/api/fabric-view": self.fabric_view,
            "/api/link": lambda q: self.api.link(_param(q, "a"), _param(q, "b")),
            "/api/device": lambda q: self.api.device(_param(q, "name")),
            JOBS_PATH: lambda q: list_jobs(self.api, q),
        }

    def index(self, query: dict[str, list[str]]) -> dict[str, Any]:
        return {"endpoints": sorted(self.routes), "metrics": self.metrics_url}

    def status(self, query: dict[str, list[str]]) -> dict[str, Any]:
        data = status_to_json(self.api.status())
        data["metrics_url"] = self.metrics_url
        return data

    def topology(self, query: dict[str, list[str]]) -> dict[str, Any]:
        """``?circuits=0`` leaves the circuits out (the page draws the links; fabric-64's mesh
        is 16,384 circuits, 1.5 MB of JSON every few seconds)."""
        data = self.api.topology()
        if query.get("circuits", ["1"])[-1] in ("0", "no", "false"):
            data = {k: v for k, v in data.items() if k != "circuits"}
        return data

    def fabric_view(self, query: dict[str, list[str]]) -> dict[str, Any]:
        """``?by_ocs=0`` leaves out which OCS carries each pair's circuits (fabric-64: 16,256
        entries, most of the view's 1.3 MB; the page then draws one line per pair)."""
        data = self.api.fabric_view()
        if query.get("by_ocs", ["1"])[-1] in ("0", "no", "false"):
            links = [{k: v for k, v in link.items() if k != "by_ocs"} for link in data["links"]]
            data = {**data, "links": links}
        return data

    def reconfigurations(self, query: dict[str, list[str]]) -> dict[str, Any]:
        return {
            "in_progress": self.api.reconfiguration_progress(),
            "recent": self.api.history(_limit(query, "reconfigurations")),
        }


def _param(query: dict[str, list[str]], name: str) -> str:
    """``?name=value`` (the last one given); 400 naming it when missing or empty."""
    values = query.get(name)
    if not values or not values[-1]:
        raise ApiError(ApiErrorCode.INVALID_ARGUMENT, f"{name}: required (?{name}=...)")
    return values[-1]


def _limit(query: dict[str, list[str]], what: str) -> int:
    """``?limit=N`` (the API checks the range), or the endpoint's default."""
    values = query.get("limit")
    if not values:
        return DEFAULT_LIMITS[what]
    text = values[-1]
    if not (text.isascii() and text.isdigit()) or len(text) > 6:
        raise ApiError(ApiErrorCode.INVALID_ARGUMENT, f"limit must be a whole number, got {text[:20]!r}")
    return int(text)


class _Handler(JobWrites, GuardedHandler, BaseHTTPRequestHandler):
    server: _Server
    server_version = "heliostat"
    sys_version = ""

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def do_GET(self) -> None:
        self._answer(head=False)

    def _refuse(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, _error_body("read-only: only GET and HEAD"),
                   "application/json", extra={"Allow": "GET, HEAD"})

    do_PUT = do_PATCH = do_OPTIONS = _refuse  # POST and DELETE: /api/jobs with listen.web_jobs (web_jobs.py)

    def _answer(self, head: bool) -> None:
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        if path in STATIC:
            name, kind = STATIC[path]
            self._send(HTTPStatus.OK, static_file(name), kind, head)
            return
        route = self.server.endpoints.routes.get(path)
        if route is None:
            self._send(HTTPStatus.NOT_FOUND, _error_body(f"no such page: {path}"), "application/json", head)
            return
        try:
            body = dump_json(route(parse_qs(url.query, keep_blank_values=True)), path).encode()
            status = HTTPStatus.OK
        except ApiError as exc:
            status, body = HTTP_STATUS_OF_API_ERROR[exc.code], _error_body(exc.message, exc.code.value)
        except Exception as exc:  # a bug in one answer must not stop the server
            log.exception("web %s failed", path)
            status, body = HTTPStatus.INTERNAL_SERVER_ERROR, _error_body(f"{type(exc).__name__}: {exc}")
        self._send(status, body, "application/json", head)

    def _send(
        self,
        status: HTTPStatus,
        body: bytes,
        kind: str,
        head: bool = False,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in {**SECURITY_HEADERS, **(extra or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("web %s: " + format, self.client_address[0], *args)


def _error_body(message: str, code: str = "error") -> bytes:
    return json.dumps({"error": code, "message": message}).encode()


class _Server(GuardedServer, ThreadingHTTPServer):
    daemon_threads = True
    endpoints: Endpoints
    jobs_writes = False  # listen.web_jobs: POST/DELETE /api/jobs (web_jobs.py)
    busy_message = _error_body("busy: every connection is answering a request; try again")

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.guard = ConnectionGuard()


class _Server6(_Server):
    address_family = socket.AF_INET6


class WebServer:
    """A running status page; ``address`` has the bound port (also when 0 was asked)."""

    def __init__(self, httpd: _Server, host: str) -> None:
        self._httpd = httpd
        self.address = ListenAddress(host, int(httpd.server_address[1]))
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(_POLL_INTERVAL_S,), name="web", daemon=True
        )
        self._thread.start()
        self._lock = threading.Lock()
        self._stopped = False
        self._followed: list[tuple[logging.Logger, logging.Handler]] = []

    @property
    def url(self) -> str:
        return f"http://{self.address}/"

    def follow_logs(self, handler: logging.Handler, logger: str = "controller") -> None:
        """Attach ``handler`` (the recorder's: warnings become events) to ``logger`` until stop()."""
        target = logging.getLogger(logger)
        target.addHandler(handler)
        self._followed.append((target, handler))

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop serving and close the socket; calling it again does nothing."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        for target, handler in self._followed:
            target.removeHandler(handler)
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout_s)
        log.debug("status page %s stopped", self.address)


def start_web(
    api: ControllerApi, address: ListenAddress, metrics_url: str | None = None, jobs_writes: bool = False
) -> WebServer:
    """Serve the status page for ``api`` at ``address`` (port 0 picks a free port) in a
    background thread. Raises WebError if the address cannot be bound."""
    try:
        resolved = socket.getaddrinfo(address.host, None, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family = resolved[0][0]
        server_class = _Server6 if family == socket.AF_INET6 else _Server
        httpd = server_class((address.host, address.port), _Handler)
    except OSError as exc:
        raise WebError(f"cannot serve the status page on {address}: {exc.strerror or exc}") from exc
    httpd.endpoints = Endpoints(api, metrics_url)
    httpd.jobs_writes = jobs_writes
    server = WebServer(httpd, address.host)
    log.info("status page on %s", server.url)
    return server
