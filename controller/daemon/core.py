"""The composition root and the loop (see :mod:`controller.daemon` and controller/README.md).

:class:`Daemon` builds everything: the state (:class:`~controller.daemon.state.DaemonState`),
the reporter, the leadership, the drivers, and for each term it leads a :class:`Term`: the
journal (SQLite, or etcd with ``ha``), the request journal, the TE pusher, the ToE planner,
the executor, and the parts built on them (quarantine, TE step, sensing, reconfiguration).
:meth:`Daemon.cycle` drains the operator requests, polls (:class:`~controller.daemon.sensing.Sensing`),
calls :func:`controller.decision.decide` and carries out the actions it returns through the
parts; :meth:`Daemon.run` paces the cycles and :meth:`Daemon.cycle_safely` keeps a bad cycle
from ending the loop.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass

from controller import decision as dec
from controller.config import ControllerConfig
from controller.daemon.job_comm import JobCommTimes, RoutingInForce, routing_in_force
from controller.daemon.jobs import JobBook
from controller.daemon.leadership import Leadership
from controller.daemon.quarantine import Quarantine
from controller.daemon.reconfiguration import Reconfiguration
from controller.daemon.report import Reporter
from controller.daemon.sensing import Sensing
from controller.daemon.spine import SpineService
from controller.daemon.startup import StartUp
from controller.daemon.state import (
    ApplyReviewed,
    DaemonError,
    DaemonState,
    DryRun,
    EventListener,
)
from controller.daemon.te_step import TeStep
from controller.device_view import FabricPort, PortsByBlock
from controller.devices_watch import DevicesFileWatch
from controller.drivers import FabricDrivers
from controller.dry_runs import DryRunner
from controller.ha.elector import Elector
from controller.metrics import ControllerMetrics
from controller.operator_requests import RequestJournal
from controller.reconfig.executor import ExecutorInterrupted, ExecutorSettings, StageExecutor
from controller.reconfig.journal import Journal, JournalError
from controller.reconfig.journal_lock import JournalLock
from controller.reconfig.pause import PausePoint
from controller.reconfig.reviewed import ReviewedPlans
from controller.reconfig.toe_run import ToePlanner
from controller.reconfig.workers import domain_pool, pays_off
from controller.sensing.estimation import TrafficEstimation
from controller.status import StatusBoard
from controller.te_loop.te_push import TePusher
from controller.ui.recorder import Recorder
from optimizer.config import load_plannable_fabric
from optimizer.errors import ConfigError, HeliostatError
from optimizer.mapping import ParallelMap
from optimizer.policy import ReconfigurePolicy
from optimizer.spine import spine_links
from optimizer.te import DEFAULT_MAX_OVERSUBSCRIPTION
from optimizer.topology import Circuit
from optimizer.traffic import TrafficMatrix
from southbound.devices import load_devices_file
from southbound.errors import SouthboundError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Term:
    """A leader's term: what is built on its journal, and the parts built on that. A new term
    (a start, or a standby taking over) builds a new one; stepping down drops it."""

    journal: Journal
    request_journal: RequestJournal
    te: TePusher
    planner: ToePlanner
    executor: StageExecutor
    quarantine: Quarantine
    te_step: TeStep
    sensing: Sensing
    reconfiguration: Reconfiguration


class Daemon:
    """One controller. ``start()`` then ``run(stop)``; or ``cycle()`` step by step in tests.

    The composition root: it builds the parts and hands each its collaborators; the parts
    share the one :class:`DaemonState` (``shared``) and call no method of the root."""

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
        self.pause = pause
        self.metrics = metrics or ControllerMetrics()
        self.metrics.te_interval.set(config.intervals.te_interval)
        self.stop_event = threading.Event()
        self.wake = threading.Event()
        self.requests: queue.SimpleQueue[dec.Request | DryRun | ApplyReviewed] = queue.SimpleQueue()
        self._pending: list[dec.Request] = []  # dequeued, not yet folded into the state by decide
        self.reviewed = ReviewedPlans()  # dry runs' plans (the dry-run worker adds, the loop applies)
        self.fabric = load_plannable_fabric(config.fabric)
        self.board = StatusBoard(self.fabric.name)
        self.recorder = Recorder()  # recent events, MLU and demand, devices last seen (the status page)
        self.settings = dec.Settings(
            toe_check_interval=config.intervals.toe_check_interval,
            policy=ReconfigurePolicy(
                config.thresholds.reconfig_gain, config.thresholds.min_reconfig_interval
            ),
            te_stale_ratio=config.thresholds.te_stale_ratio,
        )
        self.shared = DaemonState(
            estimation=TrafficEstimation(self.fabric.block_names, config.estimation_settings()),
            # the latest measurements, newest last: what TE plans for (config te.window of them)
            recent=deque(maxlen=config.te.window),
            # a hybrid fabric's spine links that are up (as cabled until the first poll)
            spine_up=frozenset(spine_links(self.fabric)),
        )
        self.jobs = JobBook(self.fabric, config.intervals.job_lead_time)  # announced jobs (jobs.py)
        self.shared.jobs = self.jobs
        self.job_comm = JobCommTimes(self.fabric, config.intervals.job_lead_time)  # their comm times
        self.report = Reporter(self.shared, self.board, self.recorder, self.metrics, listener, clock,
                               config.store)
        self.spine = SpineService(self.fabric, self.shared)
        self.journal_lock = JournalLock(config.store)
        listen = config.listen.northbound
        self.leadership = Leadership(
            config.ha, self.fabric, self.shared, self.journal_lock,
            str(listen) if listen.port else None, self.wake, self.report, clock,
        )
        self.drivers: FabricPort | None = None
        self.devices_watch: DevicesFileWatch | None = None  # None: devices given, not from a file
        self.mapping_pool = ExitStack()  # the planner's worker processes, if any (close() ends them)
        self.parallel_map: ParallelMap | None = None
        self.term: Term | None = None  # while leading
        self._planner: ToePlanner | None = None  # the last term's (the API's drain check evaluates with it)
        self.dry_runs = DryRunner(lambda: self._term().reconfiguration.propose("dry_run", self.clock()))

    # -- building ----------------------------------------------------------------------------

    def start(self) -> None:
        """Open the drivers, then (leading) the journal, reconcile with the devices and recover
        a crashed stage. A journal another controller holds is refused first
        (controller/reconfig/journal_lock.py). With ``ha`` the replica joins the election
        first, and a standby defers the rest until it leads (controller/daemon/leadership.py)."""
        self.leadership.join_election()
        if self._given_devices is not None:
            self.drivers = self._given_devices
        else:
            try:
                devices = load_devices_file(self.config.devices)
            except ConfigError as exc:
                raise DaemonError(str(exc)) from exc
            self.drivers = FabricDrivers(self.fabric, devices, epoch=self.leadership.elector)
            self.devices_watch = DevicesFileWatch(self.config.devices, devices)
        if self.acting():
            self._start_leading()
        else:
            self.board.update(phase="idle")

    def _start_leading(self) -> None:
        """The leader's start-up: take the journal, build the term, reconcile, recover. With
        ``ha`` the journal is the replicas' shared one in etcd, written only while this
        replica's lease holds the leader key (controller/ha/etcd_journal.py)."""
        config = self.config
        journal: Journal
        if self.leadership.elector is not None:
            journal = self.leadership.shared_journal()  # type: ignore[assignment]  # same interface
        else:
            try:
                self.journal_lock.acquire()
            except HeliostatError as exc:
                raise DaemonError(str(exc)) from exc
            journal = Journal(config.store, clock=self.clock)
        self.leadership.leading = True
        self.term = self._build_term(journal)
        self.jobs.attach(journal)
        StartUp(
            self.fabric, self.shared, self._drivers(), journal, self.term.request_journal, self.term.executor,
            config.estimation_settings(), config.te.window, self.term.reconfiguration, self.term.quarantine,
            self.report, self.clock,
        ).run()

    def _build_term(self, journal: Journal) -> Term:
        config, fabric, shared, report = self.config, self.fabric, self.shared, self.report
        drivers = self._drivers()
        # Transitions between groups aim under the stage threshold less the WCMP rounding margin,
        # as staging does, so that measured loads stay under the threshold itself.
        mix_floor = config.thresholds.stage_mlu / DEFAULT_MAX_OVERSUBSCRIPTION
        te = TePusher(fabric, drivers, mix_floor=mix_floor, policy=config.te)
        budgets, unread = drivers.budgets()
        if unread:
            log.warning("group budgets not read from %s; they are assumed to hold the policy's groups",
                        ", ".join(sorted(unread)))
        te.fit_budgets(budgets)
        if self.parallel_map is None and pays_off(fabric):  # started once; close() ends it
            self.parallel_map = self.mapping_pool.enter_context(domain_pool(fabric=fabric))
        planner = ToePlanner(
            fabric, config.thresholds.stage_mlu, time_limit=config.timeouts.toe_solve,
            parallel_map=self.parallel_map, deferred_ttl=config.deferred_plan_ttl,
            stage_seconds=config.timeouts.stage_seconds,
        )
        self._planner = planner
        quarantine = Quarantine(shared, journal)
        te_step = TeStep(fabric, shared, drivers, te, journal, self.spine, quarantine, report)
        term_stop = self.leadership.term_stop
        executor = StageExecutor(
            fabric,
            drivers,
            journal,
            te,
            te_step.te_inputs,
            ExecutorSettings(
                timeouts=config.timeouts,
                min_qualified_fraction=config.thresholds.min_qualified_fraction,
                stage_mlu=config.thresholds.stage_mlu,
                verify_interval_s=min(config.intervals.te_interval, config.timeouts.verify_drain / 4),
            ),
            stop=term_stop,
            checkpoint=None if self.pause is None else self.pause.checkpoint(term_stop),
            listener=report.step_event,
            clock=time.monotonic if self._wait is None else self.clock,  # a simulated clock with its wait
            wait=self._wait,
        )
        sensing = Sensing(
            fabric, shared, drivers, self.devices_watch, config.devices, journal,
            config.intervals.prediction_window, te_step, self.spine, quarantine, report,
        )
        reconfiguration = Reconfiguration(
            fabric, shared, self.settings, config.thresholds.stage_mlu, journal, planner, executor,
            self.reviewed, self.dry_runs, te_step, self.spine, quarantine, report,
        )
        return Term(journal, RequestJournal(journal), te, planner, executor, quarantine, te_step, sensing,
                    reconfiguration)

    def _term(self) -> Term:
        if self.term is None:
            raise DaemonError("the daemon is not started")
        return self.term

    def _drivers(self) -> FabricPort:
        if self.drivers is None:
            raise DaemonError("the daemon is not started")
        return self.drivers

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
                if self.stop_event.is_set() or self.leadership.elector is None:
                    break
                healthy = False  # leadership lost mid-stage: the next cycle steps down
            now = time.monotonic()
            reconfiguring = healthy and self.shared.control.reconfiguration is not None
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
            self.shared.cycle_error = str(exc)
            self.board.update(last_error=self.shared.cycle_error)
            if isinstance(exc, JournalError):
                self.board.update(journal_error=str(exc))
            return False
        except Exception as exc:  # the loop must survive a bug in one cycle
            log.exception("cycle failed unexpectedly")
            self.shared.cycle_error = f"cycle failed unexpectedly: {type(exc).__name__}: {exc}"
            self.board.update(last_error=self.shared.cycle_error)
            return False
        return True

    def cycle(self) -> list[dec.Action]:
        """One poll, decision and the actions it asks for. Returns the actions."""
        now = self.clock()
        elector = self.leadership.elector
        if elector is not None:
            if not elector.acting():
                if self.leadership.leading:
                    self._step_down()
                return self.leadership.standby_cycle(now, self._drivers())
            if not self.leadership.leading:
                self._take_over()
                self.leadership.show_role(elector.state)
        term = self._term()
        requests, dry_runs = self._drain_requests()
        requests += self._job_trigger(now)
        te_due = term.sensing.poll(now)  # if it fails, the requests wait in _pending for the next cycle
        shared = self.shared
        obs = dec.Observation(
            live_circuits=shared.live,
            have_matrix=shared.matrix is not None,
            te_due=te_due,
            routes_missing=shared.routes_missing,
            ocs_down=shared.ocs_down,
            requests=requests,
            installed=shared.installed,
            spine_links=frozenset(shared.spine_up),
            weights_fit=None
            if te_due or shared.control.reconfiguration is not None
            else term.te_step.weights_fit(self.settings.te_stale_ratio),
        )
        toe_wanted = shared.control.toe_requested is not None or any(
            isinstance(r, dec.ToeTrigger) for r in requests
        )
        shared.control, actions = dec.decide(shared.control, obs, now, self.settings)
        self._pending.clear()
        self.board.update(
            toe_paused=shared.control.toe_paused,
            maintenance=tuple(str(m) for m in sorted(shared.control.maintenance)),
        )
        self.metrics.toe_paused.set(1 if shared.control.toe_paused else 0)
        for kind in ("block", "ocs", "spine"):
            drained = sum(1 for m in shared.control.maintenance if m.kind.value == kind)
            self.metrics.maintenance.labels(kind).set(drained)
        self.metrics.fabric.update(
            maintenance=tuple((m.kind.value, m.name) for m in shared.control.maintenance)
        )
        for dry_run in dry_runs:
            if isinstance(dry_run, ApplyReviewed):
                term.reconfiguration.apply_reviewed(dry_run, now)
            else:
                term.reconfiguration.dry_run(dry_run, now)
        for action in actions:
            if self.stop_event.is_set():
                break
            self._carry_out(term, action, now)
        if shared.control.reconfiguration is None:
            term.sensing.release_quarantine(now)
        if toe_wanted and shared.control.toe_requested is None:
            term.request_journal.forget_toe_request()
        if shared.cycle_error is not None and self.board.get("journal_error") is None:
            # A whole cycle after a failed one (or a failed journal write): that error is
            # gone, unless a newer one (TE, ToE, a stage) has replaced it since.
            if self.board.get("last_error") == shared.cycle_error:
                self.board.update(last_error=None)
            shared.cycle_error = None
        return actions

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

    def _job_trigger(self, now: float) -> tuple[dec.Request, ...]:
        """ToE plans as soon as an announced job becomes due or starts (not while paused)."""
        if self.shared.control.toe_paused:
            return ()
        new = self.jobs.newly_planned(now)
        if not new:
            return ()
        self.report.emit("jobs", due=new)
        return (dec.ToeTrigger(dec.JOB_TRIGGER),)

    @staticmethod
    def _carry_out(term: Term, action: dec.Action, now: float) -> None:
        if isinstance(action, dec.RestoreCircuits):
            term.te_step.restore_circuits(action.circuits)
        elif isinstance(action, dec.RunTe):
            term.te_step.run_te(action.reason, now)
        elif isinstance(action, dec.PlanToe):
            term.reconfiguration.plan_toe(action.trigger, now)
        elif isinstance(action, dec.RunStage):
            term.reconfiguration.run_stage(action, now)

    def _take_over(self) -> None:
        """This replica now leads: the leader's start-up, as after a restart."""
        state = self.leadership.begin_term()
        self._start_leading()
        replica = self.leadership.elector.config.name if self.leadership.elector is not None else None
        self.report.emit("leading", epoch=state.own_epoch, replica=replica)

    def _step_down(self) -> None:
        """Leave the leader's term: its journal closes and its parts go."""
        term, self.term = self.term, None
        self.jobs.detach()
        self.leadership.step_down(None if term is None else term.journal)

    # -- the face the API, the CLI and the tests use ---------------------------------------

    def submit(self, request: dec.Request | DryRun | ApplyReviewed) -> None:
        """Queue an operator request once it is durable (controller/operator_requests.py);
        raises JournalError, and queues nothing, when the journal cannot take it. Dry runs and
        reviewed plans to apply are answered to a waiting caller and not journaled."""
        self.refuse_unless_leading()
        if not isinstance(request, DryRun | ApplyReviewed):
            if self.term is None:
                raise DaemonError("the daemon is not started")
            self.term.request_journal.record(request)
        self.requests.put(request)
        self.wake.set()

    def stop(self) -> None:
        self.stop_event.set()
        self.leadership.term_stop.set()
        self.wake.set()

    def close(self) -> None:
        if self.leadership.elector is not None:
            self.leadership.elector.stop()  # resign: a standby takes over at once
        self.dry_runs.close()
        self.mapping_pool.close()
        if self.drivers is not None:
            self.drivers.close()
        if self.term is not None:
            self.term.journal.close()
        self.journal_lock.release()

    def acting(self) -> bool:
        """True when this daemon may change the fabric (always, without ``ha``)."""
        return self.leadership.acting()

    def refuse_unless_leading(self) -> None:
        self.leadership.refuse_unless_leading()

    def routing_in_force(self) -> RoutingInForce:
        """The routing as the daemon knows it (what the jobs' communication times are played on)."""
        shared = self.shared
        drained = (shared.maintenance_drained, shared.quarantined)
        return routing_in_force(shared.live, shared.pushed_tables, drained)

    def spine_view(self) -> list[dict[str, object]]:
        """Per spine switch and block: links in service and cabled (``ctl topology``)."""
        return self.spine.view()

    @property
    def state(self) -> dec.ControlState:
        """The decisions' state (``shared.control``)."""
        return self.shared.control

    @property
    def journal(self) -> Journal | None:
        return None if self.term is None else self.term.journal

    @property
    def planner(self) -> ToePlanner:
        if self._planner is None:
            raise DaemonError("the daemon has not led yet: no planner")
        return self._planner

    @property
    def te(self) -> TePusher:
        return self._term().te

    @property
    def elector(self) -> Elector | None:
        return self.leadership.elector

    @property
    def live(self) -> frozenset[Circuit]:
        return self.shared.live

    @property
    def installed(self) -> frozenset[Circuit]:
        return self.shared.installed

    @property
    def quarantined(self) -> PortsByBlock:
        return self.shared.quarantined

    @property
    def matrix(self) -> TrafficMatrix | None:
        return self.shared.matrix

    @property
    def estimation(self) -> TrafficEstimation:
        return self.shared.estimation

    @property
    def te_runs(self) -> int:
        return self.shared.te_runs
