"""Driver for the OcsService (optical circuit switches)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

import grpc

from southbound.errors import (
    ApplyFailed,
    ApplyOutcome,
    Fenced,
    InvalidRequest,
    SouthboundError,
    StaleGeneration,
)
from southbound.grpc_native.client_base import DeviceClient, new_request_id
from southbound.grpc_native.pb import common_pb2, ocs_pb2, ocs_pb2_grpc
from southbound.grpc_native.status import map_rpc_error
from southbound.types import (
    ApplyResult,
    CrossConnect,
    CrossConnectTable,
    OcsEvent,
    OcsInfo,
    OcsPortStatus,
)

log = logging.getLogger(__name__)

_SIDES = {ocs_pb2.OCS_SIDES_NORTH_SOUTH: "north_south", ocs_pb2.OCS_SIDES_ANY: "any"}
_PORT_SIDES = {ocs_pb2.PORT_SIDE_NORTH: "north", ocs_pb2.PORT_SIDE_SOUTH: "south"}


class OcsEventStream:
    """Iterator over an OCS's events; cancel() ends it (iteration then stops quietly)."""

    def __init__(self, device: str, call: grpc.Future) -> None:
        self._device = device
        self._call = call
        self._cancelled = False

    def __iter__(self) -> Iterator[OcsEvent]:
        try:
            for message in self._call:
                yield event_from_proto(message)
        except grpc.RpcError as exc:
            if self._cancelled or exc.code() == grpc.StatusCode.CANCELLED:
                return
            raise map_rpc_error(exc, self._device) from exc

    def cancel(self) -> None:
        self._cancelled = True
        self._call.cancel()


class OcsClient(DeviceClient):
    """One OCS. Every call has a deadline and retries UNAVAILABLE (see CallOptions)."""

    SERVICE_NAME = "heliostat.southbound.v1.OcsService"

    def _bind_stubs(self, channel: grpc.Channel) -> None:
        self._stub = ocs_pb2_grpc.OcsServiceStub(channel)

    def device_info(self) -> OcsInfo:
        reply = self._caller.call(self._stub.GetDeviceInfo, ocs_pb2.GetOcsDeviceInfoRequest())
        return OcsInfo(
            name=reply.name,
            radix=reply.radix,
            sides=_SIDES.get(reply.sides, "unspecified"),
            north_ports=tuple(reply.north_ports),
            south_ports=tuple(reply.south_ports),
            generation=reply.generation,
            switching_time_s=reply.switching_time_ms / 1000.0,
            powered=reply.powered,
        )

    def cross_connects(self, deadline_s: float | None = None) -> CrossConnectTable:
        reply = self._caller.call(
            self._stub.ListCrossConnects, ocs_pb2.ListCrossConnectsRequest(), deadline_s
        )
        connects = [CrossConnect(c.port_a, c.port_b) for c in reply.cross_connects]
        switching = [
            CrossConnect(c.port_a, c.port_b)
            for c in reply.cross_connects
            if c.state == ocs_pb2.CROSS_CONNECT_STATE_SWITCHING
        ]
        return CrossConnectTable(reply.generation, frozenset(connects), frozenset(switching))

    def apply(
        self,
        *,
        expected_generation: int,
        add: Iterable[CrossConnect] = (),
        remove: Iterable[CrossConnect] = (),
        request_id: str | None = None,
    ) -> ApplyResult:
        """Remove then add cross-connects atomically if the generation still matches.

        Raises StaleGeneration or InvalidRequest (the device changed nothing), or
        ApplyFailed whose ``outcome`` says whether the old or the new state holds.
        Retrying with the same ``request_id`` is safe: the device answers it once.
        """
        add, remove = list(add), list(remove)
        request_id = request_id or new_request_id()
        request = ocs_pb2.ApplyCrossConnectsRequest(
            request_id=request_id,
            expected_generation=expected_generation,
            add=[ocs_pb2.CrossConnect(port_a=c.a, port_b=c.b) for c in add],
            remove=[ocs_pb2.CrossConnect(port_a=c.a, port_b=c.b) for c in remove],
        )
        try:
            reply = self._mutate(self._stub.ApplyCrossConnects, request)
        except (StaleGeneration, InvalidRequest, Fenced):
            raise
        except SouthboundError as exc:
            outcome = self._outcome_after_failure(expected_generation, add, remove)
            log.warning("%s: apply %s failed, device holds %s state", self.name, request_id,
                        outcome.value)
            raise ApplyFailed(self.name, f"apply {request_id} failed: {exc.message}",
                              outcome, exc) from exc
        return ApplyResult(reply.generation, reply.replayed, request_id)

    def _outcome_after_failure(
        self, expected_generation: int, add: list[CrossConnect], remove: list[CrossConnect]
    ) -> ApplyOutcome:
        """Read the device back to tell whether a failed apply left the old or new state."""
        try:
            table = self.cross_connects()
        except SouthboundError:
            return ApplyOutcome.UNKNOWN
        present = table.cross_connects
        new_holds = all(c in present for c in add) and not any(
            c in present for c in remove if c not in add
        )
        if table.generation == expected_generation:
            return ApplyOutcome.OLD_STATE
        if new_holds:
            return ApplyOutcome.NEW_STATE
        return ApplyOutcome.UNKNOWN

    def port_status(self, ports: Iterable[int] = ()) -> list[OcsPortStatus]:
        reply = self._caller.call(
            self._stub.GetPortStatus, ocs_pb2.GetPortStatusRequest(ports=list(ports))
        )
        return [
            OcsPortStatus(
                port=p.port,
                side=_PORT_SIDES.get(p.side, "any"),
                oper_up=p.oper_status == common_pb2.OPER_STATUS_UP,
                rx_power_dbm=p.rx_power_dbm,
                tx_power_dbm=p.tx_power_dbm,
                connected_port=p.connected_port if p.HasField("connected_port") else None,
            )
            for p in reply.ports
        ]

    def events(self, deadline_s: float = 3600.0) -> OcsEventStream:
        """Events from now on, until cancel() or the (long) deadline."""
        call = self._stub.StreamEvents(ocs_pb2.StreamOcsEventsRequest(), timeout=deadline_s)
        return OcsEventStream(self.name, call)


def event_from_proto(message: ocs_pb2.OcsEvent) -> OcsEvent:
    kind = message.WhichOneof("event") or "unknown"
    connect = None
    reason = ""
    lost = 0
    if kind == "circuit_up":
        c = message.circuit_up.cross_connect
        connect = CrossConnect(c.port_a, c.port_b)
    elif kind == "circuit_down":
        c = message.circuit_down.cross_connect
        connect = CrossConnect(c.port_a, c.port_b)
        reason = message.circuit_down.reason
    elif kind == "power_loss":
        lost = message.power_loss.circuits_lost
    return OcsEvent(
        sequence=message.sequence,
        time_s=message.time_s,
        generation=message.generation,
        kind=kind,
        cross_connect=connect,
        reason=reason,
        circuits_lost=lost,
    )
