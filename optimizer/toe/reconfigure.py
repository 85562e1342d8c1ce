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
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from optimizer import progress
from optimizer.budget import Clock, TimeBudget
from optimizer.errors import InfeasibleError
from optimizer.fabric import Fabric
from optimizer.mapping import MappingResult, ParallelMap, map_topology, unchanged_mapping
from optimizer.policy import Decision, ReconfigurePolicy, should_reconfigure
from optimizer.staging import (
    DEFAULT_THRESHOLD,
    BlockedTarget,
    MluFunction,
    StageTraffic,
    StagingBlocked,
    StagingPlan,
    StagingTimedOut,
    stage_changes,
)
from optimizer.te import DEFAULT_TABLE_SIZE, TeResult, TeSolver
from optimizer.toe.hose import HoseBlocked, gain_left, hose_proof
from optimizer.toe.merge import merge_stages
from optimizer.toe.plan import ToeKnobs, ToePlan, plan_topology
from optimizer.toe.sequence import onward_steps, sequence_steps
from optimizer.topology import Circuit, Topology, check_circuits, uniform_mesh
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

_MAX_CHANGE_RETRIES = 3
#: The share of today's circuits a plan may remove, tried in turn while no stage of the
#: larger change is safe and lowers the MLU (a smaller target is an intermediate topology).
MAX_CHANGE_STEPS = (1.0, 0.5, 0.25)
#: The share of a plan's time limit its LP may take (every re-plan included); the rest is for
#: the mapping, staging and the final TE.
LP_SHARE = 0.6
#: The share of the time left that staging a change may spend without a stage that lowers the
#: MLU before it gives up and leaves the rest to a smaller change or single safe swaps (a hot
#: 64-block fabric's target can take a minute of one-circuit stages that only hold the MLU).
STAGING_PATIENCE = 0.5
#: The share of the plan's time limit the sequence search may take: the rest is for merging its
#: stages (:mod:`optimizer.toe.merge`, one TE check per merge) and the final TE.
SEARCH_SHARE = 0.9

#: fabric, target topology, today's circuits -> the circuits realising the target.
Mapper = Callable[[Fabric, Topology, Sequence[Circuit]], MappingResult]


@dataclass(frozen=True)
class TargetPlan:
    """The planned topology, the circuits realising it and, when a stage limit was given, the
    stages to get there (or to the best step towards it that is reachable safely)."""

    toe: ToePlan
    mapping: MappingResult
    staging: StagingPlan | None = None
    max_change: float = 1.0  # the change limit the plan was made under

    @property
    def reached(self) -> frozenset[Circuit]:
        """The circuits once the stages ran: the target, or the best reachable step to it."""
        return frozenset(self.mapping.circuits if self.staging is None else self.staging.final_circuits)

    @property
    def reached_mlu(self) -> float:
        return self.toe.mlu if self.staging is None else self.staging.final_mlu


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
            "complete": self.staging.complete,
            "blocked": self.staging.blocked,
            "reached_circuits": [c.to_json(fabric) for c in sorted(self.staging.final_circuits)],
            "bound": self.toe.to_json(),
            "threshold": self.staging.threshold,
            "wcmp_margin": self.staging.margin,
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
    toe, staging = plan.toe, plan.staging
    reached_scale = 1.0 / staging.final_mlu if staging.final_mlu > 0 else math.inf
    changed = sum(len(s.remove) + len(s.add) for s in staging.stages)
    return should_reconfigure(
        current_mlu=toe.current_mlu,
        proposed_mlu=staging.final_mlu,
        now=now,
        last_change_at=last_change_at,
        policy=policy,
        current_scale=toe.current_throughput_scale,
        proposed_scale=toe.throughput_scale if staging.complete else reached_scale,
        circuits_changed=changed,
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
    *,
    threshold: float | None = None,
    margin: float = 1.0,
    change_steps: Sequence[float] | None = None,
    parallel_map: ParallelMap | None = None,
    traffic: StageTraffic | None = None,
) -> TargetPlan:
    """Plan the topology for ``matrices`` from today's circuits ``current``, lay it on the OCSes
    and, with a stage limit ``threshold``, find the stages: ``heliostat toe`` and the daemon
    both plan through here.

    ``evaluate`` is the min-MLU used to judge topologies (ToE's re-evaluation and repair, the
    stages' checks). The change limit in ``knobs`` bounds the circuits the mapping really
    removes: if the mapping needs a few more than the topology's lower bound, the topology is
    re-planned with a tighter limit. The result does not depend on the order ``current``
    comes in (:func:`~optimizer.mapping.mapper.map_topology` reads it sorted).

    Staging (``threshold``, ``margin``: see :func:`optimizer.staging.stage_changes`) is
    partial: when the whole target cannot be reached safely the plan's stages end at the best
    reachable step and ``staging.blocked`` says what holds the rest back. When no stage is
    both safe and improving, smaller changes are planned (``change_steps``, fractions of
    today's circuits no larger than the knobs' ``max_change``; default
    :data:`MAX_CHANGE_STEPS`) before the first error is raised. ``traffic``
    (:mod:`optimizer.staging.traffic`) is what each stage's drain is checked against (the
    traffic flowing while it runs, announced jobs counted only from the stages that may meet
    them); the topology is planned, and every stage's MLU judged, on ``matrices``.

    The knobs' ``time_limit`` (counted on ``clock`` from this call, or the given ``budget``)
    covers the whole plan: the LP of every plan, re-plans included, and the swap search of
    staging. Raises ConfigError for invalid circuits or knobs and InfeasibleError when no
    plan fits (StagingBlocked when nothing safe lowers the MLU, StagingTimedOut when the time ran
    out before a stage or swap did).

    ``parallel_map`` (a process pool's ``map``, owned by the caller) is given to the default
    mapper, which then maps the failure domains side by side on big fabrics (the same
    circuits, sooner).
    """
    knobs.validate()
    budget = budget or TimeBudget(knobs.time_limit, clock)
    circuits = tuple(current)
    check_circuits(fabric, circuits, "<current>")
    if mapper is map_topology:
        mapper = partial(map_topology, budget=budget, parallel_map=parallel_map)
    if threshold is None:
        toe, mapping = _plan_and_map(fabric, matrices, circuits, knobs, evaluate, mapper, budget)
        return TargetPlan(toe, mapping, max_change=knobs.max_change)
    search = budget.share(SEARCH_SHARE)
    steps = [knobs.max_change] + [f for f in (change_steps or MAX_CHANGE_STEPS) if f < knobs.max_change]
    first_failure: InfeasibleError | None = None
    planned: tuple[ToePlan, MappingResult, float] | None = None
    for max_change in steps:
        if first_failure is not None and budget.share(LP_SHARE).expired():
            # a smaller plan now would be the LP's first answer (today's topology) unstaged
            log.info("ToE: the LP's share of the time limit is spent; no smaller change is planned")
            break
        step_knobs = replace(knobs, max_change=max_change)
        try:
            toe, mapping = _plan_and_map(fabric, matrices, circuits, step_knobs, evaluate, mapper, budget)
            planned = planned or (toe, mapping, max_change)
            # the hose floor proves nothing when the first stage is checked on lighter traffic
            lighter = traffic is not None and traffic.window(0) < len(traffic.windows)
            proof = None if lighter else hose_proof(fabric, circuits, matrices, toe, threshold, margin)
            if proof is not None:  # no smaller change or search can help: say so now
                first_failure = first_failure or proof
                break
            progress.report("staging", f"{mapping.removed} circuits removed, {mapping.added} added")
            staging = stage_changes(
                fabric,
                circuits,
                mapping.circuits,
                matrices,
                evaluate,
                threshold,
                margin=margin,
                partial=True,
                budget=budget,
                patience=budget.portion(STAGING_PATIENCE),
                traffic=traffic,
            )
            if not staging.complete:
                # a step towards the target: a sequence of safe stages may reach further, on from it
                swaps = onward_steps(fabric, circuits, staging, matrices, evaluate, threshold, margin, search,
                                     traffic=traffic)
                if swaps is not None and swaps.final_mlu < staging.final_mlu * (1 - 1e-6):
                    found = f"{len(swaps.stages)} safe stages found one by one"
                    why = f"{staging.blocked}; {found} reach a lower MLU"
                    remaining = len(swaps.final_circuits ^ frozenset(mapping.circuits))
                    staging = replace(swaps, blocked=why, remaining=remaining, blocked_by=staging.blocked_by)
            elif _target_no_better(toe, staging, knobs.min_gain):
                # the rounded target is no better than today's topology: look for safe stages anyway
                swaps = sequence_steps(fabric, circuits, matrices, evaluate, threshold, margin, search,
                                       traffic=traffic)
                if swaps is not None:
                    why = (
                        "the rounded target is no better than today's topology; "
                        f"{len(swaps.stages)} safe stages found one by one lower the MLU"
                    )
                    remaining = len(swaps.final_circuits ^ frozenset(mapping.circuits))
                    staging = replace(swaps, blocked=why, remaining=remaining)
            staging = merge_stages(fabric, circuits, staging, matrices, evaluate, budget, traffic=traffic)
            return TargetPlan(toe, mapping, staging, max_change)
        except InfeasibleError as exc:
            # StagingBlocked, StagingTimedOut, or a smaller change limit the mapping cannot meet
            log.info("ToE: a plan removing up to %.0f%% of the circuits failed: %s", 100 * max_change, exc)
            first_failure = first_failure or exc
    if first_failure is None:  # pragma: no cover - steps always holds the knobs' own limit
        raise RuntimeError("internal error: no ToE change limit was tried")
    proven = isinstance(first_failure, HoseBlocked)
    if planned is not None and isinstance(first_failure, StagingBlocked | StagingTimedOut):
        swaps = None
        if not proven:
            swaps = sequence_steps(fabric, circuits, matrices, evaluate, threshold, margin, search,
                                   traffic=traffic)
        if swaps is not None:
            toe, mapping, max_change = planned
            why = (
                f"the planned topology cannot be staged ({first_failure}); {len(swaps.stages)} safe stages "
                "found one by one give circuits to hot pairs instead"
            )
            log.info("ToE: %s, MLU %.4f -> %.4f", why, swaps.start_mlu, swaps.final_mlu)
            remaining = len(swaps.final_circuits ^ frozenset(mapping.circuits))
            blocker = first_failure if isinstance(first_failure, StagingBlocked) else None
            staged = replace(swaps, blocked=why, remaining=remaining, blocked_by=blocker)
            staged = merge_stages(fabric, circuits, staged, matrices, evaluate, budget, traffic=traffic)
            return TargetPlan(toe, mapping, staged, max_change)
        if proven:
            why = "so no plan can lower the MLU at this load"
        elif budget.expired():
            why = "and the plan's time limit ran out before a safe sequence of stages was found"
        else:
            why = (
                "and no sequence of safe stages (swaps of two circuits or, on small fabrics, stages "
                "of several, found one by one) lowers the MLU"
            )
        first_failure.args = (f"{first_failure.args[0]}; {why}{_advice(first_failure, planned)}",)
        if isinstance(first_failure, StagingBlocked) and planned[0].nothing_to_gain is None:
            toe = planned[0]
            first_failure.target = BlockedTarget(frozenset(planned[1].circuits), toe.mlu, toe.current_mlu)
    raise first_failure


#: The highest stage limit an operator may set: no stage may plan for loss.
MAX_STAGE_LIMIT = 1.0


def _target_no_better(toe: ToePlan, staging: StagingPlan, min_gain: float) -> bool:
    """Whether a complete staging leaves the MLU where it was (today's topology kept because the
    rounded plan was worse, or a target that changes circuits without lowering the MLU) while
    the bound promises more than ``min_gain``: a search from today's topology may find it."""
    if not staging.complete or staging.final_mlu < staging.start_mlu * (1 - 1e-6):
        return False
    return (toe.rounded_worse or bool(staging.stages)) and gain_left(toe, min_gain)


def _advice(failure: InfeasibleError, planned: tuple[ToePlan, MappingResult, float] | None) -> str:
    """What an operator could change when nothing can be staged, with the figures: the best any
    topology does, the stage limit that would let the blocking drain through, the window (a
    lower predicted MLU) in which the same stage keeps today's limit, and spare ports."""
    words = []
    if planned is not None:
        toe = planned[0]
        bound = (
            ""
            if toe.throughput_scale_relaxed is None
            else f", no topology better than {1 / toe.throughput_scale_relaxed:.4f}"
        )
        words.append(f"the plan would reach MLU {toe.mlu:.4f} from {toe.current_mlu:.4f}{bound}")
    if isinstance(failure, StagingBlocked):
        needed = failure.mlu * failure.margin
        if needed <= MAX_STAGE_LIMIT:
            words.append(
                f"a stage limit of {math.ceil(needed * 1000) / 1000:g} (at most 1) would let that drain "
                "through"
            )
        else:
            words.append(
                f"no stage limit up to {MAX_STAGE_LIMIT:g} lets that drain through (it needs {needed:.4f})"
            )
        start = failure.start
        if start is not None and failure.mlu > 0:
            lp_limit = failure.threshold / failure.margin
            window = start * lp_limit / failure.mlu
            words.append(
                f"or plan in a window when the predicted MLU is at most {window:.4f} (the same drain "
                "then stays under the stage limit)"
            )
        a, b = failure.pair
        words.append(f"or free uplink ports on {a} and {b} (a new circuit made before the old one is broken)")
    return "" if not words else ". What could change: " + "; ".join(words)


def _plan_and_map(
    fabric: Fabric,
    matrices: Sequence[TrafficMatrix],
    circuits: tuple[Circuit, ...],
    knobs: ToeKnobs,
    evaluate: MluFunction,
    mapper: Mapper,
    budget: TimeBudget,
) -> tuple[ToePlan, MappingResult]:
    lp_budget = budget.share(LP_SHARE)
    progress.report("ToE LP", f"max change {knobs.max_change:g}")
    toe = plan_topology(fabric, matrices, circuits, knobs, evaluate, budget=lp_budget)
    if toe.nothing_to_gain is not None:
        return toe, unchanged_mapping(fabric, circuits)
    progress.report("mapping", f"{toe.removed_lower_bound} circuits to remove at least")
    mapping = mapper(fabric, toe.topology, circuits)
    limit = toe.max_removed
    for _ in range(_MAX_CHANGE_RETRIES):
        if limit is None or mapping.removed <= limit:
            break
        tighter = max(0, (toe.max_removed or 0) - (mapping.removed - limit))
        log.info(
            "mapping removes %d circuits > limit %d: re-planning with %d", mapping.removed, limit, tighter
        )
        toe = plan_topology(
            fabric, matrices, circuits, knobs, evaluate, max_removed=tighter, budget=lp_budget
        )
        mapping = mapper(fabric, toe.topology, circuits)
    if limit is not None and mapping.removed > limit:
        raise InfeasibleError(
            f"the mapping removes {mapping.removed} circuits, over the change limit of {limit} "
            f"(max_change {knobs.max_change:g}), even after re-planning with tighter limits"
        )
    return toe, mapping


def plan_reconfiguration(
    fabric: Fabric,
    demands: TrafficMatrix | Sequence[TrafficMatrix],
    current: Sequence[Circuit] | None = None,
    knobs: ToeKnobs | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    table_size: int = DEFAULT_TABLE_SIZE,
    mapper: Mapper = map_topology,
    clock: Clock = time.monotonic,
    parallel_map: ParallelMap | None = None,
) -> ReconfigurationPlan:
    """Plan the topology for ``demands``, lay it on the OCSes (:func:`plan_target`) and stage
    the change.

    ``current`` is today's circuits (default: the uniform mesh of a fresh fabric). ``mapper``
    lays a topology on the OCSes (default :func:`optimizer.mapping.mapper.map_topology`; tests
    inject others); ``parallel_map`` see :func:`plan_target`.
    """
    knobs = knobs or ToeKnobs()
    knobs.validate()
    budget = TimeBudget(knobs.time_limit, clock)  # the whole plan, from here
    matrices = [demands] if isinstance(demands, TrafficMatrix) else list(demands)
    circuits = tuple(uniform_mesh(fabric) if current is None else current)
    solver = TeSolver(fabric, hedge=knobs.hedge, table_size=table_size)
    evaluate = te_evaluator(solver)

    target = plan_target(
        fabric,
        matrices,
        circuits,
        knobs,
        evaluate,
        mapper,
        budget,
        threshold=threshold,
        parallel_map=parallel_map,
    )
    toe, mapping = target.toe, target.mapping
    staging = target.staging
    if staging is None:  # pragma: no cover - a threshold was given
        raise RuntimeError("internal error: the plan was not staged")
    reached = staging.final_topology
    worst = matrices[0]
    if len(matrices) > 1:
        worst = max(matrices, key=lambda tm: evaluate(fabric, reached, tm))
    progress.report("routing", "TE with integer weights on the planned topology")
    routing = solver.solve(reached, worst)
    return ReconfigurationPlan(fabric, toe, mapping, staging, routing)
