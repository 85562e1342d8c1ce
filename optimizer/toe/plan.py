"""Topology engineering: choose the logical topology L for the predicted traffic.

:func:`plan_topology` maximises the scale factor of the demand that fits (every predicted
matrix must fit at that scale: plan for the worst), with traffic engineering over direct,
one-transit and spine paths. Among topologies within 0.5% of that optimum it then prefers
the least transit traffic (stretch) and, among those within ``STRETCH_TOLERANCE`` of it,
the fewest removed circuits and (with a weight) nearness to the uniform mesh: a
lexicographic LP in three stages (:mod:`optimizer.toe.lp`). The relaxation is rounded to
integer counts within every block's port budget (:mod:`optimizer.toe.rounding`); a block the
rounding left with free ports gets them by trading circuits, when traffic engineering says
that helps (:mod:`optimizer.toe.repair`); and the topology is re-evaluated by min-MLU
traffic engineering to report the scale factor it really gives.

The LP runs under a time budget (``ToeKnobs.time_limit``). When it runs out the plan degrades
and says so (``ToePlan.solver_status``, ``ToePlan.cut_stage``): cut in stage 1, the latest
feasible solution is used if it is no worse than today's topology, else today's topology is
kept; cut in stage 2 or 3, the scale is settled and the latest completed solution (no worse
than the previous stage's) is used. The relaxation bound is reported only when stage 1
proved it (``throughput_scale_relaxed`` is None otherwise).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from optimizer.budget import Clock, TimeBudget, check_time_limit
from optimizer.errors import ConfigError, InfeasibleError, SolverTimeLimit
from optimizer.fabric import Fabric
from optimizer.staging import MluFunction
from optimizer.te import TeSolver
from optimizer.toe.lp import Relaxation, ToeLp, ToeProblem, max_scale
from optimizer.toe.reach import reach_two_hops
from optimizer.toe.repair import repair_starved_blocks
from optimizer.toe.rounding import port_budget, removed_count, round_topology
from optimizer.topology import Circuit, Topology, mesh_topology
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

#: Stages 2 and 3 keep the scale factor within this fraction of the optimum.
NEAR_OPTIMAL = 0.995
#: Stage 3 lets the share of traffic through a transit block rise this much (absolute) over
#: stage 2's minimum, to keep today's circuits (rounding alone costs a few tenths of a percent).
STRETCH_TOLERANCE = 0.01
#: Seconds the LP may take by default in one :func:`plan_topology` call.
DEFAULT_TIME_LIMIT = 60.0
#: ``heliostat toe``'s default ``ToeKnobs.min_gain``: a topology must be able to lower today's MLU
#: by this fraction for a plan to change anything (the daemon's automatic checks use its
#: ``reconfig_gain``; the library's default, 0, plans for shorter paths alone too).
DEFAULT_MIN_GAIN = 0.005

#: ``ToePlan.solver_status``: every stage proved its optimum.
STATUS_OPTIMAL = "optimal"
#: The time budget ran out (``ToePlan.cut_stage`` says where).
STATUS_TIME_LIMIT = "time_limit"
#: Column generation stopped at its round limit in stage 1: feasible, the bound not proven.
STATUS_ROUND_LIMIT = "round_limit"
#: The stages, as ``cut_stage`` names them: max scale, min stretch, min change, and the check
#: whether today's topology is within the stretch tolerance.
STAGES = ("scale", "stretch", "change", "today_check")


@dataclass(frozen=True)
class ToeKnobs:
    """Operator knobs. The defaults leave the plan unconstrained."""

    max_change: float = 1.0  # largest fraction of today's circuits that may be removed
    mesh_weight: float = 0.0  # weight for staying near the uniform mesh (0 = none)
    hedge: float | None = None  # TE hedge S in (0, 1], used when evaluating; None = plain min-MLU
    # seconds for a plan: plan_topology's LP alone; plan_target's whole plan (the LP gets
    # reconfigure.LP_SHARE of it, the mapping, staging and final TE the rest)
    time_limit: float = DEFAULT_TIME_LIMIT
    # today's topology is kept, and nothing else planned, when the relaxed bound (the best any
    # continuous topology does) lowers today's MLU by less than this fraction (0: plan anyway,
    # for shorter paths alone)
    min_gain: float = 0.0

    def validate(self) -> None:
        if not 0.0 <= self.max_change <= 1.0 or math.isnan(self.max_change):
            raise ConfigError("<toe>", "max_change", f"must be between 0 and 1, got {self.max_change}")
        if not self.mesh_weight >= 0.0 or math.isinf(self.mesh_weight):
            raise ConfigError("<toe>", "mesh_weight", f"must be a finite number >= 0, got {self.mesh_weight}")
        if self.hedge is not None and not 0.0 < self.hedge <= 1.0:
            raise ConfigError("<toe>", "hedge", f"must be in (0, 1], got {self.hedge}")
        check_time_limit(self.time_limit, "<toe>", "time_limit")
        if not 0.0 <= self.min_gain < 1.0:
            raise ConfigError("<toe>", "min_gain", f"must be from 0 to below 1, got {self.min_gain}")


@dataclass(frozen=True)
class NothingToGain:
    """Today's topology is within ``min_gain`` of the relaxed bound: no topology lowers the MLU
    enough to be worth a change. The transit shares say what a change would still buy (shorter
    paths only): today's, and the least any topology at the bound's scale has (None: not
    computed in the time left)."""

    current_mlu: float
    bound_mlu: float
    min_gain: float
    transit_today: float | None = None
    transit_best: float | None = None

    @property
    def gain(self) -> float:
        """The most any topology lowers the MLU, as a fraction of today's."""
        return max(0.0, 1.0 - self.bound_mlu / self.current_mlu) if self.current_mlu > 0 else 0.0

    def message(self, today_stretch: float | None = None) -> str:
        """The verdict with its figures; ``today_stretch`` (mean block hops of today's routing)
        stands in for today's transit share where the LP could not price today's topology."""
        text = (
            f"nothing to gain: today's topology gives MLU {self.current_mlu:.4f} and no topology does "
            f"better than {self.bound_mlu:.4f} (the LP relaxation's bound: {self.gain:.2%} lower, under the "
            f"minimum gain of {self.min_gain:.2%}); the circuits stay as they are"
        )
        if self.transit_today is not None and self.transit_best is not None:
            if self.transit_today > self.transit_best + 1e-6:
                text += (
                    f". A change would only shorten paths: {self.transit_today:.1%} of the traffic crosses a "
                    f"transit block today, {self.transit_best:.1%} at best"
                )
            else:
                share = f"{self.transit_today:.1%}"
                text += f"; paths are as short as they get ({share} of the traffic in transit)"
        elif self.transit_best is not None and today_stretch is not None:
            best_hops = 1.0 + self.transit_best
            if today_stretch > best_hops + 1e-3:
                text += (
                    f". A change would only shorten paths: today's routing takes {today_stretch:.3f} "
                    f"block hops on average; at best {self.transit_best:.1%} of the traffic crosses a "
                    f"transit block ({best_hops:.3f} block hops)"
                )
            else:
                text += f"; paths are as short as they get ({today_stretch:.3f} block hops on average)"
        return text

    def to_json(self) -> dict[str, object]:
        return {
            "current_mlu": round(self.current_mlu, 6),
            "bound_mlu": round(self.bound_mlu, 6),
            "gain": round(self.gain, 6),
            "min_gain": self.min_gain,
            "transit_share_today": None if self.transit_today is None else round(self.transit_today, 6),
            "transit_share_best": None if self.transit_best is None else round(self.transit_best, 6),
            "message": self.message(),
        }


@dataclass(frozen=True)
class ToePlan:
    """The chosen topology and what it is worth."""

    topology: Topology
    current: Topology
    throughput_scale: float  # worst over the matrices, by TE on the rounded topology
    throughput_scale_relaxed: float | None  # the LP relaxation's optimum: an upper bound (None: not proven)
    current_throughput_scale: float  # the same figure for today's topology
    removed_lower_bound: int  # sum over pairs of max(0, current - new)
    max_removed: int | None  # the change limit in circuits (None = no limit)
    transit_share_relaxed: float | None  # share of traffic through a transit block in the relaxation
    lp_columns: int
    lp_rounds: int
    repair_trades: int = 0  # circuits traded to give a block its free ports (optimizer.toe.repair)
    solver_status: str = STATUS_OPTIMAL  # STATUS_OPTIMAL, STATUS_TIME_LIMIT or STATUS_ROUND_LIMIT
    cut_stage: str | None = None  # the stage (one of STAGES) the time budget cut short
    nothing_to_gain: NothingToGain | None = None  # set when today's topology is kept for want of gain
    #: today's topology is kept because the rounded plan was worse than it (a search from today's
    #: may still find the gain the bound promises: optimizer.toe.sequence)
    rounded_worse: bool = False

    @property
    def timed_out(self) -> bool:
        return self.solver_status == STATUS_TIME_LIMIT

    @property
    def bound_proven(self) -> bool:
        return self.throughput_scale_relaxed is not None

    @property
    def mlu(self) -> float:
        """The worst MLU of the predicted matrices on the new topology."""
        return 1.0 / self.throughput_scale if self.throughput_scale > 0 else math.inf

    @property
    def current_mlu(self) -> float:
        return 1.0 / self.current_throughput_scale if self.current_throughput_scale > 0 else math.inf

    @property
    def rounding_gap(self) -> float | None:
        """1 - rounded / relaxed: how much the integer topology gives up against the bound."""
        if self.throughput_scale_relaxed is None:
            return None
        gap = 1.0 - self.throughput_scale / self.throughput_scale_relaxed
        return 0.0 if abs(gap) < 1e-9 else gap

    def solver_json(self) -> dict[str, object]:
        """How the LP ended: ``status``, ``timed_out`` and ``cut_stage``."""
        return {"status": self.solver_status, "timed_out": self.timed_out, "cut_stage": self.cut_stage}

    def to_json(self) -> dict[str, object]:
        relaxed, gap, share = self.throughput_scale_relaxed, self.rounding_gap, self.transit_share_relaxed
        return {
            "throughput_scale": round(self.throughput_scale, 6),
            "throughput_scale_relaxed": None if relaxed is None else round(relaxed, 6),
            "current_throughput_scale": round(self.current_throughput_scale, 6),
            "rounding_gap": None if gap is None else round(gap, 6) + 0.0,  # no -0.0
            "transit_share_relaxed": None if share is None else round(share, 6),
            "repair_trades": self.repair_trades,
            "bound_proven": self.bound_proven,
            "solver_status": self.solver_status,
            "timed_out": self.timed_out,
            "cut_stage": self.cut_stage,
            "nothing_to_gain": None if self.nothing_to_gain is None else self.nothing_to_gain.to_json(),
        }


@dataclass(frozen=True)
class RelaxationOutcome:
    """What the lexicographic LP gives, also when it is cut short."""

    bound: float | None  # stage 1's optimum, a proven upper bound on the scale; None if not proven
    relaxed: Relaxation | None  # the solution to round; None: keep today's topology
    status: str = STATUS_OPTIMAL
    cut_stage: str | None = None
    columns: int = 0  # path columns in the LP at the end
    rounds: int = 0  # column generation rounds, over every stage
    nothing_to_gain: NothingToGain | None = None  # today's topology is within min_gain of the bound


def plan_topology(
    fabric: Fabric,
    demands: TrafficMatrix | Sequence[TrafficMatrix],
    current: Topology | Sequence[Circuit] | None = None,
    knobs: ToeKnobs | None = None,
    evaluate: MluFunction | None = None,
    max_removed: int | None = None,
    clock: Clock = time.monotonic,
    budget: TimeBudget | None = None,
) -> ToePlan:
    """Choose an integer logical topology for ``demands`` starting from ``current``.

    ``current`` is today's logical topology or circuits (default: the uniform mesh).
    ``evaluate`` gives the min-MLU of a matrix on a topology (default: traffic engineering,
    :func:`optimizer.te.solve.min_mlu`, with the knobs' hedge). ``max_removed`` overrides the
    change limit the knobs give, in circuits. Raises ConfigError for bad knobs or inputs
    and InfeasibleError when some demand cannot be carried at all.

    ``knobs.time_limit`` seconds, counted on ``clock`` from this call, bound the LP's runs
    (every round of every stage); the TE evaluations of today's and the new topology are not
    interrupted, so the call may take a little longer. ``clock`` is injectable for tests.
    A caller that plans several times for one answer (re-plans under a tighter change limit)
    passes one ``budget`` to every call instead, so the limit holds for all of them: the
    knobs' ``time_limit`` and ``clock`` are then not used, and a call that finds the budget
    spent keeps today's topology (``cut_stage`` "scale").
    """
    knobs = knobs or ToeKnobs()
    knobs.validate()
    budget = budget or TimeBudget(knobs.time_limit, clock)
    matrices = _matrices(fabric, demands)
    current_topo = _current_topology(fabric, current)
    evaluate = evaluate or te_min_mlu(knobs.hedge)
    problem = build_problem(fabric, matrices, current_topo, knobs)
    if max_removed is not None:
        problem = replace(problem, max_removed=max_removed)
    _check_reachable(fabric, problem, matrices)

    current_scale = worst_scale(fabric, current_topo, matrices, evaluate)
    outcome = solve_relaxation(problem, knobs, current_scale, budget)
    relaxed = outcome.relaxed

    def scale_of(c: np.ndarray) -> float:
        if np.array_equal(c, problem.current):
            return current_scale
        return worst_scale(fabric, Topology(fabric.block_names, c), matrices, evaluate)

    counts, scale, repair_trades = problem.current, current_scale, 0
    if relaxed is not None and outcome.nothing_to_gain is None:
        combined = np.sum([m.gbps for m in matrices], axis=0)
        budget_ports, today, limit = problem.budget, problem.current, problem.max_removed
        counts = round_topology(relaxed.counts, budget_ports, today, combined, limit)
        names = fabric.block_names
        if not fabric.has_spine:
            counts, _ = reach_two_hops(counts, combined, today, limit, names)
        repair = repair_starved_blocks(counts, budget_ports, today, combined, scale_of, limit, names)
        counts, repair_trades = repair.counts, len(repair.trades)
        scale = scale_of(counts) if repair.scale is None else repair.scale
    topology = Topology(fabric.block_names, counts)
    # Today's topology is an integer candidate too: a plan worse than it is never taken
    # (throughput is the first objective, so no later one - stretch, changes - justifies a
    # higher MLU; the staging's sequence search looks for the gain from today's instead).
    cut_short = outcome.status != STATUS_OPTIMAL
    rounded_worse = scale < current_scale * (1 - 1e-9)
    if rounded_worse:
        log.warning("toe: the %s plan (scale %.4f) is below today's (%.4f): keeping today's",
                    "cut-short" if cut_short else "rounded", scale, current_scale)
        counts, topology, scale, repair_trades = problem.current, current_topo, current_scale, 0
    removed = removed_count(problem.current, counts)
    if outcome.status != STATUS_OPTIMAL:
        log.warning(
            "toe: the LP stopped early (%s%s after %.1f s of a %g s budget): scale %.4f, today %.4f, "
            "bound %s",
            outcome.status,
            f" in stage {outcome.cut_stage}" if outcome.cut_stage else "",
            budget.elapsed(),
            budget.seconds,
            scale,
            current_scale,
            "not proven" if outcome.bound is None else f"{outcome.bound:.4f}",
        )
    log.info(
        "toe: scale %.4f (relaxed %s, today %.4f), %d circuits removed at least",
        scale,
        "not proven" if outcome.bound is None else f"{outcome.bound:.4f}",
        current_scale,
        removed,
    )
    return ToePlan(
        topology=topology,
        current=current_topo,
        throughput_scale=scale,
        throughput_scale_relaxed=outcome.bound,
        current_throughput_scale=current_scale,
        removed_lower_bound=removed,
        max_removed=problem.max_removed,
        transit_share_relaxed=relaxed.transit_share if relaxed is not None else None,
        lp_columns=outcome.columns,
        lp_rounds=outcome.rounds,
        repair_trades=repair_trades,
        solver_status=outcome.status,
        cut_stage=outcome.cut_stage,
        nothing_to_gain=outcome.nothing_to_gain,
        rounded_worse=rounded_worse,
    )


def solve_relaxation(
    problem: ToeProblem,
    knobs: ToeKnobs,
    current_scale: float | None = None,
    budget: TimeBudget | None = None,
) -> RelaxationOutcome:
    """The lexicographic LP: max scale; then min stretch within ``NEAR_OPTIMAL`` of that
    scale; then min removed circuits (+ mesh distance) within ``STRETCH_TOLERANCE`` of that
    stretch. Returns the stage 1 optimum (the bound: None unless stage 1 proved it) and the
    final solution.

    Hysteresis: if today's topology reaches the scale floor with a stretch within twice the
    tolerance, it is returned as it is, so re-planning a plan for the same demand changes
    nothing (rounding alone moves stretch by a little). ``current_scale`` (today's scale
    factor, if known) skips that check when today's topology is below the floor.

    When ``budget`` runs out, the outcome says in which stage and carries the best solution
    known (see :func:`_cut_short`); without a budget the LP runs to the end.
    """
    lp = ToeLp(problem, mesh_weight=knobs.mesh_weight, budget=budget)
    stage = STAGES[0]
    best: float | None = None  # proven once stage 1's column generation converged
    relaxed: Relaxation | None = None
    try:
        lp.solve()
        best = lp.theta() if lp.converged else None
        scale = lp.theta()
        if scale <= 1e-12:
            raise InfeasibleError("no positive scale of the predicted demand fits any topology")
        status = STATUS_OPTIMAL if lp.converged else STATUS_ROUND_LIMIT
        held = (
            knobs.min_gain > 0
            and best is not None
            and current_scale is not None
            and current_scale >= (1 - knobs.min_gain) * best
        )
        stage = STAGES[1]
        lp.set_stage2(NEAR_OPTIMAL * scale)
        if held and current_scale is not None and best is not None:
            return _nothing_to_gain(lp, problem, knobs, current_scale, best, status)
        lp.solve()
        least_transit = lp.transit_share()
        stage = STAGES[2]
        lp.set_stage3(least_transit + STRETCH_TOLERANCE, knobs.mesh_weight)
        lp.solve()
        relaxed = lp.result()
        today_may_do = current_scale is None or current_scale >= NEAR_OPTIMAL * scale * (1 - 1e-9)
        if relaxed.removed > 0.5 and today_may_do:
            stage = STAGES[3]
            today = lp.transit_share_of(problem.current)
            if today is not None and today <= least_transit + 2 * STRETCH_TOLERANCE:
                log.info("toe: today's topology is within the stretch tolerance; keeping it")
                current = problem.current.astype(np.float64)
                relaxed = replace(relaxed, counts=current, transit_share=today, removed=0.0)
        return RelaxationOutcome(best, relaxed, status, None, lp.columns(), lp.rounds)
    except SolverTimeLimit as exc:
        log.warning("toe: %s (stage %s)", exc, stage)
        if stage != STAGES[3]:  # stage 3's solution stands when only the check of today's is cut
            relaxed = _cut_short(lp, stage)
        return RelaxationOutcome(best, relaxed, STATUS_TIME_LIMIT, stage, lp.columns(), lp.rounds)


def _nothing_to_gain(
    lp: ToeLp, problem: ToeProblem, knobs: ToeKnobs, current_scale: float, bound: float, status: str
) -> RelaxationOutcome:
    """Today's topology kept: it is within ``min_gain`` of the bound. The transit shares (what
    a change would still buy) are computed if the time budget allows."""
    today: float | None = None
    least: float | None = None
    try:
        lp.solve()
        least = lp.transit_share()
        today = lp.transit_share_of(problem.current)
    except SolverTimeLimit as exc:
        log.info("toe: the transit shares are not computed: %s", exc)
    current = problem.current.astype(np.float64)
    share = today if today is not None else math.nan
    kept = Relaxation(current_scale, current, share, 0.0, lp.columns(), lp.rounds)
    verdict = NothingToGain(1.0 / current_scale, 1.0 / bound, knobs.min_gain, today, least)
    log.info("toe: %s", verdict.message())
    return RelaxationOutcome(bound, kept, status, None, lp.columns(), lp.rounds, verdict)


def _cut_short(lp: ToeLp, stage: str) -> Relaxation | None:
    """The solution to use when the budget ran out in ``stage`` (None: keep today's topology).

    Every completed round's solution is feasible for the full LP (it only lacks paths), so
    the latest one is used: in stage 2 or 3 its scale is at the floor stage 1 settled and it
    is no worse than the previous stage's solution in this stage's objective. In stage 1,
    HiGHS's interrupted solution is used instead when HiGHS reports it primal feasible and
    its scale is higher.
    """
    candidates = [lp.last_round]
    if stage == STAGES[0]:
        candidates.append(lp.feasible_point())
    usable = [r for r in candidates if r is not None and r.theta > 1e-12]
    return max(usable, key=lambda r: r.theta, default=None)


def build_problem(
    fabric: Fabric,
    matrices: Sequence[TrafficMatrix],
    current: Topology,
    knobs: ToeKnobs,
    fixed: Topology | None = None,
) -> ToeProblem:
    n = fabric.n_blocks
    speed = np.array(
        [[fabric.link_speed_gbps(a, b) for b in fabric.block_names] for a in fabric.block_names],
        dtype=np.float64,
    )
    budget = np.maximum(port_budget(fabric), current.degree())
    spine = np.zeros((n, len(fabric.spine)))
    for j, sw in enumerate(fabric.spine):
        for i, block in enumerate(fabric.blocks):
            spine[i, j] = sw.links_to(block.name) * min(block.speed_gbps, sw.speed_gbps)
    max_removed = None
    if knobs.max_change < 1.0:
        max_removed = math.floor(knobs.max_change * current.total_circuits() + 1e-9)
    return ToeProblem(
        speed=speed,
        budget=budget,
        demands=tuple(m.gbps for m in matrices),
        current=np.asarray(current.counts),
        mesh=np.asarray(mesh_topology(fabric).counts),
        spine_capacity=spine,
        max_removed=max_removed,
        fixed=None if fixed is None else np.asarray(fixed.counts),
    )


def worst_scale(
    fabric: Fabric, topology: Topology, matrices: Sequence[TrafficMatrix], evaluate: MluFunction
) -> float:
    """The largest scale at which every matrix fits on ``topology``: min over 1 / MLU."""
    if topology.total_circuits() == 0 and not fabric.has_spine:
        return 0.0  # nothing to route on (and optimizer.te.solve cannot index an empty link graph)
    worst = 0.0
    for tm in matrices:
        if tm.total() <= 0:
            continue
        try:
            worst = max(worst, evaluate(fabric, topology, tm))
        except InfeasibleError:
            return 0.0  # some demand has no path on this topology
    return 1.0 / worst if worst > 0 else math.inf


def te_min_mlu(hedge: float | None = None) -> MluFunction:
    """Traffic engineering's min-MLU (warm-started across calls) as an evaluator."""
    solvers: dict[str, TeSolver] = {}

    def evaluate(fabric: Fabric, topology: Topology, tm: TrafficMatrix) -> float:
        solver = solvers.get(fabric.name)
        if solver is None or solver.fabric is not fabric:
            solver = solvers[fabric.name] = TeSolver(fabric, hedge=hedge)
        return solver.min_mlu(topology, tm)

    return evaluate


def lp_min_mlu(fabric: Fabric, topology: Topology, tm: TrafficMatrix) -> float:
    """Min-MLU of ``tm`` on ``topology`` over direct, one-transit and spine paths (1 / max scale).

    Built on the ToE LP with L fixed: an independent check of :mod:`optimizer.te.solve`, and
    fine for small fabrics; use :func:`te_min_mlu` at scale.
    """
    problem = build_problem(fabric, [tm], topology, ToeKnobs(), fixed=topology)
    scale = max_scale(problem)
    return 1.0 / scale if scale > 0 else math.inf


# -- input checks ----------------------------------------------------------------------------


def _matrices(fabric: Fabric, demands: TrafficMatrix | Sequence[TrafficMatrix]) -> list[TrafficMatrix]:
    matrices = [demands] if isinstance(demands, TrafficMatrix) else list(demands)
    if not matrices:
        raise ConfigError("<toe>", "demands", "at least one predicted matrix is needed")
    for i, tm in enumerate(matrices):
        if tm.blocks != fabric.block_names:
            raise ConfigError("<toe>", f"demands[{i}]", "the matrix is over other blocks than the fabric")
    if all(tm.total() <= 0 for tm in matrices):
        raise InfeasibleError("the predicted matrices carry no traffic: there is nothing to plan for")
    return matrices


def _current_topology(fabric: Fabric, current: Topology | Sequence[Circuit] | None) -> Topology:
    if current is None:
        return mesh_topology(fabric)
    if isinstance(current, Topology):
        if current.blocks != fabric.block_names:
            raise ConfigError("<current>", "topology", "the topology is over other blocks than the fabric")
        current.check_fits(fabric, "<current>")
        return current
    return Topology.from_circuits(fabric, current)


def _check_reachable(fabric: Fabric, problem: ToeProblem, matrices: Sequence[TrafficMatrix]) -> None:
    """A demand whose ends have no OCS port and no common spine can never be carried."""
    has_ports = problem.budget > 0
    spine = problem.spine_capacity > 0
    shared_spine = (spine.astype(np.int64) @ spine.T.astype(np.int64)) > 0
    for tm in matrices:
        stuck = (tm.gbps > 0) & ~(has_ports[:, None] & has_ports[None, :]) & ~shared_spine
        if stuck.any():
            s, d = (int(x) for x in np.argwhere(stuck)[0])
            lonely = fabric.block_names[s] if not has_ports[s] else fabric.block_names[d]
            raise InfeasibleError(
                f"demand {fabric.block_names[s]} -> {fabric.block_names[d]} "
                f"({tm.gbps[s, d]:.6g} Gbit/s) cannot be carried: block {lonely} has no OCS ports "
                "and no spine link shared with the other end"
            )
