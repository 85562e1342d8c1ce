"""Leadership: a replica acts on the fabric only while etcd says it leads (``ha:``, issue 14).

Without ``ha`` nothing here does anything: the daemon always leads, and its device calls
carry epoch 0. With ``ha``, :meth:`Leadership.join_election` starts the
:class:`~controller.ha.elector.Elector` before anything else (a second replica of the same
name, or a prefix that serves another fabric, is refused there with the reason), and the
drivers put its epoch on every mutating call. Then:

- **standby**: each cycle polls the devices read-only (the status page shows the fabric) and
  acts on nothing; nothing is journaled either. Operator requests are refused naming the
  leader (:class:`NotLeading`).
- **taking over**: the first cycle that finds this replica acting runs the leader's part of
  start-up (the composition root builds the term's parts and runs
  :meth:`~controller.daemon.startup.StartUp.run`), exactly what a restarted daemon does:
  reconcile with the devices, finish or roll back a stage the journal shows in flight,
  quarantine drains that nothing explains.
- **stepping down** (the lease lost, etcd out of reach past ``0.8 lease_ttl``, or a device
  refused our epoch): a step in flight is interrupted (the executor's term ends; the journal
  keeps the step as a crash would), the journal is closed, and the replica is a standby again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import replace

from controller import decision as dec
from controller.daemon.report import Reporter
from controller.daemon.sensing import down_ocs
from controller.daemon.state import DaemonError, DaemonState
from controller.device_view import FabricPort
from controller.ha.config import HaConfig
from controller.ha.election import ElectionState, Role
from controller.ha.elector import Elector, ReplicaRefused
from controller.ha.etcd_journal import EtcdJournal
from controller.reconfig.journal import Journal, JournalError
from controller.reconfig.journal_lock import JournalLock
from controller.sensing.observe import links_up, live_circuits
from optimizer.errors import HeliostatError
from optimizer.fabric import Fabric

log = logging.getLogger(__name__)


class NotLeading(DaemonError):
    """A request that changes the fabric reached a standby replica."""


class Leadership:
    """The election and this replica's role. Owns ``elector`` (None without ``ha``),
    ``leading`` (the leader's start-up ran for this term) and ``term_stop`` (set to end the
    term: the executor stops); a standby's polls write ``state.installed``, ``live`` and
    ``ocs_down``, stepping down resets ``state.control``."""

    def __init__(
        self,
        ha: HaConfig | None,
        fabric: Fabric,
        state: DaemonState,
        journal_lock: JournalLock,
        northbound_address: str | None,
        wake: threading.Event,
        report: Reporter,
        clock: Callable[[], float],
    ) -> None:
        self.ha = ha
        self.fabric = fabric
        self.state = state
        self.journal_lock = journal_lock
        self.wake = wake  # the loop's: a role change wakes it
        self.report = report
        self.metrics = report.metrics
        self.board = report.board
        self.clock = clock
        self.elector: Elector | None = None
        # the API address the leader publishes to the standbys (unknown while it is port 0)
        self.northbound_address = northbound_address
        self.leading = False
        self.term_stop = threading.Event()  # the executor's stop: the daemon stops or the term ends

    def join_election(self) -> None:
        """Start campaigning (with ``ha``); ReplicaRefused becomes a DaemonError with the reason."""
        ha = self.ha
        if ha is None:
            return
        elector = Elector(
            ha, self.fabric.name, northbound=self.northbound_address,
            observe_latency=lambda verb, s: self.metrics.etcd_request_seconds.labels(verb).observe(s),
            on_change=self._role_changed,
        )
        try:
            elector.start()
        except ReplicaRefused as exc:
            raise DaemonError(str(exc)) from exc
        self.elector = elector
        self.show_role(elector.state)

    def acting(self) -> bool:
        """True when this daemon may change the fabric (always, without ``ha``)."""
        return self.elector is None or self.elector.acting()

    def _role_changed(self, before: ElectionState, after: ElectionState) -> None:
        """Called from the elector's thread: show the role, count changes, end a lost term."""
        self.show_role(after)
        if after.changes != before.changes:
            self.metrics.leader_changes.inc(after.changes - before.changes)
        if before.role is Role.LEADER and after.role is not Role.LEADER:
            self.term_stop.set()  # interrupts the executor between checks
        self.wake.set()

    def show_role(self, state: ElectionState) -> None:
        """The role as the status shows it: ``leader`` only while this replica may act (a leader
        cut off from etcd shows ``standby``, with the reason)."""
        acting = self.acting()
        reason = state.reason if acting or state.role is not Role.LEADER else f"not acting: {state.reason}"
        self.metrics.leader.set(1 if acting else 0)
        self.board.update(
            role="leader" if acting else "standby", leader=state.leader,
            leader_northbound=state.leader_northbound, epoch=state.epoch, role_reason=reason,
        )

    def refuse_unless_leading(self) -> None:
        """Raise NotLeading naming the leader on a standby (a request that would change the fabric)."""
        if self.elector is None or self.acting():
            return
        state = self.elector.state
        where = f" at {state.leader_northbound}" if state.leader_northbound else ""
        leader = f"the leader is {state.leader}{where}" if state.leader else "no replica leads right now"
        raise NotLeading(f"replica {self.elector.config.name} is a standby: {leader}; send the request there")

    def standby_cycle(self, now: float, drivers: FabricPort) -> list[dec.Action]:
        """A standby's cycle (after stepping down if this term was leading): poll read-only."""
        if self.elector is not None:
            self.show_role(self.elector.state)
        poll = drivers.poll()
        self.state.installed = live_circuits(poll.ocs, self.state.installed, poll.unreachable)
        self.state.live = links_up(self.fabric, self.state.installed, poll.ports)
        self.state.ocs_down = down_ocs(poll, drivers)
        self.metrics.circuits.set(len(self.state.live))
        self.metrics.devices_unreachable.set(len(poll.unreachable))
        self.board.update(
            phase="idle",
            unreachable=tuple(sorted(poll.unreachable)),
            ocs_down=tuple(sorted(self.state.ocs_down)),
            circuits_installed=len(self.state.installed),
            circuits_up=len(self.state.live),
        )
        return []

    def shared_journal(self) -> EtcdJournal:
        """The shared journal, its writes conditioned on the lease this replica leads with."""
        if self.elector is None or self.ha is None:
            raise DaemonError("no election: a controller without ha journals in SQLite")
        try:
            return EtcdJournal(self.elector.kv, self.ha.prefix, self.elector.guard(), clock=self.clock)
        except JournalError as exc:
            raise DaemonError(str(exc)) from exc

    def begin_term(self) -> ElectionState:
        """This replica now leads: a new term (the composition root then starts as after a restart)."""
        if self.elector is None:
            raise DaemonError("no election: a controller without ha always leads")
        state = self.elector.state
        log.info("ha: leading with epoch %d: starting as a restarted controller would", state.own_epoch)
        self.term_stop = threading.Event()
        return state

    def step_down(self, journal: Journal | None) -> None:
        """Leave the leader's term: close ``journal`` (the composition root drops the term's
        parts), forget the decisions' state."""
        reason = self.elector.state.reason if self.elector is not None else "stopping"
        log.warning("ha: stepping down (%s): acting on nothing until this replica leads again", reason)
        self.term_stop.set()
        self.leading = False
        if journal is not None:
            try:
                journal.close()
            except HeliostatError as exc:
                log.warning("ha: journal not closed cleanly: %s", exc)
        self.journal_lock.release()
        self.state.control = replace(dec.ControlState(), intended=self.state.control.intended)
        self.board.update(phase="idle", reconfiguration_id=None, stage=None, stages_total=None, step=None)
        self.report.emit("standby", reason=reason)
