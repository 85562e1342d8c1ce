"""A control endpoint on a running emulated fabric, to rehearse failures against a daemon as
Mininet's CLI lets one poke a network: change the demand, cut and restore a fibre, power an
OCS off and on, stop and restart a device agent, take a whole block down.

HTTP with JSON bodies, on loopback only (a lab tool: there is no authentication), one verb a
path: ``GET /status``; ``POST /demand`` ``{"kind": "hotspot", "seed": 2, "load": 0.7}`` or
``{"matrix": {"b1": {"b2": 40.0}}}``; ``POST /fail-link`` and ``/restore-link`` ``{"device":
"b1", "port": 3}``; ``POST /fail-ocs`` and ``/restore-ocs`` ``{"name": "ocs1"}``; ``POST
/kill-agent`` and ``/restart-agent`` ``{"device": "b2"}``; ``POST /fail-block`` and
``/restore-block`` ``{"block": "b3"}`` (every link of the block). Answers are JSON: what was
done, or ``{"error": ...}`` with 400 (a bad request: the fabric is unchanged), 404 (no such
verb) or 413 (a body over 64 KB). ``heliostat emuctl`` is the client.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import threading
from collections.abc import Callable, Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from emulation.fabric import EmulatedFabric, FabricError
from optimizer import schema
from optimizer.errors import ConfigError
from optimizer.traffic import generate_matrix, matrix_from_json

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 << 10
REQUEST_TIMEOUT_S = 5.0
SOURCE = "<control request>"


class FabricControl:
    """The verbs, on one fabric; remembers what it failed so that status can say it."""

    def __init__(self, fabric: EmulatedFabric) -> None:
        self.fabric = fabric
        self.failed_links: set[tuple[str, int]] = set()
        self.failed_ocs: set[str] = set()
        self.killed_agents: set[str] = set()
        self._lock = threading.Lock()
        self.verbs: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
            "demand": self.demand,
            "fail-link": lambda body: self.link(body, False),
            "restore-link": lambda body: self.link(body, True),
            "fail-ocs": lambda body: self.ocs(body, False),
            "restore-ocs": lambda body: self.ocs(body, True),
            "kill-agent": lambda body: self.agent(body, False),
            "restart-agent": lambda body: self.agent(body, True),
            "fail-block": lambda body: self.block(body, False),
            "restore-block": lambda body: self.block(body, True),
        }

    def call(self, verb: str, body: Mapping[str, Any]) -> dict[str, Any]:
        with self._lock:
            return self.verbs[verb](body)

    def status(self) -> dict[str, Any]:
        s = self.fabric.stats()
        with self._lock:
            return {
                "fabric": self.fabric.fabric.name,
                "time_s": round(s.time_s, 3),
                "mlu": round(s.mlu, 6),
                "delivered_bytes": s.delivered_bytes,
                "dropped_bytes": s.dropped_bytes,
                "blackholed_bytes": s.blackholed_bytes,
                "failed_links": [{"device": d, "port": p} for d, p in sorted(self.failed_links)],
                "failed_ocs": sorted(self.failed_ocs),
                "killed_agents": sorted(self.killed_agents),
                "devices_file": str(self.fabric.devices_file),
            }

    def demand(self, body: Mapping[str, Any]) -> dict[str, Any]:
        schema.check_keys(body, SOURCE, "", ("kind", "seed", "load", "matrix"))
        if "matrix" in body:
            matrix = matrix_from_json(body["matrix"], self.fabric.fabric, SOURCE)
        else:
            kind = schema.string(body.get("kind", "gravity"), SOURCE, "kind")
            seed = schema.integer(body.get("seed", 1), SOURCE, "seed", minimum=0)
            load = schema.number(body.get("load", 0.5), SOURCE, "load", minimum=0.0)
            try:
                matrix = generate_matrix(self.fabric.fabric, kind, seed=seed, load=load)
            except ValueError as exc:  # an unknown kind
                raise ConfigError(SOURCE, "kind", str(exc)) from exc
        self.fabric.set_demand(matrix)
        log.info("control: demand set, %.0f Gbit/s", matrix.total())
        return {"demand_gbps": round(matrix.total(), 3)}

    def link(self, body: Mapping[str, Any], up: bool) -> dict[str, Any]:
        schema.check_keys(body, SOURCE, "", ("device", "port"), ("device", "port"))
        device = schema.name(body["device"], SOURCE, "device")
        port = schema.integer(body["port"], SOURCE, "port", minimum=0)
        (self.fabric.restore_link if up else self.fabric.fail_link)(device, port)
        (self.failed_links.discard if up else self.failed_links.add)((device, port))
        log.info("control: link %s port %d %s", device, port, "restored" if up else "cut")
        return {"device": device, "port": port, "up": up}

    def ocs(self, body: Mapping[str, Any], up: bool) -> dict[str, Any]:
        schema.check_keys(body, SOURCE, "", ("name",), ("name",))
        name = schema.name(body["name"], SOURCE, "name")
        if up:
            self.fabric.restore_ocs(name)
            self.failed_ocs.discard(name)
            return {"ocs": name, "powered": True}
        lost = self.fabric.fail_ocs(name)
        self.failed_ocs.add(name)
        log.info("control: OCS %s powered off, %d circuits lost", name, lost)
        return {"ocs": name, "powered": False, "circuits_lost": lost}

    def agent(self, body: Mapping[str, Any], up: bool) -> dict[str, Any]:
        schema.check_keys(body, SOURCE, "", ("device",), ("device",))
        device = schema.name(body["device"], SOURCE, "device")
        if up:
            address = self.fabric.restart_agent(device)
            self.killed_agents.discard(device)
            return {"device": device, "serving": True, "address": address}
        self.fabric.kill_agent(device)
        self.killed_agents.add(device)
        return {"device": device, "serving": False}

    def block(self, body: Mapping[str, Any], up: bool) -> dict[str, Any]:
        schema.check_keys(body, SOURCE, "", ("block",), ("block",))
        block = schema.name(body["block"], SOURCE, "block")
        if not self.fabric.fabric.has_block(block):
            raise FabricError(f"no block {block!r} in fabric {self.fabric.fabric.name!r}")
        ports = self.fabric.fabric.blocks[self.fabric.fabric.block_index(block)].uplinks
        for port in range(ports):
            (self.fabric.restore_link if up else self.fabric.fail_link)(block, port)
            (self.failed_links.discard if up else self.failed_links.add)((block, port))
        log.info("control: block %s %s (%d links)", block, "restored" if up else "down", ports)
        return {"block": block, "links": ports, "up": up}


class ControlServer:
    """Serves a :class:`FabricControl` on ``host:port`` (loopback only; port 0 picks one)."""

    def __init__(self, control: FabricControl, host: str = "127.0.0.1", port: int = 0) -> None:
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost"
        if not loopback:
            raise ConfigError("<command line>", "--control",
                              f"the control endpoint has no authentication: loopback only, got {host}")
        handler = _handler(control)
        self.server = ThreadingHTTPServer((host, port), handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(
            target=self.server.serve_forever, name="emulator-control", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> str:
        self._thread.start()
        return self.url

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)


def _handler(control: FabricControl) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = REQUEST_TIMEOUT_S  # a client that stops sending is dropped
        server_version = "heliostat-emulator"

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/status":
                self._reply(HTTPStatus.OK, control.status())
            else:
                missing = f"no such resource {self.path[:60]!r}; GET /status"
                self._reply(HTTPStatus.NOT_FOUND, {"error": missing})

        def do_POST(self) -> None:
            verb = self.path.strip("/")
            if verb not in control.verbs:
                known = ", ".join(sorted(control.verbs))
                self._reply(HTTPStatus.NOT_FOUND, {"error": f"no verb {verb[:60]!r}; POST one of {known}"})
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 <= length <= MAX_BODY_BYTES:
                self._reply(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                            {"error": f"a body of 0 to {MAX_BODY_BYTES} bytes, with its Content-Length"})
                return
            try:
                body = schema.mapping(json.loads(self.rfile.read(length) or b"{}"), SOURCE, "")
                self._reply(HTTPStatus.OK, control.call(verb, body))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                self._reply(HTTPStatus.BAD_REQUEST, {"error": f"the body is not JSON: {exc}"})
            except (ConfigError, FabricError, KeyError, ValueError) as exc:
                self._reply(HTTPStatus.BAD_REQUEST, {"error": str(exc)[:500]})

        def _reply(self, status: HTTPStatus, data: dict[str, Any]) -> None:
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("control %s: " + format, self.client_address[0], *args)

    return Handler
