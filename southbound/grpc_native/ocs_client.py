"""Driver for the OcsService (optical circuit switches)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

import grpc

from southbound.errors import (
    ApplyFailed,
    Fenced,
    InvalidRequest,
    SouthboundError,
    StaleGeneration,
    circuits_outcome,
)
from southbound.grpc_native import convert
from southbound.grpc_native.client_base import DeviceClient, new_request_id
from southbound.grpc_native.pb import ocs_pb2, ocs_pb2_grpc
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


class OcsEventStream:
    """Iterator over an OCS's events; cancel() ends it (iteration then stops quietly)."""

    def __init__(self, device: str, call: grpc.Future) -> None:
        self._device = device
        self._call = call
        self._cancelled = False

    def __iter__(self) -> Iterator[OcsEvent]:
        try:
            for message in self._call:
                yield convert.event_from_proto(message)
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
        return convert.ocs_info_from_proto(
            self._caller.call(self._stub.GetDeviceInfo, ocs_pb2.GetOcsDeviceInfoRequest())
        )

    def cross_connects(self, deadline_s: float | None = None) -> CrossConnectTable:
        reply = self._caller.call(
            self._stub.ListCrossConnects, ocs_pb2.ListCrossConnectsRequest(), deadline_s
        )
        return convert.cross_connects_from_proto(reply)

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
            add=[convert.cross_connect_to_proto(c) for c in add],
            remove=[convert.cross_connect_to_proto(c) for c in remove],
        )
        try:
            reply = self._mutate(self._stub.ApplyCrossConnects, request)
        except (StaleGeneration, InvalidRequest, Fenced):
            raise
        except SouthboundError as exc:
            outcome = circuits_outcome(self.cross_connects, expected_generation, add, remove)
            log.warning("%s: apply %s failed, device holds %s state", self.name, request_id,
                        outcome.value)
            raise ApplyFailed(self.name, f"apply {request_id} failed: {exc.message}",
                              outcome, exc) from exc
        return ApplyResult(reply.generation, reply.replayed, request_id)

    def port_status(self, ports: Iterable[int] = ()) -> list[OcsPortStatus]:
        reply = self._caller.call(
            self._stub.GetPortStatus, ocs_pb2.GetPortStatusRequest(ports=list(ports))
        )
        return [convert.port_status_from_proto(p) for p in reply.ports]

    def events(self, deadline_s: float = 3600.0) -> OcsEventStream:
        """Events from now on, until cancel() or the (long) deadline."""
        call = self._stub.StreamEvents(ocs_pb2.StreamOcsEventsRequest(), timeout=deadline_s)
        return OcsEventStream(self.name, call)

