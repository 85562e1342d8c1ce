"""Driver for the PacketSwitchService (aggregation block switches)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

import grpc

from southbound.errors import (
    ApplyFailed,
    ApplyOutcome,
    DeviceError,
    Fenced,
    InvalidRequest,
    SouthboundError,
    StaleGeneration,
)
from southbound.grpc_native import convert
from southbound.grpc_native.client_base import DeviceClient, new_request_id
from southbound.grpc_native.pb import packet_switch_pb2, packet_switch_pb2_grpc
from southbound.types import (
    GroupBudget,
    NextHopGroups,
    SetGroupsResult,
    SwitchCounters,
    SwitchInfo,
    SwitchPort,
)

log = logging.getLogger(__name__)

pb = packet_switch_pb2


class SwitchClient(DeviceClient):
    """One block or spine switch. Every call has a deadline and retries UNAVAILABLE."""

    SERVICE_NAME = "heliostat.southbound.v1.PacketSwitchService"

    def _bind_stubs(self, channel: grpc.Channel) -> None:
        self._stub = packet_switch_pb2_grpc.PacketSwitchServiceStub(channel)

    def device_info(self) -> SwitchInfo:
        return convert.switch_info_from_proto(
            self._caller.call(self._stub.GetDeviceInfo, pb.GetSwitchDeviceInfoRequest())
        )

    def budget(self) -> GroupBudget:
        """The native service declares a group's entries and the table's capacity (entries of
        every group together) in its device info."""
        info = self.device_info()
        return GroupBudget(info.max_group_entries, info.table_capacity)

    def ports(self) -> list[SwitchPort]:
        reply = self._caller.call(self._stub.ListPorts, pb.ListPortsRequest())
        return [convert.port_from_proto(p) for p in reply.ports]

    def groups(self, deadline_s: float | None = None) -> NextHopGroups:
        reply = self._caller.call(self._stub.GetNextHopGroups, pb.GetNextHopGroupsRequest(), deadline_s)
        try:
            return convert.groups_from_proto(reply)
        except convert.MalformedMessage as exc:
            raise DeviceError(self.name, f"malformed next-hop groups: {exc}") from exc

    def set_groups(
        self,
        *,
        expected_generation: int,
        source: Mapping[str, Mapping[str, int]] | None = None,
        transit: Mapping[str, Mapping[str, int]] | None = None,
        replace: bool = True,
        delete_source: Iterable[str] = (),
        delete_transit: Iterable[str] = (),
        request_id: str | None = None,
    ) -> SetGroupsResult:
        """Set next-hop groups atomically (compare-and-set on the generation).

        ``source``/``transit`` map destination block -> {via block: weight}. With
        ``replace`` the two tables become exactly these; otherwise the groups are upserted
        and the ``delete_*`` destinations removed. Errors as for OcsClient.apply.
        """
        source = source or {}
        transit = transit or {}
        request_id = request_id or new_request_id()
        request = pb.SetNextHopGroupsRequest(
            request_id=request_id,
            expected_generation=expected_generation,
            replace=replace,
            source=convert.table_to_proto(source),
            transit=convert.table_to_proto(transit),
            delete_source=list(delete_source),
            delete_transit=list(delete_transit),
        )
        try:
            r = self._mutate(self._stub.SetNextHopGroups, request)
        except (StaleGeneration, InvalidRequest, Fenced):
            raise
        except SouthboundError as exc:
            outcome = self._outcome_after_failure(expected_generation, source, transit)
            log.warning("%s: set_groups %s failed, device holds %s state", self.name,
                        request_id, outcome.value)
            raise ApplyFailed(self.name, f"set_groups {request_id} failed: {exc.message}",
                              outcome, exc) from exc
        return SetGroupsResult(r.generation, r.replayed, r.entries_used, request_id)

    def _outcome_after_failure(
        self,
        expected_generation: int,
        source: Mapping[str, Mapping[str, int]],
        transit: Mapping[str, Mapping[str, int]],
    ) -> ApplyOutcome:
        try:
            now = self.groups()
        except SouthboundError:
            return ApplyOutcome.UNKNOWN
        if now.generation == expected_generation:
            return ApplyOutcome.OLD_STATE
        wanted_source = {d: {v: w for v, w in g.items() if w} for d, g in source.items()}
        wanted_transit = {d: {v: w for v, w in g.items() if w} for d, g in transit.items()}
        holds = all(now.source.get(d) == g for d, g in wanted_source.items()) and all(
            now.transit.get(d) == g for d, g in wanted_transit.items()
        )
        return ApplyOutcome.NEW_STATE if holds else ApplyOutcome.UNKNOWN

    def drain(self, ports: Iterable[int]) -> frozenset[int]:
        """Drain ports; returns every drained port."""
        r = self._mutate(self._stub.DrainPorts, pb.DrainPortsRequest(ports=list(ports)))
        return frozenset(r.drained_ports)

    def undrain(self, ports: Iterable[int]) -> frozenset[int]:
        """Undrain ports; returns every port still drained."""
        r = self._mutate(self._stub.UndrainPorts, pb.DrainPortsRequest(ports=list(ports)))
        return frozenset(r.drained_ports)

    def counters(self) -> SwitchCounters:
        return convert.counters_from_proto(self._caller.call(self._stub.GetCounters, pb.GetCountersRequest()))
