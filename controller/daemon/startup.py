"""Start-up of a leader's term: reconcile with the devices, recover a crashed stage.

A fresh fabric (nothing journaled, every OCS empty) is configured from scratch: the uniform
mesh becomes the intended circuits, the restore rule installs them, and TE pushes groups once
their links are up. A crash mid-stage is finished (resumed or rolled back) from the journal
(:meth:`StageExecutor.resume`), and the prediction is rebuilt from the matrix history. The
composition root (:class:`~controller.daemon.core.Daemon`) builds the term's journal and parts
first, then runs :meth:`StartUp.run` once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from controller.daemon.quarantine import Quarantine
from controller.daemon.reconfiguration import Reconfiguration
from controller.daemon.report import Reporter
from controller.daemon.sensing import down_ocs
from controller.daemon.state import PREDICTION_KEY, QUARANTINE_KEY, DaemonState
from controller.device_view import FabricPort
from controller.operator_requests import RequestJournal
from controller.reconfig.deferred import DEFERRED_PLAN_KEY, DeferredPlan, DeferredPlanError
from controller.reconfig.executor import StageExecutor
from controller.reconfig.journal import Journal, RecoveryPoint
from controller.sensing.estimation import EstimationSettings, PeakPredictor, TrafficEstimation
from controller.sensing.observe import (
    links_up,
    live_circuits,
    maintenance_ports,
    startup_intent,
    unexplained_drains,
)
from controller.sensing.spine import spine_links_up
from optimizer.fabric import Fabric
from optimizer.topology import Topology

log = logging.getLogger(__name__)


class StartUp:
    """Writes what a term starts from: ``state.estimation``, ``matrix`` and ``recent`` (the
    journal's history), ``quarantined`` (journaled), ``installed``, ``live``, ``spine_up``,
    ``ocs_down`` (a first poll) and ``control`` (intended circuits, operator requests)."""

    def __init__(
        self,
        fabric: Fabric,
        state: DaemonState,
        drivers: FabricPort,
        journal: Journal,
        request_journal: RequestJournal,
        executor: StageExecutor,
        estimation: EstimationSettings,
        te_window: int,
        reconfiguration: Reconfiguration,
        quarantine: Quarantine,
        report: Reporter,
        clock: Callable[[], float],
    ) -> None:
        self.fabric = fabric
        self.state = state
        self.drivers = drivers
        self.journal = journal
        self.request_journal = request_journal
        self.executor = executor
        self.estimation = estimation
        self.te_window = te_window
        self.reconfiguration = reconfiguration
        self.quarantine = quarantine
        self.report = report
        self.board = report.board
        self.clock = clock

    def _restore_deferred(self) -> None:
        """The deferred ToE plan the last term kept (an unreadable one is dropped, and said so)."""
        raw = self.journal.get_state(DEFERRED_PLAN_KEY)
        if raw is None:
            return
        try:
            deferred = DeferredPlan.from_json(raw)
        except DeferredPlanError as exc:
            log.warning("start-up: the journaled deferred plan is dropped: %s", exc)
            return
        self.state.deferred = deferred
        self.board.update(deferred_plan=deferred.facts())
        self.report.metrics.toe_deferred_since.set(deferred.since)

    def run(self) -> None:
        """Restore the estimation and quarantine, reconcile with the devices, recover a stage
        in flight, restore the operator's requests and adopt drains nothing explains."""
        self._restore_estimation()
        self.state.quarantined = {
            b: tuple(p) for b, p in (self.journal.get_state(QUARANTINE_KEY) or {}).items()
        }
        self._restore_deferred()
        poll = self.drivers.poll()
        record = self.journal.current_topology()
        known = record.circuits if record is not None else ()
        self.state.installed = live_circuits(poll.ocs, known, poll.unreachable)
        self.state.live = links_up(self.fabric, self.state.installed, poll.ports)
        self.state.spine_up = spine_links_up(self.fabric, poll.ports, poll.spine_ports)
        self.state.ocs_down = down_ocs(poll, self.drivers)
        recovery = self.journal.recovery_point()
        if recovery is not None:
            self._recover(recovery)
        else:
            journaled = None if record is None else record.circuits
            start = startup_intent(self.fabric, journaled, poll.ocs, self.state.installed)
            if start.fresh:
                log.info("start-up: a fresh fabric (nothing journaled, every OCS empty): "
                         "configuring the uniform mesh, %d circuits", len(start.intended))
                self.report.emit("fresh_fabric", circuits=len(start.intended))
            elif start.save:
                log.info(
                    "start-up: adopted %d circuits from the devices, dropped %d from the journal",
                    len(start.reconciled.adopted),
                    len(start.reconciled.dropped),
                )
            if start.save:
                topology = Topology.from_circuits(self.fabric, start.intended)
                self.journal.save_topology(topology, start.intended)
            self.state.control = replace(self.state.control, intended=start.intended)
        requested = self.request_journal.restore()
        self.state.control = replace(
            self.state.control,
            toe_paused=requested.toe_paused,
            maintenance=requested.maintenance,
            toe_requested=self.state.control.toe_requested or requested.toe_requested,
        )
        self._adopt_unexplained_drains()
        self.board.update(  # what the journal restored shows at once, not after the first cycle
            phase="idle",
            toe_paused=requested.toe_paused,
            maintenance=tuple(str(m) for m in sorted(self.state.control.maintenance)),
        )
        self.report.emit("started", circuits=len(self.state.live), unreachable=sorted(poll.unreachable))

    def _adopt_unexplained_drains(self) -> None:
        """Drained ports that neither the journal's quarantine nor maintenance explain (a lost
        or wrong journal, a crash mid-stage before it): the devices are the truth. They are
        reported and quarantined, so each returns to service once its link qualifies
        (:meth:`~controller.daemon.sensing.Sensing.release_quarantine`); a port whose circuit
        is gone stays drained until a stage gives it one."""
        ports, errors = self.drivers.switch_ports(self.fabric.block_names)
        if errors:
            log.warning("start-up: drains of %s not read: %s", ", ".join(sorted(errors)), "; ".join(
                sorted(errors.values())))
        maintained = maintenance_ports(self.fabric, self.state.control.maintenance, self.state.installed)
        stray = unexplained_drains(ports, self.state.quarantined, maintained)
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
        self.quarantine.set(add=stray)
        self.board.update(unexplained_drains=count)
        self.report.emit("unexplained_drains", ports=count, blocks=sorted(stray))

    def _restore_estimation(self) -> None:
        journal = self.journal
        now = self.clock()
        s = self.estimation
        history = journal.matrix_history(since=now - s.prediction_window)
        prediction = journal.get_matrix_state(PREDICTION_KEY)
        if prediction is not None and prediction.blocks != self.fabric.block_names:
            prediction = None
        history = [(t, m) for t, m in history if m.blocks == self.fabric.block_names]
        predictor = PeakPredictor.restore(
            history, now, prediction, s.prediction_window, s.prediction_change, s.floor_gbps
        )
        self.state.estimation = TrafficEstimation(self.fabric.block_names, s, predictor=predictor)
        for block in self.fabric.blocks:
            for dst in self.fabric.block_names:
                self.state.estimation.rates.set_ceiling(
                    (block.name, dst), block.uplinks * block.speed_gbps * 1.05
                )
        self.report.recorder.seed_demand((t, m.total()) for t, m in history)
        if history:
            self.state.matrix = history[-1][1]
            self.state.recent.extend(m for _, m in history[-self.te_window :])

    def _recover(self, recovery: RecoveryPoint) -> None:
        self.board.update(phase="rolling_back", reconfiguration_id=recovery.intent.id)
        self.report.emit("recovering", intent=recovery.intent.id, steps=len(recovery.steps))
        outcome = self.executor.resume(recovery)
        self.reconfiguration.after_stage(outcome, self.clock())
