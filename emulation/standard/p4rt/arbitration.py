"""Primary election per (device_id, role), P4Runtime spec §5.

Each StreamChannel that sent a MasterArbitrationUpdate is a controller with an election id
(two streams may not share one: INVALID_ARGUMENT). The switch remembers the highest election
id it has seen for the role; the stream holding it is the primary, and only the primary's
Writes are accepted (PERMISSION_DENIED otherwise). When the primary's stream ends, the role
has no primary until a controller arbitrates with at least that id again: a controller with
a lower id never becomes primary again, which is what makes arbitration a fence. Every
controller of the role is told of every change (status OK to the primary, ALREADY_EXISTS to
backups while a primary exists, NOT_FOUND while none does), with the highest election id.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from google.rpc import code_pb2

from southbound.standard.p4rt.session import uint128
from southbound.standard.pb import p4runtime_pb2

Notify = Callable[[p4runtime_pb2.StreamMessageResponse], None]


class ArbitrationRefused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code  # a google.rpc code
        self.message = message


@dataclass
class _Role:
    highest: int = 0
    controllers: dict[int, tuple[int, Notify]] = field(default_factory=dict)  # stream -> (id, notify)

    def primary(self) -> int | None:
        return next((s for s, (eid, _) in self.controllers.items() if eid == self.highest), None)


class Elections:
    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._lock = threading.Lock()
        self._roles: dict[str, _Role] = {}

    def arbitrate(self, stream: int, update: p4runtime_pb2.MasterArbitrationUpdate, notify: Notify) -> None:
        """A controller's (re-)arbitration; answers it and tells the others of a change."""
        if update.device_id != self.device_id:
            raise ArbitrationRefused(code_pb2.NOT_FOUND, f"unknown device_id {update.device_id} "
                                     f"(this switch is {self.device_id})")
        if not update.HasField("election_id"):
            raise ArbitrationRefused(code_pb2.INVALID_ARGUMENT, "election_id is required (the role "
                                     "has no read-only controllers on this switch)")
        election_id = (update.election_id.high << 64) | update.election_id.low
        role_name = update.role.name
        with self._lock:
            role = self._roles.setdefault(role_name, _Role())
            for other, (eid, _) in role.controllers.items():
                if other != stream and eid == election_id:
                    raise ArbitrationRefused(code_pb2.INVALID_ARGUMENT,
                                             f"election id {election_id} is another controller's")
            before = role.primary()
            role.controllers[stream] = (election_id, notify)
            role.highest = max(role.highest, election_id)
            changed = role.primary() != before
            self._tell(role_name, role, None if changed else stream)

    def leave(self, stream: int) -> None:
        with self._lock:
            for name, role in self._roles.items():
                if stream in role.controllers:
                    was = role.primary() == stream
                    del role.controllers[stream]
                    if was:
                        self._tell(name, role, None)

    def is_primary(self, role_name: str, election_id: int) -> bool:
        """Whether a Write with this election id comes from the role's primary."""
        with self._lock:
            role = self._roles.get(role_name)
            return role is not None and role.primary() is not None and election_id == role.highest

    def _tell(self, role_name: str, role: _Role, only: int | None) -> None:
        primary = role.primary()
        for stream, (_eid, notify) in list(role.controllers.items()):
            if only is not None and stream != only:
                continue
            code = (code_pb2.OK if stream == primary else
                    code_pb2.ALREADY_EXISTS if primary is not None else code_pb2.NOT_FOUND)
            text = {code_pb2.OK: "primary", code_pb2.ALREADY_EXISTS: "backup: another controller is primary",
                    code_pb2.NOT_FOUND: "no primary"}[code]
            update = p4runtime_pb2.MasterArbitrationUpdate(
                device_id=self.device_id, role=p4runtime_pb2.Role(name=role_name),
                election_id=uint128(role.highest))
            update.status.code = code
            update.status.message = text
            notify(p4runtime_pb2.StreamMessageResponse(arbitration=update))
