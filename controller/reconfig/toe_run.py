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

from controller.decision import toe_verdict
from controller.reconfig.in_service import PlanningView
from controller.reconfig.stage_plan import Plan, SolverSummary, reconfiguration_plan, topology_links
from optimizer.budget import Clock
from optimizer.fabric import Fabric
from optimizer.mapping import ParallelMap
from optimizer.policy import Decision, ReconfigurePolicy
from optimizer.te import DEFAULT_MAX_OVERSUBSCRIPTION, min_mlu
from optimizer.toe import DEFAULT_TIME_LIMIT, ToeKnobs, plan_target
from optimizer.toe.reconfigure import MAX_CHANGE_STEPS
from optimizer.topology import Circuit, Topology
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


class ToePlanner:
    """Stages are checked against ``stage_mlu``; the LP's MLU is held to ``stage_mlu`` divided
    by the over-subscription integer WCMP weights may add (``DEFAULT_MAX_OVERSUBSCRIPTION``),
    so that the weights actually pushed stay under ``stage_mlu``: messages name ``stage_mlu``
    and say so. ``time_limit`` is the budget in seconds for one proposal, counted on
    ``clock``: it covers the whole plan (every change limit tried, the mapping's re-plans and
    the stages' search); a plan that finds it spent keeps today's topology. ``parallel_map``
    (a process pool's ``map``, the caller's) maps the failure domains side by side on big
    fabrics: the same circuits, sooner."""

    def __init__(
        self,
        fabric: Fabric,
        stage_mlu: float,
        time_limit: float = DEFAULT_TIME_LIMIT,
        clock: Clock = time.monotonic,
        parallel_map: ParallelMap | None = None,
    ) -> None:
        self.fabric = fabric
        self.parallel_map = parallel_map
        self.stage_mlu = stage_mlu
        self.time_limit = time_limit
        self.clock = clock
        self.wcmp_margin = DEFAULT_MAX_OVERSUBSCRIPTION

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
    ) -> Proposal:
        """Plan for ``prediction`` from the ``live`` circuits, staged; judge what the stages reach.

        ``view`` (:func:`controller.reconfig.in_service.planning_view`) plans around what is
        under maintenance: only the circuits in service change, on the capacity in service.

        A ``dry_run`` trigger is judged as an operator request and its stages kept. Raises
        InfeasibleError (StagingBlocked with the reason) when no safe step lowers the MLU.
        """
        live = frozenset(live)
        fabric, frozen = (self.fabric, frozenset()) if view is None else (view.fabric, view.frozen)
        if view is not None:
            prediction = view.demand(prediction)
        changing = live - frozen
        # an automatic check plans nothing unless some topology clears the policy's gain (an
        # operator's request plans for shorter paths alone too, as it always did)
        min_gain = min(policy.min_gain, MAX_MIN_GAIN) if trigger == "auto" else 0.0
        knobs = ToeKnobs(time_limit=self.time_limit, min_gain=min_gain)
        target_plan = plan_target(
            fabric, [prediction], changing, knobs, self.evaluate, clock=self.clock,
            threshold=self.stage_mlu, margin=self.wcmp_margin, parallel_map=self.parallel_map,
        )
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
        mapped = frozenset(target_plan.mapping.circuits) | frozen
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
        return Proposal(plan, verdict, current_mlu, planned_mlu, changed, target)
