"""Driver for the PacketSwitchService (aggregation block switches)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

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
from southbound.grpc_native.pb import common_pb2, packet_switch_pb2, packet_switch_pb2_grpc
from southbound.types import (
    GroupTable,
    NextHopGroups,
    PortCounters,
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
        r = self._caller.call(self._stub.GetDeviceInfo, pb.GetSwitchDeviceInfoRequest())
        return SwitchInfo(
            name=r.name,
            block=r.block,
            num_ports=r.num_ports,
            port_speed_gbps=r.port_speed_gbps,
            max_group_entries=r.max_group_entries,
            table_capacity=r.table_capacity,
            generation=r.generation,
            role="spine" if r.role == pb.SWITCH_ROLE_SPINE else "block",
        )

    def ports(self) -> list[SwitchPort]:
        reply = self._caller.call(self._stub.ListPorts, pb.ListPortsRequest())
        return [
            SwitchPort(
                port=p.port,
                oper_up=p.oper_status == common_pb2.OPER_STATUS_UP,
                drained=p.drained,
                speed_gbps=p.speed_gbps,
                peer_block=p.peer.block if p.HasField("peer") else None,
                peer_port=p.peer.port if p.HasField("peer") else None,
            )
            for p in reply.ports
        ]

    def groups(self, deadline_s: float | None = None) -> NextHopGroups:
        r = self._caller.call(self._stub.GetNextHopGroups, pb.GetNextHopGroupsRequest(), deadline_s)
        return NextHopGroups(
            generation=r.generation,
            source=_table_from_proto(r.source),
            transit=_table_from_proto(r.transit),
            entries_used=r.entries_used,
        )

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
            source=_table_to_proto(source),
            transit=_table_to_proto(transit),
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
        r = self._caller.call(self._stub.GetCounters, pb.GetCountersRequest())
        return SwitchCounters(
            time_s=r.time_s,
            ports={
                c.port: PortCounters(
                    port=c.port,
                    tx_bytes=c.tx_bytes,
                    rx_bytes=c.rx_bytes,
                    tx_packets=c.tx_packets,
                    rx_packets=c.rx_packets,
                    tx_drops=c.tx_drops,
                    rx_drops=c.rx_drops,
                    tx_drop_bytes=c.tx_drop_bytes,
                    rx_drop_bytes=c.rx_drop_bytes,
                )
                for c in r.ports
            },
            egress_bytes={d.destination_block: d.egress_bytes for d in r.destinations},
            no_route_drops=r.no_route_drops,
        )


def _table_to_proto(table: Mapping[str, Mapping[str, int]]) -> list[pb.NextHopGroup]:
    return [
        pb.NextHopGroup(
            destination_block=dest,
            next_hops=[pb.NextHop(via_block=v, weight=w) for v, w in sorted(hops.items())],
        )
        for dest, hops in sorted(table.items())
    ]


def _table_from_proto(groups: Iterable[pb.NextHopGroup]) -> GroupTable:
    return {g.destination_block: {h.via_block: h.weight for h in g.next_hops} for g in groups}
