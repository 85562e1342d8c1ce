"""ToE as the daemon runs it: plan the topology, map it onto the OCSes, stage it, judge it.

Planning, mapping and staging are :func:`optimizer.toe.reconfigure.plan_target`, the same as
``heliostat toe`` (so both plan the same circuits and stages for the same input, the search
for a safe way through a hot fabric and the smaller changes it tries included); the daemon
adds its evaluator, its stage limit (with the WCMP margin) and the policy verdict, which
judges the topology the stages reach: the target, or the best step towards it that is
reachable safely (the next plan continues from there). Pure (no I/O; ``now`` is an argument
and the time budget's clock a parameter); the daemon journals and executes the result.
Under maintenance the daemon passes a planning view: only the circuits in service change, on
the capacity in service, and the frozen circuits are kept.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

from controller.decision import JOB_TRIGGER, toe_verdict
from controller.reconfig.deferred import (
    DeferredCheck,
    DeferredPlan,
    StageMisfit,
    Verdict,
    defer,
    expired,
    judge,
)
from controller.reconfig.in_service import PlanningView
from controller.reconfig.job_verdict import comm_verdict, precheck, worth_planning
from controller.reconfig.stage_plan import Plan, SolverSummary, reconfiguration_plan, topology_links
from controller.reconfig.step_timeouts import StepTimeouts
from optimizer.budget import Clock, TimeBudget
from optimizer.errors import ConfigError, InfeasibleError
from optimizer.fabric import Fabric
from optimizer.jobs.objective import JobsJudge
from optimizer.mapping import ParallelMap
from optimizer.policy import Decision, ReconfigurePolicy
from optimizer.staging import (
    StageTiming,
    StageTraffic,
    StagingBlocked,
    StagingPlan,
    StagingTimedOut,
    stage_changes,
)
from optimizer.te import DEFAULT_MAX_OVERSUBSCRIPTION, min_mlu
from optimizer.toe import DEFAULT_TIME_LIMIT, ToeKnobs, plan_target
from optimizer.toe.reconfigure import MAX_CHANGE_STEPS
from optimizer.topology import Circuit, Topology, check_circuits
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

#: The largest minimum gain a ToE plan may be asked for (ToeKnobs.min_gain is below 1).
MAX_MIN_GAIN = 0.99

__all__ = ["MAX_CHANGE_STEPS", "Proposal", "ToePlanner"]


@dataclass(frozen=True)
class Proposal:
    plan: Plan  # the intent's plan (stages empty when not applied)
    verdict: Decision
    current_mlu: float
    planned_mlu: float  # the MLU of the topology the stages reach
    changed: int  # circuits removed plus added
    target: frozenset[Circuit]  # the circuits the stages reach
    #: the planned target kept for later: staging it breaks the stage rule at today's load
    deferred: DeferredPlan | None = None


class ToePlanner:
    """Stages are checked against ``stage_mlu``; the LP's MLU is held to ``stage_mlu`` divided
    by the over-subscription integer WCMP weights may add (``DEFAULT_MAX_OVERSUBSCRIPTION``),
    so that the weights actually pushed stay under ``stage_mlu``: messages name ``stage_mlu``
    and say so. ``time_limit`` is the budget in seconds for one proposal, counted on
    ``clock``: it covers the whole plan (every change limit tried, the mapping's re-plans and
    the stages' search); a plan that finds it spent keeps today's topology. ``parallel_map``
    (a process pool's ``map``, the caller's) maps the failure domains side by side on big
    fabrics: the same circuits, sooner. ``deferred_ttl`` (seconds; 0: never) is how long an
    automatic plan whose staging is blocked is kept as a deferred plan
    (:mod:`controller.reconfig.deferred`). ``stage_seconds`` is the longest a stage may take
    (the executor's step timeouts summed): with :attr:`timing` it says which stages certainly
    end before a due job starts, and are checked on the traffic flowing before it
    (:mod:`optimizer.staging.traffic`)."""

    def __init__(
        self,
        fabric: Fabric,
        stage_mlu: float,
        time_limit: float = DEFAULT_TIME_LIMIT,
        clock: Clock = time.monotonic,
        parallel_map: ParallelMap | None = None,
        deferred_ttl: float = 0.0,
        stage_seconds: float = StepTimeouts().stage_seconds,
    ) -> None:
        self.fabric = fabric
        self.stage_seconds = stage_seconds
        self.deferred_ttl = deferred_ttl
        self.parallel_map = parallel_map
        self.stage_mlu = stage_mlu
        self.time_limit = time_limit
        self.clock = clock
        self.wcmp_margin = DEFAULT_MAX_OVERSUBSCRIPTION

    @property
    def timing(self) -> StageTiming:
        """When a plan's stages may run: its first after at most the plan's time limit, each
        taking at most ``stage_seconds``."""
        return StageTiming(self.time_limit, self.stage_seconds)

    @property
    def staging_threshold(self) -> float:
        """The limit the LP's drained MLU is held to (``stage_mlu`` less the WCMP margin)."""
        return self.stage_mlu / self.wcmp_margin

    def evaluate(self, fabric: Fabric, topology: Topology, tm: TrafficMatrix) -> float:
        """Min-MLU over the circuits and ``fabric``'s spine (a planning view's: the spine in
        service), as the ToE LP itself counts the spine."""
        return min_mlu(fabric, topology, tm)

    def propose(
        self,
        trigger: str,
        prediction: TrafficMatrix,
        live: Iterable[Circuit],
        now: float,
        last_reconfig_at: float | None,
        policy: ReconfigurePolicy,
        view: PlanningView | None = None,
        jobs: JobsJudge | None = None,
        traffic: StageTraffic | None = None,
    ) -> Proposal:
        """Plan for ``prediction`` from the ``live`` circuits, staged; judge what the stages reach.

        ``view`` (:func:`controller.reconfig.in_service.planning_view`) plans around what is
        under maintenance: only the circuits in service change, on the capacity in service.

        A ``dry_run`` trigger is judged as an operator request and its stages kept. Raises
        InfeasibleError (StagingBlocked with the reason) when no safe step lowers the MLU.

        ``jobs`` (a job trigger's, nothing frozen for maintenance) judges the plan by the announced jobs'
        communication time too (:mod:`controller.reconfig.job_verdict`). ``traffic`` is what
        each stage's drain is checked against when jobs are due (the traffic flowing while it
        may run, :func:`optimizer.jobs.intents.stage_traffic`); default: ``prediction``.
        """
        live = frozenset(live)
        fabric, frozen = (self.fabric, frozenset()) if view is None else (view.fabric, view.frozen)
        if view is not None:
            prediction = view.demand(prediction)
            traffic = None if traffic is None else traffic.mapped(view.demand)
        changing = live - frozen
        # an automatic check, and a job's arrival, plan nothing unless some topology clears the
        # policy's gain: the verdict holds both to it, so a plan under the LP's bound would only
        # be refused after the mapping and the staging (at 64 blocks most of a minute); an
        # operator's request plans for shorter paths alone too, as it always did
        min_gain = min(policy.min_gain, MAX_MIN_GAIN) if trigger in ("auto", JOB_TRIGGER) else 0.0
        comm = None
        if jobs is not None and trigger == JOB_TRIGGER and not frozen:
            comm = precheck(jobs, fabric, prediction, live, self.time_limit)
            log.info("ToE (job): the LP's topology against today's: %s", comm.words())
            min_gain = 0.0 if worth_planning(comm, policy) else min_gain
        knobs = ToeKnobs(time_limit=self.time_limit, min_gain=min_gain)
        try:
            target_plan = plan_target(
                fabric, [prediction], changing, knobs, self.evaluate, clock=self.clock,
                threshold=self.stage_mlu, margin=self.wcmp_margin, parallel_map=self.parallel_map,
                traffic=traffic,
            )
        except StagingBlocked as exc:
            deferred = None
            if trigger == "auto" and exc.target is not None:
                t = exc.target
                deferred = defer(t.circuits | frozen, live, t.current_mlu, t.mlu, StageMisfit.of(exc), now,
                                 self.deferred_ttl, policy)
            if deferred is None:
                raise
            return self._deferred_proposal(trigger, deferred, live)
        toe, staging = target_plan.toe, target_plan.staging
        if staging is None:  # pragma: no cover - a threshold was given
            raise RuntimeError("internal error: the plan was not staged")
        target = frozenset(staging.final_circuits) | frozen
        changed = len(target ^ live)
        current_mlu = toe.current_mlu  # both by self.evaluate
        planned_mlu = staging.final_mlu
        verdict = toe_verdict(
            "operator" if trigger == "dry_run" else trigger,
            current_mlu,
            planned_mlu,
            changed,
            now,
            last_reconfig_at,
            policy,
        )
        if toe.nothing_to_gain is not None:
            verdict = Decision(False, toe.nothing_to_gain.message(), 0.0)
        elif comm is not None and jobs is not None:
            mlu = (current_mlu, planned_mlu, self.stage_mlu)
            verdict = comm_verdict(verdict, jobs, fabric, (live, target), prediction, mlu, policy)
        mapped = frozenset(target_plan.mapping.circuits) | frozen
        deferred = None
        if not verdict.apply and trigger == "auto" and staging.blocked_by is not None:
            deferred = defer(mapped, live, toe.current_mlu, toe.mlu, StageMisfit.of(staging.blocked_by), now,
                             self.deferred_ttl, policy)
            if deferred is not None:
                verdict = Decision(False, f"{verdict.reason}; {_deferral_words(deferred)}", verdict.gain)
        log.info(
            "ToE (%s): MLU %.4f -> %.4f, %d circuits changed%s: %s",
            trigger,
            current_mlu,
            planned_mlu,
            changed,
            "" if staging.complete else f" (a step towards the target: {staging.blocked})",
            verdict.reason,
        )
        if verdict.apply or trigger == "dry_run":
            plan = reconfiguration_plan(fabric, trigger, staging, current_mlu, planned_mlu, verdict.reason)
        else:
            plan = Plan(
                fabric=self.fabric.name,
                trigger=trigger,
                reason=verdict.reason,
                current_mlu=round(current_mlu, 6),
                planned_mlu=round(planned_mlu, 6),
                circuits_removed=len(live - target),
                circuits_added=len(target - live),
            )
        plan = replace(
            plan,
            topology=topology_links(Topology.from_circuits(self.fabric, target)),
            complete=staging.complete,
            blocked=staging.blocked,
            target_topology=topology_links(Topology.from_circuits(self.fabric, mapped)),
            frozen_circuits=len(frozen) if frozen else None,  # on devices under maintenance: kept
            repair_trades=toe.repair_trades,
            solver=SolverSummary(toe.solver_status, toe.timed_out, toe.cut_stage, target_plan.max_change),
        )
        return Proposal(plan, verdict, current_mlu, planned_mlu, changed, target, deferred)

    def _deferred_proposal(self, trigger: str, deferred: DeferredPlan, live: frozenset[Circuit]) -> Proposal:
        """Nothing applied now; the target is kept as ``deferred``."""
        reason = f"the planned topology cannot be staged at today's load: {_deferral_words(deferred)}"
        log.info("ToE (%s): %s", trigger, reason)
        plan = Plan(
            fabric=self.fabric.name,
            trigger=trigger,
            reason=reason,
            current_mlu=round(deferred.current_mlu, 6),
            planned_mlu=round(deferred.current_mlu, 6),
            circuits_removed=0,
            circuits_added=0,
            topology=topology_links(Topology.from_circuits(self.fabric, live)),
            complete=False,
            blocked=deferred.misfit.describe(),
            target_topology=topology_links(Topology.from_circuits(self.fabric, deferred.target)),
        )
        verdict = Decision(False, reason, 0.0)
        return Proposal(plan, verdict, deferred.current_mlu, deferred.current_mlu, 0, live, deferred)

    def restage(
        self,
        deferred: DeferredPlan,
        prediction: TrafficMatrix,
        live: Iterable[Circuit],
        now: float,
        last_reconfig_at: float | None,
        policy: ReconfigurePolicy,
        view: PlanningView | None = None,
    ) -> tuple[DeferredCheck, Plan | None]:
        """Check ``deferred`` against the newest ``prediction`` (the rules of
        :func:`controller.reconfig.deferred.judge`): stage it from the ``live`` circuits and,
        when every stage passes, give the plan that applies it (else None)."""
        if expired(deferred, now):
            return judge(deferred, now, None, None, None, policy), None
        live = frozenset(live)
        fabric, frozen = (self.fabric, frozenset()) if view is None else (view.fabric, view.frozen)
        if view is not None:
            prediction = view.demand(prediction)
        changing, goal = live - frozen, deferred.target - frozen
        problem = None
        if not frozen <= deferred.target:
            kept_out = len(frozen - deferred.target)
            problem = f"{kept_out} circuits it changes are on devices now under maintenance"
        else:
            try:
                check_circuits(fabric, tuple(goal), "<deferred plan>")
            except ConfigError as exc:
                problem = f"the fabric in service cannot take it any more ({exc})"
        current_mlu = self.evaluate(fabric, Topology.from_circuits(fabric, changing), prediction)
        target_mlu = current_mlu
        if problem is None:
            target_mlu = self.evaluate(fabric, Topology.from_circuits(fabric, goal), prediction)
        check = judge(deferred, now, current_mlu, target_mlu, None, policy, last_reconfig_at, problem)
        if check.verdict is not Verdict.WAIT:  # dropped: nothing to stage
            return check, None
        staged: StagingPlan | StageMisfit
        try:
            staged = stage_changes(
                fabric, changing, goal, [prediction], self.evaluate, self.stage_mlu, margin=self.wcmp_margin,
                budget=TimeBudget(self.time_limit, self.clock),
            )
        except StagingBlocked as exc:
            staged = StageMisfit.of(exc)
        except StagingTimedOut as exc:  # not a reason to drop the plan: it waits, as it did
            check = judge(deferred, now, current_mlu, target_mlu, deferred.misfit, policy, last_reconfig_at)
            if check.verdict is Verdict.WAIT:
                check = replace(check, reason=f"{check.reason}; not re-staged this time: {exc}")
            return check, None
        except InfeasibleError as exc:
            check = judge(deferred, now, current_mlu, target_mlu, None, policy, last_reconfig_at, str(exc))
            return check, None
        check = judge(deferred, now, current_mlu, target_mlu, staged, policy, last_reconfig_at)
        log.info("deferred ToE plan: %s", check.reason)
        if check.verdict is not Verdict.APPLY or not isinstance(staged, StagingPlan):
            return check, None
        plan = reconfiguration_plan(fabric, "auto", staged, current_mlu, staged.final_mlu, check.reason)
        plan = replace(
            plan,
            topology=topology_links(Topology.from_circuits(self.fabric, staged.final_circuits | frozen)),
            complete=True,
            target_topology=topology_links(Topology.from_circuits(self.fabric, deferred.target)),
            frozen_circuits=len(frozen) if frozen else None,
        )
        return check, plan


def _deferral_words(deferred: DeferredPlan) -> str:
    return (
        f"the target (MLU {deferred.current_mlu:.4f} -> {deferred.target_mlu:.4f}, {deferred.changed} "
        f"circuits changed) is deferred until the predicted load leaves room for its stages: "
        f"{deferred.misfit.describe()}"
    )
