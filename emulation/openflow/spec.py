"""What an OpenFlow agent serves: which datapaths, of which kind, with which ports.

The spec is plain JSON so that the Mininet builder (another Python) and the agent share it::

    {"of_port": 6653,
     "blocks": [{"name": "b1", "dpid": 257, "uplinks": 8, "speed_gbps": 100,
                 "hosts": [{"name": "h1", "ip": "10.1.0.1", "mac": "02:..", "ofport": 1000}]}],
     "ocs": [{"name": "ocs1", "dpid": 513, "ports": 16, "sides": "split"}],
     "spines": [{"name": "s1", "dpid": 769, "uplinks": 8, "speed_gbps": 100}]}

Port numbering (the same for every agent and for the Mininet fabric):
  * OCS port ``k`` (0-based, as in the fabric wiring) is OpenFlow port ``k + 1``;
  * block uplink ``j`` (0-based, the block port of the wiring) is OpenFlow port ``j + 1``;
    a block's spine links follow its OCS uplinks (``uplinks`` counts both), and a spine
    switch's port ``q`` (numbered as :mod:`optimizer.spine` says) is OpenFlow port ``q + 1``;
  * a block's host ``h`` is OpenFlow port ``HOST_PORT_BASE + h``.
Block ``i`` (0-based, fabric order) owns the prefix ``10.<i+1>.0.0/16``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from emulation.standard import PROTOCOLS
from optimizer import schema
from optimizer.errors import ConfigError
from southbound.tls import CERTIFICATE, PRIVATE_KEY, ServerTlsConfig, TlsConfigError, read_pem

HOST_PORT_BASE = 1000


def ocs_ofport(port: int) -> int:
    return port + 1


def ocs_port_index(ofport: int) -> int:
    return ofport - 1


def uplink_ofport(port: int) -> int:
    return port + 1


def uplink_index(ofport: int) -> int:
    return ofport - 1


def block_prefix(block_index: int) -> tuple[str, str]:
    """(network, netmask) of the hosts of block ``block_index`` (0-based)."""
    return f"10.{block_index + 1}.0.0", "255.255.0.0"


@dataclass(frozen=True)
class HostSpec:
    name: str
    ip: str
    mac: str
    ofport: int


@dataclass(frozen=True)
class BlockSpec:
    name: str
    dpid: int
    uplinks: int
    speed_gbps: float
    hosts: tuple[HostSpec, ...] = ()
    #: OVS bridge name: select groups then go over its management socket as OpenFlow 1.5
    #: (with the dp_hash selection method); None: plain OpenFlow 1.3 group mods.
    bridge: str | None = None


@dataclass(frozen=True)
class OcsSpec:
    name: str
    dpid: int
    ports: int
    sides: str = "split"  # or "any"


@dataclass(frozen=True)
class AgentSpec:
    blocks: tuple[BlockSpec, ...]
    ocs: tuple[OcsSpec, ...]
    of_port: int = 6653
    of_host: str = "127.0.0.1"
    probe_interval_s: float = 0.5
    max_group_entries: int = 128
    table_capacity: int = 4096
    bucket_scheme: str = "replicated"
    #: how long an OCS's mirrors take to move: new circuits carry nothing until then
    ocs_switching_time_s: float = 0.0
    #: device name -> gRPC port to listen on (a restarted agent keeps its addresses)
    grpc_ports: tuple[tuple[str, int], ...] = ()
    #: a hybrid fabric's spine switches: bridges with no hosts, ``uplinks`` ports to blocks
    spines: tuple[BlockSpec, ...] = ()
    #: "native", or "standard": P4Runtime and gNMI beside it on every switch, NETCONF on every
    #: OCS (its password comes in the environment, NETCONF_PASSWORD_ENV, never in the spec)
    protocols: str = "native"
    #: OCS name -> NETCONF port to listen on (a restarted agent keeps its addresses)
    netconf_ports: tuple[tuple[str, int], ...] = ()
    #: the OCSes' SSH host key (a private key file): a restarted agent is the same device
    netconf_host_key_file: str = ""

    @property
    def spine_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.spines)
    #: the devices' gRPC over TLS (with client_ca: mutual TLS); None: plaintext on loopback
    tls: ServerTlsConfig | None = None

    @property
    def block_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.blocks)

    def to_json(self) -> dict[str, Any]:
        return {
            "of_port": self.of_port,
            "of_host": self.of_host,
            "probe_interval_s": self.probe_interval_s,
            "max_group_entries": self.max_group_entries,
            "table_capacity": self.table_capacity,
            "bucket_scheme": self.bucket_scheme,
            "ocs_switching_time_s": self.ocs_switching_time_s,
            "grpc_ports": dict(self.grpc_ports),
            "protocols": self.protocols,
            "netconf_ports": dict(self.netconf_ports),
            "netconf_host_key_file": self.netconf_host_key_file,
            "blocks": [
                {
                    "name": b.name,
                    "dpid": b.dpid,
                    "uplinks": b.uplinks,
                    "speed_gbps": b.speed_gbps,
                    "hosts": [asdict(h) for h in b.hosts],
                    "bridge": b.bridge,
                }
                for b in self.blocks
            ],
            "ocs": [asdict(o) for o in self.ocs],
            "spines": [
                {"name": s.name, "dpid": s.dpid, "uplinks": s.uplinks, "speed_gbps": s.speed_gbps,
                 "bridge": s.bridge}
                for s in self.spines
            ],
            **({"tls": _tls_json(self.tls)} if self.tls is not None else {}),
        }


def _tls_json(tls: ServerTlsConfig) -> dict[str, str]:
    out = {"cert": str(Path(tls.cert).resolve()), "key": str(Path(tls.key).resolve())}
    if tls.client_ca is not None:
        out["client_ca"] = str(Path(tls.client_ca).resolve())
    return out


BUCKET_SCHEMES = ("weighted", "replicated")
#: the environment variable carrying the OCSes' NETCONF password to the agent process
NETCONF_PASSWORD_ENV = "HELIOSTAT_NETCONF_PASSWORD"
OCS_SIDES = ("split", "any")
_TOP_KEYS = {
    "blocks",
    "ocs",
    "of_port",
    "of_host",
    "probe_interval_s",
    "max_group_entries",
    "table_capacity",
    "bucket_scheme",
    "ocs_switching_time_s",
    "grpc_ports",
    "protocols",
    "netconf_ports",
    "netconf_host_key_file",
    "spines",
    "tls",
}
_BLOCK_KEYS = {"name", "dpid", "uplinks", "speed_gbps", "hosts", "bridge"}
_HOST_KEYS = {"name", "ip", "mac", "ofport"}
_OCS_KEYS = {"name", "dpid", "ports", "sides"}


def spec_from_json(raw: Any, source: str = "<spec>") -> AgentSpec:
    """Validate a spec mapping; errors are :class:`~optimizer.errors.ConfigError` naming the key."""
    top = schema.mapping(raw, source, "")
    schema.check_keys(top, source, "", _TOP_KEYS, required=("blocks", "ocs"))
    blocks = tuple(
        _block(b, source, schema.join("blocks", i))
        for i, b in enumerate(schema.sequence(top["blocks"], source, "blocks"))
    )
    ocs = tuple(
        _ocs(o, source, schema.join("ocs", i))
        for i, o in enumerate(schema.sequence(top["ocs"], source, "ocs"))
    )
    spines = tuple(
        _block(s, source, schema.join("spines", i))
        for i, s in enumerate(schema.sequence(top.get("spines", []), source, "spines"))
    )
    for i, s in enumerate(spines):
        if s.hosts:
            where = schema.join(schema.join("spines", i), "hosts")
            raise ConfigError(source, where, "a spine switch has no hosts")
    scheme = top.get("bucket_scheme", "replicated")
    if scheme not in BUCKET_SCHEMES:
        raise ConfigError(
            source, "bucket_scheme", f"expected one of {', '.join(BUCKET_SCHEMES)}, got {scheme!r}"
        )
    specs: tuple[BlockSpec | OcsSpec, ...] = (*blocks, *ocs, *spines)
    dpids = [d.dpid for d in specs]
    if len(set(dpids)) != len(dpids):
        raise ConfigError(source, "dpid", "datapath ids must be unique")
    ports = schema.mapping(top.get("grpc_ports") or {}, source, "grpc_ports")
    netconf_ports = schema.mapping(top.get("netconf_ports") or {}, source, "netconf_ports")
    protocols = top.get("protocols", "native")
    if protocols not in PROTOCOLS:
        raise ConfigError(source, "protocols", f"expected one of {', '.join(PROTOCOLS)}, got {protocols!r}")
    return AgentSpec(
        blocks=blocks,
        ocs=ocs,
        of_port=schema.integer(top.get("of_port", 6653), source, "of_port", minimum=0),
        of_host=schema.string(top.get("of_host", "127.0.0.1"), source, "of_host"),
        probe_interval_s=schema.number(
            top.get("probe_interval_s", 0.5), source, "probe_interval_s", positive=True
        ),
        max_group_entries=schema.integer(
            top.get("max_group_entries", 128), source, "max_group_entries", minimum=1
        ),
        table_capacity=schema.integer(top.get("table_capacity", 4096), source, "table_capacity", minimum=1),
        bucket_scheme=scheme,
        ocs_switching_time_s=schema.number(
            top.get("ocs_switching_time_s", 0.0), source, "ocs_switching_time_s", minimum=0.0
        ),
        grpc_ports=tuple(
            sorted(
                (k, schema.integer(v, source, schema.join("grpc_ports", k), minimum=0))
                for k, v in ports.items()
            )
        ),
        spines=spines,
        tls=_tls(top.get("tls"), source),
        protocols=protocols,
        netconf_host_key_file=schema.string(top["netconf_host_key_file"], source, "netconf_host_key_file")
        if top.get("netconf_host_key_file") else "",
        netconf_ports=tuple(sorted(
            (k, schema.integer(v, source, schema.join("netconf_ports", k), minimum=0, maximum=65535))
            for k, v in netconf_ports.items()
        )),
    )


def _tls(raw: Any, source: str) -> ServerTlsConfig | None:
    if raw is None:
        return None
    tls = schema.mapping(raw, source, "tls")
    schema.check_keys(tls, source, "tls", ("cert", "key", "client_ca"), required=("cert", "key"))
    files = {}
    for name, kind in (("cert", CERTIFICATE), ("key", PRIVATE_KEY), ("client_ca", CERTIFICATE)):
        if tls.get(name) is None:
            continue
        path = Path(schema.string(tls[name], source, schema.join("tls", name)))
        try:
            read_pem(path, kind)
        except TlsConfigError as exc:
            raise ConfigError(source, schema.join("tls", name), str(exc)) from exc
        files[name] = path
    return ServerTlsConfig(files["cert"], files["key"], files.get("client_ca"))


def _block(raw: Any, source: str, key: str) -> BlockSpec:
    block = schema.mapping(raw, source, key)
    schema.check_keys(block, source, key, _BLOCK_KEYS, required=("name", "dpid", "uplinks"))
    hosts_key = schema.join(key, "hosts")
    hosts = schema.sequence(block.get("hosts", []), source, hosts_key)
    bridge = block.get("bridge")
    return BlockSpec(
        name=schema.string(block["name"], source, schema.join(key, "name")),
        dpid=schema.integer(block["dpid"], source, schema.join(key, "dpid"), minimum=1),
        uplinks=schema.integer(block["uplinks"], source, schema.join(key, "uplinks"), minimum=0),
        speed_gbps=schema.number(
            block.get("speed_gbps", 100.0), source, schema.join(key, "speed_gbps"), positive=True
        ),
        hosts=tuple(_host(h, source, schema.join(hosts_key, i)) for i, h in enumerate(hosts)),
        bridge=None if not bridge else schema.string(bridge, source, schema.join(key, "bridge")),
    )


def _host(raw: Any, source: str, key: str) -> HostSpec:
    host = schema.mapping(raw, source, key)
    schema.check_keys(host, source, key, _HOST_KEYS, required=_HOST_KEYS)
    return HostSpec(
        schema.string(host["name"], source, schema.join(key, "name")),
        schema.string(host["ip"], source, schema.join(key, "ip")),
        schema.string(host["mac"], source, schema.join(key, "mac")),
        schema.integer(host["ofport"], source, schema.join(key, "ofport"), minimum=1),
    )


def _ocs(raw: Any, source: str, key: str) -> OcsSpec:
    ocs = schema.mapping(raw, source, key)
    schema.check_keys(ocs, source, key, _OCS_KEYS, required=("name", "dpid", "ports"))
    sides = ocs.get("sides", "split")
    if sides not in OCS_SIDES:
        raise ConfigError(source, schema.join(key, "sides"), f"expected 'split' or 'any', got {sides!r}")
    return OcsSpec(
        schema.string(ocs["name"], source, schema.join(key, "name")),
        schema.integer(ocs["dpid"], source, schema.join(key, "dpid"), minimum=1),
        schema.integer(ocs["ports"], source, schema.join(key, "ports"), minimum=1),
        sides,
    )


def load_spec(path: str | Path) -> AgentSpec:
    return spec_from_json(schema.parse_json(schema.read_file(path), str(path)), str(path))
