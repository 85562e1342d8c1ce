"""The daemon's shared state and the requests and errors it names (see :mod:`controller.daemon`)."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

from controller import decision as dec
from controller.config import ControllerConfig
from controller.device_view import (
    FabricPort,
    GroupTables,
    PollResult,
    PortsByBlock,
)
from controller.devices_watch import DevicesFileWatch
from controller.dry_runs import DryRunner
from controller.metrics import ControllerMetrics
from controller.operator_requests import RequestJournal
from controller.reconfig.executor import (
    StageExecutor,
    StageOutcome,
    TeInputs,
)
from controller.reconfig.journal import Journal, JournalError
from controller.reconfig.journal_lock import JournalLock
from controller.reconfig.pause import PausePoint
from controller.reconfig.reviewed import ReviewedPlans
from controller.reconfig.toe_run import Proposal, ToePlanner
from controller.sensing.estimation import RateEstimator, TrafficEstimation
from controller.status import StatusBoard
from controller.te_loop.te_push import TePusher, TeRun
from controller.ui.recorder import Recorder
from optimizer.errors import HeliostatError
from optimizer.fabric import Fabric, SpineSwitch
from optimizer.mapping import ParallelMap
from optimizer.spine import SpineLink
from optimizer.topology import Circuit
from optimizer.traffic import TrafficMatrix

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


class DaemonParts:
    """What the daemon's parts share: its state (set by :class:`controller.daemon.core.Daemon`
    and its start-up) and the helpers every part uses. Each part (start-up, sensing, TE,
    reconfiguration) is a mixin of :class:`~controller.daemon.core.Daemon` over this state; a
    part calls another's methods through ``self`` (declared below for the type checker)."""

    config: ControllerConfig
    clock: Callable[[], float]
    listener: EventListener | None
    pause: PausePoint | None
    metrics: ControllerMetrics
    stop_event: threading.Event
    wake: threading.Event
    fabric: Fabric
    board: StatusBoard
    recorder: Recorder
    settings: dec.Settings
    state: dec.ControlState
    live: frozenset[Circuit]  # installed and both links up: what TE uses
    installed: frozenset[Circuit]  # what the OCSes hold
    ocs_down: frozenset[str]
    spine_up: frozenset[SpineLink]  # a hybrid fabric's spine links that are up
    quarantined: PortsByBlock
    maintenance_drained: PortsByBlock
    estimation: TrafficEstimation
    port_rates: RateEstimator
    matrix: TrafficMatrix | None
    recent: deque[TrafficMatrix]  # the latest measurements, newest last: what TE plans for
    pushed_tables: GroupTables | None  # the groups TE last pushed (for tomogravity)
    te_runs: int
    journal: Journal | None
    journal_lock: JournalLock
    request_journal: RequestJournal | None
    reviewed: ReviewedPlans
    drivers: FabricPort | None
    devices_watch: DevicesFileWatch | None
    dry_runs: DryRunner
    te: TePusher
    planner: ToePlanner
    mapping_pool: ExitStack  # the worker processes the planner maps failure domains on (big fabrics)
    parallel_map: ParallelMap | None  # their map (None: one domain after the other)
    executor: StageExecutor
    _given_devices: FabricPort | None
    _wait: Callable[[float], bool] | None
    _cycle_error: str | None  # last_error set by a failed cycle or journal write

    if TYPE_CHECKING:  # provided by the other parts

        def _set_quarantine(
            self, add: PortsByBlock | None = None, remove: PortsByBlock | None = None
        ) -> None: ...
        def _down(self, poll: PollResult) -> frozenset[str]: ...
        def spine_service(self) -> tuple[SpineSwitch, ...]: ...
        def _spine_links_in_service(self) -> frozenset[SpineLink]: ...
        def _te_inputs(self) -> TeInputs: ...
        def _usable(self, circuits: frozenset[Circuit]) -> frozenset[Circuit]: ...
        def _run_te(self, reason: str, now: float) -> None: ...
        def _te_done(self, run: TeRun, now: float, elapsed: float | None = None) -> None: ...
        def _after_stage(self, outcome: StageOutcome, now: float) -> None: ...
        def _propose(self, trigger: str, now: float) -> Proposal: ...
        def _start_leading(self) -> None: ...
        def _step_event(self, intent: int, stage: int, step: str, event: str) -> None: ...

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
