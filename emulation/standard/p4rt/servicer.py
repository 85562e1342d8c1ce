"""The P4Runtime service of an emulated block or spine switch (P4Runtime 1.4 subset).

Serves the shipped sai_subset P4Info with the switch's own budget (its WCMP selector's
``max_group_size`` and ``size`` are the model's ``max_group_entries`` and
``table_capacity``), table entries (:mod:`.tables`), the ipv4_table direct counters and
arbitration (:mod:`.arbitration`). The pipeline cannot be replaced: a
SetForwardingPipelineConfig must carry the same program.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import grpc

from emulation.admission.limits import StreamGate, stream_capacity
from emulation.standard.p4rt.arbitration import ArbitrationRefused, Elections
from emulation.standard.p4rt.tables import P4Tables
from emulation.switch_device import ServedSwitch
from southbound.standard.p4rt.entries import EncodingError, Entry, from_proto, to_proto
from southbound.standard.p4rt.program import Program, shipped_p4info, with_budget
from southbound.standard.p4rt.session import int_of
from southbound.standard.p4rt.status import STATUS_DETAILS_KEY, status_code, write_failure
from southbound.standard.pb import code_pb2, p4runtime_pb2, p4runtime_pb2_grpc
from southbound.types import GroupBudget

log = logging.getLogger(__name__)
pb = p4runtime_pb2
API_VERSION = "1.4.0"
_POLL_S = 0.1
#: the largest Write this switch takes (a 4,096-block switch's groups fit)
MAX_UPDATES = 200_000


class P4RuntimeServicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, device: ServedSwitch, prefixes: Mapping[str, str], device_id: int = 1) -> None:
        self.device = device
        self.device_id = device_id
        budget = GroupBudget(device.max_group_entries, device.table_capacity)
        self.p4info = with_budget(shipped_p4info(), budget)
        self.program = Program(self.p4info)
        self.tables = P4Tables(self.program, device, prefixes)
        self.elections = Elections(device_id)
        self.cookie = 0
        self._streams = StreamGate(stream_capacity(8))
        self._ids = itertools.count(1)

    # -- pipeline and capabilities ----------------------------------------------------------
    def Capabilities(self, request: Any, context: grpc.ServicerContext) -> Any:
        return pb.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def GetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._check_device(request.device_id, context)
        config = pb.ForwardingPipelineConfig(cookie=pb.ForwardingPipelineConfig.Cookie(cookie=self.cookie))
        if request.response_type in (request.ALL, request.P4INFO_AND_COOKIE):
            config.p4info.CopyFrom(self.p4info)
        return pb.GetForwardingPipelineConfigResponse(config=config)

    def SetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._check_device(request.device_id, context)
        self._check_primary(request.role, request.election_id, context)
        given = {t.preamble.name for t in request.config.p4info.tables}
        ours = {t.preamble.name for t in self.p4info.tables}
        if request.action != request.RECONCILE_AND_COMMIT and not ours <= given:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the emulated switch runs only the "
                          f"sai_subset program; the P4Info lacks {sorted(ours - given)[0]}")
        if request.action in (request.VERIFY_AND_COMMIT, request.COMMIT, request.RECONCILE_AND_COMMIT):
            self.cookie = request.config.cookie.cookie
        return pb.SetForwardingPipelineConfigResponse()

    # -- write and read -----------------------------------------------------------------------
    def Write(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._check_device(request.device_id, context)
        self._check_primary(request.role, request.election_id, context)
        if len(request.updates) > MAX_UPDATES:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"at most {MAX_UPDATES} updates per Write")
        updates: list[tuple[str, Entry]] = []
        bad: list[tuple[int, grpc.StatusCode, str]] = []
        for i, u in enumerate(request.updates):
            kind = pb.Update.Type.Name(u.type)
            if kind == "UNSPECIFIED" or not u.entity.HasField("table_entry"):
                bad.append((i, grpc.StatusCode.UNIMPLEMENTED if kind != "UNSPECIFIED"
                            else grpc.StatusCode.INVALID_ARGUMENT,
                            "only table entries are written to this switch" if kind != "UNSPECIFIED"
                            else "update type unspecified"))
                continue
            try:
                updates.append((kind, from_proto(self.program, u.entity.table_entry)))
            except EncodingError as exc:
                bad.append((i, grpc.StatusCode.INVALID_ARGUMENT, str(exc)))
        atomic = request.atomicity != pb.WriteRequest.CONTINUE_ON_ERROR
        if bad and atomic:
            errors = bad
        else:
            index = [i for i in range(len(request.updates)) if i not in {j for j, _, _ in bad}]
            errors = bad + [(index[j], code, text) for j, code, text in self.tables.write(updates, atomic)]
        if errors:
            if atomic:
                failed = {i for i, _, _ in errors}
                errors += [(i, grpc.StatusCode.ABORTED, "rolled back: another update of the batch failed")
                           for i in range(len(request.updates)) if i not in failed]
            code, message, details = write_failure(errors, len(request.updates))
            context.set_trailing_metadata(((STATUS_DETAILS_KEY, details),))
            context.abort(code, message)
        return pb.WriteResponse()

    def Read(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        self._check_device(request.device_id, context)
        out: list[Any] = []
        for entity in request.entities:
            which = entity.WhichOneof("entity")
            if which == "table_entry":
                for e in self._matching(entity.table_entry, context):
                    proto = to_proto(self.program, e)
                    if entity.table_entry.HasField("counter_data") and e.table == "ipv4_table":
                        proto.counter_data.byte_count = self.tables.counter_bytes(e.key)
                    out.append(pb.Entity(table_entry=proto))
            elif which == "direct_counter_entry":
                for e in self._matching(entity.direct_counter_entry.table_entry, context):
                    if self.program.table(e.table).direct_counter_id:
                        counter = pb.DirectCounterEntry(table_entry=to_proto(self.program, e))
                        counter.data.byte_count = self.tables.counter_bytes(e.key)
                        out.append(pb.Entity(direct_counter_entry=counter))
            else:
                context.abort(grpc.StatusCode.UNIMPLEMENTED, f"reading {which} is not supported")
        for start in range(0, max(len(out), 1), 1000):
            yield pb.ReadResponse(entities=out[start:start + 1000])

    def _matching(self, query: Any, context: grpc.ServicerContext) -> list[Entry]:
        """Entries matching a read's table entry: table_id 0 is every table, an absent match
        field any value (wildcard reads, spec §11.1)."""
        if query.table_id and self.program.table_by_id(query.table_id) is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown table id {query.table_id}")
        wanted: dict[str, object] = {}
        if query.match:
            try:
                wanted = dict(from_proto(self.program, pb.TableEntry(table_id=query.table_id,
                                                                     match=query.match)).match)
            except EncodingError as exc:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        table = self.program.table_by_id(query.table_id) if query.table_id else None
        return [e for e in self.tables.entries()
                if (table is None or e.table == table.name)
                and all(dict(e.match).get(k) == v for k, v in wanted.items())]

    # -- arbitration ------------------------------------------------------------------------
    def StreamChannel(self, request_iterator: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        with self._streams.admit(context):
            stream = next(self._ids)
            outbox: queue.Queue[Any] = queue.Queue()
            done = threading.Event()
            threading.Thread(target=self._listen, args=(stream, request_iterator, outbox, done),
                             daemon=True, name=f"p4rt-{self.device.name}-{stream}").start()
            try:
                while context.is_active() and not (done.is_set() and outbox.empty()):
                    try:
                        item = outbox.get(timeout=_POLL_S)
                    except queue.Empty:
                        continue
                    if isinstance(item, ArbitrationRefused):
                        context.abort(status_code(item.code), item.message)
                    yield item
            finally:
                self.elections.leave(stream)

    def _listen(self, stream: int, requests: Iterator[Any], outbox: queue.Queue[Any],
                done: threading.Event) -> None:
        try:
            for message in requests:
                if message.HasField("arbitration"):
                    try:
                        self.elections.arbitrate(stream, message.arbitration, outbox.put)
                    except ArbitrationRefused as refused:
                        outbox.put(refused)
                        return
                elif message.HasField("packet"):
                    error = pb.StreamError(canonical_code=code_pb2.UNIMPLEMENTED,
                                           message="packet-out is not supported")
                    outbox.put(pb.StreamMessageResponse(error=error))
        except grpc.RpcError:
            pass  # the client went away
        finally:
            self.elections.leave(stream)
            done.set()

    # -- checks ------------------------------------------------------------------------------
    def _check_device(self, device_id: int, context: grpc.ServicerContext) -> None:
        if device_id != self.device_id:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown device_id {device_id} "
                          f"(this switch is {self.device_id})")

    def _check_primary(self, role: str, election_id: Any, context: grpc.ServicerContext) -> None:
        if not self.elections.is_primary(role, int_of(election_id)):
            context.abort(grpc.StatusCode.PERMISSION_DENIED, f"election id {int_of(election_id)} is not "
                          f"the primary's for role {role or '(default)'}")
