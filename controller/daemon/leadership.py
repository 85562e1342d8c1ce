"""Leadership: a replica acts on the fabric only while etcd says it leads (``ha:``, issue 14).

Without ``ha`` nothing here does anything: the daemon always leads, and its device calls
carry epoch 0. With ``ha``, :meth:`Leadership._join_election` starts the
:class:`~controller.ha.elector.Elector` before anything else (a second replica of the same
name, or a prefix that serves another fabric, is refused there with the reason), and the
drivers put its epoch on every mutating call. Then:

- **standby**: each cycle polls the devices read-only (the status page shows the fabric) and
  acts on nothing; nothing is journaled either. Operator requests are refused naming the
  leader (:meth:`NotLeading`).
- **taking over**: the first cycle that finds this replica acting runs the leader's part of
  start-up (:meth:`~controller.daemon.startup.StartUp._start_leading`), exactly what a
  restarted daemon does: reconcile with the devices, finish or roll back a stage the journal
  shows in flight, quarantine drains that nothing explains.
- **stepping down** (the lease lost, etcd out of reach past ``0.8 lease_ttl``, or a device
  refused our epoch): a step in flight is interrupted (the executor's term ends; the journal
  keeps the step as a crash would), the journal is closed, and the replica is a standby again.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace

from controller import decision as dec
from controller.daemon.parts import DaemonError, DaemonParts
from controller.ha.election import ElectionState, Role
from controller.ha.elector import Elector, ReplicaRefused
from controller.ha.etcd_journal import EtcdJournal
from controller.reconfig.journal import JournalError
from controller.sensing.observe import links_up, live_circuits
from optimizer.errors import HeliostatError

log = logging.getLogger(__name__)


class NotLeading(DaemonError):
    """A request that changes the fabric reached a standby replica."""


class Leadership(DaemonParts):
    """The HA part of :class:`~controller.daemon.core.Daemon`."""

    elector: Elector | None
    northbound_address: str | None
    _leading: bool  # the leader's start-up ran for this term
    _term_stop: threading.Event  # set to end the term (stop, or leadership lost): the executor stops

    def _join_election(self) -> None:
        """Start campaigning (with ``ha``); ReplicaRefused becomes a DaemonError with the reason."""
        ha = self.config.ha
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
        self._show_role(elector.state)

    def acting(self) -> bool:
        """True when this daemon may change the fabric (always, without ``ha``)."""
        return self.elector is None or self.elector.acting()

    def _role_changed(self, before: ElectionState, after: ElectionState) -> None:
        """Called from the elector's thread: show the role, count changes, end a lost term."""
        self._show_role(after)
        if after.changes != before.changes:
            self.metrics.leader_changes.inc(after.changes - before.changes)
        if before.role is Role.LEADER and after.role is not Role.LEADER:
            self._term_stop.set()  # interrupts the executor between checks
        self.wake.set()

    def _show_role(self, state: ElectionState) -> None:
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

    def _standby_cycle(self, now: float) -> list[dec.Action]:
        """A standby's cycle: step down if this term was leading, then poll read-only."""
        if self._leading:
            self._step_down()
        if self.elector is not None:
            self._show_role(self.elector.state)
        poll = self._drivers().poll()
        self.installed = live_circuits(poll.ocs, self.installed, poll.unreachable)
        self.live = links_up(self.fabric, self.installed, poll.ports)
        self.ocs_down = self._down(poll)
        self.metrics.circuits.set(len(self.live))
        self.metrics.devices_unreachable.set(len(poll.unreachable))
        self.board.update(
            phase="idle",
            unreachable=tuple(sorted(poll.unreachable)),
            ocs_down=tuple(sorted(self.ocs_down)),
            circuits_installed=len(self.installed),
            circuits_up=len(self.live),
        )
        return []

    def _shared_journal(self) -> EtcdJournal:
        """The shared journal, its writes conditioned on the lease this replica leads with."""
        if self.elector is None or self.config.ha is None:
            raise DaemonError("no election: a controller without ha journals in SQLite")
        try:
            return EtcdJournal(self.elector.kv, self.config.ha.prefix, self.elector.guard(), clock=self.clock)
        except JournalError as exc:
            raise DaemonError(str(exc)) from exc

    def _take_over(self) -> None:
        """This replica now leads: the leader's start-up, as after a restart."""
        if self.elector is None:
            raise DaemonError("no election: a controller without ha always leads")
        state = self.elector.state
        log.info("ha: leading with epoch %d: starting as a restarted controller would", state.own_epoch)
        self._term_stop = threading.Event()
        self._start_leading()
        self._emit("leading", epoch=state.own_epoch, replica=self.elector.config.name)

    def _step_down(self) -> None:
        """Leave the leader's term: close the journal, forget the decisions' state."""
        reason = self.elector.state.reason if self.elector is not None else "stopping"
        log.warning("ha: stepping down (%s): acting on nothing until this replica leads again", reason)
        self._term_stop.set()
        self._leading = False
        if self.journal is not None:
            try:
                self.journal.close()
            except HeliostatError as exc:
                log.warning("ha: journal not closed cleanly: %s", exc)
            self.journal = None
            self.request_journal = None
        self.journal_lock.release()
        self.state = replace(dec.ControlState(), intended=self.state.intended)
        self.board.update(phase="idle", reconfiguration_id=None, stage=None, stages_total=None, step=None)
        self._emit("standby", reason=reason)
