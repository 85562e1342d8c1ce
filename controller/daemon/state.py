"""The daemon's one state object, and the requests and errors it names (see :mod:`controller.daemon`).

:class:`DaemonState` is everything the daemon knows between two cycles. There is one, built by
the composition root (:class:`~controller.daemon.core.Daemon`) and handed to every part in its
``__init__``; each field says which part writes it, and the others only read it. The parts'
collaborators (drivers, journal, TE pusher, planner, executor...) are not state: they are
handed to each part on their own.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from controller import decision as dec
from controller.daemon.jobs import JobBook
from controller.device_view import GroupTables, PortsByBlock
from controller.reconfig.deferred import DeferredPlan
from controller.sensing.estimation import RateEstimator, TrafficEstimation
from optimizer.errors import HeliostatError
from optimizer.spine import SpineLink
from optimizer.staging import StageTiming, StageTraffic
from optimizer.topology import Circuit
from optimizer.traffic import TrafficMatrix

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


@dataclass
class DaemonState:
    """What the daemon knows between cycles. The writer of each field is named after it:
    Loop (core.py), StartUp (startup.py: what a term starts from, restored from the journal
    and the devices), Leadership (leadership.py: a standby's polls, stepping down), Sensing
    (sensing.py), TeStep (te_step.py), Reconfiguration (reconfiguration.py), Quarantine
    (quarantine.py), Reporter (report.py)."""

    estimation: TrafficEstimation  # StartUp (rebuilt from the journal); Sensing feeds it, TeStep marks TE
    recent: deque[TrafficMatrix]  # Sensing (StartUp seeds it): the latest matrices, what TE plans for
    #: the decisions' state: the Loop (decide), and the outcome of each action folded back by
    #: the part that carried it out (TeStep, Reconfiguration), StartUp (journal), Leadership (step-down)
    control: dec.ControlState = field(default_factory=dec.ControlState)
    live: frozenset[Circuit] = frozenset()  # Sensing, StartUp, Leadership: installed and both links up
    installed: frozenset[Circuit] = frozenset()  # Sensing, StartUp, Leadership: what the OCSes hold
    ocs_down: frozenset[str] = frozenset()  # Sensing, StartUp, Leadership
    spine_up: frozenset[SpineLink] = frozenset()  # Sensing, StartUp: a hybrid fabric's spine links up
    quarantined: PortsByBlock = field(default_factory=dict)  # Quarantine (StartUp restores it)
    maintenance_drained: PortsByBlock = field(default_factory=dict)  # TeStep: what its last run drained
    port_rates: RateEstimator = field(default_factory=RateEstimator)  # Sensing
    matrix: TrafficMatrix | None = None  # Sensing (StartUp from the history): the latest matrix
    pushed_tables: GroupTables | None = None  # TeStep: the groups TE last pushed (for tomogravity)
    routes_missing: bool = False  # Sensing: no groups pushed yet and no per-destination counters
    te_runs: int = 0  # TeStep
    #: a ToE target kept until the predicted load leaves room for its stages: Reconfiguration
    #: (StartUp restores it from the journal)
    deferred: DeferredPlan | None = None
    #: last_error set by a failed cycle or journal write: the Loop, Reporter, Reconfiguration
    cycle_error: str | None = None
    #: the announced jobs (controller/daemon/jobs.py): the API adds and removes, Reconfiguration
    #: plans for them with the measurements (None: no book, the measurements alone)
    jobs: JobBook | None = None

    def planning_demand(self, now: float) -> TrafficMatrix | None:
        """What ToE plans for at ``now``: the prediction (or the latest matrix) with the jobs'."""
        measured = self.estimation.predictor.prediction or self.matrix
        return measured if self.jobs is None else self.jobs.demand(measured, now)

    def stage_traffic(self, now: float, timing: StageTiming) -> StageTraffic | None:
        """What the stages of a plan made at ``now`` are checked against while jobs are due (the
        prediction without the jobs not yet started, then with each); None: the planning demand."""
        measured = self.estimation.predictor.prediction or self.matrix
        return None if self.jobs is None else self.jobs.stage_traffic(measured, now, timing)
