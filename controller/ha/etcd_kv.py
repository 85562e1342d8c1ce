"""The etcd v3 edge: a few verbs over etcd's JSON gateway, with endpoint failover.

Why the JSON gateway through ``etcd3gw`` (and not ``aetcd`` or our own gRPC stubs) is in
``controller/ha/README.md``. This module is the only one that speaks to etcd: it turns keys
and values to and from base64, tries the next endpoint when one is unreachable, bounds every
request by a timeout (a member without quorum holds requests until then), times each request
for the ``heliostat_etcd_request_seconds`` histogram, and raises :class:`EtcdUnavailable` or
:class:`EtcdError` with the endpoint and the problem.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from controller.ha.config import EtcdTls
from optimizer.errors import HeliostatError

log = logging.getLogger(__name__)

#: verb, seconds -> None (the daemon's metrics observe it)
LatencyObserver = Callable[[str, float], None]


class EtcdError(HeliostatError):
    """etcd answered with an error (a bad request, a lease that is gone...)."""


class EtcdUnavailable(EtcdError):
    """No endpoint answered in time (down, or a member that lost quorum)."""


def _b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode("ascii")


def _unb64(text: str | None) -> bytes:
    return base64.b64decode(text) if text else b""


def prefix_end(prefix: bytes) -> bytes:
    """The range end that covers every key starting with ``prefix``."""
    end = bytearray(prefix)
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    return b"\0"


@dataclass(frozen=True)
class KeyValue:
    key: bytes
    value: bytes
    create_revision: int
    mod_revision: int
    lease: int


def _kv(item: dict[str, Any]) -> KeyValue:
    return KeyValue(
        key=_unb64(item.get("key")),
        value=_unb64(item.get("value")),
        create_revision=int(item.get("create_revision", 0)),
        mod_revision=int(item.get("mod_revision", 0)),
        lease=int(item.get("lease", 0)),
    )


# -- transaction pieces (plain dicts in the gateway's JSON form) --------------------------------


def absent(key: bytes) -> dict[str, Any]:
    """Compare: ``key`` does not exist."""
    return {"key": _b64(key), "result": "EQUAL", "target": "CREATE", "create_revision": "0"}


def held_by(key: bytes, lease: int) -> dict[str, Any]:
    """Compare: ``key`` exists and is attached to ``lease`` (the writer still leads)."""
    return {"key": _b64(key), "result": "EQUAL", "target": "LEASE", "lease": str(lease)}


def value_is(key: bytes, value: bytes) -> dict[str, Any]:
    return {"key": _b64(key), "result": "EQUAL", "target": "VALUE", "value": _b64(value)}


def put(key: bytes, value: bytes, lease: int = 0) -> dict[str, Any]:
    body: dict[str, Any] = {"key": _b64(key), "value": _b64(value)}
    if lease:
        body["lease"] = str(lease)
    return {"request_put": body}


def get(key: bytes) -> dict[str, Any]:
    return {"request_range": {"key": _b64(key)}}


def delete(key: bytes, prefix: bool = False) -> dict[str, Any]:
    body = {"key": _b64(key)}
    if prefix:
        body["range_end"] = _b64(prefix_end(key))
    return {"request_delete_range": body}


def delete_range(start: bytes, end: bytes) -> dict[str, Any]:
    """Delete every key in [start, end)."""
    return {"request_delete_range": {"key": _b64(start), "range_end": _b64(end)}}


@dataclass(frozen=True)
class TxnResult:
    succeeded: bool
    revision: int
    #: the key-values of each range in the branch taken, in order
    ranges: tuple[tuple[KeyValue, ...], ...]


class EtcdKV:
    """A client for a list of endpoints; thread-safe (one HTTP session per endpoint)."""

    def __init__(
        self,
        endpoints: Sequence[str],
        *,
        tls: EtcdTls | None = None,
        timeout_s: float = 2.0,
        observe: LatencyObserver | None = None,
    ) -> None:
        if not endpoints:
            raise EtcdError("no etcd endpoint given")
        with warnings.catch_warnings():  # futurist warns about eventlet (os-ken's) on import
            warnings.simplefilter("ignore")
            from etcd3gw.client import Etcd3Client
            from etcd3gw.exceptions import ConnectionFailedError, ConnectionTimeoutError, Etcd3Exception
        self._unreachable = (ConnectionFailedError, ConnectionTimeoutError)
        self._failed = Etcd3Exception
        self.endpoints = tuple(endpoints)
        self.timeout_s = timeout_s
        self._observe = observe
        self._lock = threading.Lock()
        self._current = 0
        self._clients = []
        for endpoint in self.endpoints:
            host, _, port = endpoint.rpartition(":")
            options: dict[str, Any] = {}
            if tls is not None:
                options = {"protocol": "https", "ca_cert": str(tls.ca)}
                if tls.cert is not None and tls.key is not None:
                    options.update(cert_cert=str(tls.cert), cert_key=str(tls.key))
            self._clients.append(
                Etcd3Client(host=host, port=int(port), timeout=timeout_s, api_path="/v3/", **options)
            )

    def close(self) -> None:
        for client in self._clients:
            client.session.close()

    def _call(self, verb: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` to ``path``; on an unreachable endpoint, the next one (each once)."""
        with self._lock:
            first = self._current
        problems = []
        for i in range(len(self._clients)):
            index = (first + i) % len(self._clients)
            client = self._clients[index]
            started = time.monotonic()
            try:
                reply = client.post(client.get_url(path), json=body)
            except self._unreachable as exc:
                problems.append(f"{self.endpoints[index]}: {exc}")
                continue
            except self._failed as exc:
                problem = exc.detail_text or exc
                raise EtcdError(f"etcd {self.endpoints[index]}: {verb} failed: {problem}") from exc
            finally:
                if self._observe is not None:
                    self._observe(verb, time.monotonic() - started)
            if index != first:
                with self._lock:
                    self._current = index
                log.info("etcd: now talking to %s", self.endpoints[index])
            return reply
        raise EtcdUnavailable(f"etcd: no endpoint answered {verb} within {self.timeout_s:g} s: "
                              + "; ".join(problems))

    # -- verbs ------------------------------------------------------------------------------

    def grant(self, ttl: int) -> int:
        """A new lease of ``ttl`` seconds; returns its id."""
        return int(self._call("lease_grant", "/lease/grant", {"TTL": ttl, "ID": 0})["ID"])

    def keepalive(self, lease: int) -> int:
        """Renew ``lease``; returns its new TTL, or -1 if it is gone (expired or revoked)."""
        reply = self._call("lease_keepalive", "/lease/keepalive", {"ID": str(lease)})
        return int(reply.get("result", {}).get("TTL", -1))

    def revoke(self, lease: int) -> None:
        self._call("lease_revoke", "/kv/lease/revoke", {"ID": str(lease)})

    def get(self, key: bytes) -> KeyValue | None:
        reply = self._call("range", "/kv/range", {"key": _b64(key)})
        kvs = reply.get("kvs") or []
        return _kv(kvs[0]) if kvs else None

    def get_prefix(self, prefix: bytes, limit: int = 0) -> list[KeyValue]:
        body: dict[str, Any] = {"key": _b64(prefix), "range_end": _b64(prefix_end(prefix))}
        if limit:
            body["limit"] = str(limit)
        reply = self._call("range", "/kv/range", body)
        return [_kv(item) for item in reply.get("kvs") or []]

    def put(self, key: bytes, value: bytes, lease: int = 0) -> int:
        """Write ``key``; returns the revision of the write."""
        reply = self._call("put", "/kv/put", put(key, value, lease)["request_put"])
        return int(reply["header"]["revision"])

    def txn(
        self,
        compare: Sequence[dict[str, Any]],
        success: Sequence[dict[str, Any]],
        failure: Sequence[dict[str, Any]] = (),
    ) -> TxnResult:
        """One transaction: ``success`` if every ``compare`` holds, else ``failure``."""
        reply = self._call(
            "txn", "/kv/txn", {"compare": list(compare), "success": list(success), "failure": list(failure)}
        )
        ranges = tuple(
            tuple(_kv(item) for item in r["response_range"].get("kvs") or [])
            for r in reply.get("responses") or []
            if "response_range" in r
        )
        return TxnResult(bool(reply.get("succeeded", False)), int(reply["header"]["revision"]), ranges)
