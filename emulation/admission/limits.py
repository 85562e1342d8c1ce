"""What one client may ask of a device server: streams, message sizes, list lengths, ids.

A device agent serves its gRPC API from a small thread pool (8 workers). Every open
``StreamEvents`` call holds one worker for as long as it lasts, so eight idle streams used to
leave nothing for the unary calls the controller polls with (issue 16). Here:

- streams are admitted by a :class:`StreamGate`: at most :func:`stream_capacity` at once
  (half the workers; the rest stay free for unary calls) and :data:`STREAMS_PER_CLIENT` per
  client (the certificate's common name under mutual TLS, else the peer's address without
  its port); past either bound a stream is refused with ``RESOURCE_EXHAUSTED``; a stream
  also ends after :data:`MAX_STREAM_S` (the client opens a new one);
- messages over :data:`MAX_REQUEST_BYTES` are refused by gRPC itself, and lists longer than
  the device could ever need (more ports than it has, more groups than blocks) are refused
  with ``INVALID_ARGUMENT`` before any work is done;
- connections are kept alive by pings and closed after :data:`MAX_IDLE_S` without a call;
- request ids (idempotency keys) are at most :data:`MAX_REQUEST_ID_CHARS` characters.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import grpc

MAX_REQUEST_BYTES = 1 << 20  # 1 MiB: the largest real request (64 blocks' groups) is ~100 KB
STREAMS_PER_CLIENT = 2
MAX_STREAM_S = 600.0
MAX_IDLE_S = 300.0
MAX_REQUEST_ID_CHARS = 256

SERVER_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_receive_message_length", MAX_REQUEST_BYTES),
    ("grpc.keepalive_time_ms", 30_000),  # ping a silent client every 30 s...
    ("grpc.keepalive_timeout_ms", 10_000),  # ...and drop it if no answer in 10 s
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 10_000),
    ("grpc.max_connection_idle_ms", int(MAX_IDLE_S * 1000)),
    ("grpc.max_concurrent_streams", 32),  # calls at once on one connection
]


def stream_capacity(workers: int) -> int:
    """Streams a server of ``workers`` threads admits at once: half of them, at least one."""
    return max(1, workers // 2)


def client_of(context: grpc.ServicerContext) -> str:
    """Who is calling: the certificate's common name under mutual TLS, else the peer's host."""
    auth = context.auth_context() or {}
    names = auth.get("x509_common_name") or ()
    if names:
        return "cn:" + names[0].decode("utf-8", "replace")
    peer = context.peer() or "unknown"
    host = peer.rsplit(":", 1)[0] if peer.count(":") >= 2 else peer
    return host


class StreamGate:
    """Admits streams up to a total and a per-client bound."""

    def __init__(self, total: int, per_client: int = STREAMS_PER_CLIENT) -> None:
        self.total = total
        self.per_client = per_client
        self._lock = threading.Lock()
        self._open: dict[str, int] = {}

    @contextmanager
    def admit(self, context: grpc.ServicerContext) -> Iterator[None]:
        client = client_of(context)
        with self._lock:
            refusal = None
            if sum(self._open.values()) >= self.total:
                refusal = f"the device serves at most {self.total} event streams at once; try again later"
            elif self._open.get(client, 0) >= self.per_client:
                refusal = f"at most {self.per_client} event streams per client ({client})"
            if refusal is None:
                self._open[client] = self._open.get(client, 0) + 1
        if refusal is not None:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, refusal)
        try:
            yield
        finally:
            with self._lock:
                self._open[client] -= 1
                if not self._open[client]:
                    del self._open[client]


def check_count(what: str, count: int, limit: int) -> None:
    """Refuse a list longer than the device could need (INVALID_ARGUMENT, nothing done)."""
    from emulation.errors import MalformedRequest

    if count > limit:
        raise MalformedRequest(f"{what}: at most {limit} per request, got {count}")
