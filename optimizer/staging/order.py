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
lowers the MLU most is taken, then whole prefixes are tried again. The ranking (of removals
and of swaps) is in :mod:`optimizer.staging.ranking`.

Under a time budget (the plan's time limit) the search stops as soon as it is spent, before
the next TE check, wherever it is (a stage's prefixes, its single circuits or its swaps); with a
``patience`` budget (the caller's share of it) already when that is spent while no stage has
lowered the MLU, once every failure domain had a stage. The stages found are cut after the best
one, or :class:`StagingTimedOut` is raised if none lowers the MLU (or, without ``partial``, if
the change is not staged whole in time).

If nothing can move, :class:`StagingBlocked` names the block pair; with ``partial=True`` the
stages that were found are cut after the one whose topology has the lowest MLU (the best
reachable step), and the plan says what blocks the rest. ``StagingBlocked`` is raised then
only when no prefix of the stages lowers the MLU. The cutting is in :mod:`optimizer.staging.cut`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence

from optimizer import progress
from optimizer.budget import TimeBudget
from optimizer.errors import InfeasibleError
from optimizer.fabric import Fabric
from optimizer.staging.checks import StageChecks, StageRule
from optimizer.staging.cut import _best_reachable, _cut_by_time, _lowers
from optimizer.staging.plan import (
    DEFAULT_THRESHOLD,
    MluFunction,
    Stage,
    StagingBlocked,
    StagingPlan,
    StagingTimedOut,
)
from optimizer.staging.ranking import _TOL, _best_swap, _pair, _ports_free, _used_ports, lightest_first
from optimizer.staging.traffic import StageTraffic
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

_SINGLE_TRIES = 4  # when one circuit cannot go, try one of this many other pairs before giving up


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
    traffic: StageTraffic | None = None,
) -> StagingPlan:
    """Order the change ``current -> target`` into stages; see the module docstring.

    ``evaluate(fabric, topology, matrix) -> MLU`` is the min-MLU traffic engineering used
    to check every drained topology (worst over the matrices). With ``partial`` a change that
    cannot be staged whole gives its best reachable step (``plan.blocked`` says why the rest
    waits). ``budget``: once spent, no more TE checks are made: the plan is cut there (with
    ``partial``) or StagingTimedOut is raised. ``patience`` (with ``partial``): once spent while
    no stage has lowered the MLU (and after one stage per failure domain), the search stops
    there too, leaving the rest of ``budget`` to the caller's other tries (a smaller change,
    single swaps). ``traffic``: the matrices each stage's drain is checked against
    (:mod:`optimizer.staging.traffic`; default: ``demands``, which always judge the MLU a stage
    reaches).
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

    lp_threshold = threshold / margin
    checks = StageChecks(fabric, evaluate, matrices, lp_threshold, traffic)

    def mlu_of(circuits: set[Circuit]) -> float:
        return checks.plan_mlu(Topology.from_circuits(fabric, circuits))
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
                rule = checks.rule(len(stages), Topology.from_circuits(fabric, state), mlu_now)

                def drain_of(circuits: set[Circuit], rule: StageRule = rule) -> float:
                    return rule.drained(Topology.from_circuits(fabric, circuits))

                guard = checks.matrices(len(stages))
                step = _next_stage(fabric, state, domain, pending, guard, rule.limit, drain_of, budget)
                adds: tuple[Circuit, ...] | None = None
                if step is None:  # the budget ran out between its checks
                    out_of_time = f"{_described(budget)} ran out after {len(stages)} stages"
                    break
                if isinstance(step, StagingBlocked):
                    swap = None
                    if budget is None or not budget.expired():
                        swap = _best_swap(
                            fabric, state, pending, to_add.get(domain, set()), matrices,
                            rule.limit, mlu_now, mlu_of, budget, drain_of=drain_of,
                        )
                    if swap is None and budget is not None and budget.expired():
                        out_of_time = f"{budget.describe()} ran out after {len(stages)} stages"
                        break
                    if swap is None:
                        blocked = StagingBlocked(
                            step.domain, step.pair, step.mlu, step.limit, threshold, margin, rule.begin
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
                mlu_after = mlu_of(state)
                stages.append(Stage(domain, tuple(sorted(removed)), adds, mlu_now, mlu_drained, mlu_after,
                                    rule.checked_start))
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
        return StagingPlan.reaching(fabric, stages, state, start_mlu, mlu_now, threshold, margin)
    if not partial:
        raise blocked
    return _best_reachable(fabric, stages, states, goal, start_mlu, threshold, margin, blocked)


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


def _next_stage(
    fabric: Fabric,
    state: set[Circuit],
    domain: int,
    pending: set[Circuit],
    matrices: Sequence[TrafficMatrix],
    limit: float,
    mlu_of: Callable[[set[Circuit]], float],
    budget: TimeBudget | None = None,
) -> tuple[tuple[Circuit, ...], float] | StagingBlocked | None:
    """The largest prefix (all, half, quarter, ...) of the lightest-first removals whose drained
    MLU (``mlu_of``, on the stage's ``matrices``) is within ``limit``; None when ``budget`` runs
    out before one passes (checked before every TE check but the first)."""
    if not pending:
        return (), mlu_of(state)
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


def _domain(fabric: Fabric, c: Circuit) -> int:
    return fabric.ocs_named(c.ocs).domain
