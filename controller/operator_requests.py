"""Operator requests are acknowledged only once they are durable.

``ctl pause``, ``resume``, ``drain``, ``undrain`` and ``toe`` change what the controller will
do; an answer of "queued" is a promise. So the request is journaled (as the state it asks
for: ToE paused, the maintenance set, a ToE wanted) *before* it is queued and answered; if
the journal cannot take it (a full disk, a read-only file system) the request is refused
with that reason and nothing is queued. A restarted daemon reads the same state back, so a
request acknowledged just before a crash is still carried out.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from controller import decision as dec
from controller.reconfig.journal import Journal

log = logging.getLogger(__name__)

TOE_PAUSED_KEY = "toe_paused"
MAINTENANCE_KEY = "maintenance"
TOE_REQUESTED_KEY = "toe_requested"


@dataclass(frozen=True)
class RequestedState:
    """What operators asked for, as journaled."""

    toe_paused: bool = False
    maintenance: frozenset[dec.Maintenance] = frozenset()
    toe_requested: str | None = None


class RequestJournal:
    """Journals requests (from the API's threads) and reads them back at start-up."""

    def __init__(self, journal: Journal) -> None:
        self._journal = journal
        self._lock = threading.Lock()  # read-modify-write of the maintenance set

    def record(self, request: dec.Request) -> None:
        """Make ``request`` durable; raises JournalError (naming the file) when it cannot be."""
        with self._lock:
            if isinstance(request, dec.SetToePaused):
                self._journal.put_state(TOE_PAUSED_KEY, request.paused)
            elif isinstance(request, dec.SetMaintenance):
                targets = set(self._journal.get_state(MAINTENANCE_KEY) or ())
                if request.drained:
                    targets.add(str(request.target))
                else:
                    targets.discard(str(request.target))
                self._journal.put_state(MAINTENANCE_KEY, sorted(targets))
            elif isinstance(request, dec.ToeTrigger):
                self._journal.put_state(TOE_REQUESTED_KEY, request.trigger)

    def forget_toe_request(self) -> None:
        """The requested ToE ran; best effort (a stale one only plans once more)."""
        try:
            with self._lock:
                self._journal.put_state(TOE_REQUESTED_KEY, None)
        except Exception as exc:
            log.warning("could not journal that the requested ToE ran: %s", exc)

    def restore(self) -> RequestedState:
        targets = set()
        for text in self._journal.get_state(MAINTENANCE_KEY) or ():
            kind, _, name = str(text).partition(":")
            try:
                targets.add(dec.Maintenance(dec.MaintenanceTarget(kind), name))
            except ValueError:
                log.warning("journal: ignoring unknown maintenance target %r", text)
        requested = self._journal.get_state(TOE_REQUESTED_KEY)
        return RequestedState(
            toe_paused=bool(self._journal.get_state(TOE_PAUSED_KEY, False)),
            maintenance=frozenset(targets),
            toe_requested=str(requested) if requested else None,
        )
