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
from emulation.counters import switch_counters
from emulation.errors import DeviceRefusal, MalformedRequest
from emulation.ocs_device import ServedOcs
from emulation.switch_device import ServedSwitch
from southbound.grpc_native import convert
from southbound.grpc_native.pb import (
    ocs_pb2,
    ocs_pb2_grpc,
    packet_switch_pb2,
    packet_switch_pb2_grpc,
)
from southbound.grpc_native.status import EPOCH_METADATA_KEY, GENERATION_METADATA_KEY
from southbound.types import (
    CrossConnectTable,
    NextHopGroups,
    OcsInfo,
    OcsPortStatus,
    SwitchInfo,
    SwitchPort,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

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
    def __init__(self, device: ServedOcs, streams: StreamGate | None = None) -> None:
        self.device = device
        self.fence = EpochFence(device.name)
        self.streams = streams or StreamGate(stream_capacity(8))

    def GetDeviceInfo(self, request: Any, context: grpc.ServicerContext) -> ocs_pb2.OcsDeviceInfo:
        d = self.device
        half = d.radix // 2
        split = d.sides == "split"
        return convert.ocs_info_to_proto(OcsInfo(
            name=d.name,
            radix=d.radix,
            sides="north_south" if split else "any",
            north_ports=tuple(range(half)) if split else (),
            south_ports=tuple(range(half, d.radix)) if split else (),
            generation=d.generation,
            switching_time_s=d.switching_time_s,
            powered=d.powered,
        ))

    def ListCrossConnects(self, request: Any, context: grpc.ServicerContext) -> Any:
        generation, items = self.device.cross_connects()
        table = CrossConnectTable(generation, frozenset(c for c, _ in items),
                                  frozenset(c for c, switching in items if switching))
        return convert.cross_connects_to_proto(table)

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

        ports = [convert.port_status_to_proto(OcsPortStatus(**s)) for s in _serve(context, read)]
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
                    yield convert.event_to_proto(event)
            finally:
                self.device.unsubscribe(events)


pb = packet_switch_pb2


class PacketSwitchServicer(packet_switch_pb2_grpc.PacketSwitchServiceServicer):
    def __init__(self, device: ServedSwitch) -> None:
        self.device = device
        self.fence = EpochFence(device.name)

    def GetDeviceInfo(self, request: Any, context: grpc.ServicerContext) -> Any:
        d = self.device
        return convert.switch_info_to_proto(SwitchInfo(
            name=d.name,
            block=d.block,
            num_ports=d.num_ports,
            port_speed_gbps=d.speed_gbps,
            max_group_entries=d.max_group_entries,
            table_capacity=d.table_capacity,
            generation=d.generation,
            role=d.role,
        ))

    def ListPorts(self, request: Any, context: grpc.ServicerContext) -> Any:
        ports = [
            SwitchPort(port=p["port"], oper_up=p["oper_up"], drained=p["drained"], speed_gbps=p["speed_gbps"],
                       peer_block=p["peer"][0] if p["peer"] else None,
                       peer_port=p["peer"][1] if p["peer"] else None)
            for p in self.device.ports()
        ]
        return pb.ListPortsResponse(ports=[convert.port_to_proto(p) for p in ports])

    def GetNextHopGroups(self, request: Any, context: grpc.ServicerContext) -> Any:
        generation, source, transit, used = self.device.groups()
        return convert.groups_to_proto(NextHopGroups(generation, source, transit, used))

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
                _table(request.source),
                _table(request.transit),
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
        return convert.counters_to_proto(switch_counters(self.device.counters()))


def _table(groups: Any) -> dict[str, dict[str, int]]:
    """A request's groups; a destination or next hop named twice is refused."""
    try:
        return convert.table_from_proto(groups)
    except convert.MalformedMessage as exc:
        raise MalformedRequest(str(exc)) from exc
