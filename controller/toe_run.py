"""ToE as the daemon runs it: plan the topology, map it onto the OCSes, judge it, stage it.

Pure (no I/O, no clock: ``now`` is an argument); the daemon journals and executes the result.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from controller.circuit_plan import plan_circuits
from controller.decision import toe_verdict
from controller.stage_plan import reconfiguration_plan
from optimizer.fabric import Fabric
from optimizer.policy import Decision, ReconfigurePolicy
from optimizer.staging import StagingBlocked, stage_changes
from optimizer.te import min_mlu
from optimizer.toe import DEFAULT_TIME_LIMIT, ToeKnobs, plan_topology
from optimizer.toe_round import port_budget
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix
from optimizer.wcmp import DEFAULT_MAX_OVERSUBSCRIPTION

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
    ``time_limit`` is the ToE LP's budget in seconds for each plan (a proposal plans up to
    ``len(MAX_CHANGE_STEPS)`` times while staging is blocked)."""

    def __init__(self, fabric: Fabric, stage_mlu: float, time_limit: float = DEFAULT_TIME_LIMIT) -> None:
        self.fabric = fabric
        self.stage_mlu = stage_mlu
        self.time_limit = time_limit
        self.staging_threshold = stage_mlu / DEFAULT_MAX_OVERSUBSCRIPTION

    def evaluate(self, fabric: Fabric, topology: Topology, tm: TrafficMatrix) -> float:
        return min_mlu(fabric, topology, tm, spine=())

    def _fill_starved_blocks(self, topology: Topology, tm: TrafficMatrix) -> Topology:
        """Give ports a rounded topology left free to a block (two at a time), taking one
        circuit from the least loaded pair, while that lowers the MLU.

        The ToE rounding can leave a block with free ports when every other block is full
        (all its relaxed links were fractional); no pair can then be added, but trading one
        circuit x-y for x-b and y-b can. Kept only when TE says it is better.
        """
        counts = np.array(topology.counts, dtype=np.int64)
        budget = port_budget(self.fabric)
        demand = tm.gbps + tm.gbps.T
        best = self.evaluate(self.fabric, topology, tm)
        for _ in range(int(budget.sum())):
            spare = budget - counts.sum(axis=1)
            if not (spare >= 2).any():
                break
            b = int(np.argmax(spare))
            load = np.where(counts >= 2, demand / np.maximum(counts, 1), np.inf)
            load[b, :] = load[:, b] = np.inf
            x, y = np.unravel_index(int(np.argmin(load)), load.shape)
            if not np.isfinite(load[x, y]):
                break
            trial = counts.copy()
            trial[x, y] -= 1
            trial[y, x] -= 1
            for z in (x, y):
                trial[b, z] += 1
                trial[z, b] += 1
            candidate = Topology(topology.blocks, trial)
            mlu = self.evaluate(self.fabric, candidate, tm)
            if not mlu < best - 1e-9:
                break
            log.info(
                "ToE: %s had %d free ports; traded a %s-%s circuit for two of its own (MLU %.4f -> %.4f)",
                topology.blocks[b],
                spare[b],
                topology.blocks[x],
                topology.blocks[y],
                best,
                mlu,
            )
            counts, best = trial, mlu
        return Topology(topology.blocks, counts)

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

        A ``dry_run`` trigger is judged as an operator request and always staged. When the
        plan cannot be staged under the threshold, smaller changes are planned (ToE's
        ``max_change`` of 1/2, then 1/4 of today's circuits) before giving up with the
        staging error.
        """
        live = frozenset(live)
        for max_change in MAX_CHANGE_STEPS[:-1]:
            try:
                return self._propose(trigger, prediction, live, now, last_reconfig_at, policy, max_change)
            except StagingBlocked as exc:
                log.info(
                    "ToE: a plan removing up to %.0f%% of the circuits cannot be staged: %s",
                    100 * max_change,
                    exc,
                )
        return self._propose(trigger, prediction, live, now, last_reconfig_at, policy, MAX_CHANGE_STEPS[-1])

    def _propose(
        self,
        trigger: str,
        prediction: TrafficMatrix,
        live: frozenset[Circuit],
        now: float,
        last_reconfig_at: float | None,
        policy: ReconfigurePolicy,
        max_change: float,
    ) -> Proposal:
        current_topology = Topology.from_circuits(self.fabric, live)
        knobs = ToeKnobs(max_change=max_change, time_limit=self.time_limit)
        toe = plan_topology(self.fabric, prediction, current_topology, knobs, evaluate=self.evaluate)
        logical = self._fill_starved_blocks(toe.topology, prediction)
        target = frozenset(plan_circuits(self.fabric, logical, live))
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
                "topology": logical.to_json(),
                "stages": [],
            }
        return Proposal(plan, verdict, current_mlu, planned_mlu, changed, target)
