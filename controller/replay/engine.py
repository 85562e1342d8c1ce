"""``heliostat replay``: the daemon's own loop over a recorded series, in simulated time.

The :class:`~controller.daemon.Daemon` runs unchanged on a
:class:`~controller.replay.series_fabric.SeriesFabric` (in-memory devices whose counters the
series drives), with the fabric's simulated clock as its clock and the fabric's
``advance`` as its executor's wait. Each cycle is scheduled as ``heliostat run`` schedules
it (:func:`controller.decision.next_cycle_at`): the same estimator, predictor, decision
rules, TE and its safe group changes, and, unless ToE is off, the same ToE policy,
planning, staging and executor.

Then every snapshot is judged on the routing in force when it starts, which the daemon
computed from the snapshots before it only (its counters had seen nothing of the snapshot
yet): ``mlu`` is what the integer weights in force give on the snapshot's matrix (transit
hops go direct, as the switches send), ``mlu_optimal`` the min-MLU LP optimum of the
snapshot on the topology in force (direct, one-transit and spine paths, no hedge).
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from controller import decision as dec
from controller.config import ControllerConfig
from controller.daemon import Daemon
from controller.device_view import circuit_ends
from controller.replay.routing import routed_loads, trunk_members
from controller.replay.series import Series
from controller.replay.series_fabric import RoutingState, SeriesFabric
from optimizer.errors import HeliostatError
from optimizer.fabric import Fabric
from optimizer.te import TeSolver
from optimizer.topology import Circuit, Topology, uniform_mesh

log = logging.getLogger(__name__)

#: snapshot index, snapshots in all -> None (a progress bar)
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class SnapshotResult:
    time: float
    mlu: float | None  # None before any routing is in force, or for an empty matrix
    mlu_optimal: float | None
    reconfiguring: bool = False  # a stage was in flight when the snapshot started

    @property
    def ratio(self) -> float | None:
        if self.mlu is None or self.mlu_optimal is None or self.mlu_optimal <= 0:
            return None
        return self.mlu / self.mlu_optimal


@dataclass(frozen=True)
class StageCheck:
    """The staging rule on real traffic: the MLU the routing in force gave while a stage ran."""

    time: float
    intent: int
    stage: int
    mlu: float
    limit: float  # max(stage_mlu, MLU where the stage started)

    @property
    def kept(self) -> bool:
        return self.mlu <= self.limit + 1e-9


@dataclass(frozen=True)
class DeferredEvent:
    """A deferred ToE plan's step (controller/reconfig/deferred.py): ``outcome`` is deferred,
    waiting, applied, expired or dropped. ``current_mlu`` and ``target_mlu`` are the MLUs
    predicted when it was deferred; ``mlu_before`` / ``mlu_after`` (applied only) what the
    routing in force gave the traffic when it was applied and once its reconfiguration ended."""

    time: float
    outcome: str
    since: float
    waited_s: float
    current_mlu: float
    target_mlu: float
    stage_mlu: float  # the drained MLU of the stage that did not fit (at the last check)
    stage_limit: float  # ... and its limit
    reason: str
    mlu_before: float | None = None
    mlu_after: float | None = None
    reconfiguration_s: float | None = None  # how long the applied reconfiguration took


@dataclass
class ReplayResult:
    fabric: str
    snapshots: list[SnapshotResult]
    settings: dict[str, object]
    reconfigurations: int = 0
    circuits_changed: int = 0
    reconfigurations_rolled_back: int = 0
    stage_checks: list[StageCheck] = field(default_factory=list)
    routing: list[RoutingState] = field(default_factory=list)  # every change, with its time
    te_runs: int = 0
    blackholed_bytes: float = 0.0
    toe_checks: int = 0  # ToE proposals the policy judged (applied or not)
    toe_failures: dict[str, int] = field(default_factory=dict)  # why a proposal failed -> count
    deferred: list[DeferredEvent] = field(default_factory=list)  # deferred plans' steps, in order

    def ratios(self) -> np.ndarray:
        return np.array([s.ratio for s in self.snapshots if s.ratio is not None])


@dataclass
class _Reconfig:
    intent: int
    stage: int
    stage_start_mlu: float


class ReplayEngine:
    """Drive one daemon over a series (see the module docstring)."""

    def __init__(
        self,
        fabric_path: Path,
        fabric: Fabric,
        series: Series,
        config: ControllerConfig,
        *,
        toe: bool = True,
        progress: Progress | None = None,
    ) -> None:
        if len(series) < 2:
            raise HeliostatError(f"{series.source}: a replay needs at least two snapshots")
        self.fabric = fabric
        self.series = series
        self.toe = toe
        self.progress = progress
        self.config = config
        self.fabric_path = fabric_path
        self.devices = SeriesFabric(fabric, series, uniform_mesh(fabric))
        self._reconfig: _Reconfig | None = None
        self._checks: list[StageCheck] = []
        self._outcomes: list[tuple[int, str]] = []
        self._windows: list[list[float | None]] = []  # [start, end] of each reconfiguration
        self._changed = 0
        self._toe_checks = 0
        self._toe_failures: dict[str, int] = {}
        self._deferred: list[DeferredEvent] = []

    def run(self) -> ReplayResult:
        with tempfile.TemporaryDirectory(prefix="heliostat-replay-") as tmp:
            config = replace(self.config, fabric=self.fabric_path, store=Path(tmp) / "journal.db")
            daemon = Daemon(
                config,
                clock=self.devices.now,
                devices=self.devices,
                wait=self.devices.advance,
                listener=self._event,
            )
            daemon.start()
            try:
                if not self.toe:
                    daemon.requests.put(dec.SetToePaused(True))
                self._drive(daemon)
            finally:
                daemon.close()
        return self._judge(daemon)

    # -- the loop, as heliostat run schedules it ----------------------------------------------

    def _drive(self, daemon: Daemon) -> None:
        series, devices = self.series, self.devices
        end = float(series.times[-1]) + series.duration(len(series) - 1)
        interval = self.config.intervals.te_interval
        at = float(series.times[0])
        total = len(series)
        while at < end - 1e-9:
            devices.advance_to(at)
            if self.progress is not None:
                self.progress(devices.snapshot_at(devices.now()), total)
            healthy = daemon.cycle_safely()
            reconfiguring = healthy and daemon.state.reconfiguration is not None
            at = dec.next_cycle_at(at, interval, devices.now(), reconfiguring)
        if self.progress is not None:
            self.progress(total, total)

    # -- what happened -------------------------------------------------------------------------

    def _event(self, kind: str, details: dict[str, object]) -> None:
        """The daemon's events (the demo prints the same ones): reconfigurations and their steps."""
        if kind == "toe":
            reason = str(details.get("reason", ""))
            if reason.startswith("failed: "):
                why = reason.removeprefix("failed: ")
                self._toe_failures[why] = self._toe_failures.get(why, 0) + 1
            elif not reason.startswith("skipped: "):
                self._toe_checks += 1
            if details.get("apply"):
                self._changed += _int(details.get("changed"))
            if "deferred" in details:
                self._deferred.append(_deferred_event(self.devices.now(), details))
        elif kind == "step" and details.get("step") == "drain" and details.get("event") == "started":
            intent = _int(details.get("intent"))
            if self._reconfig is None or self._reconfig.intent != intent:
                self._windows.append([self.devices.now(), None])
            self._reconfig = _Reconfig(intent, _int(details.get("stage")), self._mlu_now())
        elif kind == "step" and details.get("event") == "done":
            self._check_stage()
        elif kind == "reconfiguration":
            self._outcomes.append((_int(details.get("intent")), str(details.get("outcome"))))
            self._reconfig = None
            if self._windows and self._windows[-1][1] is None:
                self._windows[-1][1] = self.devices.now()

    def _mlu_now(self) -> float:
        state = self.devices.history[-1]
        k = self.devices.snapshot_at(self.devices.now())
        members = trunk_members(self.fabric, state.circuits, state.drained)
        return routed_loads(self.fabric, state.tables, self.series.gbps[k], members).mlu()

    def _check_stage(self) -> None:
        r = self._reconfig
        if r is None:
            return
        limit = max(self.config.thresholds.stage_mlu, r.stage_start_mlu)
        self._checks.append(StageCheck(self.devices.now(), r.intent, r.stage, self._mlu_now(), limit))

    def _judge(self, daemon: Daemon) -> ReplayResult:
        history = self.devices.history
        times = np.array([s.time for s in history])
        solver = TeSolver(self.fabric)
        results = []
        windows = [(float(s or 0.0), float(e) if e is not None else np.inf) for s, e in self._windows]
        for k in range(len(self.series)):
            t = float(self.series.times[k])
            state = history[int(np.searchsorted(times, t, side="right")) - 1]
            demand = self.series.gbps[k]
            if not any(state.tables.values()) or demand.sum() <= 0:
                results.append(SnapshotResult(t, None, None))
                continue
            members = trunk_members(self.fabric, state.circuits, state.drained)
            mlu = routed_loads(self.fabric, state.tables, demand, members).mlu()
            usable = [c for c in state.circuits if not _drained_end(self.fabric, c, state.drained)]
            topology = Topology.from_circuits(self.fabric, usable)
            try:
                optimal = solver.min_mlu(topology, self.series.matrix(k), ())
            except HeliostatError as exc:
                log.info("snapshot %d: no optimum on the topology in force: %s", k, exc)
                optimal = None
            reconfiguring = any(s <= t < e for s, e in windows)
            results.append(SnapshotResult(t, mlu, optimal, reconfiguring))
        rolled_back = sum(1 for _, outcome in self._outcomes if outcome != "done")
        deferred = [_gained(d, results, windows) for d in self._deferred]
        return ReplayResult(
            fabric=self.fabric.name,
            snapshots=results,
            settings=replay_settings(self.config, self.toe),
            reconfigurations=len(self._outcomes),
            circuits_changed=self._changed,
            reconfigurations_rolled_back=rolled_back,
            stage_checks=list(self._checks),
            routing=list(history),
            te_runs=daemon.te_runs,
            blackholed_bytes=self.devices.blackholed_bytes,
            toe_checks=self._toe_checks,
            toe_failures=dict(self._toe_failures),
            deferred=deferred,
        )


def _deferred_event(now: float, details: dict[str, object]) -> DeferredEvent:
    return DeferredEvent(
        time=now,
        outcome=str(details.get("deferred")),
        since=_float(details.get("deferred_since")),
        waited_s=_float(details.get("waited_s")),
        current_mlu=_float(details.get("deferred_current_mlu")),
        target_mlu=_float(details.get("deferred_target_mlu")),
        stage_mlu=_float(details.get("stage_mlu")),
        stage_limit=_float(details.get("stage_limit")),
        reason=str(details.get("reason", "")),
    )


def _gained(
    event: DeferredEvent, snapshots: list[SnapshotResult], windows: list[tuple[float, float]]
) -> DeferredEvent:
    """An applied plan with the MLU in force when it was applied and once its reconfiguration
    (the first that started then or later) ended."""
    if event.outcome != "applied":
        return event
    window = next(((s, e) for s, e in windows if s >= event.time - 1e-9), None)
    if window is None:
        return event
    before = _mlu_before(snapshots, event.time)
    after = _first_mlu_from(snapshots, window[1]) if np.isfinite(window[1]) else None
    took = window[1] - event.time if np.isfinite(window[1]) else None
    return replace(event, mlu_before=before, mlu_after=after, reconfiguration_s=took)


def _mlu_before(snapshots: list[SnapshotResult], t: float) -> float | None:
    """The MLU of the last judged snapshot that started before ``t`` (the cycle at ``t`` may
    already have changed the routing of the snapshot starting then)."""
    current = None
    for s in snapshots:
        if s.time >= t - 1e-9:
            break
        current = s.mlu if s.mlu is not None else current
    return current


def _first_mlu_from(snapshots: list[SnapshotResult], t: float) -> float | None:
    """The MLU of the first judged snapshot starting at or after ``t`` (on the routing then in force)."""
    return next((s.mlu for s in snapshots if s.time >= t - 1e-9 and s.mlu is not None), None)


def _float(value: object) -> float:
    return float(value) if isinstance(value, int | float) else float("nan")


def _drained_end(fabric: Fabric, circuit: Circuit, drained: frozenset[tuple[str, int]]) -> bool:
    return any(end in drained for end in circuit_ends(fabric, circuit))


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float | str) else 0


def replay_settings(config: ControllerConfig, toe: bool) -> dict[str, object]:
    """The settings a replay ran with, as its report names them."""
    return {
        "te": config.te.describe(),
        "te_interval_s": config.intervals.te_interval,
        "prediction_window_s": config.intervals.prediction_window,
        "te_matrix_change": config.thresholds.te_matrix_change,
        "toe": toe,
        "toe_check_interval_s": config.intervals.toe_check_interval,
        "reconfig_gain": config.thresholds.reconfig_gain,
        "stage_mlu": config.thresholds.stage_mlu,
        "deferred_plan_ttl_s": config.deferred_plan_ttl,
    }
