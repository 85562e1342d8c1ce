"""The daemon's loop: poll, decide, act, once per cycle (see :mod:`controller.daemon`).

:meth:`Daemon.cycle` drains the operator requests, polls (:mod:`~controller.daemon.sensing`),
calls :func:`controller.decision.decide` and carries out the actions it returns through the
other parts; :meth:`Daemon.run` paces the cycles and :meth:`Daemon.cycle_safely` keeps a bad
cycle from ending the loop.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import ExitStack

from controller import decision as dec
from controller.config import ControllerConfig
from controller.daemon.parts import (
    ApplyReviewed,
    DaemonError,
    DryRun,
    EventListener,
)
from controller.daemon.reconfiguration import Reconfiguration
from controller.daemon.sensing import Sensing
from controller.daemon.startup import StartUp
from controller.daemon.te_step import TeStep
from controller.device_view import (
    FabricPort,
    GroupTables,
    PortsByBlock,
)
from controller.devices_watch import DevicesFileWatch
from controller.dry_runs import DryRunner
from controller.metrics import ControllerMetrics
from controller.operator_requests import RequestJournal
from controller.reconfig.executor import (
    ExecutorInterrupted,
)
from controller.reconfig.journal import Journal, JournalError
from controller.reconfig.journal_lock import JournalLock
from controller.reconfig.pause import PausePoint
from controller.reconfig.reviewed import ReviewedPlans
from controller.sensing.estimation import RateEstimator, TrafficEstimation
from controller.status import StatusBoard
from controller.ui.recorder import Recorder
from optimizer.config import load_plannable_fabric
from optimizer.errors import HeliostatError
from optimizer.mapping import ParallelMap
from optimizer.policy import ReconfigurePolicy
from optimizer.spine import SpineLink, spine_links
from optimizer.topology import Circuit
from optimizer.traffic import TrafficMatrix
from southbound.errors import SouthboundError

log = logging.getLogger(__name__)


class Daemon(StartUp, Sensing, TeStep, Reconfiguration):
    """One controller. ``start()`` then ``run(stop)``; or ``cycle()`` step by step in tests.

    The loop lives here; its parts are mixins over :class:`~controller.daemon.parts.DaemonParts`:
    :mod:`~controller.daemon.startup`, :mod:`~controller.daemon.sensing`,
    :mod:`~controller.daemon.te_step` and :mod:`~controller.daemon.reconfiguration`."""

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
        self.metrics.te_interval.set(config.intervals.te_interval)
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
        self.mapping_pool = ExitStack()  # the planner's worker processes, if any (close() ends them)
        self.parallel_map: ParallelMap | None = None
        self.dry_runs = DryRunner(lambda: self._propose("dry_run", self.clock()))
        # HA (controller/daemon/leadership.py): the elector with ha:, None alone
        self.elector = None
        # the API address the leader publishes to the standbys (unknown while it is port 0)
        listen = config.listen.northbound
        self.northbound_address: str | None = str(listen) if listen.port else None
        self._leading = False
        self._term_stop = threading.Event()  # the executor's stop: the daemon stops or the term ends

    def run(self) -> None:
        """Cycle until stop() (SIGTERM/SIGINT in ``heliostat run``)."""
        interval = self.config.intervals.te_interval
        due = time.monotonic()
        while not self.stop_event.is_set():
            started = time.monotonic()
            try:
                healthy = self.cycle_safely()
            except ExecutorInterrupted:
                if self.stop_event.is_set() or self.elector is None:
                    break
                healthy = False  # leadership lost mid-stage: the next cycle steps down
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
        self.refuse_unless_leading()
        if not isinstance(request, DryRun | ApplyReviewed):
            if self.request_journal is None:
                raise DaemonError("the daemon is not started")
            self.request_journal.record(request)
        self.requests.put(request)
        self.wake.set()

    def stop(self) -> None:
        self.stop_event.set()
        self._term_stop.set()
        self.wake.set()

    def close(self) -> None:
        if self.elector is not None:
            self.elector.stop()  # resign: a standby takes over at once
        self.dry_runs.close()
        self.mapping_pool.close()
        if self.drivers is not None:
            self.drivers.close()
        if self.journal is not None:
            self.journal.close()
        self.journal_lock.release()

    def cycle(self) -> list[dec.Action]:
        """One poll, decision and the actions it asks for. Returns the actions."""
        now = self.clock()
        if self.elector is not None:
            if not self.elector.acting():
                return self._standby_cycle(now)
            if not self._leading:
                self._take_over()
                self._show_role(self.elector.state)
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
        for kind in ("block", "ocs", "spine"):
            drained = sum(1 for m in self.state.maintenance if m.kind.value == kind)
            self.metrics.maintenance.labels(kind).set(drained)
        self.metrics.fabric.update(maintenance=tuple((m.kind.value, m.name) for m in self.state.maintenance))
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

    def _carry_out(self, action: dec.Action, now: float) -> None:
        if isinstance(action, dec.RestoreCircuits):
            self._restore_circuits(action.circuits)
        elif isinstance(action, dec.RunTe):
            self._run_te(action.reason, now)
        elif isinstance(action, dec.PlanToe):
            self._plan_toe(action.trigger, now)
        elif isinstance(action, dec.RunStage):
            self._run_stage(action, now)
