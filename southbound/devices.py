"""The devices file: which devices the controller drives, where they listen, and how.

YAML (or JSON, which is YAML)::

    version: 1
    defaults:                  # optional; each key may be overridden per device
      transport: grpc          # a transport of the driver registry
      deadline_s: 5.0          # deadline of every call
      max_attempts: 4          # calls in all when the device is UNAVAILABLE
      tls:                     # optional; absent means plaintext
        ca_cert: certs/ca.pem          # verifies the device's certificate
        client_cert: certs/ctl.pem     # with client_key: mutual TLS
        client_key: certs/ctl.key
        server_name: heliostat-device  # name expected in the device certificate
    devices:
      ocs-0:  {kind: ocs,   address: "127.0.0.1:40001"}
      blk-a:  {kind: block, address: "127.0.0.1:40002", tls: null}   # null: plaintext

``kind`` is ``ocs`` or ``block``. Relative TLS paths are relative to the file. Unknown
keys are errors; every error names the file and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from southbound.rpc import CallOptions, RetryPolicy
from southbound.tls import TlsConfig

DEVICE_KINDS = ("ocs", "block")
_DEVICE_KEYS = {"kind", "address", "transport", "deadline_s", "max_attempts", "tls"}
_DEFAULT_KEYS = _DEVICE_KEYS - {"kind", "address"}
_TLS_KEYS = {"ca_cert", "client_cert", "client_key", "server_name"}
_UNSET = object()


class DevicesFileError(ValueError):
    """The devices file is unreadable or invalid; the message names the file and key."""


@dataclass(frozen=True)
class DeviceConfig:
    name: str
    kind: str
    address: str
    transport: str = "grpc"
    tls: TlsConfig | None = None
    options: CallOptions = field(default_factory=CallOptions)


def load_devices_file(path: str | Path) -> dict[str, DeviceConfig]:
    """Read and validate a devices file; device name -> DeviceConfig."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise DevicesFileError(f"{path}: cannot read: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise DevicesFileError(f"{path}: not valid YAML: {exc}") from exc
    return parse_devices(raw, source=str(path), base_dir=path.parent)


def parse_devices(raw: Any, *, source: str = "<devices>", base_dir: Path = Path(".")) -> dict[
    str, DeviceConfig
]:
    def fail(key: str, message: str) -> DevicesFileError:
        return DevicesFileError(f"{source}: {key}: {message}")

    if not isinstance(raw, Mapping):
        raise fail("<top>", "expected a mapping with 'devices'")
    unknown = set(raw) - {"version", "defaults", "devices"}
    if unknown:
        raise fail(sorted(unknown)[0], "unknown key")
    if raw.get("version", 1) != 1:
        raise fail("version", f"unsupported version {raw.get('version')!r} (expected 1)")
    defaults = raw.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise fail("defaults", "expected a mapping")
    for key in defaults:
        if key not in _DEFAULT_KEYS:
            raise fail(f"defaults.{key}", "unknown key")
    devices = raw.get("devices")
    if not isinstance(devices, Mapping) or not devices:
        raise fail("devices", "expected a non-empty mapping of device name -> settings")

    result: dict[str, DeviceConfig] = {}
    for name, entry in devices.items():
        where = f"devices.{name}"
        if not isinstance(name, str) or not name:
            raise fail(where, "device names must be non-empty strings")
        if not isinstance(entry, Mapping):
            raise fail(where, "expected a mapping")
        for key in entry:
            if key not in _DEVICE_KEYS:
                raise fail(f"{where}.{key}", "unknown key")

        def setting(key: str, entry: Mapping[str, Any] = entry, default: Any = _UNSET) -> Any:
            if key in entry:
                return entry[key]
            if key in defaults:
                return defaults[key]
            return default

        kind = entry.get("kind")
        if kind not in DEVICE_KINDS:
            raise fail(f"{where}.kind", f"must be one of {', '.join(DEVICE_KINDS)}, got {kind!r}")
        address = entry.get("address")
        if not isinstance(address, str) or ":" not in address:
            raise fail(f"{where}.address", f"expected 'host:port', got {address!r}")
        transport = setting("transport", default="grpc")
        if not isinstance(transport, str) or not transport:
            raise fail(f"{where}.transport", "expected a transport name")
        deadline = setting("deadline_s", default=CallOptions.deadline_s)
        if isinstance(deadline, bool) or not isinstance(deadline, int | float) or deadline <= 0:
            raise fail(f"{where}.deadline_s", f"expected a positive number, got {deadline!r}")
        attempts = setting("max_attempts", default=RetryPolicy.max_attempts)
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise fail(f"{where}.max_attempts", f"expected an integer >= 1, got {attempts!r}")
        tls = _parse_tls(setting("tls", default=None), f"{where}.tls", fail, base_dir)
        result[name] = DeviceConfig(
            name=name,
            kind=kind,
            address=address,
            transport=transport,
            tls=tls,
            options=CallOptions(float(deadline), RetryPolicy(max_attempts=attempts)),
        )
    return result


def _parse_tls(raw: Any, where: str, fail: Any, base_dir: Path) -> TlsConfig | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise fail(where, "expected a mapping or null")
    for key in raw:
        if key not in _TLS_KEYS:
            raise fail(f"{where}.{key}", "unknown key")
    if "ca_cert" not in raw:
        raise fail(f"{where}.ca_cert", "required when tls is set")
    if ("client_cert" in raw) != ("client_key" in raw):
        raise fail(f"{where}.client_key", "client_cert and client_key go together")

    def path(key: str) -> Path:
        value = raw[key]
        if not isinstance(value, str) or not value:
            raise fail(f"{where}.{key}", "expected a file path")
        resolved = (base_dir / value) if not Path(value).is_absolute() else Path(value)
        if not resolved.is_file():
            raise fail(f"{where}.{key}", f"no such file: {resolved}")
        return resolved

    server_name = raw.get("server_name")
    if server_name is not None and not isinstance(server_name, str):
        raise fail(f"{where}.server_name", "expected a string")
    client_cert = path("client_cert") if "client_cert" in raw else None
    client_key = path("client_key") if "client_key" in raw else None
    return TlsConfig(path("ca_cert"), client_cert, client_key, server_name)


def dump_devices(devices: Mapping[str, DeviceConfig]) -> dict[str, Any]:
    """The devices-file mapping for ``devices`` (inverse of parse_devices)."""
    out: dict[str, Any] = {}
    for name, d in devices.items():
        entry: dict[str, Any] = {"kind": d.kind, "address": d.address, "transport": d.transport}
        if d.options != CallOptions():
            entry["deadline_s"] = d.options.deadline_s
            entry["max_attempts"] = d.options.retry.max_attempts
        if d.tls is not None:
            # absolute: the file may be read from anywhere
            tls: dict[str, Any] = {"ca_cert": str(Path(d.tls.ca_cert).resolve())}
            if d.tls.client_cert is not None and d.tls.client_key is not None:
                tls["client_cert"] = str(Path(d.tls.client_cert).resolve())
                tls["client_key"] = str(Path(d.tls.client_key).resolve())
            if d.tls.server_name:
                tls["server_name"] = d.tls.server_name
            entry["tls"] = tls
        out[name] = entry
    return {"version": 1, "devices": out}


def write_devices_file(path: str | Path, devices: Mapping[str, DeviceConfig]) -> None:
    """Write atomically (temp file + rename) so readers never see half a file."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(dump_devices(devices), sort_keys=False))
    tmp.replace(path)
