"""Every conversion between the ``heliostat.southbound.v1`` messages and the plain types of
:mod:`southbound.types`, written once: the clients read replies with the ``*_from_proto``
functions, the device side (``emulation/servicers.py``) writes them with ``*_to_proto``.

A message that breaks a rule the types cannot hold (two groups for one destination, a next
hop named twice) raises :class:`MalformedMessage`; each side turns it into its own error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from southbound.grpc_native.pb import common_pb2, ocs_pb2, packet_switch_pb2
from southbound.types import (
    PORT_COUNTER_FIELDS,
    CrossConnect,
    CrossConnectTable,
    GroupTable,
    NextHopGroups,
    OcsEvent,
    OcsInfo,
    OcsPortStatus,
    PortCounters,
    SwitchCounters,
    SwitchInfo,
    SwitchPort,
)

pb = packet_switch_pb2
_Enum = TypeVar("_Enum", bound=int)  # a generated enum type (an int subclass in the stubs)

_UP, _DOWN = common_pb2.OPER_STATUS_UP, common_pb2.OPER_STATUS_DOWN
_SIDES = {ocs_pb2.OCS_SIDES_NORTH_SOUTH: "north_south", ocs_pb2.OCS_SIDES_ANY: "any"}
_PORT_SIDES = {ocs_pb2.PORT_SIDE_NORTH: "north", ocs_pb2.PORT_SIDE_SOUTH: "south"}
_ROLES = {pb.SWITCH_ROLE_SPINE: "spine"}
_SWITCHING, _ESTABLISHED = ocs_pb2.CROSS_CONNECT_STATE_SWITCHING, ocs_pb2.CROSS_CONNECT_STATE_ESTABLISHED
#: what the emulated devices say they are
EMULATOR_VENDOR, EMULATOR_VERSION = "heliostat-emulator", "1"


class MalformedMessage(ValueError):
    """A message that does not convert (the text says why)."""


def _inverse(table: Mapping[_Enum, str]) -> dict[str, _Enum]:
    return {v: k for k, v in table.items()}


# -- packet switch ------------------------------------------------------------------------


def switch_info_to_proto(info: SwitchInfo) -> pb.SwitchDeviceInfo:
    return pb.SwitchDeviceInfo(
        name=info.name, block=info.block, num_ports=info.num_ports, port_speed_gbps=info.port_speed_gbps,
        max_group_entries=info.max_group_entries, table_capacity=info.table_capacity,
        generation=info.generation, vendor=EMULATOR_VENDOR, software_version=EMULATOR_VERSION,
        role=pb.SWITCH_ROLE_SPINE if info.role == "spine" else pb.SWITCH_ROLE_BLOCK,
    )


def switch_info_from_proto(r: pb.SwitchDeviceInfo) -> SwitchInfo:
    return SwitchInfo(
        name=r.name, block=r.block, num_ports=r.num_ports, port_speed_gbps=r.port_speed_gbps,
        max_group_entries=r.max_group_entries, table_capacity=r.table_capacity,
        generation=r.generation, role=_ROLES.get(r.role, "block"),
    )


def port_to_proto(p: SwitchPort) -> pb.SwitchPort:
    message = pb.SwitchPort(port=p.port, oper_status=_UP if p.oper_up else _DOWN, drained=p.drained,
                            speed_gbps=p.speed_gbps)
    if p.peer_block is not None:
        message.peer.block, message.peer.port = p.peer_block, p.peer_port or 0
    return message


def port_from_proto(p: pb.SwitchPort) -> SwitchPort:
    peer = p.HasField("peer")
    return SwitchPort(
        port=p.port, oper_up=p.oper_status == _UP, drained=p.drained, speed_gbps=p.speed_gbps,
        peer_block=p.peer.block if peer else None, peer_port=p.peer.port if peer else None,
    )


def table_to_proto(table: Mapping[str, Mapping[str, int]]) -> list[pb.NextHopGroup]:
    """destination -> {via: weight} as groups, sorted by destination and next hop."""
    return [
        pb.NextHopGroup(
            destination_block=dest,
            next_hops=[pb.NextHop(via_block=v, weight=w) for v, w in sorted(hops.items())],
        )
        for dest, hops in sorted(table.items())
    ]


def table_from_proto(groups: Iterable[pb.NextHopGroup]) -> GroupTable:
    """Groups as destination -> {via: weight}; a destination or next hop named twice is
    MalformedMessage."""
    table: GroupTable = {}
    for g in groups:
        if g.destination_block in table:
            raise MalformedMessage(f"two groups for {g.destination_block!r}")
        group: dict[str, int] = {}
        for hop in g.next_hops:
            if hop.via_block in group:
                raise MalformedMessage(f"group for {g.destination_block!r} names {hop.via_block!r} twice")
            group[hop.via_block] = hop.weight
        table[g.destination_block] = group
    return table


def groups_to_proto(groups: NextHopGroups) -> pb.NextHopGroups:
    return pb.NextHopGroups(generation=groups.generation, source=table_to_proto(groups.source),
                            transit=table_to_proto(groups.transit), entries_used=groups.entries_used)


def groups_from_proto(r: pb.NextHopGroups) -> NextHopGroups:
    return NextHopGroups(generation=r.generation, source=table_from_proto(r.source),
                         transit=table_from_proto(r.transit), entries_used=r.entries_used)


def counters_to_proto(c: SwitchCounters) -> pb.SwitchCounters:
    return pb.SwitchCounters(
        time_s=c.time_s,
        ports=[pb.PortCounters(port=p.port, **{f: getattr(p, f) for f in PORT_COUNTER_FIELDS})
               for _, p in sorted(c.ports.items())],
        destinations=[pb.DestinationCounter(destination_block=b, egress_bytes=v)
                      for b, v in c.egress_bytes.items()],
        no_route_drops=c.no_route_drops,
    )


def counters_from_proto(r: pb.SwitchCounters) -> SwitchCounters:
    return SwitchCounters(
        time_s=r.time_s,
        ports={c.port: PortCounters(port=c.port, **{f: getattr(c, f) for f in PORT_COUNTER_FIELDS})
               for c in r.ports},
        egress_bytes={d.destination_block: d.egress_bytes for d in r.destinations},
        no_route_drops=r.no_route_drops,
    )


# -- optical circuit switch ----------------------------------------------------------------


def ocs_info_to_proto(info: OcsInfo) -> ocs_pb2.OcsDeviceInfo:
    return ocs_pb2.OcsDeviceInfo(
        name=info.name, radix=info.radix,
        sides=_inverse(_SIDES).get(info.sides, ocs_pb2.OCS_SIDES_UNSPECIFIED),
        north_ports=info.north_ports, south_ports=info.south_ports, generation=info.generation,
        switching_time_ms=round(info.switching_time_s * 1000), powered=info.powered,
        vendor=EMULATOR_VENDOR, software_version=EMULATOR_VERSION,
    )


def ocs_info_from_proto(r: ocs_pb2.OcsDeviceInfo) -> OcsInfo:
    return OcsInfo(
        name=r.name, radix=r.radix, sides=_SIDES.get(r.sides, "unspecified"),
        north_ports=tuple(r.north_ports), south_ports=tuple(r.south_ports), generation=r.generation,
        switching_time_s=r.switching_time_ms / 1000.0, powered=r.powered,
    )


def cross_connect_to_proto(
    c: CrossConnect, state: ocs_pb2.CrossConnectState = ocs_pb2.CROSS_CONNECT_STATE_UNSPECIFIED
) -> ocs_pb2.CrossConnect:
    """The ports (and ``state``, a CrossConnectState; unset in requests and events)."""
    return ocs_pb2.CrossConnect(port_a=c.a, port_b=c.b, state=state)


def cross_connect_from_proto(c: ocs_pb2.CrossConnect) -> CrossConnect:
    return CrossConnect(c.port_a, c.port_b)


def cross_connects_to_proto(table: CrossConnectTable) -> ocs_pb2.ListCrossConnectsResponse:
    return ocs_pb2.ListCrossConnectsResponse(
        generation=table.generation,
        cross_connects=[
            cross_connect_to_proto(c, _SWITCHING if c in table.switching else _ESTABLISHED)
            for c in sorted(table.cross_connects)
        ],
    )


def cross_connects_from_proto(r: ocs_pb2.ListCrossConnectsResponse) -> CrossConnectTable:
    connects = [cross_connect_from_proto(c) for c in r.cross_connects]
    switching = [cross_connect_from_proto(c) for c in r.cross_connects if c.state == _SWITCHING]
    return CrossConnectTable(r.generation, frozenset(connects), frozenset(switching))


def port_status_to_proto(s: OcsPortStatus) -> ocs_pb2.OcsPortStatus:
    message = ocs_pb2.OcsPortStatus(
        port=s.port, side=_inverse(_PORT_SIDES).get(s.side, ocs_pb2.PORT_SIDE_UNSPECIFIED),
        oper_status=_UP if s.oper_up else _DOWN,
        rx_power_dbm=s.rx_power_dbm, tx_power_dbm=s.tx_power_dbm,
    )
    if s.connected_port is not None:
        message.connected_port = s.connected_port
    return message


def port_status_from_proto(p: ocs_pb2.OcsPortStatus) -> OcsPortStatus:
    return OcsPortStatus(
        port=p.port, side=_PORT_SIDES.get(p.side, "any"), oper_up=p.oper_status == _UP,
        rx_power_dbm=p.rx_power_dbm, tx_power_dbm=p.tx_power_dbm,
        connected_port=p.connected_port if p.HasField("connected_port") else None,
    )


def event_to_proto(event: OcsEvent) -> ocs_pb2.OcsEvent:
    message = ocs_pb2.OcsEvent(sequence=event.sequence, time_s=event.time_s, generation=event.generation)
    connect = cross_connect_to_proto(event.cross_connect) if event.cross_connect else None
    if event.kind == "circuit_up":
        message.circuit_up.cross_connect.CopyFrom(connect)
    elif event.kind == "circuit_down":
        message.circuit_down.cross_connect.CopyFrom(connect)
        message.circuit_down.reason = event.reason
    elif event.kind == "power_loss":
        message.power_loss.circuits_lost = event.circuits_lost
    elif event.kind == "power_restored":
        message.power_restored.SetInParent()
    return message


def event_from_proto(message: ocs_pb2.OcsEvent) -> OcsEvent:
    kind = message.WhichOneof("event") or "unknown"
    connect = None
    if kind in ("circuit_up", "circuit_down"):
        connect = cross_connect_from_proto(getattr(message, kind).cross_connect)
    return OcsEvent(
        sequence=message.sequence, time_s=message.time_s, generation=message.generation, kind=kind,
        cross_connect=connect,
        reason=message.circuit_down.reason if kind == "circuit_down" else "",
        circuits_lost=message.power_loss.circuits_lost if kind == "power_loss" else 0,
    )
