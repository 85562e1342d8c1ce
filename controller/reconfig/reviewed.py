"""Reviewed plans: a dry run's plan, kept under an id so that exactly it can be applied.

``heliostat ctl toe --dry-run`` returns a plan and its ``plan_id``; ``ctl toe --apply ID``
applies that plan, stage for stage, or is refused with the reason when it no longer fits the
fabric: the circuits are not the ones it started from, a reconfiguration is in flight, or a
stage would no longer keep the staging rule on today's prediction. Pure (the check takes the
state as arguments); the store is shared by the dry-run worker (which adds) and the loop
(which applies), under a lock.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

from controller.reconfig.stage_plan import Plan
from optimizer.errors import HeliostatError
from optimizer.fabric import Fabric
from optimizer.staging import limit_words
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

#: Dry-run plans kept for ``--apply`` (the newest).
KEPT_PLANS = 8
_TOL = 1e-9


class PlanNotFound(HeliostatError):
    """No reviewed plan has that id (never made, or pushed out by newer dry runs)."""


class PlanRefused(HeliostatError):
    """The reviewed plan no longer fits the fabric; the message says why."""


@dataclass(frozen=True)
class ReviewedPlan:
    plan_id: str
    plan: Plan
    start: frozenset[Circuit]  # the circuits the plan starts from


def plan_id_of(plan: Plan, start: frozenset[Circuit]) -> str:
    """A short id derived from the plan's stages and the circuits it starts from."""
    body = json.dumps(
        {"stages": [s.to_json() for s in plan.stages], "start": sorted([c.ocs, c.a, c.b] for c in start)},
        sort_keys=True,
    )
    return hashlib.sha256(body.encode()).hexdigest()[:12]


class ReviewedPlans:
    """The last :data:`KEPT_PLANS` dry-run plans by id."""

    def __init__(self, keep: int = KEPT_PLANS) -> None:
        self.keep = keep
        self._plans: OrderedDict[str, ReviewedPlan] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, plan: Plan, start: frozenset[Circuit]) -> str:
        """Keep ``plan`` (with its ``plan_id`` set) under its id; returns the id."""
        plan_id = plan_id_of(plan, start)
        with self._lock:
            self._plans[plan_id] = ReviewedPlan(plan_id, replace(plan, plan_id=plan_id), frozenset(start))
            self._plans.move_to_end(plan_id)
            while len(self._plans) > self.keep:
                self._plans.popitem(last=False)
        return plan_id

    def get(self, plan_id: str) -> ReviewedPlan:
        with self._lock:
            found = self._plans.get(plan_id)
        if found is None:
            raise PlanNotFound(
                f"no reviewed plan {plan_id!r}: the controller keeps the last {self.keep} dry runs' "
                "plans (and none across a restart); make one with ctl toe --dry-run"
            )
        return found


def apply_problem(
    fabric: Fabric,
    reviewed: ReviewedPlan,
    installed: frozenset[Circuit],
    in_flight: bool,
    prediction: TrafficMatrix | None,
    stage_mlu: float,
    margin: float,
    evaluate: Callable[[Fabric, Topology, TrafficMatrix], float],
) -> str | None:
    """Why ``reviewed`` cannot be applied as it is now, or None when it can."""
    if in_flight:
        return "a reconfiguration is already in flight"
    total = len(reviewed.plan.stages)
    if total == 0:
        return "the plan changes no circuits"
    if installed != reviewed.start:
        appeared, went = len(installed - reviewed.start), len(reviewed.start - installed)
        return (
            f"the fabric moved since the plan was made: {appeared} circuits appeared and {went} "
            "went, so it no longer starts from today's circuits; plan again (ctl toe --dry-run)"
        )
    if prediction is None or prediction.total() <= 0:
        return None
    state = set(installed)

    def mlu(circuits: set[Circuit]) -> float:
        return evaluate(fabric, Topology.from_circuits(fabric, circuits), prediction)

    for index in range(total):
        spec = reviewed.plan.stage(index)
        begin = mlu(state)
        drained = mlu(state - set(spec.remove))
        limit = max(stage_mlu / margin, begin)
        if drained > limit + _TOL:
            return (
                f"no longer safe on today's prediction: stage {index + 1} of {total} would drain to "
                f"MLU {drained:.4f}, {limit_words(stage_mlu, margin, begin)}; plan again (ctl toe --dry-run)"
            )
        state = (state - set(spec.remove)) | set(spec.add)
    return None
