"""Reconfiguration: plan ToE (on the planning view of what is in service), start an intent
(planned, or an operator's reviewed plan), run one executor stage per cycle and fold its
outcome back into the decisions.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

from controller import decision as dec
from controller.daemon.deferral import Deferral, deferral_details
from controller.daemon.quarantine import Quarantine
from controller.daemon.report import Reporter
from controller.daemon.spine import SpineService
from controller.daemon.state import (
    ApplyReviewed,
    DaemonError,
    DaemonState,
    DryRun,
)
from controller.daemon.te_step import TeStep
from controller.dry_runs import DryRunner
from controller.reconfig.deferred import DeferredPlan
from controller.reconfig.executor import (
    StageExecutor,
    StageOutcome,
)
from controller.reconfig.in_service import PlanningView, maintenance_conflict, planning_view
from controller.reconfig.job_verdict import judge_for
from controller.reconfig.journal import IntentState, Journal, JournalError
from controller.reconfig.reviewed import PlanRefused, ReviewedPlans, apply_problem
from controller.reconfig.stage_plan import Plan
from controller.reconfig.toe_run import Proposal, ToePlanner
from controller.sensing.observe import (
    blocks_out,
)
from optimizer.errors import HeliostatError, InfeasibleError, SolverError, SolverTimeLimit
from optimizer.fabric import Fabric
from optimizer.topology import Circuit

log = logging.getLogger(__name__)


NO_TRAFFIC = "no traffic measured yet"
#: The journal's copy of the matrix the last ToE plan was made for (measured and announced jobs).
PLANNED_DEMAND_KEY = "planned_demand"


def toe_failure_reason(error: HeliostatError) -> str:
    """The ``reason`` label of ``heliostat_toe_failures_total`` for a failed ToE run."""
    if isinstance(error, JournalError):
        return "journal"
    if isinstance(error, SolverTimeLimit):
        return "time_limit"
    if isinstance(error, InfeasibleError):
        return "infeasible"
    if isinstance(error, SolverError):
        return "solver"
    if isinstance(error, DaemonError) and NO_TRAFFIC in str(error):
        return "no_traffic"
    return "error"


class Reconfiguration:
    """Writes ``state.control`` (ToE's and each stage's outcome) and, for a failed ToE on the
    journal, ``state.cycle_error``; the ``planner`` plans, the ``executor`` runs stages."""

    def __init__(
        self,
        fabric: Fabric,
        state: DaemonState,
        settings: dec.Settings,
        stage_mlu: float,
        journal: Journal,
        planner: ToePlanner,
        executor: StageExecutor,
        reviewed: ReviewedPlans,
        dry_runs: DryRunner,
        te: TeStep,
        spine: SpineService,
        quarantine: Quarantine,
        report: Reporter,
    ) -> None:
        self.fabric = fabric
        self.state = state
        self.settings = settings
        self.stage_mlu = stage_mlu
        self.journal = journal
        self.planner = planner
        self.executor = executor
        self.reviewed = reviewed
        self.dry_runs = dry_runs
        self.te = te
        self.spine = spine
        self.quarantine = quarantine
        self.report = report
        self.metrics = report.metrics
        self.board = report.board
        self.deferral = Deferral(state, settings, journal, planner, report)

    def plan_toe(self, trigger: str, now: float) -> None:
        skip = dec.toe_skip_reason(trigger, self.state.planning_demand(now))
        if skip is not None:
            log.info("ToE (%s) skipped: %s", trigger, skip)
            self.state.control = dec.toe_checked(self.state.control, now)
            self.board.update(last_toe_time=now)
            self.report.emit("toe", trigger=trigger, apply=False, reason=f"skipped: {skip}")
            return
        self.board.update(phase="planning")
        deferred = self.state.deferred
        if trigger == "auto" and deferred is not None and self._check_deferred(deferred, now):
            return
        try:
            proposal = self.propose(trigger, now)
        except HeliostatError as exc:
            log.warning("ToE (%s) failed: %s", trigger, exc)
            self.metrics.toe_failed(toe_failure_reason(exc))
            self.state.control = dec.toe_checked(self.state.control, now, f"ToE failed: {exc}")
            self.board.update(phase="idle", last_error=f"ToE failed: {exc}", last_toe_time=now)
            if isinstance(exc, JournalError):  # cleared once the journal is writable again
                self.state.cycle_error = f"ToE failed: {exc}"
                self.board.update(journal_error=str(exc))
            self.report.emit("toe", trigger=trigger, apply=False, reason=f"failed: {exc}")
            return
        self.board.update(toe_runs=self.board.get("toe_runs") + 1, last_toe_time=now)
        deferral: dict[str, object] = {}
        if proposal.deferred is not None:
            self.deferral.keep(proposal.deferred)
            deferral = deferral_details("deferred", proposal.deferred, now)
        self.report.emit(
            "toe",
            trigger=trigger,
            apply=proposal.verdict.apply,
            reason=proposal.verdict.reason,
            current_mlu=proposal.current_mlu,
            planned_mlu=proposal.planned_mlu,
            stages=len(proposal.plan.stages),
            changed=proposal.changed,
            **deferral,
        )
        if not proposal.verdict.apply:
            self.state.control = dec.toe_checked(self.state.control, now)
            self.board.update(phase="idle")
            return
        self._start_reconfiguration(proposal.plan, trigger, now)

    def _check_deferred(self, deferred: DeferredPlan, now: float) -> bool:
        """Stage the deferred plan against the newest prediction: apply it when every stage
        fits, keep it while one does not; True when this ToE check is done, False when the
        plan was dropped (expired, no longer a gain) and a fresh one is to be made."""
        prediction = self.state.estimation.predictor.prediction or self.state.matrix
        if prediction is None:
            return False
        try:
            check, plan = self.deferral.check(deferred, prediction, now, self._view())
        except HeliostatError as exc:  # kept: the next check tries again
            log.warning("deferred ToE plan: the check failed: %s", exc)
            self.metrics.toe_failed(toe_failure_reason(exc))
            self.state.control = dec.toe_checked(self.state.control, now, f"ToE failed: {exc}")
            self.board.update(phase="idle", last_error=f"ToE failed: {exc}", last_toe_time=now)
            self.report.emit("toe", trigger="auto", apply=False, reason=f"failed: {exc}")
            return True
        if plan is not None:
            plan = replace(plan, planned_at=now)
            last = {**plan.to_json(), "verdict": {"apply": True, "reason": check.reason, "gain": check.gain}}
            self.report.journal_softly("the last plan", lambda: self.journal.put_state("last_plan", last))
            self._start_reconfiguration(plan, "auto", now)
            return True
        if check.keep:
            self.state.control = dec.toe_checked(self.state.control, now)
            self.board.update(phase="idle")
            return True
        return False

    def _view(self) -> PlanningView:
        maintenance = self.state.control.maintenance
        ocs_out = [m.name for m in maintenance if m.kind is dec.MaintenanceTarget.OCS]
        return planning_view(
            self.fabric, self.state.installed, ocs_out, blocks_out(maintenance), self.spine.service()
        )

    def _start_reconfiguration(self, plan: Plan, trigger: str, now: float) -> int:
        intent_id = self.executor.begin(plan, trigger, self.state.installed)
        if self.state.deferred is not None:  # the topology moves now: a later check plans afresh
            self.deferral.keep(None)
        total = len(plan.stages)
        self.metrics.reconfigurations.labels("started").inc()
        self.metrics.reconfiguration(0, total, None)
        self.state.control = dec.reconfiguration_started(self.state.control, now, intent_id, total)
        self.board.update(phase="reconfiguring", reconfiguration_id=intent_id, stages_total=total, stage=0)
        return intent_id

    def propose(self, trigger: str, now: float) -> Proposal:
        prediction = self.state.planning_demand(now)
        if prediction is None:
            raise DaemonError(NO_TRAFFIC)
        started = time.monotonic()
        view = self._view()
        self.metrics.toe_runs.labels(trigger).inc()  # an attempt, counted whatever comes of it
        judge = None  # a job's arrival is judged by the jobs' communication time too
        if trigger == dec.JOB_TRIGGER and self.state.jobs is not None:
            judge = judge_for(self.planner.fabric, self.state.jobs.planned_traffic(now))
        traffic = self.state.stage_traffic(now, self.planner.timing)  # the stages before a due job starts
        proposal = self.planner.propose(
            trigger, prediction, self.state.installed, now, self.state.control.last_reconfig_at,
            self.settings.policy, view=view, jobs=judge, traffic=traffic,
        )
        self.metrics.toe_solve_seconds.observe(time.monotonic() - started)
        proposal = replace(proposal, plan=replace(proposal.plan, planned_at=now))
        if trigger == "dry_run" and proposal.plan.stages:
            plan_id = self.reviewed.add(proposal.plan, self.state.installed)
            proposal = replace(proposal, plan=replace(proposal.plan, plan_id=plan_id))
        jobs = [] if self.state.jobs is None else self.state.jobs.planned(now)
        self.journal.put_matrix_state(PLANNED_DEMAND_KEY, prediction)
        self.journal.put_state(
            "last_plan",
            {
                **proposal.plan.to_json(),
                "jobs": jobs,
                "verdict": {
                    "apply": proposal.verdict.apply,
                    "reason": proposal.verdict.reason,
                    "gain": proposal.verdict.gain,
                },
            },
        )
        return proposal

    def apply_reviewed(self, request: ApplyReviewed, now: float) -> None:
        """Start exactly the reviewed plan, or refuse it with the reason
        (:mod:`controller.reconfig.reviewed`)."""
        try:
            reviewed = self.reviewed.get(request.plan_id)
            problem = apply_problem(
                self.fabric,
                reviewed,
                self.state.installed,
                self.state.control.reconfiguration is not None,
                self.state.planning_demand(now),
                self.stage_mlu,
                self.planner.wcmp_margin,
                self.planner.evaluate,
            )
            if problem is not None:
                raise PlanRefused(f"plan {request.plan_id} refused: {problem}")
            plan = replace(reviewed.plan, trigger="operator", reason=f"reviewed plan {request.plan_id}")
            intent_id = self._start_reconfiguration(plan, "operator", now)
        except HeliostatError as exc:
            log.warning("ctl toe --apply: %s", exc)
            request.result.set_exception(exc)
            return
        log.info("reviewed plan %s started as reconfiguration %d", request.plan_id, intent_id)
        request.result.set_result(intent_id)

    def dry_run(self, request: DryRun, now: float) -> None:
        """Planned on the dry-run worker: the loop does not wait for it (controller/dry_runs.py)."""
        self.dry_runs.submit(request.result)

    def run_stage(self, action: dec.RunStage, now: float) -> None:
        record = self.journal.current_topology()
        before = frozenset(record.circuits) if record is not None else self.state.installed
        self.board.update(phase="reconfiguring", reconfiguration_id=action.intent_id, stage=action.stage)
        self.metrics.reconfiguration(action.stage, self.board.get("stages_total"), None)
        recovery = self.journal.recovery_point()
        resuming = recovery is not None and any(s.stage == action.stage for s in recovery.steps)
        if not resuming and self._stop_for_maintenance(action, before, now):
            return
        if recovery is not None and any(s.stage == action.stage for s in recovery.steps):
            # An earlier attempt of this stage stopped half-way (an unexpected error in this
            # process): finish it exactly as after a crash.
            outcome = self.executor.resume(recovery)
        else:
            outcome = self.executor.run_stage(action.intent_id, action.stage, before)
        self.after_stage(outcome, now)

    def _stop_for_maintenance(self, action: dec.RunStage, before: frozenset[Circuit], now: float) -> bool:
        """Stop a reconfiguration (before the stage starts) whose next stage would switch an
        OCS or a block drained for maintenance since it was planned; True if it stopped.
        Every stage ends consistent, so nothing is rolled back; ToE re-plans around it."""
        spec = self.journal.intent(action.intent_id).plan.stage(action.stage)
        maintenance = self.state.control.maintenance
        ocs_out = [m.name for m in maintenance if m.kind is dec.MaintenanceTarget.OCS]
        conflict = maintenance_conflict(self.fabric, spec.remove, spec.add, ocs_out, blocks_out(maintenance))
        if conflict is None:
            return False
        reason = (f"stage {action.stage + 1} would switch {conflict}, drained for maintenance since the "
                  "plan was made: the reconfiguration stops here")
        log.warning("intent %d: %s", action.intent_id, reason)
        state = IntentState.CANCELLED if action.stage == 0 else IntentState.ROLLED_BACK
        self.journal.finish_intent(action.intent_id, state, reason)
        self.after_stage(
            StageOutcome(False, action.intent_id, action.stage, True, None, before, reason=reason), now
        )
        return True

    def after_stage(self, outcome: StageOutcome, now: float) -> None:
        self.quarantine.set(add=outcome.quarantined)
        if outcome.te is not None:
            self.te.te_done(outcome.te, now)
        if outcome.next_stage is not None and not outcome.finished:
            total = len(self.journal.intent(outcome.intent_id).plan.stages)
            self.state.control = dec.stage_advanced(
                self.state.control, now, outcome.intent_id, total, outcome.next_stage, outcome.circuits,
                te_ran=outcome.te is not None,
            )
            self.board.update(
                phase="reconfiguring",
                reconfiguration_id=outcome.intent_id,
                stages_total=total,
                stage=outcome.next_stage,
            )
            return
        self.state.control = dec.reconfiguration_ended(
            self.state.control, now, outcome.intent_id, outcome.stage, outcome.ok, outcome.circuits,
            outcome.reason, te_ran=outcome.te is not None,
        )
        self.metrics.reconfiguration(None, None, None)
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
        self.report.emit("reconfiguration", intent=outcome.intent_id, outcome=result, reason=outcome.reason)
