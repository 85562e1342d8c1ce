"""Quarantined ports: drained until their link qualifies (a failed qualification, circuits
restored after an OCS lost them, drains nothing explains at start-up). Journaled, so that a
restarted daemon keeps them drained; :meth:`controller.daemon.sensing.Sensing.release_quarantine`
undrains them."""

from __future__ import annotations

from controller.daemon.state import QUARANTINE_KEY, DaemonState
from controller.device_view import PortsByBlock, merge_ports, ports_without
from controller.reconfig.journal import Journal


class Quarantine:
    """The only writer of ``state.quarantined`` (StartUp restores it from the journal)."""

    def __init__(self, state: DaemonState, journal: Journal) -> None:
        self.state = state
        self.journal = journal

    def set(self, add: PortsByBlock | None = None, remove: PortsByBlock | None = None) -> None:
        """Change the quarantined ports and journal them (a restarted daemon keeps them drained)."""
        self.state.quarantined = ports_without(merge_ports(self.state.quarantined, add or {}), remove or {})
        self.journal.put_state(QUARANTINE_KEY, {b: list(p) for b, p in self.state.quarantined.items()})
