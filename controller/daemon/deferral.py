"""The deferred ToE plan as the daemon keeps it (the rules: :mod:`controller.reconfig.deferred`).

:class:`Deferral` writes ``state.deferred``: journaled (StartUp restores it), on the status
board (``ctl status``, the status page) and in the ToE events (``heliostat replay`` reads them).
At each automatic ToE check the plan is staged again against the newest prediction; the
Reconfiguration part starts it when it applies.
"""

from __future__ import annotations

import logging

from controller import decision as dec
from controller.daemon.report import Reporter
from controller.daemon.state import DaemonState
from controller.reconfig.deferred import DEFERRED_PLAN_KEY, DeferredCheck, DeferredPlan, Verdict
from controller.reconfig.in_service import PlanningView
from controller.reconfig.journal import Journal
from controller.reconfig.stage_plan import Plan
from controller.reconfig.toe_run import ToePlanner
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)


def deferral_details(outcome: str, deferred: DeferredPlan, now: float) -> dict[str, object]:
    """A ToE event's words on a deferred plan (``heliostat replay`` reads them)."""
    return {
        "deferred": outcome,
        "deferred_since": deferred.since,
        "waited_s": deferred.waited(now),
        "deferred_current_mlu": deferred.current_mlu,
        "deferred_target_mlu": deferred.target_mlu,
        "stage_mlu": deferred.misfit.mlu,
        "stage_limit": deferred.misfit.limit,
    }


class Deferral:
    """Writes ``state.deferred`` (and its journal key and status field)."""

    def __init__(
        self,
        state: DaemonState,
        settings: dec.Settings,
        journal: Journal,
        planner: ToePlanner,
        report: Reporter,
    ) -> None:
        self.state = state
        self.settings = settings
        self.journal = journal
        self.planner = planner
        self.report = report

    def keep(self, deferred: DeferredPlan | None) -> None:
        """Keep ``deferred`` (None: no plan is deferred any more)."""
        self.state.deferred = deferred
        self.report.board.update(deferred_plan=None if deferred is None else deferred.facts())
        self.report.metrics.toe_deferred_since.set(0.0 if deferred is None else deferred.since)
        value = None if deferred is None else deferred.to_json()
        self.report.journal_softly(
            "the deferred plan", lambda: self.journal.put_state(DEFERRED_PLAN_KEY, value)
        )

    def check(
        self, deferred: DeferredPlan, prediction: TrafficMatrix, now: float, view: PlanningView
    ) -> tuple[DeferredCheck, Plan | None]:
        """Stage ``deferred`` against ``prediction``: the check, and the plan that applies it
        when every stage fits (else None). The plan is kept only while it waits."""
        check, plan = self.planner.restage(
            deferred, prediction, self.state.installed, now, self.state.control.last_reconfig_at,
            self.settings.policy, view=view,
        )
        applied = check.verdict is Verdict.APPLY and plan is not None
        board = self.report.board
        board.update(toe_runs=board.get("toe_runs") + 1, last_toe_time=now)
        self.keep(check.plan if check.keep else None)
        self.report.emit(
            "toe", trigger="auto", apply=applied, reason=check.reason,
            current_mlu=check.plan.latest_current_mlu, planned_mlu=check.plan.latest_target_mlu,
            stages=len(plan.stages) if plan is not None else 0, changed=check.plan.changed if applied else 0,
            **deferral_details(check.verdict.value, check.plan, now),
        )
        if not check.keep:
            log.info("deferred ToE plan %s: %s", check.verdict.value, check.reason)
        return check, plan if applied else None
