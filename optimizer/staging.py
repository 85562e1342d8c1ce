"""Cutting a circuit change into safe, ordered stages.

Each stage lies inside one failure domain. Before a stage its removed circuits are
drained, so the predicted matrices must route on what is left with an MLU of at most
``max(threshold, MLU where the stage starts)``: a healthy fabric stays under the
threshold and a congested one never gets worse. For each domain the whole remaining change
is tried first, then halves, quarters and so on of it, taking the most lightly used
circuits first; a circuit is added in the first stage after which both its ports are free.
Domains that are blocked are retried after the others have moved (their added circuits may
be what unblocks them).

When no such prefix passes, the search goes down to swaps: the removals that free the ports
of one added circuit, with every added circuit those removals make possible (on a
one-north-one-south OCS, a swap ``a - x, b - y -> a - b, x - y``), ranked so that ports are
first taken from cold pairs and given to hot ones, each checked by TE; the safe one that
lowers the MLU most is taken, then whole prefixes are tried again.

Under a time budget (the plan's time limit) the search stops as soon as it is spent, before
the next TE check, wherever it is (a stage's prefixes, its single circuits or its swaps); with a
``patience`` budget (the caller's share of it) already when that is spent while no stage has
lowered the MLU, once every failure domain had a stage. The stages found are cut after the best
one, or :class:`StagingTimedOut` is raised if none lowers the MLU (or, without ``partial``, if
the change is not staged whole in time).

If nothing can move, :class:`StagingBlocked` names the block pair; with ``partial=True`` the
stages that were found are cut after the one whose topology has the lowest MLU (the best
reachable step), and the plan says what blocks the rest. ``StagingBlocked`` is raised then
only when no prefix of the stages lowers the MLU.

``margin`` accounts for integer WCMP weights: the LP's MLU is checked against
``threshold / margin`` (the weights pushed may over-subscribe links by up to ``margin``), and
every message names the configured ``threshold`` and says so.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from optimizer import progress
from optimizer.budget import TimeBudget
from optimizer.errors import InfeasibleError
from optimizer.fabric import Fabric
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.8
_TOL = 1e-9
_SINGLE_TRIES = 4  # when one circuit cannot go, try one of this many other pairs before giving up
#: Swaps checked by TE each time whole prefixes are blocked (ranked hot-first), and how many
#: safe ones are enough to pick the best of.
SWAP_TRIES = 24
_SAFE_SWAPS_ENOUGH = 4

#: fabric, topology, matrix -> the minimum MLU traffic engineering reaches.
MluFunction = Callable[[Fabric, Topology, TrafficMatrix], float]


class StagingBlocked(InfeasibleError):
    """No split of the change keeps the drained MLU within the limit.

    ``limit`` is the limit the LP's MLU was checked against: ``max(threshold / margin, MLU
    where the stage starts)``; ``threshold`` is the configured stage limit.
    """

    def __init__(
        self,
        domain: int,
        pair: tuple[str, str],
        mlu: float,
        limit: float,
        threshold: float | None = None,
        margin: float = 1.0,
        start: float | None = None,
    ) -> None:
        self.domain = domain
        self.pair = pair
        self.mlu = mlu
        self.limit = limit
        self.threshold = limit if threshold is None else threshold
        self.margin = margin
        self.start = start
        self.target: BlockedTarget | None = None  # set by plan_target when it gives up
        effect = (
            "would leave some demand without a path"
            if math.isinf(mlu)
            else f"would raise the MLU to {mlu:.4f}, {limit_words(self.threshold, margin, start)}"
        )
        super().__init__(
            f"cannot stage the change in failure domain {domain}: draining even one circuit "
            f"between {pair[0]} and {pair[1]} {effect}; raise the threshold or change less"
        )


@dataclass(frozen=True)
class BlockedTarget:
    """The target a blocked staging was for (:func:`optimizer.toe.reconfigure.plan_target`
    sets it on the :class:`StagingBlocked` it raises): its circuits and MLU, and today's MLU,
    on the matrices the plan was made for. A daemon may keep it as a deferred plan."""

    circuits: frozenset[Circuit]
    mlu: float
    current_mlu: float


class StagingTimedOut(InfeasibleError):
    """The time given to staging ran out before any stage lowered the MLU."""


def limit_words(threshold: float, margin: float, start: float | None) -> str:
    """How a drained MLU's limit reads in a message: the configured threshold, and why the
    LP was held to less (integer weights) or allowed more (the MLU where the stage starts)."""
    lp_threshold = threshold / margin
    if start is not None and start > lp_threshold:
        return f"over the MLU where the stage starts ({start:.4f}, above the stage limit {threshold:g})"
    if margin != 1.0:
        return (
            f"over the stage limit {threshold:g} (the LP's MLU is held to {lp_threshold:.4f}, which "
            f"leaves room for the up to {margin:g}x over-subscription of integer WCMP weights)"
        )
    return f"over the stage limit {threshold:g}"


@dataclass(frozen=True)
class Stage:
    domain: int
    remove: tuple[Circuit, ...]
    add: tuple[Circuit, ...]
    mlu_start: float  # MLU of the topology the stage starts from
    mlu_drained: float  # MLU with the stage's removed circuits drained
    mlu_after: float  # MLU once the stage's circuits are added

    def to_json(self, fabric: Fabric) -> dict[str, object]:
        return {
            "domain": self.domain,
            "remove": [c.to_json(fabric) for c in self.remove],
            "add": [c.to_json(fabric) for c in self.add],
            "mlu_start": _num(self.mlu_start),
            "mlu_drained": _num(self.mlu_drained),
            "mlu_after": _num(self.mlu_after),
        }


@dataclass(frozen=True)
class StagingPlan:
    stages: tuple[Stage, ...]
    threshold: float  # the configured stage limit
    start_mlu: float
    final_topology: Topology
    final_circuits: frozenset[Circuit]
    final_mlu: float
    margin: float = 1.0  # the LP's MLU is checked against threshold / margin
    blocked: str | None = None  # why the rest of the target is not staged (a partial plan)
    remaining: int = 0  # circuits of the target change (removed plus added) the stages leave
    #: what stops the rest of the target (a partial plan's stage that breaks the rule), if known
    blocked_by: StagingBlocked | None = field(default=None, compare=False)

    @property
    def complete(self) -> bool:
        return self.blocked is None

    def to_json(self, fabric: Fabric) -> list[dict[str, object]]:
        return [s.to_json(fabric) for s in self.stages]


def stage_changes(
    fabric: Fabric,
    current: Iterable[Circuit],
    target: Iterable[Circuit],
    demands: TrafficMatrix | Sequence[TrafficMatrix],
    evaluate: MluFunction,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    margin: float = 1.0,
    partial: bool = False,
    budget: TimeBudget | None = None,
    patience: TimeBudget | None = None,
) -> StagingPlan:
    """Order the change ``current -> target`` into stages; see the module docstring.

    ``evaluate(fabric, topology, matrix) -> MLU`` is the min-MLU traffic engineering used
    to check every drained topology (worst over the matrices). With ``partial`` a change that
    cannot be staged whole gives its best reachable step (``plan.blocked`` says why the rest
    waits). ``budget``: once spent, no more TE checks are made: the plan is cut there (with
    ``partial``) or StagingTimedOut is raised. ``patience`` (with ``partial``): once spent while
    no stage has lowered the MLU (and after one stage per failure domain), the search stops
    there too, leaving the rest of ``budget`` to the caller's other tries (a smaller change,
    single swaps).
    """
    if not threshold > 0 or math.isinf(threshold):
        raise InfeasibleError(f"the staging threshold must be a finite number > 0, got {threshold}")
    if not margin >= 1.0 or math.isinf(margin):
        raise InfeasibleError(f"the staging margin must be a finite number >= 1, got {margin}")
    matrices = [demands] if isinstance(demands, TrafficMatrix) else list(demands)
    state = set(current)
    goal = set(target)
    to_remove: dict[int, set[Circuit]] = {}
    to_add: dict[int, set[Circuit]] = {}
    for c in state - goal:
        to_remove.setdefault(_domain(fabric, c), set()).add(c)
    for c in goal - state:
        to_add.setdefault(_domain(fabric, c), set()).add(c)

    def mlu_of(circuits: set[Circuit]) -> float:
        return routed_mlu(evaluate, fabric, Topology.from_circuits(fabric, circuits), matrices)

    lp_threshold = threshold / margin
    today = Topology.from_circuits(fabric, state)  # raises when today's circuits strand demand
    mlu_now = start_mlu = max((evaluate(fabric, today, tm) for tm in matrices if tm.total() > 0), default=0.0)
    stages: list[Stage] = []
    states: list[frozenset[Circuit]] = []
    domains = sorted(set(to_remove) | set(to_add))
    blocked: StagingBlocked | None = None
    out_of_time: str | None = None
    while any(to_remove.get(d) or to_add.get(d) for d in domains):
        moved = False
        for domain in domains:
            while to_remove.get(domain) or to_add.get(domain):
                # out of time: stop (out of patience: not before one stage per domain)
                spent = _spent(budget, patience if partial else None, stages, start_mlu, len(domains))
                if spent is not None:
                    out_of_time = f"{spent.describe()} ran out after {len(stages)} stages"
                    break
                pending = to_remove.get(domain, set())
                step = _next_stage(fabric, state, domain, pending, matrices, mlu_now, lp_threshold, mlu_of,
                                   budget)
                adds: tuple[Circuit, ...] | None = None
                if step is None:  # the budget ran out between its checks
                    out_of_time = f"{_described(budget)} ran out after {len(stages)} stages"
                    break
                if isinstance(step, StagingBlocked):
                    swap = None
                    if budget is None or not budget.expired():
                        swap = _best_swap(
                            fabric, state, pending, to_add.get(domain, set()), matrices,
                            max(lp_threshold, mlu_now), mlu_now, mlu_of, budget,
                        )
                    if swap is None and budget is not None and budget.expired():
                        out_of_time = f"{budget.describe()} ran out after {len(stages)} stages"
                        break
                    if swap is None:
                        blocked = StagingBlocked(
                            step.domain, step.pair, step.mlu, step.limit, threshold, margin, mlu_now
                        )
                        break
                    removed, adds, mlu_drained, _ = swap
                else:
                    removed, mlu_drained = step
                drained = state - set(removed)
                if adds is None:
                    used = _used_ports(drained)
                    adds = tuple(sorted(c for c in to_add.get(domain, set()) if _ports_free(c, used)))
                if not removed and not adds:
                    raise InfeasibleError(
                        f"failure domain {domain}: circuits to add use ports that no stage frees"
                    )
                state = drained | set(adds)
                to_remove[domain] = to_remove.get(domain, set()) - set(removed)
                to_add[domain] = to_add.get(domain, set()) - set(adds)
                mlu_after = mlu_of(state) if adds else mlu_drained
                stages.append(Stage(domain, tuple(sorted(removed)), adds, mlu_now, mlu_drained, mlu_after))
                states.append(frozenset(state))
                progress.report("staging", f"stage {len(stages)} in domain {domain}, MLU {mlu_after:.4f}")
                log.info(
                    "stage %d: domain %d, -%d +%d circuits, drained MLU %.4f (start %.4f)",
                    len(stages),
                    domain,
                    len(removed),
                    len(adds),
                    mlu_drained,
                    mlu_now,
                )
                mlu_now = mlu_after
                moved = True
            if out_of_time:
                break
        if out_of_time:
            break
        if not moved:
            if blocked is None:  # pragma: no cover - a domain only stops when blocked
                raise InfeasibleError("staging made no progress")
            break
    if out_of_time is not None and not partial:
        raise StagingTimedOut(f"cannot stage the change whole: {out_of_time}")
    if out_of_time is not None:
        return _cut_by_time(fabric, stages, states, goal, start_mlu, threshold, margin, out_of_time)
    if blocked is None:
        return StagingPlan(
            stages=tuple(stages),
            threshold=threshold,
            start_mlu=start_mlu,
            final_topology=Topology.from_circuits(fabric, state),
            final_circuits=frozenset(state),
            final_mlu=mlu_now,
            margin=margin,
        )
    if not partial:
        raise blocked
    return _best_reachable(fabric, stages, states, goal, start_mlu, threshold, margin, blocked)


def routed_mlu(
    evaluate: MluFunction, fabric: Fabric, topology: Topology, matrices: Sequence[TrafficMatrix]
) -> float:
    """The worst MLU over ``matrices``, or infinity when some demand has no path on ``topology``
    (TE raises InfeasibleError; :func:`optimizer.toe.plan.worst_scale` counts it as scale
    0): a drain that strands demand blackholes it, so it never passes a stage rule, and the
    search tries a smaller one instead of giving the plan up."""
    try:
        return max((evaluate(fabric, topology, tm) for tm in matrices if tm.total() > 0), default=0.0)
    except InfeasibleError:
        return math.inf


def _spent(
    budget: TimeBudget | None, patience: TimeBudget | None, stages: list[Stage], start_mlu: float,
    domains: int,
) -> TimeBudget | None:
    """The budget that stops the search now: ``budget`` once spent; ``patience`` once spent
    while no stage has lowered the MLU, after one stage per domain (a cold fabric moves whole
    domains in one check each); None to go on."""
    if budget is not None and budget.expired():
        return budget
    if patience is None or len(stages) < domains or not patience.expired():
        return None
    return None if any(_lowers(s.mlu_after, start_mlu) for s in stages) else patience


def _described(budget: TimeBudget | None) -> str:
    return "the time budget" if budget is None else budget.describe()


def _lowers(mlu: float, start_mlu: float) -> bool:
    """Whether a stage's MLU counts as lower than where the staging started."""
    return mlu < start_mlu * (1 - 1e-6)


def cut_at_lowest(
    fabric: Fabric,
    stages: Sequence[Stage],
    states: Sequence[frozenset[Circuit]],
    start_mlu: float,
    threshold: float,
    margin: float,
) -> StagingPlan | None:
    """The stages cut after the one whose topology has the lowest MLU (the earliest of
    equals; ``states[k]`` is the topology after stage k); None when no prefix lowers the MLU."""
    best = min(range(len(stages)), key=lambda k: (stages[k].mlu_after, k), default=None)
    if best is None or not _lowers(stages[best].mlu_after, start_mlu):
        return None
    final = states[best]
    return StagingPlan(
        stages=tuple(stages[: best + 1]),
        threshold=threshold,
        start_mlu=start_mlu,
        final_topology=Topology.from_circuits(fabric, final),
        final_circuits=final,
        final_mlu=stages[best].mlu_after,
        margin=margin,
    )


def _cut_by_time(
    fabric: Fabric,
    stages: list[Stage],
    states: list[frozenset[Circuit]],
    goal: set[Circuit],
    start_mlu: float,
    threshold: float,
    margin: float,
    why: str,
) -> StagingPlan:
    """The stages found before the time limit, cut after the lowest-MLU one; raises
    StagingTimedOut when none lowers the MLU."""
    cut = cut_at_lowest(fabric, stages, states, start_mlu, threshold, margin)
    if cut is None:
        raise StagingTimedOut(f"cannot stage the change: {why}, and no stage lowered the MLU")
    remaining = len(cut.final_circuits ^ goal)
    return replace(cut, blocked=f"{remaining} circuit changes of the target wait for a later plan: {why}",
                   remaining=remaining)


def _best_reachable(
    fabric: Fabric,
    stages: list[Stage],
    states: list[frozenset[Circuit]],
    goal: set[Circuit],
    start_mlu: float,
    threshold: float,
    margin: float,
    blocked: StagingBlocked,
) -> StagingPlan:
    """The stages cut after the one whose topology has the lowest MLU (the earliest of equals).

    Raises ``blocked`` (with what was reached) when no prefix lowers the MLU at all.
    """
    cut = cut_at_lowest(fabric, stages, states, start_mlu, threshold, margin)
    if cut is None:
        if stages:
            blocked.args = (
                f"{blocked.args[0]}; the {len(stages)} stages that are safe do not lower the MLU "
                f"below {start_mlu:.4f}",
            )
        raise blocked
    remaining = len(cut.final_circuits ^ goal)
    why = f"{remaining} circuit changes of the target wait for a later plan: {blocked}"
    log.info("staging: the best reachable step has %d stages, MLU %.4f -> %.4f; %s",
             len(cut.stages), start_mlu, cut.final_mlu, why)
    return replace(cut, blocked=why, remaining=remaining, blocked_by=blocked)


def _next_stage(
    fabric: Fabric,
    state: set[Circuit],
    domain: int,
    pending: set[Circuit],
    matrices: Sequence[TrafficMatrix],
    mlu_now: float,
    threshold: float,
    mlu_of: Callable[[set[Circuit]], float],
    budget: TimeBudget | None = None,
) -> tuple[tuple[Circuit, ...], float] | StagingBlocked | None:
    """The largest prefix (all, half, quarter, ...) of the lightest-first removals that passes;
    None when ``budget`` runs out before one does (checked before every TE check but the first)."""
    if not pending:
        return (), mlu_now
    limit = max(threshold, mlu_now)
    order = lightest_first(fabric, state, pending, matrices)
    size = len(order)
    mlu = math.inf
    checked = 0
    while size >= 1:
        if checked and budget is not None and budget.expired():
            return None
        checked += 1
        chunk = tuple(order[:size])
        mlu = mlu_of(state - set(chunk))
        if mlu <= limit + _TOL:
            return chunk, mlu
        if size == 1:
            break
        size = math.ceil(size / 2)
    # the lightest circuit alone does not pass: try one circuit of a few other pairs
    first_pair = _pair(fabric, order[0])
    tried = {first_pair}
    for c in order[1:]:
        pair = _pair(fabric, c)
        if pair in tried:
            continue
        if len(tried) > _SINGLE_TRIES:
            break
        if budget is not None and budget.expired():
            return None
        tried.add(pair)
        alt = mlu_of(state - {c})
        if alt <= limit + _TOL:
            return (c,), alt
    return StagingBlocked(domain, first_pair, mlu, limit)


def _best_swap(
    fabric: Fabric,
    state: set[Circuit],
    pending_remove: set[Circuit],
    pending_add: set[Circuit],
    matrices: Sequence[TrafficMatrix],
    limit: float,
    mlu_now: float,
    mlu_of: Callable[[set[Circuit]], float],
    budget: TimeBudget | None = None,
) -> tuple[tuple[Circuit, ...], tuple[Circuit, ...], float, float] | None:
    """The safe swap (removals freeing one added circuit's ports, plus every added circuit
    they make possible) that leaves the lowest MLU: (removed, added, drained MLU, MLU after).

    Candidates are ranked by how hot the pairs gaining circuits are against the pairs losing
    them (direct demand over direct capacity, worst over the matrices); the first
    :data:`SWAP_TRIES` are checked by TE, stopping once a few safe ones are found.
    """
    units = swap_units(fabric, state, pending_remove, pending_add)
    if not units:
        return None
    heat = _pair_heat(fabric, state, matrices)
    ranked = sorted(units, key=lambda u: (-_unit_gain(fabric, heat, u), sorted(u[0])))
    best: tuple[tuple[Circuit, ...], tuple[Circuit, ...], float, float] | None = None
    safe = 0
    for removed, added in ranked[:SWAP_TRIES]:
        if budget is not None and budget.expired():
            break
        drained = state - set(removed)
        mlu_drained = mlu_of(drained)
        if mlu_drained > limit + _TOL:
            continue
        after = mlu_of(drained | set(added))
        safe += 1
        if best is None or (after, mlu_drained) < (best[3], best[2]):
            best = (removed, added, mlu_drained, after)
        if safe >= _SAFE_SWAPS_ENOUGH and best[3] < mlu_now - _TOL:
            break
    return best


def swap_units(
    fabric: Fabric, state: set[Circuit], pending_remove: set[Circuit], pending_add: set[Circuit]
) -> list[tuple[tuple[Circuit, ...], tuple[Circuit, ...]]]:
    """(removals, additions) per added circuit: the removals that free its ports, and every
    pending addition whose ports are then free. Additions blocked by a circuit that stays
    are skipped; units with the same removals are listed once."""
    holder: dict[tuple[str, int], Circuit] = {}
    for c in state:
        holder[(c.ocs, c.a)] = c
        holder[(c.ocs, c.b)] = c
    by_ocs: dict[str, list[Circuit]] = {}
    for c in pending_add:
        by_ocs.setdefault(c.ocs, []).append(c)
    units: dict[frozenset[Circuit], tuple[tuple[Circuit, ...], tuple[Circuit, ...]]] = {}
    for add in sorted(pending_add):
        blockers = {holder[p] for p in ((add.ocs, add.a), (add.ocs, add.b)) if p in holder}
        if not blockers <= pending_remove:
            continue
        key = frozenset(blockers)
        if key in units:
            continue
        freed = {(c.ocs, p) for c in blockers for p in (c.a, c.b)}
        enabled = tuple(
            sorted(
                c
                for c in by_ocs[add.ocs]
                if all(((c.ocs, p) in freed or (c.ocs, p) not in holder) for p in (c.a, c.b))
            )
        )
        units[key] = (tuple(sorted(blockers)), _port_disjoint(enabled))
    return list(units.values())


def _port_disjoint(circuits: tuple[Circuit, ...]) -> tuple[Circuit, ...]:
    used: set[tuple[str, int]] = set()
    out = []
    for c in circuits:
        if _ports_free(c, used):
            out.append(c)
            used.update(((c.ocs, c.a), (c.ocs, c.b)))
    return tuple(out)


def _pair_heat(
    fabric: Fabric, state: set[Circuit], matrices: Sequence[TrafficMatrix]
) -> Callable[[tuple[str, str], int], float]:
    """Direct demand over direct capacity of a pair with ``delta`` more circuits than today."""
    topo = Topology.from_circuits(fabric, state)
    demand = np.max([np.maximum(tm.gbps, tm.gbps.T) for tm in matrices], axis=0)

    def heat(pair: tuple[str, str], delta: int) -> float:
        i, j = fabric.block_index(pair[0]), fabric.block_index(pair[1])
        count = int(topo.counts[i, j]) + delta
        cap = max(count, 0) * fabric.link_speed_gbps(*pair)
        return float(demand[i, j]) / max(cap, 1e-9) if demand[i, j] > 0 else 0.0

    return heat


def _unit_gain(
    fabric: Fabric,
    heat: Callable[[tuple[str, str], int], float],
    unit: tuple[tuple[Circuit, ...], tuple[Circuit, ...]],
) -> float:
    """Heat taken off the pairs gaining a circuit less heat put on those losing one."""
    removed, added = unit
    gain = 0.0
    for c in added:
        pair = _pair(fabric, c)
        gain += min(heat(pair, 0), 1e6) - heat(pair, 1)
    for c in removed:
        pair = _pair(fabric, c)
        gain -= min(heat(pair, -1), 1e6) - heat(pair, 0)
    return gain


def lightest_first(
    fabric: Fabric, state: set[Circuit], pending: set[Circuit], matrices: Sequence[TrafficMatrix]
) -> list[Circuit]:
    """Removals ordered so that each next one leaves its block pair least loaded.

    A pair's load is estimated from its own demand over its remaining direct capacity
    (worst over the matrices): removing from idle pairs first, and spreading removals over
    pairs rather than emptying one, is what keeps drained MLU low.
    """
    names = fabric.block_names
    index = {b: i for i, b in enumerate(names)}
    topo = Topology.from_circuits(fabric, state)
    demand = np.max([np.maximum(tm.gbps, tm.gbps.T) for tm in matrices], axis=0)
    by_pair: dict[tuple[int, int], list[Circuit]] = {}
    for c in sorted(pending):
        a, b = c.blocks(fabric)
        i, j = sorted((index[a], index[b]))
        by_pair.setdefault((i, j), []).append(c)
    left = {p: int(topo.counts[p]) for p in by_pair}

    def load_after_one_more(p: tuple[int, int]) -> float:
        remaining = left[p] - 1
        speed = fabric.link_speed_gbps(names[p[0]], names[p[1]])
        return math.inf if remaining <= 0 and demand[p] > 0 else demand[p] / max(remaining * speed, 1e-9)

    heap = [(load_after_one_more(p), p) for p in by_pair]
    heapq.heapify(heap)
    order: list[Circuit] = []
    while heap:
        _, p = heapq.heappop(heap)
        order.append(by_pair[p].pop())
        left[p] -= 1
        if by_pair[p]:
            heapq.heappush(heap, (load_after_one_more(p), p))
    return order


def _domain(fabric: Fabric, c: Circuit) -> int:
    return fabric.ocs_named(c.ocs).domain


def _pair(fabric: Fabric, c: Circuit) -> tuple[str, str]:
    a, b = c.blocks(fabric)
    return (a, b) if fabric.block_index(a) < fabric.block_index(b) else (b, a)


def _used_ports(circuits: Iterable[Circuit]) -> set[tuple[str, int]]:
    used: set[tuple[str, int]] = set()
    for c in circuits:
        used.add((c.ocs, c.a))
        used.add((c.ocs, c.b))
    return used


def _ports_free(c: Circuit, used: set[tuple[str, int]]) -> bool:
    return (c.ocs, c.a) not in used and (c.ocs, c.b) not in used


def _num(x: float) -> float | None:
    return round(x, 6) if math.isfinite(x) else None
