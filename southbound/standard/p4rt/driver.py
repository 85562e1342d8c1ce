"""P4GroupWriter: a switch's WCMP groups over P4Runtime (the GroupWriter contract).

The generation and the answers to recent request ids live on the switch, in the marker
entry of ``vrf_table`` (:mod:`.encoding`): a set_groups is one Write, ROLLBACK_ON_ERROR,
that deletes the marker of the expected generation, inserts the next one and changes the
groups. The delete is the compare-and-set: if another writer moved the generation on, it
fails NOT_FOUND and nothing of the batch holds. Arbitration is the fencing (:mod:`.session`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import grpc

from southbound.closing import ClosesOnExit
from southbound.devices import DeviceConfig
from southbound.errors import (
    ApplyFailed,
    ApplyOutcome,
    DeviceError,
    Fenced,
    InvalidRequest,
    SouthboundError,
    StaleGeneration,
)
from southbound.fencing import NO_ELECTION, EpochSource
from southbound.grpc_native.rpc import RpcCaller
from southbound.standard.p4rt import encoding
from southbound.standard.p4rt.entries import EncodingError, Entry, Key, from_proto
from southbound.standard.p4rt.prefixes import prefixes_for
from southbound.standard.p4rt.program import Program, ProgramError
from southbound.standard.p4rt.session import Arbitration, election_id_of, open_p4runtime, uint128
from southbound.standard.p4rt.status import UpdateError, update_errors
from southbound.standard.pb import p4runtime_pb2, p4runtime_pb2_grpc
from southbound.types import GroupBudget, NextHopGroups, SetGroupsResult

log = logging.getLogger(__name__)
pb = p4runtime_pb2


@dataclass(frozen=True)
class SwitchState:
    """What a Read found: every entry by key, the generation and the remembered answers."""

    entries: dict[Key, Entry]
    generation: int
    history: list[encoding.Answer]


def request_digest(source: Mapping[str, Mapping[str, int]], transit: Mapping[str, Mapping[str, int]],
                   replace: bool, delete_source: list[str], delete_transit: list[str]) -> str:
    content = {"source": {d: dict(g) for d, g in source.items()},
               "transit": {d: dict(g) for d, g in transit.items()}, "replace": replace,
               "delete_source": sorted(delete_source), "delete_transit": sorted(delete_transit)}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:32]


class P4GroupWriter(ClosesOnExit):
    """One switch's groups over P4Runtime; ``prefixes`` (block -> IPv4 network) is used when
    the devices file names none."""

    def __init__(self, device: DeviceConfig, *, prefixes: Mapping[str, str] | None = None) -> None:
        self.name = device.name
        self.options = device.options
        self._channel, self.device_id = open_p4runtime(device)
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        self._caller = RpcCaller(self.name, self.options)
        self._prefixes = prefixes_for(device, prefixes)
        #: the leadership epoch: the election id of this driver's arbitration
        self.epoch: EpochSource = NO_ELECTION
        self._session = Arbitration(self._stub, self.device_id, self.name)
        self._program: Program | None = None
        self._cache: SwitchState | None = None

    # -- reading ----------------------------------------------------------------------------
    def program(self, refresh: bool = False) -> Program:
        """The device's program, from its P4Info (GetForwardingPipelineConfig)."""
        if self._program is None or refresh:
            what = pb.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE
            request = pb.GetForwardingPipelineConfigRequest(device_id=self.device_id, response_type=what)
            reply = self._caller.call(self._stub.GetForwardingPipelineConfig, request)
            if not reply.config.HasField("p4info"):
                raise DeviceError(self.name, "the switch has no forwarding pipeline (no P4Info)")
            self._program = Program(reply.config.p4info)
        return self._program

    def budget(self) -> GroupBudget:
        try:
            return self.program(refresh=True).budget()
        except ProgramError as exc:
            raise DeviceError(self.name, f"P4Info: {exc}") from exc

    def read_entries(self, deadline_s: float | None = None) -> list[Entry]:
        """Every table entry of the switch (one wildcard Read)."""
        program = self.program()
        request = pb.ReadRequest(device_id=self.device_id,
                                 entities=[pb.Entity(table_entry=pb.TableEntry(table_id=0))])
        replies = self._caller.call(lambda r, timeout: list(self._stub.Read(r, timeout=timeout)),
                                    request, deadline_s)
        out: list[Entry] = []
        try:
            for reply in replies:
                out.extend(from_proto(program, e.table_entry) for e in reply.entities
                           if e.HasField("table_entry"))
        except EncodingError as exc:
            raise DeviceError(self.name, f"Read returned an entry unlike the P4Info's: {exc}") from exc
        return out

    def _read_state(self, deadline_s: float | None = None) -> SwitchState:
        entries = {e.key: e for e in self.read_entries(deadline_s) if encoding.owned(e)}
        generation, history, _ = encoding.read_marker(entries.values())
        self._cache = SwitchState(entries, generation, history)
        return self._cache

    def _decoded(self, state: SwitchState) -> tuple[encoding.GroupTable, encoding.GroupTable]:
        try:
            return encoding.decode(state.entries.values(), self._prefixes)
        except encoding.DecodeError as exc:
            raise DeviceError(self.name, f"the switch's entries are not Heliostat's groups: {exc}") from exc

    def groups(self, deadline_s: float | None = None) -> NextHopGroups:
        state = self._read_state(deadline_s)
        source, transit = self._decoded(state)
        return NextHopGroups(state.generation, source, transit, encoding.entries_used(source, transit))

    # -- writing ----------------------------------------------------------------------------
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
        """As SwitchClient.set_groups: compare-and-set, all or nothing, replayed per request id."""
        source, transit = dict(source or {}), dict(transit or {})
        delete_source, delete_transit = list(delete_source), list(delete_transit)
        request_id = request_id or uuid.uuid4().hex
        digest = request_digest(source, transit, replace, delete_source, delete_transit)
        state = self._cache if self._cache is not None else self._read_state()
        if state.generation != expected_generation or self._answer(state, request_id, expected_generation):
            state = self._read_state()
        answer = self._answer(state, request_id, expected_generation)
        if answer is not None:
            return self._replayed(answer, digest)
        if state.generation != expected_generation:
            raise StaleGeneration(self.name, f"expected generation {expected_generation} but the device "
                                  f"is at {state.generation}", current_generation=state.generation)
        old_source, old_transit = self._decoded(state)
        unknown = next((d for d in (*delete_source, *delete_transit) if d not in self._prefixes), None)
        if not replace and unknown is not None:
            raise InvalidRequest(self.name, f"cannot delete group of unknown {unknown!r}")
        if not replace:
            source = encoding.merged(old_source, source, delete_source)
            transit = encoding.merged(old_transit, transit, delete_transit)
        for which, table in (("source", source), ("transit", transit)):
            for dest in table:
                if dest not in self._prefixes:
                    raise InvalidRequest(self.name, f"{which} group for {dest!r}: unknown destination block "
                                         "(the devices file gives it no IPv4 prefix)")
        used = encoding.entries_used(source, transit)
        generation = expected_generation + 1
        wanted = encoding.encode(source, transit, self._prefixes)
        history = [*state.history, encoding.Answer(request_id, expected_generation, digest, generation, used)]
        new_marker = encoding.marker(generation, history)
        wanted[new_marker.key] = new_marker
        updates = encoding.diff(self.program(), state.entries, wanted)
        # the marker's delete and insert first: the switch checks the compare-and-set first
        updates.sort(key=lambda u: not encoding.is_marker(self.program(), u))
        try:
            self._write(updates)
        except InvalidRequest:
            self._cache = None  # refused as it stood: the next call reads what the switch holds
            raise
        except (StaleGeneration, Fenced):
            raise
        except _MarkerMoved:
            state = self._read_state()
            answer = self._answer(state, request_id, expected_generation)
            if answer is not None:
                return self._replayed(answer, digest)
            raise StaleGeneration(self.name, f"expected generation {expected_generation} but the device "
                                  f"is at {state.generation}", current_generation=state.generation) from None
        except SouthboundError as exc:
            self._cache = None
            outcome = self._outcome(expected_generation, request_id)
            log.warning("%s: set_groups %s failed, device holds %s state", self.name, request_id,
                        outcome.value)
            raise ApplyFailed(self.name, f"set_groups {request_id} failed: {exc.message}", outcome,
                              exc) from exc
        self._cache = SwitchState(wanted, generation, history[-encoding.HISTORY:])
        return SetGroupsResult(generation, False, used, request_id)

    @staticmethod
    def _answer(state: SwitchState, request_id: str, expected: int) -> encoding.Answer | None:
        return next((a for a in state.history if (a.request_id, a.expected) == (request_id, expected)), None)

    def _replayed(self, answer: encoding.Answer, digest: str) -> SetGroupsResult:
        if answer.digest != digest:
            raise InvalidRequest(self.name, f"request_id {answer.request_id[:64]!r} at generation "
                                 f"{answer.expected} was used for a different request; a replay must "
                                 "repeat the request exactly (use a new id for a new request)")
        return SetGroupsResult(answer.generation, True, answer.entries_used, answer.request_id)

    def _outcome(self, expected: int, request_id: str) -> ApplyOutcome:
        try:
            state = self._read_state()
        except SouthboundError:
            return ApplyOutcome.UNKNOWN
        if state.generation == expected:
            return ApplyOutcome.OLD_STATE
        done = self._answer(state, request_id, expected) is not None
        return ApplyOutcome.NEW_STATE if done else ApplyOutcome.UNKNOWN

    def _write(self, updates: list[p4runtime_pb2.Update]) -> None:
        """One ROLLBACK_ON_ERROR Write as the primary. A refusal as non-primary while this
        session believed itself primary (its stream ended unnoticed: the switch restarted)
        re-arbitrates once and retries; nothing of a refused Write held, and the marker's
        compare-and-set makes the retry safe."""
        for attempt in range(2):
            election_id = election_id_of(self.epoch.current_epoch())
            try:
                self._session.ensure_primary(election_id, self.options.deadline_s)
            except Fenced as exc:
                self.epoch.refused(self.name, exc.highest_epoch)
                raise
            request = pb.WriteRequest(device_id=self.device_id, election_id=uint128(election_id),
                                      updates=updates, atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
            try:
                self._caller.call(self._stub.Write, request)
                return
            except SouthboundError as exc:
                if exc.transport_code == grpc.StatusCode.PERMISSION_DENIED and attempt == 0:
                    log.info("%s: the switch did not take us for the primary; arbitrating again", self.name)
                    self._session.close()
                    continue
                raise self._write_error(exc, updates) from exc

    def _write_error(self, exc: SouthboundError, updates: list[p4runtime_pb2.Update]) -> Exception:
        if exc.transport_code == grpc.StatusCode.PERMISSION_DENIED:
            highest = max(self._session.highest, election_id_of(self.epoch.current_epoch()) + 1)
            self.epoch.refused(self.name, highest)
            return Fenced(self.name, f"the switch refused the write: not the primary ({exc.message})",
                          highest, exc.transport_code)
        errors = [e for e in update_errors(exc.__cause__) if e.code != grpc.StatusCode.ABORTED] or \
            update_errors(exc.__cause__)
        if not errors:
            return exc
        program = self.program()
        errors = [e for e in errors if e.index < len(updates)]
        if any(encoding.is_marker(program, updates[e.index]) and e.code in _MOVED for e in errors):
            return _MarkerMoved(self.name, "the generation marker moved")
        first = errors[0]
        named = encoding.describe(program, updates[first.index])
        text = f"{named}: {first.code.name}: {first.message}"
        if first.code in _REFUSALS:
            return InvalidRequest(self.name, text, first.code)
        return DeviceError(self.name, text, transport_code=first.code)

    def close(self) -> None:
        self._session.close()
        self._channel.close()


class _MarkerMoved(SouthboundError):
    """The marker's delete or insert failed: the generation is not the one expected."""


_MOVED = (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.ALREADY_EXISTS)
#: per-update codes that mean "refused, nothing changed" under ROLLBACK_ON_ERROR
_REFUSALS = (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.NOT_FOUND,
             grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.FAILED_PRECONDITION,
             grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.UNIMPLEMENTED)


__all__ = ["P4GroupWriter", "UpdateError"]
