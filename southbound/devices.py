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
      blk-b:
        kind: block
        address: "10.0.0.2:9000"       # where every capability is served, unless named below
        capabilities:                  # optional: a transport per capability
          groups: {transport: p4runtime, address: "10.0.0.2:9559"}
          counters: gnmi               # a transport alone: at its endpoint, else the address
      blk-c:                           # a SONiC/PINS switch: the standard protocols
        kind: block
        p4runtime: "10.0.0.3:9559"     # or {address: ..., device_id: 1}
        gnmi: "10.0.0.3:8080"
      ocs-1:                           # an OCS managed over NETCONF (SSH)
        kind: ocs
        netconf: {address: "10.0.1.1:830", username: heliostat, password: secret}  # or key_file
    prefixes:                  # each block's IPv4 prefix (the P4 routes of the switches)
      blk-a: 10.0.0.0/24

``kind`` is ``ocs``, ``block`` or ``spine`` (a spine switch of a hybrid fabric, which
serves the packet-switch service as a block does). A standard protocol's endpoint is named
under the protocol's own key (``p4runtime``, ``gnmi`` for a switch; ``netconf`` for an OCS);
``address`` is then optional and is where the native ``grpc`` transport listens. Without a
``transport``, each capability takes the standard protocol that serves it when the device
names that protocol's endpoint (groups: p4runtime; counters and drain: gnmi; circuits and
events: netconf), else ``grpc`` at ``address`` (:data:`STANDARD_TRANSPORTS`). The capabilities
(:data:`southbound.contracts.CAPABILITIES`) are ``groups``, ``counters`` and ``drain`` for a
switch, ``circuits`` and ``events`` for an OCS; one not named uses the device's ``transport``
and ``address``. Whether a transport is registered is checked by the driver registry
(:meth:`~southbound.registry.DriverRegistry.check`), with an error naming the file and key.
Relative TLS paths are relative to the file. Unknown keys are errors; every error is a
:class:`~optimizer.errors.ConfigError` naming the file and the key, read through
:mod:`optimizer.schema` like the fabric and controller configs.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from optimizer import limits, schema
from optimizer.config import parse_yaml
from optimizer.errors import ConfigError
from southbound.contracts import CAPABILITIES
from southbound.options import CallOptions, RetryPolicy
from southbound.tls import TlsConfig

DEVICE_KINDS = ("ocs", "block", "spine")
#: transport "auto": each capability by :data:`STANDARD_TRANSPORTS` when the endpoint is named
AUTO = "auto"
#: capability -> the standard protocol that serves it
STANDARD_TRANSPORTS = {
    "groups": "p4runtime", "counters": "gnmi", "drain": "gnmi", "circuits": "netconf", "events": "netconf",
}
#: endpoint key -> the device kinds that may name it
ENDPOINT_KINDS = {"p4runtime": ("block", "spine"), "gnmi": ("block", "spine"), "netconf": ("ocs",)}
_ENDPOINT_KEYS = {"address", "username", "password", "key_file", "device_id", "host_key"}
MAX_DEVICE_ID = 2**64 - 1
MIN_SAMPLE_INTERVAL_S, MAX_SAMPLE_INTERVAL_S = 0.01, 3600.0
MAX_DEADLINE_S = 3600.0
MAX_ATTEMPTS = 20
_DEVICE_KEYS = {"kind", "address", "transport", "deadline_s", "max_attempts", "tls", "capabilities",
                *ENDPOINT_KINDS}
_DEFAULT_KEYS = _DEVICE_KEYS - {"kind", "address", "capabilities", *ENDPOINT_KINDS}
_ROUTE_KEYS = {"transport", "address"}
_TLS_KEYS = {"ca_cert", "client_cert", "client_key", "server_name"}


@dataclass(frozen=True)
class CapabilityRoute:
    """Where and over which transport one capability of a device is served."""

    capability: str
    transport: str
    address: str


@dataclass(frozen=True)
class Endpoint:
    """Where a device serves one standard protocol, and how to log in where it needs it."""

    protocol: str  # "p4runtime", "gnmi" or "netconf"
    address: str  # host:port
    username: str | None = None  # NETCONF (SSH) user
    password: str | None = field(default=None, repr=False)  # NETCONF password (or key_file)
    key_file: Path | None = None  # NETCONF SSH private key
    device_id: int = 1  # P4Runtime device_id
    #: gNMI: how often the target samples the counters (None: the driver's default, 1 s); sample
    #: at most half the controller's poll interval so that every poll sees a new sample
    sample_interval_s: float | None = None
    #: NETCONF: the device's SSH host key ("<type> <base64>", as in known_hosts or
    #: /etc/ssh/ssh_host_*.pub): the session is refused when the device presents another;
    #: None: not checked (a warning says so)
    host_key: str | None = None


@dataclass(frozen=True)
class DeviceConfig:
    name: str
    kind: str
    address: str
    transport: str = "grpc"
    tls: TlsConfig | None = None
    options: CallOptions = field(default_factory=CallOptions)
    #: capabilities served elsewhere than ``transport`` at ``address`` (by capability name)
    routes: tuple[CapabilityRoute, ...] = ()
    #: the standard protocols' endpoints, by protocol
    endpoints: tuple[Endpoint, ...] = ()
    #: every block's IPv4 prefix (block name, prefix): the routes a P4 switch is given
    prefixes: tuple[tuple[str, str], ...] = ()
    #: the file it was read from, for errors that name the file and key
    source: str = field(default="<devices>", compare=False)

    def route(self, capability: str) -> CapabilityRoute:
        """The transport and address serving ``capability``."""
        for r in self.routes:
            if r.capability == capability:
                return r
        transport = self.transport
        if transport == AUTO:
            standard = STANDARD_TRANSPORTS.get(capability, "grpc")
            transport = standard if self.endpoint(standard) is not None else "grpc"
        endpoint = self.endpoint(transport)
        return CapabilityRoute(capability, transport, endpoint.address if endpoint else self.address)

    def endpoint(self, protocol: str) -> Endpoint | None:
        """The endpoint of a standard protocol, if the device names one."""
        return next((e for e in self.endpoints if e.protocol == protocol), None)

    def prefix_of(self, block: str) -> str | None:
        """``block``'s IPv4 prefix, if the devices file gives one."""
        return dict(self.prefixes).get(block)

    def route_key(self, capability: str) -> str:
        """The devices-file key that chose ``capability``'s transport."""
        if any(r.capability == capability for r in self.routes):
            return f"devices.{self.name}.capabilities.{capability}"
        return f"devices.{self.name}.transport"

    def for_route(self, route: CapabilityRoute) -> DeviceConfig:
        """This device as one capability's transport sees it (its transport and address)."""
        return replace(self, transport=route.transport, address=route.address, routes=())


def load_devices_file(path: str | Path) -> dict[str, DeviceConfig]:
    """Read and validate a devices file; device name -> DeviceConfig. Errors are
    :class:`~optimizer.errors.ConfigError` naming the file and the key (``devices.x.kind``)."""
    path = Path(path)
    raw = parse_yaml(schema.read_file(path, limits.MAX_YAML_FILE_BYTES), str(path))
    return parse_devices(raw, source=str(path), base_dir=path.parent)


def parse_devices(
    raw: Any, *, source: str = "<devices>", base_dir: Path = Path(".")
) -> dict[str, DeviceConfig]:
    top = schema.mapping(raw, source, "")
    schema.check_keys(top, source, "", {"version", "defaults", "devices", "prefixes"})
    if top.get("version", 1) != 1:
        raise ConfigError(source, "version", f"unsupported version {top.get('version')!r} (expected 1)")
    defaults = schema.mapping(top.get("defaults") or {}, source, "defaults")
    schema.check_keys(defaults, source, "defaults", _DEFAULT_KEYS)
    devices = schema.mapping(top.get("devices"), source, "devices")
    if not devices:
        raise ConfigError(source, "devices", "expected a non-empty mapping of device name -> settings")
    most = limits.MAX_BLOCKS + limits.MAX_OCS
    if len(devices) > most:
        raise ConfigError(source, "devices", f"at most {most:,} devices, got {len(devices):,}")
    for name in devices:
        schema.name(name, source, schema.join("devices", schema.key_text(name)))
    prefixes = _parse_prefixes(top.get("prefixes"), source)
    parsed = {
        name: replace(_device(
            name, schema.mapping(entry, source, schema.join("devices", name)), defaults, source, base_dir
        ), prefixes=prefixes)
        for name, entry in devices.items()
    }
    p4 = [n for n, d in parsed.items() if d.kind != "ocs" and d.route("groups").transport == "p4runtime"]
    if p4 and not prefixes:
        raise ConfigError(source, "prefixes", f"required: {p4[0]} writes its groups over P4Runtime, whose "
                          "routes match IPv4 destinations (give every block's prefix, e.g. b1: 10.0.1.0/24)")
    return parsed


def _parse_prefixes(raw: Any, source: str) -> tuple[tuple[str, str], ...]:
    """``prefixes``: block name -> an IPv4 network (``10.0.3.0/24``), none overlapping."""
    if raw is None:
        return ()
    table = schema.mapping(raw, source, "prefixes")
    if len(table) > limits.MAX_BLOCKS:
        raise ConfigError(source, "prefixes", f"at most {limits.MAX_BLOCKS:,} blocks, got {len(table):,}")
    networks: dict[str, ipaddress.IPv4Network] = {}
    for block, value in table.items():
        key = schema.join("prefixes", schema.key_text(block))
        schema.name(block, source, key)
        try:
            networks[block] = ipaddress.IPv4Network(schema.string(value, source, key, max_chars=18))
        except ValueError as exc:
            raise ConfigError(source, key, f"expected an IPv4 network such as 10.0.3.0/24: {exc}") from None
    ordered = sorted(networks.items(), key=lambda item: item[1])
    for (a, net_a), (b, net_b) in itertools.pairwise(ordered):
        if net_a.overlaps(net_b):
            raise ConfigError(source, schema.join("prefixes", b), f"{net_b} overlaps {a}'s {net_a}")
    return tuple((block, str(net)) for block, net in networks.items())


def _device(
    name: str, entry: Mapping[str, Any], defaults: Mapping[str, Any], source: str, base_dir: Path
) -> DeviceConfig:
    where = schema.join("devices", name)
    schema.check_keys(entry, source, where, _DEVICE_KEYS, required=("kind",))

    def setting(key: str, default: Any) -> Any:
        return entry[key] if key in entry else defaults.get(key, default)

    kind = entry["kind"]
    if kind not in DEVICE_KINDS:
        raise ConfigError(source, f"{where}.kind", f"expected one of {', '.join(DEVICE_KINDS)}, got {kind!r}")
    endpoints = tuple(
        _endpoint(protocol, entry[protocol], kind, source, f"{where}.{protocol}", base_dir)
        for protocol in ENDPOINT_KINDS if protocol in entry
    )
    if "address" not in entry and not endpoints:
        protocols = " or ".join(p for p, kinds in ENDPOINT_KINDS.items() if kind in kinds)
        raise ConfigError(source, f"{where}.address", f"required (or a standard endpoint: {protocols})")
    address = _address(entry["address"], source, f"{where}.address") if "address" in entry else ""
    transport = schema.string(
        setting("transport", AUTO if endpoints else "grpc"), source, f"{where}.transport", max_chars=64
    )
    deadline = schema.number(
        setting("deadline_s", CallOptions.deadline_s), source, f"{where}.deadline_s", positive=True,
        maximum=MAX_DEADLINE_S,
    )
    attempts = schema.integer(
        setting("max_attempts", RetryPolicy.max_attempts), source, f"{where}.max_attempts", minimum=1,
        maximum=MAX_ATTEMPTS,
    )
    tls = _parse_tls(setting("tls", None), source, f"{where}.tls", base_dir)
    device = DeviceConfig(
        name=name,
        kind=kind,
        address=address,
        transport=transport,
        tls=tls,
        options=CallOptions(deadline, RetryPolicy(max_attempts=attempts)),
        endpoints=endpoints,
        source=source,
    )
    routes = _parse_routes(entry.get("capabilities"), device, source, f"{where}.capabilities")
    device = replace(device, routes=routes)
    for capability in CAPABILITIES:
        if kind in CAPABILITIES[capability] and not device.route(capability).address:
            raise ConfigError(source, device.route_key(capability),
                              f"{capability} is served over {device.route(capability).transport!r}, "
                              f"but the device names no address for it")
    return device


def _endpoint(protocol: str, raw: Any, kind: str, source: str, key: str, base_dir: Path) -> Endpoint:
    """A standard protocol's endpoint: ``host:port``, or a mapping with the address and login."""
    if kind not in ENDPOINT_KINDS[protocol]:
        raise ConfigError(source, key, f"a {kind} does not speak {protocol} "
                                       f"(only a {' or '.join(ENDPOINT_KINDS[protocol])})")
    if isinstance(raw, str):
        raw = {"address": raw}
    entry = schema.mapping(raw, source, key)
    allowed = {"address", "device_id"} if protocol == "p4runtime" else (
        _ENDPOINT_KEYS - {"device_id"} if protocol == "netconf" else {"address", "sample_interval_s"})
    schema.check_keys(entry, source, key, allowed, required=("address",))
    text = {k: schema.string(entry[k], source, f"{key}.{k}", max_chars=255)
            for k in ("username", "password") if k in entry}
    host_key = None
    if "host_key" in entry:
        host_key = _host_key(schema.string(entry["host_key"], source, f"{key}.host_key", max_chars=4096),
                             source, f"{key}.host_key")
    key_file = None
    if "key_file" in entry:
        value = Path(schema.string(entry["key_file"], source, f"{key}.key_file"))
        key_file = value if value.is_absolute() else base_dir / value
        if not key_file.is_file():
            raise ConfigError(source, f"{key}.key_file", f"no such file: {key_file}")
    if protocol == "netconf" and "username" not in text:
        raise ConfigError(source, f"{key}.username", "required: NETCONF runs over SSH, which logs in")
    if protocol == "netconf" and "password" not in text and key_file is None:
        raise ConfigError(source, f"{key}.password", "a password or a key_file is required")
    device_id = schema.integer(entry.get("device_id", 1), source, f"{key}.device_id", minimum=1,
                               maximum=MAX_DEVICE_ID)
    interval = entry.get("sample_interval_s")
    sample_interval_s = None if interval is None else schema.number(
        interval, source, f"{key}.sample_interval_s", minimum=MIN_SAMPLE_INTERVAL_S,
        maximum=MAX_SAMPLE_INTERVAL_S)
    return Endpoint(protocol, _address(entry["address"], source, f"{key}.address"),
                    text.get("username"), text.get("password"), key_file, device_id, sample_interval_s,
                    host_key)


def _host_key(text: str, source: str, key: str) -> str:
    """``<type> <base64>`` (a comment after them is dropped), checked to be base64."""
    parts = text.split()
    if len(parts) < 2 or not parts[0].startswith(("ssh-", "ecdsa-")):
        raise ConfigError(source, key, f"expected '<key type> <base64>' (e.g. ssh-ed25519 AAAA...), "
                                       f"got {schema.shown(text)}")
    try:
        base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(source, key, "the key is not base64") from None
    return f"{parts[0]} {parts[1]}"


def _parse_routes(raw: Any, device: DeviceConfig, source: str, where: str) -> tuple[CapabilityRoute, ...]:
    """``capabilities``: capability -> a transport name, or {transport, address}; a transport
    alone is served at its endpoint when the device names one, else at the device's address."""
    if raw is None:
        return ()
    table = schema.mapping(raw, source, where)
    kind = device.kind
    routes = []
    for capability, value in table.items():
        key = schema.join(where, schema.key_text(capability))
        kinds = CAPABILITIES.get(capability) if isinstance(capability, str) else None
        if kinds is None:
            known = ", ".join(sorted(CAPABILITIES))
            raise ConfigError(source, key, f"unknown capability (expected one of {known})")
        if kind not in kinds:
            raise ConfigError(source, key, f"a {kind} has no {capability} (only a {' or '.join(kinds)})")
        if isinstance(value, str):
            value = {"transport": value}
        entry = schema.mapping(value, source, key)
        schema.check_keys(entry, source, key, _ROUTE_KEYS, required=("transport",))
        transport = schema.string(entry["transport"], source, f"{key}.transport", max_chars=64)
        endpoint = device.endpoint(transport)
        at = (_address(entry["address"], source, f"{key}.address") if "address" in entry
              else endpoint.address if endpoint is not None else device.address)
        if not at:
            raise ConfigError(source, key, f"no address: the device names no {transport} endpoint "
                                           "and no address")
        routes.append(CapabilityRoute(capability, transport, at))
    return tuple(sorted(routes, key=lambda r: r.capability))


def _address(value: object, source: str, key: str) -> str:
    """``host:port`` (``[v6]:port``), port 1-65535, at most 255 characters, no spaces."""
    if not isinstance(value, str) or len(value) > 255 or ":" not in value or any(c.isspace() for c in value):
        raise ConfigError(source, key, f"expected 'host:port', got {schema.shown(value)}")
    host, _, port = value.rpartition(":")
    if not host or not (port.isascii() and port.isdigit()) or not 1 <= int(port) <= 65535 or "\0" in host:
        problem = f"expected 'host:port' with a port from 1 to 65535, got {schema.shown(value)}"
        raise ConfigError(source, key, problem)
    return value


def _parse_tls(raw: Any, source: str, where: str, base_dir: Path) -> TlsConfig | None:
    if raw is None:
        return None
    tls = schema.mapping(raw, source, where)
    schema.check_keys(tls, source, where, _TLS_KEYS, required=("ca_cert",))
    if ("client_cert" in tls) != ("client_key" in tls):
        raise ConfigError(source, f"{where}.client_key", "client_cert and client_key go together")

    def path(key: str) -> Path:
        value = schema.string(tls[key], source, f"{where}.{key}")
        resolved = (base_dir / value) if not Path(value).is_absolute() else Path(value)
        if not resolved.is_file():
            raise ConfigError(source, f"{where}.{key}", f"no such file: {resolved}")
        return resolved

    server_name = tls.get("server_name")
    if server_name is not None:
        server_name = schema.string(server_name, source, f"{where}.server_name")
    client_cert = path("client_cert") if "client_cert" in tls else None
    client_key = path("client_key") if "client_key" in tls else None
    return TlsConfig(path("ca_cert"), client_cert, client_key, server_name)


def dump_devices(devices: Mapping[str, DeviceConfig]) -> dict[str, Any]:
    """The devices-file mapping for ``devices`` (inverse of parse_devices)."""
    out: dict[str, Any] = {}
    prefixes: dict[str, str] = {}
    for name, d in devices.items():
        prefixes.update(d.prefixes)
        entry: dict[str, Any] = {"kind": d.kind}
        if d.address:
            entry["address"] = d.address
        if d.transport != (AUTO if d.endpoints else "grpc"):
            entry["transport"] = d.transport
        for e in d.endpoints:
            entry[e.protocol] = _dump_endpoint(e)
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
        if d.routes:
            entry["capabilities"] = {
                r.capability: {"transport": r.transport, "address": r.address} for r in d.routes
            }
        out[name] = entry
    top: dict[str, Any] = {"version": 1}
    if prefixes:
        top["prefixes"] = prefixes
    top["devices"] = out
    return top


def _dump_endpoint(e: Endpoint) -> str | dict[str, Any]:
    entry: dict[str, Any] = {"address": e.address}
    if e.username is not None:
        entry["username"] = e.username
    if e.password is not None:
        entry["password"] = e.password
    if e.key_file is not None:
        entry["key_file"] = str(Path(e.key_file).resolve())
    if e.device_id != 1:
        entry["device_id"] = e.device_id
    if e.sample_interval_s is not None:
        entry["sample_interval_s"] = e.sample_interval_s
    if e.host_key is not None:
        entry["host_key"] = e.host_key
    return entry if len(entry) > 1 else e.address


def write_devices_file(path: str | Path, devices: Mapping[str, DeviceConfig]) -> None:
    """Write atomically (temp file + rename) so readers never see half a file; readable by its
    owner only when it holds a password (a NETCONF login)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    secret = any(e.password is not None for d in devices.values() for e in d.endpoints)
    tmp.touch(mode=0o600 if secret else 0o644)
    if secret:
        tmp.chmod(0o600)  # touch keeps the mode of a file left behind
    tmp.write_text(yaml.safe_dump(dump_devices(devices), sort_keys=False))
    tmp.replace(path)
