"""The whole slow loop in one call: topology engineering, per-OCS mapping, staging, final TE.

:func:`plan_target` (topology engineering, its starved-block repair and the per-OCS mapping
under the change limit) is shared by ``heliostat toe`` (:func:`plan_reconfiguration`, which
then stages the change and routes the result) and the daemon (``controller.reconfig.toe_run``, which
judges the plan before it spends TE solves on staging), so both plan the same circuits for
the same input. Pure: no I/O, and no clock but the time budget's (a parameter); the policy
decision (:mod:`optimizer.policy`) is left to the caller.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from optimizer.budget import Clock, TimeBudget
from optimizer.errors import InfeasibleError
from optimizer.fabric import Fabric
from optimizer.mapping import MappingResult, map_topology
from optimizer.policy import Decision, ReconfigurePolicy, should_reconfigure
from optimizer.staging import DEFAULT_THRESHOLD, MluFunction, StagingPlan, stage_changes
from optimizer.te import DEFAULT_TABLE_SIZE, TeResult, TeSolver
from optimizer.toe.plan import ToeKnobs, ToePlan, plan_topology
from optimizer.topology import Circuit, Topology, check_circuits, uniform_mesh
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

_MAX_CHANGE_RETRIES = 3

#: fabric, target topology, today's circuits -> the circuits realising the target.
Mapper = Callable[[Fabric, Topology, Sequence[Circuit]], MappingResult]


@dataclass(frozen=True)
class TargetPlan:
    """The planned topology and the circuits realising it (not yet staged)."""

    toe: ToePlan
    mapping: MappingResult


@dataclass(frozen=True)
class ReconfigurationPlan:
    fabric: Fabric
    toe: ToePlan
    mapping: MappingResult
    staging: StagingPlan
    routing: TeResult  # TE on the final topology, for the matrix it serves worst

    def to_json(self) -> dict[str, Any]:
        fabric = self.fabric
        return {
            "fabric": fabric.name,
            "circuits": [c.to_json(fabric) for c in sorted(self.mapping.circuits)],
            "changes": {
                "kept": self.mapping.kept,
                "removed": self.mapping.removed,
                "added": self.mapping.added,
                "lower_bound": self.mapping.lower_bound,
            },
            "stages": self.staging.to_json(fabric),
            "bound": self.toe.to_json(),
            "threshold": self.staging.threshold,
            "topology": self.mapping.topology.to_json(),
            "routing": self.routing.to_json()["routing"],
        }


def decide(
    plan: ReconfigurationPlan,
    now: float,
    last_change_at: float | None,
    policy: ReconfigurePolicy | None = None,
) -> Decision:
    """Whether ``plan`` is worth applying (see :func:`optimizer.policy.should_reconfigure`)."""
    toe = plan.toe
    return should_reconfigure(
        current_mlu=toe.current_mlu,
        proposed_mlu=plan.staging.final_mlu,
        now=now,
        last_change_at=last_change_at,
        policy=policy,
        current_scale=toe.current_throughput_scale,
        proposed_scale=toe.throughput_scale,
        circuits_changed=plan.mapping.removed + plan.mapping.added,
    )


def te_evaluator(solver: TeSolver) -> MluFunction:
    """Min-MLU by the TE LP, warm-started across calls (the ToE and staging checks)."""

    def evaluate(fabric: Fabric, topology: Any, tm: TrafficMatrix) -> float:
        del fabric  # the solver is bound to it
        return solver.min_mlu(topology, tm)

    return evaluate


def plan_target(
    fabric: Fabric,
    matrices: Sequence[TrafficMatrix],
    current: Iterable[Circuit],
    knobs: ToeKnobs,
    evaluate: MluFunction,
    mapper: Mapper = map_topology,
    budget: TimeBudget | None = None,
    clock: Clock = time.monotonic,
) -> TargetPlan:
    """Plan the topology for ``matrices`` from today's circuits ``current`` and lay it on the OCSes.

    ``evaluate`` is the min-MLU used to judge topologies (ToE's re-evaluation and repair).
    The change limit in ``knobs`` bounds the circuits the mapping really removes: if the
    mapping needs a few more than the topology's lower bound, the topology is re-planned
    with a tighter limit. The result does not depend on the order ``current`` comes in
    (:func:`~optimizer.mapping.mapper.map_topology` reads it sorted). Raises ConfigError for
    invalid circuits or knobs and InfeasibleError when no plan fits.

    The knobs' ``time_limit`` (counted on ``clock`` from this call, or the given ``budget``)
    covers the LP of every plan, re-plans included: a re-plan that finds it spent keeps
    today's topology and says so (``toe.cut_stage``).
    """
    knobs.validate()
    budget = budget or TimeBudget(knobs.time_limit, clock)
    circuits = tuple(current)
    check_circuits(fabric, circuits, "<current>")
    toe = plan_topology(fabric, matrices, circuits, knobs, evaluate, budget=budget)
    mapping = mapper(fabric, toe.topology, circuits)
    limit = toe.max_removed
    for _ in range(_MAX_CHANGE_RETRIES):
        if limit is None or mapping.removed <= limit:
            break
        tighter = max(0, (toe.max_removed or 0) - (mapping.removed - limit))
        log.info(
            "mapping removes %d circuits > limit %d: re-planning with %d", mapping.removed, limit, tighter
        )
        toe = plan_topology(fabric, matrices, circuits, knobs, evaluate, max_removed=tighter, budget=budget)
        mapping = mapper(fabric, toe.topology, circuits)
    if limit is not None and mapping.removed > limit:
        raise InfeasibleError(
            f"the mapping removes {mapping.removed} circuits, over the change limit of {limit} "
            f"(max_change {knobs.max_change:g}), even after re-planning with tighter limits"
        )
    return TargetPlan(toe, mapping)


def plan_reconfiguration(
    fabric: Fabric,
    demands: TrafficMatrix | Sequence[TrafficMatrix],
    current: Sequence[Circuit] | None = None,
    knobs: ToeKnobs | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    table_size: int = DEFAULT_TABLE_SIZE,
    mapper: Mapper = map_topology,
) -> ReconfigurationPlan:
    """Plan the topology for ``demands``, lay it on the OCSes (:func:`plan_target`) and stage
    the change.

    ``current`` is today's circuits (default: the uniform mesh of a fresh fabric). ``mapper``
    lays a topology on the OCSes (default :func:`optimizer.mapping.mapper.map_topology`; tests
    inject others).
    """
    knobs = knobs or ToeKnobs()
    knobs.validate()
    matrices = [demands] if isinstance(demands, TrafficMatrix) else list(demands)
    circuits = tuple(uniform_mesh(fabric) if current is None else current)
    solver = TeSolver(fabric, hedge=knobs.hedge, table_size=table_size)
    evaluate = te_evaluator(solver)

    target = plan_target(fabric, matrices, circuits, knobs, evaluate, mapper)
    toe, mapping = target.toe, target.mapping
    staging = stage_changes(fabric, circuits, mapping.circuits, matrices, evaluate, threshold)
    worst = matrices[0]
    if len(matrices) > 1:
        worst = max(matrices, key=lambda tm: evaluate(fabric, mapping.topology, tm))
    routing = solver.solve(mapping.topology, worst)
    return ReconfigurationPlan(fabric, toe, mapping, staging, routing)
