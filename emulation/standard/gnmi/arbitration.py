"""gNMI master arbitration on the target's side (openconfig/reference gnmi-master-arbitration
0.1.0): the highest election id seen per role; a Set with a lower one is refused
PERMISSION_DENIED, naming the highest; one with the extension but no election id is
INVALID_ARGUMENT; one without the extension is accepted (the client opted out)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

import grpc

from emulation.errors import DeviceRefusal, MalformedRequest
from southbound.standard.pb import gnmi_ext_pb2

log = logging.getLogger(__name__)


class NotMaster(DeviceRefusal):
    """A Set from a client whose election id is below the highest seen for its role."""

    code = grpc.StatusCode.PERMISSION_DENIED

    def __init__(self, message: str, highest: int) -> None:
        super().__init__(message)
        self.highest = highest


class Arbiter:
    """Highest election id per role (the default role is ``""``). Thread-safe."""

    def __init__(self, device: str) -> None:
        self.device = device
        self._lock = threading.Lock()
        self._highest: dict[str, int] = {}

    def highest(self, role: str = "") -> int:
        with self._lock:
            return self._highest.get(role, 0)

    def admit(self, extensions: Iterable[gnmi_ext_pb2.Extension]) -> None:
        """Let a Set through (raising the role's bar) or raise NotMaster / MalformedRequest."""
        found = [e.master_arbitration for e in extensions if e.HasField("master_arbitration")]
        if not found:
            return
        if len(found) > 1:
            raise MalformedRequest("more than one master_arbitration extension")
        arbitration = found[0]
        if not arbitration.HasField("election_id"):
            raise MalformedRequest("master_arbitration without an election_id")
        role = arbitration.role.id if arbitration.HasField("role") else ""
        election = (arbitration.election_id.high << 64) | arbitration.election_id.low
        with self._lock:
            highest = self._highest.get(role, 0)
            if election < highest:
                raise NotMaster(
                    f"{self.device}: election_id {election} of role {role!r} is below the highest "
                    f"seen, {highest}: another client is master", highest)
            if election > highest:
                if highest:
                    log.info("%s: role %r master election_id %d replaces %d", self.device, role,
                             election, highest)
                self._highest[role] = election
