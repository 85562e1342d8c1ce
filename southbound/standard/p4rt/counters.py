"""DestinationCounters: the bytes a switch sent toward each destination block, read from the
ipv4_table direct counters over P4Runtime (one wildcard Read of DirectCounterEntry).

Every route of Heliostat's VRFs to a block's prefix counts; a block is reported once it has
a route (a switch with no route to a block has no counter for it). A direct counter lives
with its entry: on a switch (PINS) it starts at 0 when the route is inserted, so a reader
must take a drop as a reset. Reads need no arbitration.
"""

from __future__ import annotations

import ipaddress

from southbound.closing import ClosesOnExit
from southbound.devices import DeviceConfig
from southbound.errors import DeviceError
from southbound.grpc_native.rpc import RpcCaller
from southbound.standard.p4rt import encoding
from southbound.standard.p4rt.entries import EncodingError, from_proto
from southbound.standard.p4rt.prefixes import prefixes_for
from southbound.standard.p4rt.program import Program
from southbound.standard.p4rt.session import open_p4runtime
from southbound.standard.pb import p4runtime_pb2, p4runtime_pb2_grpc

pb = p4runtime_pb2


class DestinationCounters(ClosesOnExit):
    """Per-destination-block egress bytes of one switch, over P4Runtime."""

    def __init__(self, device: DeviceConfig) -> None:
        self.name = device.name
        self._channel, self.device_id = open_p4runtime(device)
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        self._caller = RpcCaller(self.name, device.options)
        self._block_of = {str(ipaddress.IPv4Network(p)): b for b, p in prefixes_for(device).items()}
        self._program: Program | None = None

    def _program_of_device(self) -> Program:
        if self._program is None:
            what = pb.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE
            request = pb.GetForwardingPipelineConfigRequest(device_id=self.device_id, response_type=what)
            reply = self._caller.call(self._stub.GetForwardingPipelineConfig, request)
            self._program = Program(reply.config.p4info)
        return self._program

    def egress_bytes(self) -> dict[str, int]:
        """Bytes per destination block (the sum over Heliostat's VRFs of its routes' counters)."""
        program = self._program_of_device()
        table = program.table("ipv4_table")
        query = pb.DirectCounterEntry(table_entry=pb.TableEntry(table_id=table.id))
        request = pb.ReadRequest(device_id=self.device_id, entities=[pb.Entity(direct_counter_entry=query)])
        replies = self._caller.call(lambda r, timeout: list(self._stub.Read(r, timeout=timeout)), request)
        out: dict[str, int] = {}
        for reply in replies:
            for entity in reply.entities:
                if not entity.HasField("direct_counter_entry"):
                    continue
                counter = entity.direct_counter_entry
                try:
                    route = from_proto(program, counter.table_entry)
                except EncodingError as exc:
                    raise DeviceError(self.name, f"a direct counter names an entry unlike the P4Info's: "
                                      f"{exc}") from exc
                if route.field("vrf_id") not in (encoding.SOURCE_VRF, encoding.TRANSIT_VRF):
                    continue
                block = self._block_of.get(str(route.field("ipv4_dst")))
                if block is not None:
                    out[block] = out.get(block, 0) + int(counter.data.byte_count)
        return out

    def close(self) -> None:
        self._channel.close()
