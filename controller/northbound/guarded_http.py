"""Thread-per-connection HTTP servers that slow and idle clients cannot tie up.

The status page and the metrics endpoint are standard-library servers, a thread for each
connection. Without care, a client that opens connections and drips a header byte every few
seconds (slowloris), or just leaves them idle, holds every thread. :class:`GuardedServer` (a
mixin for a ``socketserver`` threading server, with :class:`GuardedHandler` for its handler):

- a request must arrive whole (TLS handshake, request line and headers) within
  ``deadline_s`` of its connection, else the connection is closed; every read also times out;
- at most ``per_client`` connections per client address at once, ``total`` in all;
- when there is no room, a new connection takes the place of the oldest one still waiting
  for its request (its own client's, if that client is at its bound): a connection that
  sends its request at once, as every real client does, is answered however many slow ones
  there are; only when every slot is answering a request is the newcomer refused (503);
- with an ``ssl_context``, each accepted connection shakes hands in its own thread (never in
  the accept loop, where one silent client would stop the server).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

#: Seconds a connection has to deliver its whole request.
REQUEST_DEADLINE_S = 5.0
#: Connections answered at once, in all and per client address.
MAX_CONNECTIONS = 16
PER_CLIENT = 8


@dataclass
class _Connection:
    sock: socket.socket
    client: str
    opened: float
    waiting: bool = True  # still reading its request
    closed: bool = field(default=False)


class ConnectionGuard:
    """Which connections are open, who holds them, and which may be closed for a newcomer."""

    def __init__(
        self,
        total: int = MAX_CONNECTIONS,
        per_client: int = PER_CLIENT,
        deadline_s: float = REQUEST_DEADLINE_S,
        clock: Any = time.monotonic,
    ) -> None:
        self.total = total
        self.per_client = per_client
        self.deadline_s = deadline_s
        self._clock = clock
        self._lock = threading.Lock()
        self._open: dict[int, _Connection] = {}
        self.evicted = 0
        self.expired = 0
        self.refused = 0

    def admit(self, sock: socket.socket, client: str) -> bool:
        """Whether ``sock`` may be served; it may close an older waiting connection for it."""
        with self._lock:
            mine = [c for c in self._open.values() if c.client == client]
            victim: _Connection | None = None
            if len(mine) >= self.per_client:
                victim = self._oldest_waiting(mine)
                if victim is None:
                    self.refused += 1
                    return False
            elif len(self._open) >= self.total:
                victim = self._oldest_waiting(self._open.values())
                if victim is None:
                    self.refused += 1
                    return False
            if victim is not None:
                self._close(victim)
                self.evicted += 1
            self._open[id(sock)] = _Connection(sock, client, self._clock())
            return True

    def request_read(self, sock: socket.socket) -> None:
        """The connection's request has arrived: it is being answered, no longer evictable."""
        with self._lock:
            conn = self._open.get(id(sock))
            if conn is not None:
                conn.waiting = False

    def release(self, sock: socket.socket) -> None:
        with self._lock:
            conn = self._open.get(id(sock))
            if conn is not None and conn.sock is sock:
                del self._open[id(sock)]

    def expire(self) -> None:
        """Close every connection that has waited for its request past the deadline."""
        now = self._clock()
        with self._lock:
            late = [c for c in self._open.values() if c.waiting and now - c.opened > self.deadline_s]
            for conn in late:
                self._close(conn)
                self.expired += 1

    @property
    def open(self) -> int:
        with self._lock:
            return len(self._open)

    def _oldest_waiting(self, conns: Any) -> _Connection | None:
        waiting = [c for c in conns if c.waiting and not c.closed]
        return min(waiting, key=lambda c: c.opened) if waiting else None

    def _close(self, conn: _Connection) -> None:
        """Cut the connection off (its thread sees its reads fail and ends); forget it now."""
        conn.closed = True
        self._open.pop(id(conn.sock), None)
        with contextlib.suppress(OSError):
            conn.sock.shutdown(socket.SHUT_RDWR)


class GuardedServer:
    """Mixin for ``ThreadingHTTPServer`` / a threading WSGI server (put it first in the bases).
    Set ``guard`` (and ``ssl_context`` for TLS) before serving."""

    guard: ConnectionGuard
    ssl_context: ssl.SSLContext | None = None
    request_queue_size = 64  # connections the kernel holds before accept (socketserver's is 5)
    busy_message = b'{"error": "busy", "message": "every connection is answering a request; try again"}'

    def get_request(self) -> tuple[Any, Any]:
        sock, address = super().get_request()  # type: ignore[misc]
        if self.ssl_context is not None:
            sock = self.ssl_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.guard.admit(request, str(client_address[0])):
            self._refuse(request)
            return
        super().process_request(request, client_address)  # type: ignore[misc]

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)  # type: ignore[misc]
        finally:
            self.guard.release(request)

    def service_actions(self) -> None:
        """Called by ``serve_forever`` at every poll: close connections past their deadline."""
        super().service_actions()  # type: ignore[misc]
        self.guard.expire()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A failure outside an answer (a client that went away or was cut off): logged only."""
        log.debug("http: connection from %s failed", client_address, exc_info=True)

    def _refuse(self, request: Any) -> None:
        if self.ssl_context is None:  # a TLS client cannot read plaintext; just close it
            body = self.busy_message
            with contextlib.suppress(OSError):
                request.settimeout(1.0)
                request.sendall(b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        self.shutdown_request(request)  # type: ignore[attr-defined]


class GuardedHandler:
    """Mixin for a ``BaseHTTPRequestHandler`` (put it first in the bases): reads time out, a
    TLS handshake happens here under the deadline, and the guard learns when the request is in."""

    server: Any
    request: Any
    timeout: float | None = REQUEST_DEADLINE_S

    def setup(self) -> None:
        super().setup()  # type: ignore[misc]  # sets the socket timeout from ``timeout``
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()

    def parse_request(self) -> bool:
        ok: bool = super().parse_request()  # type: ignore[misc]
        if ok:
            self.server.guard.request_read(self.request)
        return ok
