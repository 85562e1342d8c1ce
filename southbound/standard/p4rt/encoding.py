"""Heliostat's next-hop groups as sai_subset table entries, and back.

One switch's state, as entries:

- ``vrf_table``: the VRFs ``heliostat-source`` (traffic this block originates) and
  ``heliostat-transit`` (traffic it relays), and the generation marker
  ``heliostat-gen-<N>`` whose ``metadata`` keeps the answers to recent request ids;
- per next-hop node P (a peer block or spine): ``router_interface_table`` ``rif-P`` on port
  ``trunk-P`` (the switch's trunk to P), ``neighbor_table`` (``rif-P``, ``nbr-P``),
  ``nexthop_table`` ``nh-P``;
- per group: ``wcmp_group_table`` ``src-D`` / ``tr-D``, a one-shot action set of
  ``set_nexthop_id(nh-P)`` with P's weight, and ``ipv4_table`` (VRF, D's prefix) ->
  ``set_wcmp_group_id``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from southbound.standard.p4rt.entries import EncodingError, Entry, Key, Value, entry, from_proto, to_proto
from southbound.standard.p4rt.program import Program
from southbound.standard.pb import p4runtime_pb2

pb = p4runtime_pb2

SOURCE_VRF = "heliostat-source"
TRANSIT_VRF = "heliostat-transit"
MARKER_PREFIX = "heliostat-gen-"
#: how many answered request ids the marker remembers
HISTORY = 32
#: the generation of a switch that carries no marker (as a fresh native switch)
INITIAL_GENERATION = 1
#: tables in the order a batch creates them (deletes go in reverse)
DEPENDENCY_ORDER = ("vrf_table", "router_interface_table", "neighbor_table", "nexthop_table",
                    "wcmp_group_table", "ipv4_table")

GroupTable = dict[str, dict[str, int]]


class DecodeError(ValueError):
    """The switch's entries do not form Heliostat's groups (a dangling reference...)."""


def mac_of(name: str) -> int:
    """A stable, locally administered MAC for a name."""
    digest = hashlib.sha256(name.encode()).digest()
    return int.from_bytes(bytes([0x02]) + digest[:5], "big")


def port_of(node: str) -> str:
    return f"trunk-{node}"


def node_of_port(port: str) -> str | None:
    return port[len("trunk-"):] if port.startswith("trunk-") else None


def group_id(vrf: str, dest: str) -> str:
    return f"{'src' if vrf == SOURCE_VRF else 'tr'}-{dest}"


@dataclass(frozen=True)
class Answer:
    """A remembered answer: request ``request_id`` at ``expected`` made ``generation``."""

    request_id: str
    expected: int
    digest: str
    generation: int
    entries_used: int


def marker(generation: int, history: Iterable[Answer]) -> Entry:
    kept = list(history)[-HISTORY:]
    data = json.dumps([[a.request_id, a.expected, a.digest, a.generation, a.entries_used] for a in kept],
                      separators=(",", ":")).encode()
    return entry("vrf_table", {"vrf_id": f"{MARKER_PREFIX}{generation}"}, "NoAction", metadata=data)


def read_marker(entries: Iterable[Entry]) -> tuple[int, list[Answer], Entry | None]:
    """(generation, remembered answers, the marker entry) of a switch's entries."""
    best: tuple[int, Entry] | None = None
    for e in entries:
        vrf = e.field("vrf_id")
        if e.table == "vrf_table" and isinstance(vrf, str) and vrf.startswith(MARKER_PREFIX):
            text = vrf[len(MARKER_PREFIX):]
            if text.isdigit() and (best is None or int(text) > best[0]):
                best = (int(text), e)
    if best is None:
        return INITIAL_GENERATION, [], None
    try:
        rows = json.loads(best[1].metadata.decode() or "[]")
        history = [Answer(str(r[0]), int(r[1]), str(r[2]), int(r[3]), int(r[4])) for r in rows]
    except (ValueError, TypeError, IndexError):
        history = []  # a marker another tool rewrote: no replays, the generation still holds
    return best[0], history, best[1]


def encode(source: Mapping[str, Mapping[str, int]], transit: Mapping[str, Mapping[str, int]],
           prefixes: Mapping[str, str]) -> dict[Key, Entry]:
    """Every entry (but the marker) of a switch holding these groups, by key. Zero weights
    are dropped; a group left empty is sent empty (the switch refuses it)."""
    out: list[Entry] = [entry("vrf_table", {"vrf_id": v}, "NoAction") for v in (SOURCE_VRF, TRANSIT_VRF)]
    peers: set[str] = set()
    for vrf, table in ((SOURCE_VRF, source), (TRANSIT_VRF, transit)):
        for dest, hops in table.items():
            gid = group_id(vrf, dest)
            members = tuple(("set_nexthop_id", (("nexthop_id", f"nh-{via}"),), int(w))
                            for via, w in sorted(hops.items()) if w)
            peers.update(via for via, w in hops.items() if w)
            out.append(entry("wcmp_group_table", {"wcmp_group_id": gid}, members=members))
            out.append(entry("ipv4_table", {"vrf_id": vrf, "ipv4_dst": prefixes[dest]},
                             "set_wcmp_group_id", {"wcmp_group_id": gid}))
    for p in sorted(peers):
        out.append(entry("router_interface_table", {"router_interface_id": f"rif-{p}"},
                         "set_port_and_src_mac", {"port": port_of(p), "src_mac": mac_of(f"rif-{p}")}))
        out.append(entry("neighbor_table", {"router_interface_id": f"rif-{p}", "neighbor_id": f"nbr-{p}"},
                         "set_dst_mac", {"dst_mac": mac_of(f"nbr-{p}")}))
        out.append(entry("nexthop_table", {"nexthop_id": f"nh-{p}"}, "set_ip_nexthop",
                         {"router_interface_id": f"rif-{p}", "neighbor_id": f"nbr-{p}"}))
    return {e.key: e for e in out}


def _key(table: str, name: str, value: Value | None) -> Key:
    return table, ((name, value if value is not None else ""),)


def next_hop_node(nexthop: str, by_key: Mapping[Key, Entry]) -> str:
    """The node a next hop leads to: nexthop -> router interface -> its port ``trunk-P``."""
    nh = by_key.get(_key("nexthop_table", "nexthop_id", nexthop))
    if nh is None:
        raise DecodeError(f"next hop {nexthop!r} is not in nexthop_table")
    rif = nh.param("router_interface_id")
    ri = by_key.get(_key("router_interface_table", "router_interface_id", rif))
    if ri is None:
        raise DecodeError(f"next hop {nexthop!r}: router interface {rif!r} is not in router_interface_table")
    node = node_of_port(str(ri.param("port")))
    if node is None:
        raise DecodeError(f"router interface {rif!r}: port {ri.param('port')!r} is not a trunk-<node> port")
    return node


def decode(entries: Iterable[Entry], prefixes: Mapping[str, str]) -> tuple[GroupTable, GroupTable]:
    """(source, transit) groups of the ipv4 routes in Heliostat's VRFs; other VRFs are ignored."""
    by_key = {e.key: e for e in entries}
    block_of = {str(ipaddress.IPv4Network(p)): b for b, p in prefixes.items()}
    tables: dict[str, GroupTable] = {SOURCE_VRF: {}, TRANSIT_VRF: {}}
    for e in by_key.values():
        vrf = e.field("vrf_id")
        if e.table != "ipv4_table" or vrf not in tables:
            continue
        dest = block_of.get(str(e.field("ipv4_dst")))
        if dest is None:
            raise DecodeError(f"route {e.field('ipv4_dst')} in {vrf}: no block has this prefix")
        group: dict[str, int] = {}
        if e.action == "set_nexthop_id":
            group[next_hop_node(str(e.param("nexthop_id")), by_key)] = 1
        elif e.action == "set_wcmp_group_id":
            gid = e.param("wcmp_group_id")
            g = by_key.get(_key("wcmp_group_table", "wcmp_group_id", gid))
            if g is None:
                raise DecodeError(f"route to {dest} in {vrf}: WCMP group {gid!r} is not in wcmp_group_table")
            for _, params, weight in g.members:
                node = next_hop_node(str(dict(params)["nexthop_id"]), by_key)
                group[node] = group.get(node, 0) + weight
        else:
            raise DecodeError(f"route to {dest} in {vrf}: action {e.action or 'none'} is not a group")
        tables[str(vrf)][dest] = group
    return tables[SOURCE_VRF], tables[TRANSIT_VRF]


def entries_used(source: Mapping[str, Mapping[str, int]], transit: Mapping[str, Mapping[str, int]]) -> int:
    return sum(sum(g.values()) for t in (source, transit) for g in t.values())


def owned(e: Entry) -> bool:
    """Whether Heliostat manages this entry (and may delete it when no group needs it)."""
    vrf = e.field("vrf_id")
    if e.table == "vrf_table":
        return isinstance(vrf, str) and (vrf in (SOURCE_VRF, TRANSIT_VRF) or vrf.startswith(MARKER_PREFIX))
    if e.table == "ipv4_table":
        return vrf in (SOURCE_VRF, TRANSIT_VRF)
    key = str(e.match[0][1]) if e.match else ""
    return key.startswith(("src-", "tr-", "rif-", "nbr-", "nh-"))


def is_marker(program: Program, update: p4runtime_pb2.Update) -> bool:
    try:
        e = from_proto(program, update.entity.table_entry)
    except EncodingError:
        return False
    vrf = e.field("vrf_id")
    return e.table == "vrf_table" and isinstance(vrf, str) and vrf.startswith(MARKER_PREFIX)


def describe(program: Program, update: p4runtime_pb2.Update) -> str:
    """The entity an update names, as an operator reads it: ``INSERT wcmp_group_table src-b``."""
    kind = pb.Update.Type.Name(update.type)
    try:
        e = from_proto(program, update.entity.table_entry)
    except EncodingError:
        return f"{kind} of an entity"
    return f"{kind} {e.table} {' '.join(str(v) for _, v in e.match)}"


def merged(old: GroupTable, new: Mapping[str, Mapping[str, int]],
            delete: list[str]) -> dict[str, Any]:
    merged: dict[str, Any] = {d: dict(g) for d, g in old.items()}
    for dest in delete:
        merged.pop(dest, None)
    merged.update({d: dict(g) for d, g in new.items()})
    return merged


def diff(program: Program, current: Mapping[Key, Entry],
         wanted: Mapping[Key, Entry]) -> list[p4runtime_pb2.Update]:
    """The updates taking ``current`` to ``wanted``: insertions and modifications in dependency
    order (referenced before referencing), then deletions in reverse."""
    rank = {t: i for i, t in enumerate(DEPENDENCY_ORDER)}
    out = []
    for key, e in sorted(wanted.items(), key=lambda item: rank.get(item[1].table, len(rank))):
        old = current.get(key)
        if old is None or not old.same_key_and_action(e):
            kind = pb.Update.INSERT if old is None else pb.Update.MODIFY
            out.append(pb.Update(type=kind, entity=pb.Entity(table_entry=to_proto(program, e))))
    for key, e in sorted(current.items(), key=lambda item: -rank.get(item[1].table, len(rank))):
        if key not in wanted:
            out.append(pb.Update(type=pb.Update.DELETE, entity=pb.Entity(table_entry=to_proto(program, e))))
    return out
