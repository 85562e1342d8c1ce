"""Start-up: open the journal and drivers, reconcile with the devices, recover a crashed stage.

A fresh fabric (nothing journaled, every OCS empty) is configured from scratch: the uniform
mesh becomes the intended circuits, the restore rule installs them, and TE pushes groups once
their links are up. A crash mid-stage is finished (resumed or rolled back) from the journal
(:meth:`StageExecutor.resume`), and the prediction is rebuilt from the matrix history.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from controller.daemon.leadership import Leadership
from controller.daemon.parts import (
    PREDICTION_KEY,
    QUARANTINE_KEY,
    DaemonError,
)
from controller.devices_watch import DevicesFileWatch
from controller.drivers import FabricDrivers
from controller.operator_requests import RequestJournal
from controller.reconfig.executor import (
    ExecutorSettings,
    StageExecutor,
)
from controller.reconfig.journal import Journal, RecoveryPoint
from controller.reconfig.toe_run import ToePlanner
from controller.reconfig.workers import domain_pool, pays_off
from controller.sensing.estimation import PeakPredictor, TrafficEstimation
from controller.sensing.observe import (
    links_up,
    live_circuits,
    maintenance_ports,
    startup_intent,
    unexplained_drains,
)
from controller.sensing.spine import spine_links_up
from controller.te_loop.te_push import TePusher
from optimizer.errors import ConfigError, HeliostatError
from optimizer.te import DEFAULT_MAX_OVERSUBSCRIPTION
from optimizer.topology import Topology
from southbound.devices import load_devices_file

log = logging.getLogger(__name__)


class StartUp(Leadership):
    """The start-up part of :class:`~controller.daemon.core.Daemon`."""

    def start(self) -> None:
        """Open the journal and drivers, reconcile with the devices, recover a crashed stage.
        A journal another controller holds is refused first (controller/reconfig/journal_lock.py).
        With ``ha`` the replica joins the election first, and a standby defers the rest of
        start-up (:meth:`_start_leading`) until it leads (controller/daemon/leadership.py)."""
        self._join_election()
        if self._given_devices is not None:
            self.drivers = self._given_devices
        else:
            try:
                devices = load_devices_file(self.config.devices)
            except ConfigError as exc:
                raise DaemonError(str(exc)) from exc
            self.drivers = FabricDrivers(self.fabric, devices, epoch=self.elector)
            self.devices_watch = DevicesFileWatch(self.config.devices, devices)
        if self.acting():
            self._start_leading()
        else:
            self.board.update(phase="idle")

    def _start_leading(self) -> None:
        """The leader's start-up: take the journal, reconcile with the devices, recover. With
        ``ha`` the journal is the replicas' shared one in etcd, written only while this
        replica's lease holds the leader key (controller/ha/etcd_journal.py)."""
        if self.elector is not None:
            self.journal = self._shared_journal()
        else:
            try:
                self.journal_lock.acquire()
            except HeliostatError as exc:
                raise DaemonError(str(exc)) from exc
            self.journal = Journal(self.config.store, clock=self.clock)
        self._leading = True
        self.drivers = self._drivers()
        self.request_journal = RequestJournal(self.journal)
        # Transitions between groups aim under the stage threshold less the WCMP rounding margin,
        # as staging does, so that measured loads stay under the threshold itself.
        mix_floor = self.config.thresholds.stage_mlu / DEFAULT_MAX_OVERSUBSCRIPTION
        self.te = TePusher(self.fabric, self.drivers, mix_floor=mix_floor, policy=self.config.te)
        if self.parallel_map is None and pays_off(self.fabric):  # started once; close() ends it
            self.parallel_map = self.mapping_pool.enter_context(domain_pool(fabric=self.fabric))
        self.planner = ToePlanner(
            self.fabric, self.config.thresholds.stage_mlu, time_limit=self.config.timeouts.toe_solve,
            parallel_map=self.parallel_map,
        )
        self.executor = StageExecutor(
            self.fabric,
            self.drivers,
            self.journal,
            self.te,
            self._te_inputs,
            ExecutorSettings(
                timeouts=self.config.timeouts,
                min_qualified_fraction=self.config.thresholds.min_qualified_fraction,
                stage_mlu=self.config.thresholds.stage_mlu,
                verify_interval_s=min(
                    self.config.intervals.te_interval, self.config.timeouts.verify_drain / 4
                ),
            ),
            stop=self._term_stop,
            checkpoint=None if self.pause is None else self.pause.checkpoint(self._term_stop),
            listener=self._step_event,
            **({} if self._wait is None else {"clock": self.clock, "wait": self._wait}),
        )
        self._restore_estimation()
        self.quarantined = {b: tuple(p) for b, p in (self.journal.get_state(QUARANTINE_KEY) or {}).items()}
        poll = self.drivers.poll()
        record = self.journal.current_topology()
        known = record.circuits if record is not None else ()
        self.installed = live_circuits(poll.ocs, known, poll.unreachable)
        self.live = links_up(self.fabric, self.installed, poll.ports)
        self.spine_up = spine_links_up(self.fabric, poll.ports, poll.spine_ports)
        self.ocs_down = self._down(poll)
        recovery = self.journal.recovery_point()
        if recovery is not None:
            self._recover(recovery)
        else:
            journaled = None if record is None else record.circuits
            start = startup_intent(self.fabric, journaled, poll.ocs, self.installed)
            if start.fresh:
                log.info("start-up: a fresh fabric (nothing journaled, every OCS empty): "
                         "configuring the uniform mesh, %d circuits", len(start.intended))
                self._emit("fresh_fabric", circuits=len(start.intended))
            elif start.save:
                log.info(
                    "start-up: adopted %d circuits from the devices, dropped %d from the journal",
                    len(start.reconciled.adopted),
                    len(start.reconciled.dropped),
                )
            if start.save:
                topology = Topology.from_circuits(self.fabric, start.intended)
                self.journal.save_topology(topology, start.intended)
            self.state = replace(self.state, intended=start.intended)
        requested = self.request_journal.restore()
        self.state = replace(
            self.state,
            toe_paused=requested.toe_paused,
            maintenance=requested.maintenance,
            toe_requested=self.state.toe_requested or requested.toe_requested,
        )
        self._adopt_unexplained_drains()
        self.board.update(  # what the journal restored shows at once, not after the first cycle
            phase="idle",
            toe_paused=requested.toe_paused,
            maintenance=tuple(str(m) for m in sorted(self.state.maintenance)),
        )
        self._emit("started", circuits=len(self.live), unreachable=sorted(poll.unreachable))

    def _adopt_unexplained_drains(self) -> None:
        """Drained ports that neither the journal's quarantine nor maintenance explain (a lost
        or wrong journal, a crash mid-stage before it): the devices are the truth. They are
        reported and quarantined, so each returns to service once its link qualifies
        (:meth:`_release_quarantine`); a port whose circuit is gone stays drained until a
        stage gives it one."""
        ports, errors = self._drivers().switch_ports(self.fabric.block_names)
        if errors:
            log.warning("start-up: drains of %s not read: %s", ", ".join(sorted(errors)), "; ".join(
                sorted(errors.values())))
        maintained = maintenance_ports(self.fabric, self.state.maintenance, self.installed)
        stray = unexplained_drains(ports, self.quarantined, maintained)
        if not stray:
            return
        count = sum(len(p) for p in stray.values())
        where = "; ".join(f"{b}: {', '.join(map(str, p))}" for b, p in stray.items())
        log.warning(
            "start-up: %d drained ports no journal explains (%s): quarantined; each returns to "
            "service once its link qualifies",
            count,
            where,
        )
        self._set_quarantine(add=stray)
        self.board.update(unexplained_drains=count)
        self._emit("unexplained_drains", ports=count, blocks=sorted(stray))

    def _restore_estimation(self) -> None:
        journal = self._journal()
        now = self.clock()
        s = self.config.estimation_settings()
        history = journal.matrix_history(since=now - s.prediction_window)
        prediction = journal.get_matrix_state(PREDICTION_KEY)
        if prediction is not None and prediction.blocks != self.fabric.block_names:
            prediction = None
        history = [(t, m) for t, m in history if m.blocks == self.fabric.block_names]
        predictor = PeakPredictor.restore(
            history, now, prediction, s.prediction_window, s.prediction_change, s.floor_gbps
        )
        self.estimation = TrafficEstimation(self.fabric.block_names, s, predictor=predictor)
        for block in self.fabric.blocks:
            for dst in self.fabric.block_names:
                self.estimation.rates.set_ceiling((block.name, dst), block.uplinks * block.speed_gbps * 1.05)
        self.recorder.seed_demand((t, m.total()) for t, m in history)
        if history:
            self.matrix = history[-1][1]
            self.recent.extend(m for _, m in history[-self.config.te.window :])

    def _recover(self, recovery: RecoveryPoint) -> None:
        self.board.update(phase="rolling_back", reconfiguration_id=recovery.intent.id)
        self._emit("recovering", intent=recovery.intent.id, steps=len(recovery.steps))
        outcome = self.executor.resume(recovery)
        self._after_stage(outcome, self.clock())
