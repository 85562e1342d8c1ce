"""The emulated P4 switch's table state and how a Write batch changes it (spec §12).

ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC: every update is checked in order against the state
the earlier ones left, then the result as a whole; one failure and nothing holds.
CONTINUE_ON_ERROR: each update that passes holds, the others are reported. Either way the
result is then committed to the switch model (``ServedSwitch.set_groups``: the routes of
Heliostat's VRFs as next-hop groups), so the flow-level data plane forwards by it; a
refusal of the model undoes the batch. Updates may come in any order (references are
resolved against the batch's result, as PINS does by ordering a batch by dependency).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Mapping, Sequence

import grpc

from emulation.errors import DeviceRefusal
from emulation.standard.p4rt.validation import Refusal, State, SwitchRules
from emulation.switch_device import ServedSwitch
from southbound.standard.p4rt import encoding
from southbound.standard.p4rt.entries import Entry, Key
from southbound.standard.p4rt.program import Program

log = logging.getLogger(__name__)

#: (index of the update, code, message)
UpdateError = tuple[int, grpc.StatusCode, str]


class P4Tables:
    """The entries of one emulated switch, behind one lock."""

    def __init__(self, program: Program, device: ServedSwitch, prefixes: Mapping[str, str]) -> None:
        self.program = program
        self.device = device
        self.prefixes = dict(prefixes)
        self.rules = SwitchRules(program, device, prefixes)
        self._lock = threading.Lock()
        self._state: State = {}

    def _adopted(self) -> State:
        """The tables of a switch that already forwards (a P4Runtime server started again in
        front of a device that kept its groups: fail static, as PINS's P4RT app reads its
        tables back at a warm restart): its groups as Heliostat writes them, at the device's
        generation, with no remembered answers."""
        generation, source, transit, _ = self.device.groups()
        if not source and not transit:
            return {}
        try:
            state = dict(encoding.encode(source, transit, self.prefixes))
        except KeyError as exc:
            log.warning("%s: its groups are not adopted: no prefix for block %s", self.device.name, exc)
            return {}
        mark = encoding.marker(generation, ())
        state[mark.key] = mark
        return state

    def entries(self) -> list[Entry]:
        with self._lock:
            self._adopt_locked()
            return list(self._state.values())

    def _adopt_locked(self) -> None:
        """Empty tables in front of a device that forwards adopt its groups (an agent that
        started before its bridge attached, or again after it died: the device kept them)."""
        if not self._state:
            self._state = self._adopted()

    def write(self, updates: Sequence[tuple[str, Entry]], atomic: bool) -> list[UpdateError]:
        """Apply (kind, entry) updates; the errors, by update index (empty: all held)."""
        with self._lock:
            self._adopt_locked()
            state = dict(self._state)
            errors: list[UpdateError] = []
            for i, (kind, e) in enumerate(updates):
                refusal = self.rules.check_update(kind, e, state)
                if refusal is None and not atomic:
                    trial = _applied(state, kind, e)
                    later = self.rules.check_state(trial)  # the state before was whole
                    refusal = later[0] if later else None
                    if refusal is None:
                        state = trial
                        continue
                if refusal is not None:
                    errors.append((i, refusal.code, refusal.message))
                    if atomic:
                        break
                    continue
                state = _applied(state, kind, e)
            if atomic and not errors:
                errors = [(self._index_of(r, updates), r.code, r.message)
                          for r in self.rules.check_state(state)]
            if atomic and errors:
                return _rolled_back(errors, len(updates))
            held = [i for i in range(len(updates)) if i not in {j for j, _, _ in errors}]
            if held:
                refusal_of_model = self._commit(state)
                if refusal_of_model is not None:
                    code, message = refusal_of_model
                    return _rolled_back([(held[0], code, message)], len(updates))
            return errors

    def _commit(self, state: State) -> tuple[grpc.StatusCode, str] | None:
        """Hand the state's groups to the switch model; keep it if the model took them."""
        try:
            source, transit = encoding.decode(state.values(), self.prefixes)
            d = self.device
            d.set_groups(uuid.uuid4().hex, d.generation, source, transit, replace=True)
        except encoding.DecodeError as exc:
            return grpc.StatusCode.INVALID_ARGUMENT, str(exc)
        except DeviceRefusal as refusal:
            return refusal.code, refusal.message
        self._state = state
        return None

    @staticmethod
    def _index_of(refusal: Refusal, updates: Sequence[tuple[str, Entry]]) -> int:
        """The update a whole-batch refusal is charged to: the one that wrote the entry at
        fault, else the one that deleted what it names, else the first group written."""
        keys = [e.key for _, e in updates]
        for key in (refusal.key, refusal.referenced):
            if key is not None and key in keys:
                return keys.index(key)
        groups = [i for i, (_, e) in enumerate(updates) if e.table == "wcmp_group_table"]
        return groups[-1] if groups else 0

    def counter_bytes(self, key: Key) -> int:
        """The direct counter of an ipv4_table entry: the bytes the switch sent toward the
        route's destination block (source VRF; transit and other VRFs read 0: the emulated
        switch counts per destination, not per VRF)."""
        table, match = key
        fields = dict(match)
        if table != "ipv4_table" or fields.get("vrf_id") != encoding.SOURCE_VRF:
            return 0
        dest = self.rules.block_of.get(str(fields.get("ipv4_dst")))
        egress = self.device.counters().get("egress")
        return int(egress.get(dest, 0)) if isinstance(egress, dict) and dest else 0


def _applied(state: State, kind: str, e: Entry) -> State:
    out = dict(state)
    if kind == "DELETE":
        out.pop(e.key, None)
    else:
        out[e.key] = e
    return out


def _rolled_back(errors: list[UpdateError], total: int) -> list[UpdateError]:
    failed = {i for i, _, _ in errors}
    rest = [(i, grpc.StatusCode.ABORTED, "rolled back: another update of the batch failed")
            for i in range(total) if i not in failed]
    return sorted(errors + rest)
