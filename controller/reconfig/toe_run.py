"""ToE as the daemon runs it: plan the topology, map it onto the OCSes, judge it, stage it.

Planning and mapping are :func:`optimizer.toe.reconfigure.plan_target`, the same as ``heliostat
toe`` (so both plan the same circuits for the same input, starved-block repair included);
the daemon adds its evaluator, its staging threshold, the policy verdict and the smaller
change it tries when staging is blocked, and stages only a plan it will apply or show.
Pure (no I/O; ``now`` is an argument and the time budget's clock a parameter); the daemon
journals and executes the result.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from controller.decision import toe_verdict
from controller.reconfig.in_service import PlanningView
from controller.reconfig.stage_plan import reconfiguration_plan
from optimizer.budget import Clock, TimeBudget
from optimizer.errors import InfeasibleError
from optimizer.fabric import Fabric
from optimizer.policy import Decision, ReconfigurePolicy
from optimizer.staging import stage_changes
from optimizer.te import DEFAULT_MAX_OVERSUBSCRIPTION, min_mlu
from optimizer.toe import DEFAULT_TIME_LIMIT, ToeKnobs, plan_target
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

#: The share of today's circuits a plan may remove, tried in turn while staging is blocked.
MAX_CHANGE_STEPS = (1.0, 0.5, 0.25)


@dataclass(frozen=True)
class Proposal:
    plan: dict[str, Any]  # the intent's JSON plan (stages empty when not applied)
    verdict: Decision
    current_mlu: float
    planned_mlu: float
    changed: int  # circuits removed plus added
    target: frozenset[Circuit]


class ToePlanner:
    """Stages are planned against ``stage_mlu`` less the over-subscription integer WCMP weights
    may add to the LP's MLU, so that the weights actually pushed stay under ``stage_mlu``.
    ``time_limit`` is the ToE LP's budget in seconds for one proposal, counted on ``clock``: it
    covers every plan the proposal makes (up to ``len(MAX_CHANGE_STEPS)`` change limits while
    staging is blocked, each with the mapping's re-plans); a plan that finds it spent keeps
    today's topology."""

    def __init__(
        self,
        fabric: Fabric,
        stage_mlu: float,
        time_limit: float = DEFAULT_TIME_LIMIT,
        clock: Clock = time.monotonic,
    ) -> None:
        self.fabric = fabric
        self.stage_mlu = stage_mlu
        self.time_limit = time_limit
        self.clock = clock
        self.staging_threshold = stage_mlu / DEFAULT_MAX_OVERSUBSCRIPTION

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
        """Plan for ``prediction`` from the ``live`` circuits; stage it when it is worth applying.

        ``view`` (:func:`controller.reconfig.in_service.planning_view`) plans around what is
        under maintenance: only the circuits in service change, on the capacity in service.

        A ``dry_run`` trigger is judged as an operator request and always staged. When the
        plan cannot be staged under the threshold (or the mapping cannot keep to a smaller
        limit), smaller changes are planned (ToE's ``max_change`` of 1/2, then 1/4 of today's
        circuits) before giving up with the first error.
        """
        live = frozenset(live)
        budget = TimeBudget(self.time_limit, self.clock)
        first_failure: InfeasibleError | None = None
        for max_change in MAX_CHANGE_STEPS:
            try:
                return self._propose(
                    trigger, prediction, live, now, last_reconfig_at, policy, max_change, budget, view=view
                )
            except InfeasibleError as exc:
                # StagingBlocked, or a smaller change limit the mapping cannot meet
                log.info("ToE: a plan removing up to %.0f%% of the circuits failed: %s",
                         100 * max_change, exc)
                first_failure = first_failure or exc
        if first_failure is None:
            raise RuntimeError("internal error: no ToE change limit was tried")
        raise first_failure

    def _propose(
        self,
        trigger: str,
        prediction: TrafficMatrix,
        live: frozenset[Circuit],
        now: float,
        last_reconfig_at: float | None,
        policy: ReconfigurePolicy,
        max_change: float,
        budget: TimeBudget,
        view: PlanningView | None = None,
    ) -> Proposal:
        knobs = ToeKnobs(max_change=max_change, time_limit=self.time_limit)
        fabric, frozen = (self.fabric, frozenset()) if view is None else (view.fabric, view.frozen)
        if view is not None:
            prediction = view.demand(prediction)
        changing = live - frozen
        target_plan = plan_target(fabric, [prediction], changing, knobs, self.evaluate, budget=budget)
        toe, mapping = target_plan.toe, target_plan.mapping
        target = frozenset(mapping.circuits) | frozen
        changed = len(target ^ live)
        current_mlu = toe.current_mlu  # both by self.evaluate, in plan_topology
        planned_mlu = toe.mlu  # the mapping realises toe.topology exactly
        verdict = toe_verdict(
            "operator" if trigger == "dry_run" else trigger,
            current_mlu,
            planned_mlu,
            changed,
            now,
            last_reconfig_at,
            policy,
        )
        log.info(
            "ToE (%s): MLU %.4f -> %.4f, %d circuits changed: %s",
            trigger,
            current_mlu,
            planned_mlu,
            changed,
            verdict.reason,
        )
        if verdict.apply or trigger == "dry_run":
            staging = stage_changes(
                fabric, changing, target - frozen, prediction, self.evaluate, self.staging_threshold
            )
            plan = reconfiguration_plan(
                fabric, trigger, staging, current_mlu, planned_mlu, verdict.reason
            )
            plan["topology"] = Topology.from_circuits(self.fabric, target).to_json()
        else:
            plan = {
                "fabric": self.fabric.name,
                "trigger": trigger,
                "reason": verdict.reason,
                "current_mlu": round(current_mlu, 6),
                "planned_mlu": round(planned_mlu, 6),
                "circuits_removed": len(live - target),
                "circuits_added": len(target - live),
                "topology": Topology.from_circuits(self.fabric, target).to_json(),
                "stages": [],
            }
        if frozen:
            plan["frozen_circuits"] = len(frozen)  # on devices under maintenance: kept
        plan["repair_trades"] = toe.repair_trades
        plan["solver"] = {**toe.solver_json(), "max_change": max_change}
        return Proposal(plan, verdict, current_mlu, planned_mlu, changed, target)
