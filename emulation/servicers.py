"""gRPC servicers that serve the emulated devices' state over the southbound API."""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import grpc

from emulation.admission.fencing import EpochFence, StaleEpoch
from emulation.admission.limits import MAX_STREAM_S, StreamGate, check_count, stream_capacity
from emulation.errors import DeviceRefusal, MalformedRequest
from emulation.ocs_device import OcsDevice
from emulation.switch_device import BlockSwitch
from southbound.grpc_native.pb import (
    common_pb2,
    ocs_pb2,
    ocs_pb2_grpc,
    packet_switch_pb2,
    packet_switch_pb2_grpc,
)
from southbound.grpc_native.status import EPOCH_METADATA_KEY, GENERATION_METADATA_KEY
from southbound.types import OcsEvent

log = logging.getLogger(__name__)

T = TypeVar("T")

_UP, _DOWN = common_pb2.OPER_STATUS_UP, common_pb2.OPER_STATUS_DOWN
_SIDE = {"north": ocs_pb2.PORT_SIDE_NORTH, "south": ocs_pb2.PORT_SIDE_SOUTH, "any": 0}
_EVENT_POLL_S = 0.1


def _serve(context: grpc.ServicerContext, action: Callable[[], T]) -> T:
    """Run ``action``; a DeviceRefusal becomes its status code (and the generation)."""
    try:
        return action()
    except DeviceRefusal as refusal:
        if isinstance(refusal, StaleEpoch):
            context.set_trailing_metadata(((EPOCH_METADATA_KEY, str(refusal.highest_epoch)),))
        elif refusal.generation is not None:
            context.set_trailing_metadata(((GENERATION_METADATA_KEY, str(refusal.generation)),))
        context.abort(refusal.code, refusal.message)
        raise  # context.abort raises; this keeps type checkers content


class OcsServicer(ocs_pb2_grpc.OcsServiceServicer):
    def __init__(self, device: OcsDevice, streams: StreamGate | None = None) -> None:
        self.device = device
        self.fence = EpochFence(device.name)
        self.streams = streams or StreamGate(stream_capacity(8))

    def GetDeviceInfo(self, request: Any, context: grpc.ServicerContext) -> ocs_pb2.OcsDeviceInfo:
        d = self.device
        half = d.radix // 2
        split = d.sides == "split"
        return ocs_pb2.OcsDeviceInfo(
            name=d.name,
            radix=d.radix,
            sides=ocs_pb2.OCS_SIDES_NORTH_SOUTH if split else ocs_pb2.OCS_SIDES_ANY,
            north_ports=range(half) if split else [],
            south_ports=range(half, d.radix) if split else [],
            generation=d.generation,
            switching_time_ms=round(d.switching_time_s * 1000),
            powered=d.powered,
            vendor="heliostat-emulator",
            software_version="1",
        )

    def ListCrossConnects(self, request: Any, context: grpc.ServicerContext) -> Any:
        generation, items = self.device.cross_connects()
        return ocs_pb2.ListCrossConnectsResponse(
            generation=generation,
            cross_connects=[
                ocs_pb2.CrossConnect(
                    port_a=c.a,
                    port_b=c.b,
                    state=ocs_pb2.CROSS_CONNECT_STATE_SWITCHING
                    if switching
                    else ocs_pb2.CROSS_CONNECT_STATE_ESTABLISHED,
                )
                for c, switching in items
            ],
        )

    def ApplyCrossConnects(self, request: Any, context: grpc.ServicerContext) -> Any:
        def apply() -> tuple[int, bool]:
            check_count("cross-connects", len(request.add) + len(request.remove), self.device.radix)
            self.fence.admit(request.epoch)
            return self.device.apply(
                request.request_id,
                request.expected_generation,
                [(c.port_a, c.port_b) for c in request.remove],
                [(c.port_a, c.port_b) for c in request.add],
            )

        generation, replayed = _serve(context, apply)
        return ocs_pb2.ApplyCrossConnectsResponse(generation=generation, replayed=replayed)

    def GetPortStatus(self, request: Any, context: grpc.ServicerContext) -> Any:
        def read() -> list[dict[str, Any]]:
            check_count("ports", len(request.ports), self.device.radix)
            return self.device.port_status(list(request.ports))

        status = _serve(context, read)
        ports = []
        for s in status:
            message = ocs_pb2.OcsPortStatus(
                port=s["port"],
                side=_SIDE[s["side"]],
                oper_status=_UP if s["oper_up"] else _DOWN,
                rx_power_dbm=s["rx_power_dbm"],
                tx_power_dbm=s["tx_power_dbm"],
            )
            if s["connected_port"] is not None:
                message.connected_port = s["connected_port"]
            ports.append(message)
        return ocs_pb2.GetPortStatusResponse(generation=self.device.generation, ports=ports)

    def StreamEvents(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        """Events until the client goes away or :data:`MAX_STREAM_S` passes (it opens a new
        stream then); each stream holds a worker thread, so the gate bounds them."""
        with self.streams.admit(context):
            events = self.device.subscribe()
            ends = time.monotonic() + MAX_STREAM_S
            try:
                while context.is_active() and time.monotonic() < ends:
                    try:
                        event = events.get(timeout=_EVENT_POLL_S)
                    except queue.Empty:
                        continue
                    yield event_to_proto(event)
            finally:
                self.device.unsubscribe(events)


def event_to_proto(event: OcsEvent) -> ocs_pb2.OcsEvent:
    message = ocs_pb2.OcsEvent(
        sequence=event.sequence, time_s=event.time_s, generation=event.generation
    )
    connect = (
        ocs_pb2.CrossConnect(port_a=event.cross_connect.a, port_b=event.cross_connect.b)
        if event.cross_connect
        else None
    )
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


pb = packet_switch_pb2


class PacketSwitchServicer(packet_switch_pb2_grpc.PacketSwitchServiceServicer):
    def __init__(self, device: BlockSwitch) -> None:
        self.device = device
        self.fence = EpochFence(device.name)

    def GetDeviceInfo(self, request: Any, context: grpc.ServicerContext) -> Any:
        d = self.device
        return pb.SwitchDeviceInfo(
            name=d.name,
            block=d.block,
            num_ports=d.num_ports,
            port_speed_gbps=d.speed_gbps,
            max_group_entries=d.max_group_entries,
            table_capacity=d.table_capacity,
            generation=d.generation,
            vendor="heliostat-emulator",
            software_version="1",
            role=pb.SWITCH_ROLE_SPINE if d.role == "spine" else pb.SWITCH_ROLE_BLOCK,
        )

    def ListPorts(self, request: Any, context: grpc.ServicerContext) -> Any:
        ports = []
        for p in self.device.ports():
            message = pb.SwitchPort(
                port=p["port"],
                oper_status=_UP if p["oper_up"] else _DOWN,
                drained=p["drained"],
                speed_gbps=p["speed_gbps"],
            )
            if p["peer"] is not None:
                message.peer.block, message.peer.port = p["peer"]
            ports.append(message)
        return pb.ListPortsResponse(ports=ports)

    def GetNextHopGroups(self, request: Any, context: grpc.ServicerContext) -> Any:
        generation, source, transit, used = self.device.groups()
        return pb.NextHopGroups(
            generation=generation,
            source=_groups_to_proto(source),
            transit=_groups_to_proto(transit),
            entries_used=used,
        )

    def SetNextHopGroups(self, request: Any, context: grpc.ServicerContext) -> Any:
        def apply() -> tuple[int, bool, int]:
            nodes = len(self.device.nodes)
            for what, items in (("source groups", request.source), ("transit groups", request.transit),
                                ("delete_source", request.delete_source),
                                ("delete_transit", request.delete_transit)):
                check_count(what, len(items), nodes)
            for g in (*request.source, *request.transit):
                check_count(f"next hops for {g.destination_block[:64]!r}", len(g.next_hops), nodes)
            self.fence.admit(request.epoch)
            return self.device.set_groups(
                request.request_id,
                request.expected_generation,
                _groups_from_proto(request.source, self.device.name),
                _groups_from_proto(request.transit, self.device.name),
                replace=request.replace,
                delete_source=list(request.delete_source),
                delete_transit=list(request.delete_transit),
            )

        generation, replayed, used = _serve(context, apply)
        return pb.SetNextHopGroupsResponse(
            generation=generation, replayed=replayed, entries_used=used
        )

    def DrainPorts(self, request: Any, context: grpc.ServicerContext) -> Any:
        def drain() -> list[int]:
            check_count("ports", len(request.ports), self.device.num_ports)
            self.fence.admit(request.epoch)
            return self.device.drain(list(request.ports))

        return pb.DrainPortsResponse(drained_ports=_serve(context, drain))

    def UndrainPorts(self, request: Any, context: grpc.ServicerContext) -> Any:
        def undrain() -> list[int]:
            check_count("ports", len(request.ports), self.device.num_ports)
            self.fence.admit(request.epoch)
            return self.device.undrain(list(request.ports))

        return pb.DrainPortsResponse(drained_ports=_serve(context, undrain))

    def GetCounters(self, request: Any, context: grpc.ServicerContext) -> Any:
        c = self.device.counters()
        fields = ("tx_bytes", "rx_bytes", "tx_packets", "rx_packets", "tx_drops", "rx_drops",
                  "tx_drop_bytes", "rx_drop_bytes")
        columns = [c[f].tolist() for f in fields]  # type: ignore[attr-defined]
        ports = [
            pb.PortCounters(port=port, **dict(zip(fields, row, strict=True)))
            for port, row in enumerate(zip(*columns, strict=True))
        ]
        return pb.SwitchCounters(
            time_s=c["time_s"],
            ports=ports,
            destinations=[
                pb.DestinationCounter(destination_block=b, egress_bytes=v)
                for b, v in c["egress"].items()  # type: ignore[attr-defined]
            ],
            no_route_drops=c["no_route_drops"],
        )


def _groups_to_proto(table: dict[str, dict[str, int]]) -> list[Any]:
    return [
        pb.NextHopGroup(
            destination_block=d,
            next_hops=[pb.NextHop(via_block=v, weight=w) for v, w in sorted(g.items())],
        )
        for d, g in sorted(table.items())
    ]


def _groups_from_proto(groups: Any, device: str) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for g in groups:
        if g.destination_block in table:
            raise MalformedRequest(f"two groups for {g.destination_block!r}")
        group: dict[str, int] = {}
        for hop in g.next_hops:
            if hop.via_block in group:
                raise MalformedRequest(
                    f"group for {g.destination_block!r} names {hop.via_block!r} twice"
                )
            group[hop.via_block] = hop.weight
        table[g.destination_block] = group
    return table
