"""ToE as the daemon runs it: plan the topology, map it onto the OCSes, judge it, stage it.

Pure (no I/O, no clock: ``now`` is an argument); the daemon journals and executes the result.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from controller.circuit_plan import plan_circuits
from controller.decision import toe_verdict
from controller.stage_plan import reconfiguration_plan
from optimizer.fabric import Fabric
from optimizer.policy import Decision, ReconfigurePolicy
from optimizer.staging import stage_changes
from optimizer.te import min_mlu
from optimizer.toe import plan_topology
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix
from optimizer.wcmp import DEFAULT_MAX_OVERSUBSCRIPTION

log = logging.getLogger(__name__)


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
    may add to the LP's MLU, so that the weights actually pushed stay under ``stage_mlu``."""

    def __init__(self, fabric: Fabric, stage_mlu: float) -> None:
        self.fabric = fabric
        self.stage_mlu = stage_mlu
        self.staging_threshold = stage_mlu / DEFAULT_MAX_OVERSUBSCRIPTION

    def evaluate(self, fabric: Fabric, topology: Topology, tm: TrafficMatrix) -> float:
        return min_mlu(fabric, topology, tm, spine=())

    def propose(
        self,
        trigger: str,
        prediction: TrafficMatrix,
        live: Iterable[Circuit],
        now: float,
        last_reconfig_at: float | None,
        policy: ReconfigurePolicy,
    ) -> Proposal:
        """Plan for ``prediction`` from the ``live`` circuits; stage it when it is worth applying.

        A ``dry_run`` trigger is judged as an operator request and always staged.
        """
        live = frozenset(live)
        current_topology = Topology.from_circuits(self.fabric, live)
        toe = plan_topology(self.fabric, prediction, current_topology, evaluate=self.evaluate)
        target = frozenset(plan_circuits(self.fabric, toe.topology, live))
        changed = len(target ^ live)
        current_mlu = self.evaluate(self.fabric, current_topology, prediction)
        planned_mlu = self.evaluate(self.fabric, Topology.from_circuits(self.fabric, target), prediction)
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
                self.fabric, live, target, prediction, self.evaluate, self.staging_threshold
            )
            plan = reconfiguration_plan(
                self.fabric, trigger, staging, current_mlu, planned_mlu, verdict.reason
            )
        else:
            plan = {
                "fabric": self.fabric.name,
                "trigger": trigger,
                "reason": verdict.reason,
                "current_mlu": round(current_mlu, 6),
                "planned_mlu": round(planned_mlu, 6),
                "circuits_removed": len(live - target),
                "circuits_added": len(target - live),
                "topology": toe.topology.to_json(),
                "stages": [],
            }
        return Proposal(plan, verdict, current_mlu, planned_mlu, changed, target)
