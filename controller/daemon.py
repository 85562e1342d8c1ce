"""The controller daemon (``heliostat run``): a thin shim around the pure decisions.

Each cycle (every ``te_interval``, sooner while a reconfiguration is in flight or a request
waits): poll the devices, feed the estimator, :func:`controller.decision.decide`, then
carry out the actions it returns (restore circuits, TE, ToE planning, one executor stage)
and report each outcome back to the decisions. A device that is down is logged and tried
again next cycle; nothing that fails in a cycle stops the loop.

Start-up: open the journal, reconcile with what the OCSes report, finish (resume or roll
back) a reconfiguration a crash left in flight (:meth:`StageExecutor.resume`), and rebuild
the prediction from the journal's matrix history. A fresh fabric (nothing journaled, every
OCS empty) is configured from scratch: the uniform mesh becomes the intended circuits, the
restore rule installs them, and TE pushes groups once their links are up.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import cast

from controller import decision as dec
from controller.config import ControllerConfig
from controller.device_view import (
    FabricPort,
    GroupTables,
    PollResult,
    PortsByBlock,
    circuit_ends,
    merge_ports,
    ports_of_circuits,
    ports_without,
)
from controller.devices_watch import DevicesFileWatch
from controller.drivers import DevicesMismatch, FabricDrivers
from controller.dry_runs import DryRunner
from controller.metrics import ControllerMetrics
from controller.operator_requests import RequestJournal
from controller.reconfig.executor import (
    ExecutorInterrupted,
    ExecutorSettings,
    PausePoint,
    StageExecutor,
    StageOutcome,
    TeInputs,
)
from controller.reconfig.in_service import maintenance_conflict, planning_view
from controller.reconfig.journal import IntentState, Journal, JournalError, RecoveryPoint
from controller.reconfig.journal_lock import JournalLock
from controller.reconfig.reviewed import PlanRefused, ReviewedPlans, apply_problem
from controller.reconfig.stage_plan import stage_count, stage_spec
from controller.reconfig.toe_run import Proposal, ToePlanner
from controller.sensing.estimation import PeakPredictor, RateEstimator, TrafficEstimation
from controller.sensing.inferred_matrix import infer_matrix
from controller.sensing.observe import (
    blocks_out,
    egress_samples,
    links_up,
    live_circuits,
    maintenance_ports,
    measured_mlu,
    port_samples,
    spines_out,
    startup_intent,
    unexplained_drains,
)
from controller.sensing.qualify import qualified_links
from controller.sensing.spine import spine_links_up, spine_port_samples, spine_utilisation, without_drained
from controller.status import StatusBoard
from controller.te_loop.te_push import TePusher, TeRun, group_tables, usable_circuits
from controller.ui.recorder import Recorder
from optimizer.config import load_plannable_fabric
from optimizer.errors import ConfigError, HeliostatError
from optimizer.fabric import SpineSwitch
from optimizer.policy import ReconfigurePolicy
from optimizer.spine import SpineLink, spine_in_service, spine_links
from optimizer.te import DEFAULT_MAX_OVERSUBSCRIPTION, RecentDemand
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix
from southbound.devices import load_devices_file
from southbound.errors import SouthboundError

log = logging.getLogger(__name__)

PREDICTION_KEY = "prediction"
QUARANTINE_KEY = "quarantined_ports"

#: event name, details -> None (the demo prints these; tests record them)
EventListener = Callable[[str, dict[str, object]], None]


class DaemonError(HeliostatError):
    """The daemon cannot start (bad devices file, unreadable journal...)."""


@dataclass(frozen=True)
class DryRun:
    """A queued request for a ToE plan without applying it."""

    result: Future


@dataclass(frozen=True)
class ApplyReviewed:
    """A queued request to apply a dry run's plan as it is (the future gets the intent id)."""

    plan_id: str
    result: Future


class Daemon:
    """One controller. ``start()`` then ``run(stop)``; or ``cycle()`` step by step in tests."""

    def __init__(
        self,
        config: ControllerConfig,
        *,
        pause: PausePoint | None = None,
        listener: EventListener | None = None,
        clock: Callable[[], float] = time.time,
        metrics: ControllerMetrics | None = None,
        devices: FabricPort | None = None,
        wait: Callable[[float], bool] | None = None,
    ) -> None:
        """``devices`` replaces the drivers the devices file names (``heliostat replay`` runs
        the daemon on devices held in memory); ``wait(seconds)`` replaces the executor's
        sleeps between its checks (replay moves its simulated clock instead; it returns
        True when the daemon is stopping), and ``clock`` is then the simulated clock."""
        self.config = config
        self.clock = clock
        self._given_devices = devices
        self._wait = wait
        self.listener = listener
        self.pause = pause
        self.metrics = metrics or ControllerMetrics()
        self.stop_event = threading.Event()
        self.wake = threading.Event()
        self.requests: queue.SimpleQueue[dec.Request | DryRun | ApplyReviewed] = queue.SimpleQueue()
        self.reviewed = ReviewedPlans()  # dry runs' plans (the dry-run worker adds, the loop applies)
        self.fabric = load_plannable_fabric(config.fabric)
        self.board = StatusBoard(self.fabric.name)
        self.recorder = Recorder()  # recent events, MLU and demand, devices last seen (the status page)
        self.settings = dec.Settings(
            toe_check_interval=config.intervals.toe_check_interval,
            policy=ReconfigurePolicy(
                config.thresholds.reconfig_gain, config.thresholds.min_reconfig_interval
            ),
        )
        self.state = dec.ControlState()
        self.live: frozenset[Circuit] = frozenset()  # installed and both links up: what TE uses
        self.installed: frozenset[Circuit] = frozenset()  # what the OCSes hold
        self.ocs_down: frozenset[str] = frozenset()
        # a hybrid fabric's spine links that are up (as cabled until the first poll)
        self.spine_up: frozenset[SpineLink] = frozenset(spine_links(self.fabric))
        self.quarantined: PortsByBlock = {}
        self.maintenance_drained: PortsByBlock = {}
        self.estimation = TrafficEstimation(self.fabric.block_names, config.estimation_settings())
        self.port_rates = RateEstimator()
        self.matrix: TrafficMatrix | None = None
        # the latest measurements, newest last: what TE plans for (config te.window of them)
        self.recent: deque[TrafficMatrix] = deque(maxlen=config.te.window)
        self.pushed_tables: GroupTables | None = None  # the groups TE last pushed (for tomogravity)
        self.te_runs = 0
        self.journal: Journal | None = None
        self.journal_lock = JournalLock(config.store)
        self.request_journal: RequestJournal | None = None
        self._pending: list[dec.Request] = []  # dequeued, not yet folded into the state by decide
        self._cycle_error: str | None = None  # last_error set by a failed cycle or journal write
        self.drivers: FabricPort | None = None
        self.devices_watch: DevicesFileWatch | None = None  # None: devices given, not from a file
        self.dry_runs = DryRunner(lambda: self._propose("dry_run", self.clock()))

    # -- start-up --------------------------------------------------------------------------

    def start(self) -> None:
        """Open the journal and drivers, reconcile with the devices, recover a crashed stage.
        A journal another controller holds is refused first (controller/reconfig/journal_lock.py)."""
        try:
            self.journal_lock.acquire()
        except HeliostatError as exc:
            raise DaemonError(str(exc)) from exc
        if self._given_devices is not None:
            self.drivers = self._given_devices
        else:
            try:
                devices = load_devices_file(self.config.devices)
            except ConfigError as exc:
                raise DaemonError(str(exc)) from exc
            self.drivers = FabricDrivers(self.fabric, devices)
            self.devices_watch = DevicesFileWatch(self.config.devices, devices)
        self.journal = Journal(self.config.store, clock=self.clock)
        self.request_journal = RequestJournal(self.journal)
        # Transitions between groups aim under the stage threshold less the WCMP rounding margin,
        # as staging does, so that measured loads stay under the threshold itself.
        mix_floor = self.config.thresholds.stage_mlu / DEFAULT_MAX_OVERSUBSCRIPTION
        self.te = TePusher(self.fabric, self.drivers, mix_floor=mix_floor, policy=self.config.te)
        self.planner = ToePlanner(
            self.fabric, self.config.thresholds.stage_mlu, time_limit=self.config.timeouts.toe_solve
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
            stop=self.stop_event,
            pause=self.pause,
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

    # -- the loop ----------------------------------------------------------------------------

    def run(self) -> None:
        """Cycle until stop() (SIGTERM/SIGINT in ``heliostat run``)."""
        interval = self.config.intervals.te_interval
        due = time.monotonic()
        while not self.stop_event.is_set():
            started = time.monotonic()
            try:
                healthy = self.cycle_safely()
            except ExecutorInterrupted:
                break
            now = time.monotonic()
            reconfiguring = healthy and self.state.reconfiguration is not None
            due = dec.next_cycle_at(due, interval, now, reconfiguring, started=started)
            if due > now:
                self.wake.wait(due - now)
                self.wake.clear()
        self.board.update(phase="stopping")

    def cycle_safely(self) -> bool:
        """One cycle; False when it failed (logged, and on the status page). A bad cycle never
        ends the loop; only ExecutorInterrupted (the daemon is stopping) goes through."""
        try:
            self.cycle()
        except ExecutorInterrupted:
            raise
        except (HeliostatError, SouthboundError) as exc:
            log.error("cycle failed: %s", exc)
            self._cycle_error = str(exc)
            self.board.update(last_error=self._cycle_error)
            if isinstance(exc, JournalError):
                self.board.update(journal_error=str(exc))
            return False
        except Exception as exc:  # the loop must survive a bug in one cycle
            log.exception("cycle failed unexpectedly")
            self._cycle_error = f"cycle failed unexpectedly: {type(exc).__name__}: {exc}"
            self.board.update(last_error=self._cycle_error)
            return False
        return True

    def submit(self, request: dec.Request | DryRun | ApplyReviewed) -> None:
        """Queue an operator request once it is durable (controller/operator_requests.py);
        raises JournalError, and queues nothing, when the journal cannot take it. Dry runs and
        reviewed plans to apply are answered to a waiting caller and not journaled."""
        if not isinstance(request, DryRun | ApplyReviewed):
            if self.request_journal is None:
                raise DaemonError("the daemon is not started")
            self.request_journal.record(request)
        self.requests.put(request)
        self.wake.set()

    def stop(self) -> None:
        self.stop_event.set()
        self.wake.set()

    def close(self) -> None:
        self.dry_runs.close()
        if self.drivers is not None:
            self.drivers.close()
        if self.journal is not None:
            self.journal.close()
        self.journal_lock.release()

    def cycle(self) -> list[dec.Action]:
        """One poll, decision and the actions it asks for. Returns the actions."""
        now = self.clock()
        requests, dry_runs = self._drain_requests()
        te_due = self._poll(now)  # if it fails, the requests wait in _pending for the next cycle
        obs = dec.Observation(
            live_circuits=self.live,
            have_matrix=self.matrix is not None,
            te_due=te_due,
            ocs_down=self.ocs_down,
            requests=requests,
            installed=self.installed,
            spine_links=frozenset(self.spine_up),
        )
        toe_wanted = self.state.toe_requested is not None or any(
            isinstance(r, dec.ToeTrigger) for r in requests
        )
        self.state, actions = dec.decide(self.state, obs, now, self.settings)
        self._pending.clear()
        self.board.update(
            toe_paused=self.state.toe_paused,
            maintenance=tuple(str(m) for m in sorted(self.state.maintenance)),
        )
        for kind in ("block", "ocs"):
            drained = sum(1 for m in self.state.maintenance if m.kind.value == kind)
            self.metrics.maintenance.labels(kind).set(drained)
        for dry_run in dry_runs:
            if isinstance(dry_run, ApplyReviewed):
                self._apply_reviewed(dry_run, now)
            else:
                self._dry_run(dry_run, now)
        for action in actions:
            if self.stop_event.is_set():
                break
            self._carry_out(action, now)
        if self.state.reconfiguration is None:
            self._release_quarantine(now)
        if toe_wanted and self.state.toe_requested is None and self.request_journal is not None:
            self.request_journal.forget_toe_request()
        if self._cycle_error is not None and self.board.get("journal_error") is None:
            # A whole cycle after a failed one (or a failed journal write): that error is
            # gone, unless a newer one (TE, ToE, a stage) has replaced it since.
            if self.board.get("last_error") == self._cycle_error:
                self.board.update(last_error=None)
            self._cycle_error = None
        return actions

    def _release_quarantine(self, now: float) -> None:
        """Undrain quarantined links (failed qualification, or restored after an OCS lost them)
        once they qualify: up with the right peers and lit."""
        if not self.quarantined:
            return
        held = {(b, p) for b, ports in self.quarantined.items() for p in ports}
        waiting = [c for c in self.live if any(end in held for end in circuit_ends(self.fabric, c))]
        if not waiting:
            return
        healthy = qualified_links(self.fabric, self._drivers(), waiting)
        if not healthy:
            return
        maintained = maintenance_ports(self.fabric, self.state.maintenance, self.installed)
        kept_drained = {(b, p) for b, plist in maintained.items() for p in plist}
        ports: PortsByBlock = {}
        for b, plist in ports_of_circuits(self.fabric, healthy).items():
            if mine := tuple(p for p in plist if (b, p) in held and (b, p) not in kept_drained):
                ports[b] = mine
        if not ports:
            return
        try:
            self._drivers().undrain(ports)
        except HeliostatError as exc:
            log.warning("releasing quarantined links failed: %s", exc)
            return
        self._set_quarantine(remove=ports)
        log.info("%d quarantined links qualified and are back in service", len(healthy))
        self._run_te(f"{len(healthy)} quarantined links back in service", now)

    def _set_quarantine(self, add: PortsByBlock | None = None, remove: PortsByBlock | None = None) -> None:
        """Change the quarantined ports and journal them (a restarted daemon keeps them drained)."""
        self.quarantined = ports_without(merge_ports(self.quarantined, add or {}), remove or {})
        self._journal().put_state(QUARANTINE_KEY, {b: list(p) for b, p in self.quarantined.items()})

    def _drain_requests(self) -> tuple[tuple[dec.Request, ...], list[DryRun | ApplyReviewed]]:
        """The requests queued since the last cycle, after any a failed cycle left pending."""
        requests = self._pending
        dry_runs: list[DryRun | ApplyReviewed] = []
        while True:
            try:
                item = self.requests.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, DryRun | ApplyReviewed):
                dry_runs.append(item)
            else:
                requests.append(item)
        return tuple(requests), dry_runs

    def _poll(self, now: float) -> bool:
        """Poll the devices and feed the estimator; True when the estimator says TE is due."""
        drivers = self._drivers()
        started = time.monotonic()
        poll = drivers.poll()
        for error in sorted(poll.errors.values()):
            log.warning("poll: %s", error)
        self.metrics.counter_polls.labels("ok").inc(len(poll.counters))
        self.metrics.counter_polls.labels("failed").inc(len(poll.errors))
        self.metrics.devices_unreachable.set(len(poll.unreachable))
        self._follow_devices_file(poll.unreachable)
        self.installed = live_circuits(poll.ocs, self.installed, poll.unreachable)
        self.installed |= frozenset().union(*(r.switching for r in poll.ocs.values()))
        self.live = links_up(self.fabric, self.installed, poll.ports)
        if len(self.live) < len(self.installed):
            log.info("%d circuits installed but not up", len(self.installed) - len(self.live))
        self.ocs_down = self._down(poll)
        self.metrics.circuits.set(len(self.live))
        self.spine_up = spine_links_up(self.fabric, poll.ports, poll.spine_ports)
        self.port_rates.observe_many(port_samples(poll.counters), now)
        self.port_rates.observe_many(spine_port_samples(poll.spine_counters), now)
        rates = cast(dict[tuple[str, int], float], self.port_rates.rates())  # keyed (device, port)
        te_due = self._estimate(poll, rates, now)
        measured = measured_mlu(self.fabric, self._usable(self.live), rates)
        spine_util = self._spine_utilisation(rates)
        if spine_util:
            measured = max(measured or 0.0, *spine_util.values())
        if measured is not None:
            self.metrics.measured_mlu.set(measured)
        self.board.update(
            measured_mlu=measured,
            poll_s=time.monotonic() - started,
            unreachable=tuple(sorted(poll.unreachable)),
            ocs_down=tuple(sorted(self.ocs_down)),
            circuits_installed=len(self.installed),
            circuits_up=len(self.live),
        )
        demand = None if self.matrix is None else self.matrix.total()
        self.recorder.polled(now, poll, self.board.snapshot(), demand)
        return te_due

    def _estimate(self, poll: PollResult, rates: dict[tuple[str, int], float], now: float) -> bool:
        """The TE matrix and prediction from this poll; True when TE is due.

        From per-destination egress counters when the blocks report them; otherwise by
        tomogravity from the trunks' port rates and the groups last pushed.
        """
        if any(c.egress_bytes for c in poll.counters.values()) or not poll.counters:
            cycle = self.estimation.cycle(egress_samples(poll.counters), now)
            if cycle.prediction is None:
                return False
            matrix, te_due, prediction = cycle.estimate.matrix, cycle.te_due, cycle.prediction
        else:
            if self.pushed_tables is None or not rates:
                return False
            circuits = self.state.te_circuits or self._usable(self.live)
            matrix = infer_matrix(
                self.fabric, self.pushed_tables, circuits, rates, self._spine_links_in_service()
            ).matrix
            settings = self.estimation.settings
            te_due = dec.inferred_te_due(
                matrix, self.estimation.te_matrix, settings.floor_gbps, settings.te_matrix_change
            )
            prediction = self.estimation.predictor.observe(now, matrix)
        self.matrix = matrix
        self.recent.append(matrix)
        journal = self._journal()
        self._journal_softly(
            "the matrix history",
            lambda: journal.append_matrix(now, matrix, retention_s=self.config.intervals.prediction_window),
        )
        if prediction.refreshed:
            self._journal_softly(
                "the prediction", lambda: journal.put_matrix_state(PREDICTION_KEY, prediction.prediction)
            )
        self.metrics.demand_gbps.set(matrix.total())
        return te_due

    def _follow_devices_file(self, unreachable: frozenset[str]) -> None:
        """While devices do not answer, re-read the devices file with backoff and reconnect
        to the devices whose address changed (controller/devices_watch.py)."""
        drivers = self.drivers
        if self.devices_watch is None or not isinstance(drivers, FabricDrivers):
            return
        devices = self.devices_watch.check(unreachable, time.monotonic())
        if devices is None:
            return
        try:
            moved = drivers.replace_devices(devices)
        except DevicesMismatch as exc:
            log.warning("devices file %s not followed: %s", self.config.devices, exc)
            return
        if moved:
            log.warning("reconnected to %d devices at their new addresses: %s", len(moved), ", ".join(moved))
            self._emit("devices_moved", devices=moved)

    def _journal_softly(self, what: str, write: Callable[[], object]) -> None:
        """A journal write the loop can go on without (the matrix history, the prediction):
        when it fails (a full disk) the loop still polls and runs TE, the status shows it, and
        the first write that succeeds again clears it."""
        try:
            write()
        except JournalError as exc:
            if self.board.get("journal_error") is None:
                log.warning("journal: cannot write %s (%s); going on without it", what, exc.problem)
            self._cycle_error = f"journal: cannot write {what}: {exc}"
            self.board.update(journal_error=str(exc), last_error=self._cycle_error)
            return
        if self.board.get("journal_error") is not None:
            log.warning("journal %s: writable again", self.config.store)
            self.board.update(journal_error=None)

    def _down(self, poll: PollResult) -> frozenset[str]:
        unpowered = {name for name, r in poll.ocs.items() if not r.powered}
        return frozenset(unpowered | {d for d in poll.unreachable if d in self._drivers().ocs})

    # -- actions -----------------------------------------------------------------------------

    def _carry_out(self, action: dec.Action, now: float) -> None:
        if isinstance(action, dec.RestoreCircuits):
            self._restore_circuits(action.circuits)
        elif isinstance(action, dec.RunTe):
            self._run_te(action.reason, now)
        elif isinstance(action, dec.PlanToe):
            self._plan_toe(action.trigger, now)
        elif isinstance(action, dec.RunStage):
            self._run_stage(action, now)

    def _restore_circuits(self, circuits: tuple[Circuit, ...]) -> None:
        """Re-install circuits an OCS lost, as a stage would: drain their ports first (they
        are down, so nothing moves), switch, and keep them quarantined until they qualify
        (:meth:`_release_quarantine` undrains them then)."""
        drivers = self._drivers()
        for ocs in sorted({c.ocs for c in circuits}):
            adds = [c for c in circuits if c.ocs == ocs]
            ports = ports_of_circuits(self.fabric, adds)
            try:
                drivers.drain(ports)
                self._set_quarantine(add=ports)
                reading = drivers.read_ocs(ocs)
                request_id = f"heliostat-restore-{ocs}-g{reading.generation}"
                generation = drivers.apply_ocs(ocs, reading.generation, adds, (), request_id)
                self._journal().record_generation(ocs, generation, request_id, force=True)
            except (HeliostatError, SouthboundError) as exc:
                log.warning("restoring %d circuits on %s failed: %s", len(adds), ocs, exc)
                continue
            log.info("restored %d circuits on %s; they stay drained until they qualify", len(adds), ocs)
            self._emit("restore", ocs=ocs, circuits=len(adds))

    def _spine_links_in_service(self) -> frozenset[SpineLink]:
        drained = merge_ports(
            maintenance_ports(self.fabric, self.state.maintenance, self.installed), self.quarantined
        )
        return without_drained(self.spine_up, drained)

    def spine_service(self) -> tuple[SpineSwitch, ...]:
        """The spine TE may route over: links up, not drained, switches not under maintenance."""
        out = spines_out(self.state.maintenance)
        return spine_in_service(self.fabric, self._spine_links_in_service(), out)

    def spine_view(self) -> list[dict[str, object]]:
        """Per spine switch and block: links in service and cabled (``ctl topology``)."""
        service = {s.name: s for s in self.spine_service()}
        return [
            {
                "spine": s.name,
                "block": block,
                "in_service": service[s.name].links_to(block) if s.name in service else 0,
                "cabled": count,
            }
            for s in self.fabric.spine
            for block, count in s.links
            if count > 0
        ]

    def _spine_utilisation(self, rates: dict[tuple[str, int], float]) -> dict[tuple[str, str], float]:
        if not self.fabric.spine:
            return {}
        service = self.spine_service()
        util = spine_utilisation(self.fabric, service, self._spine_links_in_service(), rates)
        for (src, dst), value in util.items():
            self.metrics.spine_utilization.labels(src, dst).set(value)
        self.metrics.spine_links.set(sum(count for s in service for _, count in s.links))
        return util

    def _te_inputs(self) -> TeInputs:
        # Every TE (the loop's and the executor's) routes over the spine in service now.
        self.te.set_spine(self.spine_service(), getattr(self._drivers(), "spines", ()))
        if self.recent:
            demand = RecentDemand(tuple(self.recent))
        else:
            demand = RecentDemand.of(TrafficMatrix.zeros(self.fabric.block_names))
        drained = maintenance_ports(self.fabric, self.state.maintenance, self.installed)
        return TeInputs(
            demand,
            merge_ports(drained, self.quarantined),
            blocks_out(self.state.maintenance),
            down=self.installed - self.live,
        )

    def _usable(self, circuits: frozenset[Circuit]) -> frozenset[Circuit]:
        inputs = self._te_inputs()
        return usable_circuits(self.fabric, circuits, inputs.drained_ports, inputs.blocks_out)

    def _run_te(self, reason: str, now: float) -> None:
        drivers = self._drivers()
        inputs = self._te_inputs()
        wanted = maintenance_ports(self.fabric, self.state.maintenance, self.installed)
        released = {
            b: [p for p in ports if p not in set(wanted.get(b, ()))]
            for b, ports in self.maintenance_drained.items()
        }
        started = time.monotonic()
        try:
            drivers.undrain(released)  # back in service before TE routes over them
            circuits = usable_circuits(self.fabric, self.live, inputs.drained_ports, inputs.blocks_out)
            demand = inputs.demand.without(inputs.blocks_out)
            self.te_runs += 1
            run = self.te.run(circuits, demand, f"heliostat-te{self.te_runs}-t{int(now)}")
            drivers.drain(wanted)  # out of service only once TE avoids them
        except (HeliostatError, SouthboundError) as exc:
            log.warning("TE (%s) failed: %s", reason, exc)
            self.metrics.te_failures.inc()
            self.state = dec.te_finished(self.state, now, self.live, False, f"TE failed: {exc}")
            self.board.update(last_error=f"TE failed: {exc}")
            return
        self.maintenance_drained = wanted
        self.estimation.te_ran(inputs.demand.latest)
        self.state = dec.te_finished(self.state, now, self.live, True, spine_links=frozenset(self.spine_up))
        elapsed = time.monotonic() - started
        self._te_done(run, now, elapsed)
        self._emit(
            "te",
            reason=reason,
            mlu=run.result.mlu,
            mlu_quantized=run.result.mlu_quantized,
            demand_gbps=run.result.total_demand_gbps,
            circuits=len(circuits),
            seconds=elapsed,
        )

    def _te_done(self, run: TeRun, now: float, elapsed: float | None = None) -> None:
        self.metrics.te_runs.inc()
        self.metrics.te_solve_seconds.observe(run.solve_s)
        if elapsed is not None:
            self.metrics.te_cycle_seconds.observe(elapsed)
        self.metrics.mlu.set(run.result.mlu)
        self.metrics.overloaded.set(1 if run.result.mlu > 1.0 else 0)
        if run.result.mlu > 1.0:
            self.metrics.overloaded_runs.inc()
            log.warning("TE: MLU %.4f is above 1: the live topology cannot carry the demand "
                        "(%.0f Gbit/s); traffic is being dropped",
                        run.result.mlu, run.result.total_demand_gbps)
        self.metrics.group_pushes.labels("ok").inc(len(run.generations))
        self.pushed_tables = group_tables(run.result, self.fabric.block_names)
        predicted = None
        prediction = self.estimation.predictor.prediction
        if prediction is not None:
            try:
                predicted = self.te.min_mlu(Topology.from_circuits(self.fabric, run.circuits), prediction)
                self.metrics.predicted_mlu.set(predicted)
            except HeliostatError as exc:
                log.info("predicted MLU not computed: %s", exc)
        self.board.update(
            te_runs=self.board.get("te_runs") + 1,
            last_te_time=now,
            mlu=run.result.mlu,
            mlu_quantized=run.result.mlu_quantized,
            predicted_mlu=predicted,
        )

    def _plan_toe(self, trigger: str, now: float) -> None:
        skip = dec.toe_skip_reason(trigger, self.estimation.predictor.prediction or self.matrix)
        if skip is not None:
            log.info("ToE (%s) skipped: %s", trigger, skip)
            self.state = dec.toe_checked(self.state, now)
            self.board.update(last_toe_time=now)
            self._emit("toe", trigger=trigger, apply=False, reason=f"skipped: {skip}")
            return
        self.board.update(phase="planning")
        try:
            proposal = self._propose(trigger, now)
        except HeliostatError as exc:
            log.warning("ToE (%s) failed: %s", trigger, exc)
            self.state = dec.toe_checked(self.state, now, f"ToE failed: {exc}")
            self.board.update(phase="idle", last_error=f"ToE failed: {exc}", last_toe_time=now)
            if isinstance(exc, JournalError):  # cleared once the journal is writable again
                self._cycle_error = f"ToE failed: {exc}"
                self.board.update(journal_error=str(exc))
            self._emit("toe", trigger=trigger, apply=False, reason=f"failed: {exc}")
            return
        self.board.update(toe_runs=self.board.get("toe_runs") + 1, last_toe_time=now)
        self._emit(
            "toe",
            trigger=trigger,
            apply=proposal.verdict.apply,
            reason=proposal.verdict.reason,
            current_mlu=proposal.current_mlu,
            planned_mlu=proposal.planned_mlu,
            stages=len(proposal.plan.get("stages", ())),
            changed=proposal.changed,
        )
        if not proposal.verdict.apply:
            self.state = dec.toe_checked(self.state, now)
            self.board.update(phase="idle")
            return
        self._start_reconfiguration(proposal.plan, trigger, now)

    def _start_reconfiguration(self, plan: dict[str, object], trigger: str, now: float) -> int:
        intent_id = self.executor.begin(plan, trigger, self.installed)
        total = stage_count(plan)
        self.metrics.reconfigurations.labels("started").inc()
        self.state = dec.reconfiguration_started(self.state, now, intent_id, total)
        self.board.update(phase="reconfiguring", reconfiguration_id=intent_id, stages_total=total, stage=0)
        return intent_id

    def _propose(self, trigger: str, now: float) -> Proposal:
        prediction = self.estimation.predictor.prediction or self.matrix
        if prediction is None:
            raise DaemonError("no traffic measured yet")
        started = time.monotonic()
        maintenance = self.state.maintenance
        ocs_out = [m.name for m in maintenance if m.kind is dec.MaintenanceTarget.OCS]
        view = planning_view(
            self.fabric, self.installed, ocs_out, blocks_out(maintenance), self.spine_service()
        )
        proposal = self.planner.propose(
            trigger, prediction, self.installed, now, self.state.last_reconfig_at, self.settings.policy,
            view=view,
        )
        self.metrics.toe_runs.labels(trigger).inc()
        self.metrics.toe_solve_seconds.observe(time.monotonic() - started)
        proposal.plan["planned_at"] = now
        if trigger == "dry_run" and proposal.plan.get("stages"):
            proposal.plan["plan_id"] = self.reviewed.add(proposal.plan, self.installed)
        self._journal().put_state(
            "last_plan",
            {
                **proposal.plan,
                "verdict": {
                    "apply": proposal.verdict.apply,
                    "reason": proposal.verdict.reason,
                    "gain": proposal.verdict.gain,
                },
            },
        )
        return proposal

    def _apply_reviewed(self, request: ApplyReviewed, now: float) -> None:
        """Start exactly the reviewed plan, or refuse it with the reason
        (:mod:`controller.reconfig.reviewed`)."""
        try:
            reviewed = self.reviewed.get(request.plan_id)
            problem = apply_problem(
                self.fabric,
                reviewed,
                self.installed,
                self.state.reconfiguration is not None,
                self.estimation.predictor.prediction or self.matrix,
                self.config.thresholds.stage_mlu,
                self.planner.wcmp_margin,
                self.planner.evaluate,
            )
            if problem is not None:
                raise PlanRefused(f"plan {request.plan_id} refused: {problem}")
            plan = {**reviewed.plan, "trigger": "operator", "reason": f"reviewed plan {request.plan_id}"}
            intent_id = self._start_reconfiguration(plan, "operator", now)
        except HeliostatError as exc:
            log.warning("ctl toe --apply: %s", exc)
            request.result.set_exception(exc)
            return
        log.info("reviewed plan %s started as reconfiguration %d", request.plan_id, intent_id)
        request.result.set_result(intent_id)

    def _dry_run(self, request: DryRun, now: float) -> None:
        """Planned on the dry-run worker: the loop does not wait for it (controller/dry_runs.py)."""
        self.dry_runs.submit(request.result)

    def _run_stage(self, action: dec.RunStage, now: float) -> None:
        record = self._journal().current_topology()
        before = frozenset(record.circuits) if record is not None else self.installed
        self.board.update(phase="reconfiguring", reconfiguration_id=action.intent_id, stage=action.stage)
        self.metrics.reconfig_stage.set(action.stage)
        recovery = self._journal().recovery_point()
        resuming = recovery is not None and any(s.stage == action.stage for s in recovery.steps)
        if not resuming and self._stop_for_maintenance(action, before, now):
            return
        if recovery is not None and any(s.stage == action.stage for s in recovery.steps):
            # An earlier attempt of this stage stopped half-way (an unexpected error in this
            # process): finish it exactly as after a crash.
            outcome = self.executor.resume(recovery)
        else:
            outcome = self.executor.run_stage(action.intent_id, action.stage, before)
        self._after_stage(outcome, now)

    def _stop_for_maintenance(self, action: dec.RunStage, before: frozenset[Circuit], now: float) -> bool:
        """Stop a reconfiguration (before the stage starts) whose next stage would switch an
        OCS or a block drained for maintenance since it was planned; True if it stopped.
        Every stage ends consistent, so nothing is rolled back; ToE re-plans around it."""
        spec = stage_spec(self._journal().intent(action.intent_id).plan, action.stage)
        maintenance = self.state.maintenance
        ocs_out = [m.name for m in maintenance if m.kind is dec.MaintenanceTarget.OCS]
        conflict = maintenance_conflict(self.fabric, spec.remove, spec.add, ocs_out, blocks_out(maintenance))
        if conflict is None:
            return False
        reason = (f"stage {action.stage + 1} would switch {conflict}, drained for maintenance since the "
                  "plan was made: the reconfiguration stops here")
        log.warning("intent %d: %s", action.intent_id, reason)
        state = IntentState.CANCELLED if action.stage == 0 else IntentState.ROLLED_BACK
        self._journal().finish_intent(action.intent_id, state, reason)
        self._after_stage(
            StageOutcome(False, action.intent_id, action.stage, True, None, before, reason=reason), now
        )
        return True

    def _after_stage(self, outcome: StageOutcome, now: float) -> None:
        self._set_quarantine(add=outcome.quarantined)
        if outcome.te is not None:
            self._te_done(outcome.te, now)
        if outcome.next_stage is not None and not outcome.finished:
            total = stage_count(self._journal().intent(outcome.intent_id).plan)
            self.state = dec.stage_advanced(
                self.state, now, outcome.intent_id, total, outcome.next_stage, outcome.circuits,
                te_ran=outcome.te is not None,
            )
            self.board.update(
                phase="reconfiguring",
                reconfiguration_id=outcome.intent_id,
                stages_total=total,
                stage=outcome.next_stage,
            )
            return
        self.state = dec.reconfiguration_ended(
            self.state, now, outcome.intent_id, outcome.stage, outcome.ok, outcome.circuits, outcome.reason,
            te_ran=outcome.te is not None,
        )
        self.metrics.reconfig_stage.set(-1)
        result = "done" if outcome.ok else "rolled_back"
        self.metrics.reconfigurations.labels(result).inc()
        self.board.update(
            phase="idle",
            reconfiguration_id=None,
            stage=None,
            stages_total=None,
            step=None,
            last_error=outcome.reason if not outcome.ok else self.board.get("last_error"),
        )
        self._emit("reconfiguration", intent=outcome.intent_id, outcome=result, reason=outcome.reason)

    # -- events ------------------------------------------------------------------------------

    def _step_event(self, intent: int, stage: int, step: str, event: str) -> None:
        if step in ("stage", "rollback"):
            self.board.update(step=None)
            self._emit(step, intent=intent, stage=stage, event=event)
            return
        self.board.update(step=step, phase="reconfiguring")
        self._emit("step", intent=intent, stage=stage, step=step, event=event)

    def _emit(self, kind: str, **details: object) -> None:
        self.recorder.event(self.clock(), kind, details)
        if self.listener is not None:
            try:
                self.listener(kind, details)
            except Exception:  # a listener must not break the loop
                log.exception("event listener failed on %s", kind)

    def _journal(self) -> Journal:
        if self.journal is None:
            raise DaemonError("the daemon is not started")
        return self.journal

    def _drivers(self) -> FabricPort:
        if self.drivers is None:
            raise DaemonError("the daemon is not started")
        return self.drivers
