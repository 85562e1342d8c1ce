"""What an OpenFlow agent serves: which datapaths, of which kind, with which ports.

The spec is plain JSON so that the Mininet builder (another Python) and the agent share it::

    {"of_port": 6653,
     "blocks": [{"name": "b1", "dpid": 257, "uplinks": 8, "speed_gbps": 100,
                 "hosts": [{"name": "h1", "ip": "10.1.0.1", "mac": "02:..", "ofport": 1000}]}],
     "ocs": [{"name": "ocs1", "dpid": 513, "ports": 16, "sides": "split"}]}

Port numbering (the same for every agent and for the Mininet fabric):
  * OCS port ``k`` (0-based, as in the fabric wiring) is OpenFlow port ``k + 1``;
  * block uplink ``j`` (0-based, the block port of the wiring) is OpenFlow port ``j + 1``;
  * a block's host ``h`` is OpenFlow port ``HOST_PORT_BASE + h``.
Block ``i`` (0-based, fabric order) owns the prefix ``10.<i+1>.0.0/16``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOST_PORT_BASE = 1000


class SpecError(ValueError):
    """The agent spec is invalid; the message names the key."""


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
            "blocks": [
                {
                    "name": b.name,
                    "dpid": b.dpid,
                    "uplinks": b.uplinks,
                    "speed_gbps": b.speed_gbps,
                    "hosts": [vars(h) for h in b.hosts],
                    "bridge": b.bridge,
                }
                for b in self.blocks
            ],
            "ocs": [vars(o) for o in self.ocs],
        }


BUCKET_SCHEMES = ("weighted", "replicated")


def spec_from_json(raw: Any, source: str = "<spec>") -> AgentSpec:
    def fail(key: str, message: str) -> SpecError:
        return SpecError(f"{source}: {key}: {message}")

    if not isinstance(raw, dict):
        raise fail("<top>", "expected a mapping")
    try:
        blocks = tuple(
            BlockSpec(
                name=str(b["name"]),
                dpid=int(b["dpid"]),
                uplinks=int(b["uplinks"]),
                speed_gbps=float(b.get("speed_gbps", 100.0)),
                hosts=tuple(HostSpec(str(h["name"]), str(h["ip"]), str(h["mac"]), int(h["ofport"]))
                            for h in b.get("hosts", ())),
                bridge=str(b["bridge"]) if b.get("bridge") else None,
            )
            for b in raw.get("blocks", ())
        )
        ocs = tuple(
            OcsSpec(str(o["name"]), int(o["dpid"]), int(o["ports"]), str(o.get("sides", "split")))
            for o in raw.get("ocs", ())
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise fail("blocks/ocs", f"malformed entry: {exc!r}") from exc
    scheme = raw.get("bucket_scheme", "replicated")
    if scheme not in BUCKET_SCHEMES:
        raise fail("bucket_scheme", f"must be one of {', '.join(BUCKET_SCHEMES)}, got {scheme!r}")
    dpids = [d.dpid for d in (*blocks, *ocs)]
    if len(set(dpids)) != len(dpids):
        raise fail("dpid", "datapath ids must be unique")
    for o in ocs:
        if o.sides not in ("split", "any"):
            raise fail(f"ocs.{o.name}.sides", f"must be 'split' or 'any', got {o.sides!r}")
    return AgentSpec(
        blocks=blocks,
        ocs=ocs,
        of_port=int(raw.get("of_port", 6653)),
        of_host=str(raw.get("of_host", "127.0.0.1")),
        probe_interval_s=float(raw.get("probe_interval_s", 0.5)),
        max_group_entries=int(raw.get("max_group_entries", 128)),
        table_capacity=int(raw.get("table_capacity", 4096)),
        bucket_scheme=scheme,
        ocs_switching_time_s=_non_negative(raw.get("ocs_switching_time_s", 0.0), fail),
        grpc_ports=tuple(sorted((str(k), int(v)) for k, v in (raw.get("grpc_ports") or {}).items())),
    )


def _non_negative(value: Any, fail: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise fail("ocs_switching_time_s", f"expected a number >= 0, got {value!r}")
    return float(value)


def load_spec(path: str | Path) -> AgentSpec:
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SpecError(f"{path}: cannot read the agent spec: {exc}") from exc
    return spec_from_json(raw, str(path))
