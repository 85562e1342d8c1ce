"""The controller config's ``ha:`` section: replicas elected on etcd (issue 14).

    ha:
      etcd: ["127.0.0.1:2379", "127.0.0.1:22379", "127.0.0.1:32379"]
      name: replica-a            # unique per replica (a second replica of that name is refused)
      lease_ttl: 5               # seconds; a leader that cannot renew for this long is replaced
      prefix: /heliostat/demo-8  # one prefix per fabric (another fabric's prefix is refused)
      tls: {ca: ca.pem, cert: client.pem, key: client-key.pem}   # optional: etcd's client TLS

Absent, the controller runs alone on its SQLite journal as before. Validation raises
:class:`~optimizer.errors.ConfigError` naming the file and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optimizer import schema
from optimizer.errors import ConfigError

HA_KEYS = ("etcd", "name", "lease_ttl", "prefix", "tls")
TLS_KEYS = ("ca", "cert", "key")
MIN_LEASE_TTL_S = 2  # etcd grants no lease under its election timeout; the keep-alive needs room
MAX_LEASE_TTL_S = 3600
MAX_ENDPOINTS = 15


@dataclass(frozen=True)
class EtcdTls:
    """etcd's client TLS: the CA that signed the members, and optionally our certificate."""

    ca: Path
    cert: Path | None = None
    key: Path | None = None


@dataclass(frozen=True)
class HaConfig:
    endpoints: tuple[str, ...]
    name: str
    lease_ttl: int
    prefix: str
    tls: EtcdTls | None = None


def parse_ha(value: object, source: str, base: Path) -> HaConfig | None:
    """The validated ``ha`` section, or None where it is absent (one replica, SQLite)."""
    if value is None:
        return None
    section = schema.mapping(value, source, "ha")
    schema.check_keys(section, source, "ha", HA_KEYS, required=("etcd", "name", "prefix"))
    return HaConfig(
        endpoints=_endpoints(section["etcd"], source),
        name=schema.name(section["name"], source, "ha.name"),
        lease_ttl=schema.integer(
            section.get("lease_ttl", 5), source, "ha.lease_ttl", minimum=MIN_LEASE_TTL_S,
            maximum=MAX_LEASE_TTL_S,
        ),
        prefix=_prefix(section["prefix"], source),
        tls=_tls(section.get("tls"), source, base),
    )


def _endpoints(value: object, source: str) -> tuple[str, ...]:
    items = schema.sequence(value, source, "ha.etcd")
    if not items:
        raise ConfigError(source, "ha.etcd", "expected at least one etcd endpoint (host:port)")
    if len(items) > MAX_ENDPOINTS:
        raise ConfigError(source, "ha.etcd", f"at most {MAX_ENDPOINTS} endpoints, got {len(items)}")
    endpoints = []
    for i, item in enumerate(items):
        key = schema.join("ha.etcd", i)
        text = schema.string(item, source, key, max_chars=256)
        host, sep, port = text.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(source, key, f"expected host:port, got {schema.shown(text)}")
        if "://" in text:
            raise ConfigError(source, key, f"expected host:port without a scheme, got {schema.shown(text)}")
        if text in endpoints:
            raise ConfigError(source, key, f"endpoint {text} is listed twice")
        endpoints.append(text)
    return tuple(endpoints)


def _prefix(value: object, source: str) -> str:
    text = schema.string(value, source, "ha.prefix", max_chars=256)
    if not text.startswith("/") or text == "/":
        raise ConfigError(source, "ha.prefix", f"expected an absolute key prefix such as /heliostat/demo-8, "
                                               f"got {schema.shown(text)}")
    if any(c.isspace() for c in text):
        raise ConfigError(source, "ha.prefix", "must not contain white space")
    return text.rstrip("/")


def _tls(value: object, source: str, base: Path) -> EtcdTls | None:
    if value is None:
        return None
    section: Mapping[str, Any] = schema.mapping(value, source, "ha.tls")
    schema.check_keys(section, source, "ha.tls", TLS_KEYS, required=("ca",))
    if ("cert" in section) != ("key" in section):
        raise ConfigError(source, "ha.tls", "cert and key go together: give both or neither")
    files = {}
    for key in TLS_KEYS:
        if key in section:
            path = Path(schema.string(section[key], source, f"ha.tls.{key}")).expanduser()
            path = path if path.is_absolute() else (base / path).resolve()
            if not path.is_file():
                raise ConfigError(source, f"ha.tls.{key}", f"no such file: {path}")
            files[key] = path
    return EtcdTls(files["ca"], files.get("cert"), files.get("key"))
