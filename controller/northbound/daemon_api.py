"""The daemon's :class:`~controller.northbound.api.ControllerApi`: quick, thread-safe, long work queued.

Reads come from the status board and the journal (both thread-safe); requests that change
something are validated here (a bad one raises :class:`ApiError`, the daemon keeps running)
and queued for the loop, which is woken up to take them.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from controller.daemon.leadership import NotLeading
from controller.decision import Maintenance, MaintenanceTarget, SetMaintenance, SetToePaused, ToeTrigger
from controller.drain_guard import check_drain
from controller.northbound.api import (
    ApiError,
    ApiErrorCode,
    ControllerApi,
    MaintenanceKind,
    Phase,
    StatusSnapshot,
    ToeRequestResult,
)
from controller.northbound.fabric_api import FabricViewApi
from controller.northbound.jobs import DaemonJobs
from controller.reconfig.journal import IntentRecord, JournalError, StepRecord
from controller.reconfig.reviewed import PlanNotFound
from controller.ui.facts import devices_json, fabric_json, reconfiguration_json
from optimizer.errors import HeliostatError
from optimizer.limits import MAX_NAME_CHARS, MAX_RECORD_ID
from optimizer.schema import shown
from optimizer.topology import Topology
from optimizer.traffic import TrafficMatrix

if TYPE_CHECKING:
    from controller.daemon import Daemon

log = logging.getLogger(__name__)

DRY_RUN_WAIT_S = 120.0
#: Dry runs waiting for a plan at once; more are refused (each holds an API worker thread).
MAX_DRY_RUNS_WAITING = 2
MAX_HISTORY = 1000
#: Most events and samples one call returns (the recorder keeps no more than this anyway).
MAX_EVENTS = 200
MAX_SAMPLES = 720


def _matrix_json(matrix: TrafficMatrix | None) -> dict[str, dict[str, float]] | None:
    if matrix is None:
        return None
    return {
        src: {dst: round(float(matrix.gbps[i, j]), 6) for j, dst in enumerate(matrix.blocks) if i != j}
        for i, src in enumerate(matrix.blocks)
    }


def reconfiguration_view(intent: IntentRecord, steps: list[StepRecord]) -> dict[str, Any]:
    """One reconfiguration as ``ControllerApi.reconfiguration`` returns it: the plan's stages
    (what each removes and adds, its MLU checks) and every step the executor journaled."""
    plan = intent.plan.to_json()

    def number(value: Any) -> float | None:
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    stages = []
    for i, stage in enumerate(plan.get("stages") or ()):
        if not isinstance(stage, dict):
            continue
        domain = stage.get("domain")
        stages.append({
            "number": int(stage.get("index", i)) + 1,
            "domain": domain if isinstance(domain, int) and not isinstance(domain, bool) else None,
            "circuits_removed": len(stage.get("remove") or ()),
            "circuits_added": len(stage.get("add") or ()),
            "mlu_start": number(stage.get("mlu_start")),
            "mlu_drained": number(stage.get("mlu_drained")),
            "mlu_after": number(stage.get("mlu_after")),
        })
    return {
        **intent.summary_json(),
        "finished": intent.finished,
        "current_mlu": number(plan.get("current_mlu")),
        "planned_mlu": number(plan.get("planned_mlu")),
        "stages": stages,
        "steps": [
            {"stage": step.stage + 1, "name": step.name, "state": step.state.value, "error": step.error,
             "started": step.started, "finished": step.finished}
            for step in steps
        ],
    }


def health(board: dict[str, Any], devices: int) -> dict[str, Any]:
    """``health`` (``ok`` or ``degraded``) and, when degraded, ``degraded``: why, one line
    per reason (devices that do not answer, OCSes without power, a journal that cannot be
    written). The phase says what the controller does; this says whether it sees the fabric."""
    reasons = []
    unreachable = list(board["unreachable"])
    if unreachable:
        stale = " (MLU and circuits are the last known)" if len(unreachable) >= devices else ""
        names = ", ".join(unreachable)
        reasons.append(f"{len(unreachable)} of {devices} devices unreachable: {names}{stale}")
    unpowered = [o for o in board["ocs_down"] if o not in unreachable]
    if unpowered:
        reasons.append(f"OCS without power: {', '.join(unpowered)}")
    if board["journal_error"]:
        reasons.append(f"journal: {board['journal_error']}")
    return {"health": "degraded" if reasons else "ok", "degraded": reasons}


def _replica(board: dict[str, Any], acting: bool) -> dict[str, Any]:
    """HA: this replica's role, the leader and its epoch (nothing without ``ha``). The role is
    read now: a leader whose lease ran out while it was paused is a standby at once."""
    if board["role"] is None:
        return {}
    return {
        "role": "leader" if acting else "standby",
        "leader": board["leader"],
        "leader_northbound": board["leader_northbound"],
        "epoch": board["epoch"],
        "role_reason": board["role_reason"],
    }


class DaemonApi(DaemonJobs, FabricViewApi, ControllerApi):
    def __init__(self, daemon: Daemon, dry_run_wait_s: float = DRY_RUN_WAIT_S) -> None:
        self.daemon = daemon
        self.dry_run_wait_s = dry_run_wait_s
        self._dry_run_slots = threading.BoundedSemaphore(MAX_DRY_RUNS_WAITING)

    def _ready(self) -> None:
        phase = self.daemon.board.get("phase")
        if phase in (Phase.STARTING.value, Phase.STOPPING.value):
            raise ApiError(ApiErrorCode.UNAVAILABLE, f"the controller is {phase}")

    def _queue(self, request: Any) -> None:
        """Queue once durable: a request the journal cannot take is refused, not lost."""
        try:
            self.daemon.submit(request)
        except NotLeading as exc:  # HA: a standby acts on nothing (controller/daemon/leadership.py)
            raise ApiError(ApiErrorCode.FAILED_PRECONDITION, str(exc)) from exc
        except JournalError as exc:
            log.warning("request %s refused: %s", request, exc)
            raise ApiError(
                ApiErrorCode.UNAVAILABLE, f"not accepted: the request could not be journaled ({exc})"
            ) from exc

    def status(self) -> StatusSnapshot:
        v = self.daemon.board.snapshot()
        return StatusSnapshot(
            phase=Phase(v["phase"]),
            fabric=self.daemon.board.fabric,
            toe_paused=bool(v["toe_paused"]),
            te_runs=int(v["te_runs"]),
            toe_runs=int(v["toe_runs"]),
            last_te_time=v["last_te_time"],
            last_toe_time=v["last_toe_time"],
            mlu=v["mlu"],
            measured_mlu=v["measured_mlu"],
            predicted_mlu=v["predicted_mlu"],
            reconfiguration_id=v["reconfiguration_id"],
            stage=v["stage"],
            stages_total=v["stages_total"],
            step=v["step"],
            last_error=v["last_error"],
            maintenance=tuple(v["maintenance"]),
            details={
                "mlu_quantized": v["mlu_quantized"],
                "unreachable": list(v["unreachable"]),
                "ocs_down": list(v["ocs_down"]),
                "circuits_installed": v["circuits_installed"],
                "circuits_up": v["circuits_up"],
                "circuits_carrying": v["circuits_carrying"],
                "poll_seconds": v["poll_s"],
                "unexplained_drains": v["unexplained_drains"],
                "journal_error": v["journal_error"],
                "deferred_plan": v["deferred_plan"],
                **_replica(v, self.daemon.acting()),
                **health(v, len(self.daemon.fabric.blocks) + len(self.daemon.fabric.ocs)),
            },
        )

    def topology(self) -> dict[str, Any]:
        self._ready()
        fabric = self.daemon.fabric
        circuits = sorted(self.daemon.live)
        return {
            "topology": Topology.from_circuits(fabric, circuits).to_json(),
            "circuits": [c.to_json(fabric) for c in circuits],
            "spine": self.daemon.spine_view(),
        }

    def matrices(self) -> dict[str, Any]:
        self._ready()
        return {
            "current": _matrix_json(self.daemon.matrix),
            "prediction": _matrix_json(self.daemon.estimation.predictor.prediction),
            "time": self.daemon.board.get("last_te_time"),
        }

    def history(self, limit: int = 20) -> list[dict[str, Any]]:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_HISTORY:
            raise ApiError(ApiErrorCode.INVALID_ARGUMENT, f"limit must be 1..{MAX_HISTORY}, got {limit!r}")
        journal = self.daemon.journal
        if journal is None:
            raise ApiError(ApiErrorCode.UNAVAILABLE, self._no_journal())
        out = []
        for intent in journal.reconfigurations(limit):
            plan = intent.plan.to_json()
            out.append(
                {
                    **intent.summary_json(),
                    "finished": intent.finished,
                    "stages": len(plan.get("stages", ())),
                    "circuits_removed": plan.get("circuits_removed"),
                    "circuits_added": plan.get("circuits_added"),
                    "current_mlu": plan.get("current_mlu"),
                    "planned_mlu": plan.get("planned_mlu"),
                    "plan_id": plan.get("plan_id"),
                }
            )
        return out

    def reconfiguration(self, intent_id: int) -> dict[str, Any]:
        if type(intent_id) is not int or not 1 <= intent_id <= MAX_RECORD_ID:
            raise ApiError(ApiErrorCode.INVALID_ARGUMENT,
                           f"id: a reconfiguration id is 1..{MAX_RECORD_ID}, got {shown(intent_id)}")
        journal = self.daemon.journal
        if journal is None:
            raise ApiError(ApiErrorCode.UNAVAILABLE, "the controller is starting")
        try:
            intent = journal.intent(intent_id)
        except JournalError as exc:
            raise ApiError(ApiErrorCode.NOT_FOUND, f"no reconfiguration {intent_id}") from exc
        return reconfiguration_view(intent, journal.steps(intent_id))

    def trigger_toe(self, dry_run: bool = False, plan_id: str | None = None) -> ToeRequestResult:
        self._ready()
        if plan_id:
            return self._apply_reviewed(plan_id)
        if dry_run:
            from controller.daemon import DryRun

            if not self._dry_run_slots.acquire(blocking=False):
                raise ApiError(
                    ApiErrorCode.UNAVAILABLE,
                    f"{MAX_DRY_RUNS_WAITING} dry runs are already waiting for a plan; try again later",
                )
            future: Future = Future()
            try:
                self._queue(DryRun(future))
                proposal = future.result(timeout=self.dry_run_wait_s)
            except FutureTimeout as exc:
                raise ApiError(ApiErrorCode.UNAVAILABLE, "the controller did not plan in time") from exc
            except HeliostatError as exc:
                raise ApiError(ApiErrorCode.FAILED_PRECONDITION, f"cannot plan: {exc}") from exc
            finally:
                self._dry_run_slots.release()
            plan_id = proposal.plan.plan_id
            self.operator_event("review", plan_id or "", proposal.verdict.reason)
            return ToeRequestResult(True, True, proposal.verdict.reason, proposal.plan.to_json(), plan_id)
        if self.daemon.board.get("reconfiguration_id") is not None:
            raise ApiError(ApiErrorCode.FAILED_PRECONDITION, "a reconfiguration is already in flight")
        self._queue(ToeTrigger("operator"))
        self.operator_event("toe", "", "ToE queued; it runs at the next cycle")
        return ToeRequestResult(True, False, "ToE queued; it runs at the next cycle")

    def _apply_reviewed(self, plan_id: str) -> ToeRequestResult:
        from controller.daemon import ApplyReviewed

        future: Future = Future()
        self._queue(ApplyReviewed(plan_id, future))
        try:
            intent_id = future.result(timeout=self.dry_run_wait_s)
        except FutureTimeout as exc:
            raise ApiError(ApiErrorCode.UNAVAILABLE, "the controller did not take the plan in time") from exc
        except PlanNotFound as exc:
            raise ApiError(ApiErrorCode.NOT_FOUND, str(exc)) from exc
        except HeliostatError as exc:
            raise ApiError(ApiErrorCode.FAILED_PRECONDITION, str(exc)) from exc
        message = f"reviewed plan {plan_id} started as reconfiguration {intent_id}"
        self.operator_event("approve", plan_id, message)
        return ToeRequestResult(True, False, message, None, plan_id, int(intent_id))

    def pause_toe(self) -> None:
        self._ready()
        self._queue(SetToePaused(True))
        self.daemon.board.update(toe_paused=True)
        self.operator_event("pause", "", "automatic ToE paused")

    def resume_toe(self) -> None:
        self._ready()
        self._queue(SetToePaused(False))
        self.daemon.board.update(toe_paused=False)
        self.operator_event("resume", "", "automatic ToE resumed")

    def set_maintenance(self, kind: MaintenanceKind, name: str, drained: bool, force: bool = False) -> str:
        self._ready()
        try:
            target_kind = MaintenanceTarget(MaintenanceKind(kind).value)
        except ValueError as exc:
            raise ApiError(ApiErrorCode.INVALID_ARGUMENT, f"unknown maintenance kind {shown(kind)}") from exc
        if not isinstance(name, str) or len(name) > MAX_NAME_CHARS:
            raise ApiError(ApiErrorCode.INVALID_ARGUMENT, f"name: {shown(name, 40)} is not a name of at most "
                           f"{MAX_NAME_CHARS} characters")
        fabric = self.daemon.fabric
        known = {
            MaintenanceTarget.BLOCK: fabric.has_block(name),
            MaintenanceTarget.OCS: any(o.name == name for o in fabric.ocs),
            MaintenanceTarget.SPINE: any(s.name == name for s in fabric.spine),
        }[target_kind]
        if not known:
            problem = f"name: fabric {fabric.name!r} has no {target_kind.value} {name!r}"
            raise ApiError(ApiErrorCode.INVALID_ARGUMENT, problem)
        target = Maintenance(target_kind, name)
        under = self.daemon.state.maintenance
        if drained and target in under:
            return f"{target} is already drained for maintenance; nothing to do"
        if not drained and target not in under:
            return f"{target} is not drained for maintenance; nothing to do"
        figure = ""
        if drained:
            figure = self._drain_check(target, force)
        self._queue(SetMaintenance(target, drained))
        verb = "drain" if drained else "undrain"
        message = f"{verb} of {target} queued{figure}; TE re-plans around it at the next cycle"
        self.operator_event(verb, str(target), message, forced=drained and force)
        return message

    def _drain_check(self, target: Maintenance, force: bool) -> str:
        """Refuse (unless ``force``) a drain whose predicted MLU exceeds max(stage_mlu, MLU now);
        returns the figure for the reply."""
        daemon = self.daemon
        matrix = daemon.shared.planning_demand(daemon.clock())  # with the announced jobs
        if matrix is None:
            return " (no traffic measured yet: its effect on the MLU is not known)"
        check = check_drain(
            daemon.fabric,
            daemon.live,
            daemon.state.maintenance,
            target,
            matrix,
            daemon.config.thresholds.stage_mlu,
            daemon.planner.evaluate,
        )
        if not check.allowed and not force:
            refusal = f"{check.words(target)}; use --force to drain anyway"
            raise ApiError(ApiErrorCode.FAILED_PRECONDITION, refusal)
        if not check.allowed:
            log.warning("forced: %s", check.words(target))
        return f" (predicted MLU {check.mlu_now:.4f} -> {check.mlu_after:.4f}{', forced' if force else ''})"

    def _no_journal(self) -> str:
        """Why there is no journal to read: starting, or (HA) a standby, which holds none."""
        try:
            self.daemon.refuse_unless_leading()
        except NotLeading as exc:
            return f"{exc} (a standby holds no journal)"
        return "the controller is starting"

    def last_plan(self) -> dict[str, Any]:
        journal = self.daemon.journal
        if journal is None and self.daemon.elector is not None:
            raise ApiError(ApiErrorCode.UNAVAILABLE, self._no_journal())
        plan = journal.get_state("last_plan") if journal is not None else None
        if plan is None:
            raise ApiError(ApiErrorCode.NOT_FOUND, "no ToE plan yet")
        return plan

    # -- the status page's facts (controller/ui/facts.py) ----------------------------------

    def fabric_summary(self) -> dict[str, Any]:
        return fabric_json(self.daemon.fabric)

    def devices(self) -> list[dict[str, Any]]:
        spines = getattr(self.daemon.drivers, "spines", None) or {}
        return devices_json(
            self.daemon.fabric, list(spines), self.daemon.board.snapshot(), self.daemon.recorder.last_seen()
        )

    def events(self, limit: int = 50) -> list[dict[str, Any]]:
        _check_limit(limit, MAX_EVENTS)
        return self.daemon.recorder.events(limit)

    def mlu_history(self, limit: int = 360) -> list[dict[str, Any]]:
        _check_limit(limit, MAX_SAMPLES)
        return self.daemon.recorder.samples(limit)

    def reconfiguration_progress(self) -> dict[str, Any] | None:
        journal = self.daemon.journal
        if journal is None:
            return None
        intent = journal.in_flight_intent()
        if intent is None:
            return None
        return reconfiguration_json(intent, journal.steps(intent.id), self.daemon.board.snapshot())


def _check_limit(limit: object, most: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= most:
        raise ApiError(ApiErrorCode.INVALID_ARGUMENT, f"limit must be 1..{most}, got {limit!r}")
