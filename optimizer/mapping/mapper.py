"""Mapping a logical topology onto the OCSes: circuits that the wiring allows, few changes.

:func:`map_topology` turns the block-pair circuit counts ``L`` of a
:class:`~optimizer.topology.Topology` into circuits ``(ocs, port, port)``:

- every circuit joins a north port to a south port of one OCS (any two ports on an OCS
  with ``sides: any``), uses each port once and never joins a block to itself;
- as many of today's circuits as possible are kept (same OCS, same two ports);
- every block pair is balanced over the failure domains: domain ``d`` holds at most
  :func:`~optimizer.mapping.domains.pair_domain_limit` of the pair's circuits, that is
  ``ceil(L * share_d)`` with ``share_d`` the domain's share of the cabled OCS ports. With
  ``D`` equal domains, losing any one domain keeps at least ``floor(L * (1 - 1/D))`` of
  the pair's ``L`` circuits ("``1 - 1/D`` of them, rounded down").

The algorithm is polynomial (no ILP over ports):

1. split every pair's circuits over the failure domains, keeping them in the domain they
   are in (greedy with alternating-chain repairs; if a pair stays over its limit, a
   bipartite flow split that always fits the ports is tried too);
2. per domain, recolour (:mod:`optimizer.mapping.recolour`): an exchange LP swaps
   surplus circuits for deficit ones on the same OCS at no extra cost, the rest of the
   pairs are oriented north-to-south by a min-cost flow, remaining circuits are inserted
   directly or along Kempe chains, and a Kempe-interchange local search tidies up; if
   that ever gets stuck, orient and fill the OCSes one by one with bipartite flows that
   leave the later OCSes a feasible remainder (Koenig), which always succeeds;
   Beside that, each domain is also *repaired* from today's circuits
   (:mod:`optimizer.mapping.repair`: swaps, rotations and ejection chains on single OCSes,
   finished by the recolouring if they get stuck) and the answer keeping more circuits wins;
   for the small changes ToE usually asks for, the repair tears down far fewer (it is
   only tried for changes up to :data:`~optimizer.mapping.repair.SMALL_CHANGE`). A second
   candidate repairs over all OCSes at once, every domain within its limits, so a change
   can land in whichever domain is cheapest, and is finished domain by domain if it stops
   early; the candidate keeping more of today's circuits is used. On Jupiter-shaped
   domains (one north and one south port per block per OCS, every port in use) an
   LP-guided dive (:mod:`optimizer.mapping.dive`: on domains over 32 blocks guided by the
   domain's LP approximated by Sinkhorn scaling, on smaller ones by the volume algorithm) is
   one more candidate per domain: it tears down 10-35% fewer circuits than the others on
   changes of any size. The domains
   are independent: given a ``parallel_map`` (a process pool's ``map``, the caller's), big
   fabrics have them mapped side by side, with the same result (at 64 blocks the domains
   are most of a plan's time: about 4-5 s each on this machine's cores). A domain small enough
   (:data:`~optimizer.mapping.regroup.DOMAIN_COLUMNS`: Jupiter-shaped domains up to 16 blocks)
   is then re-solved exactly as a whole (:func:`~optimizer.mapping.regroup.resolve_domain`, a
   MIP warm-started from its best candidate): 5-20% fewer circuits torn down there, to within
   2% of the wiring bound. Bigger Jupiter-shaped domains up to 32 blocks get one more candidate,
   the guide-fixed MIP (:func:`~optimizer.mapping.dive.guide_fixed`: the arcs an LP guide
   settles are held and the rest is solved exactly), which takes a dense 32-block domain from 1.25x
   its optimum to within a few circuits of it; 64-block domains keep their best candidate,
   usually the dive's (``benchmarks/RESULTS_toe.md``: 1.2-1.3x the wiring bound);
3. give kept circuits their old ports and new circuits free ports.

Changed circuits against the lower bound: see ``benchmarks/RESULTS_mapping.md`` (with one
north and one south port per block per OCS, as in Jupiter, even the exact optimum is
about 1.5x the bound; with more ports per OCS the mapping comes within a few percent), and
``benchmarks/mapping_bound.py`` for a bound any mapping onto the wiring must respect.

Modules: :mod:`optimizer.mapping.ports` (port groups, ``any`` OCSes),
:mod:`optimizer.mapping.domains` (step 1), :mod:`optimizer.mapping.dive`,
:mod:`optimizer.mapping.recolour` with
:mod:`optimizer.mapping.edges`, :mod:`optimizer.mapping.exchange`,
:mod:`optimizer.mapping.chains`, :mod:`optimizer.mapping.flips` (step 2),
:mod:`optimizer.mapping.ocs` (orientation, the flow fallback, step 3),
:mod:`optimizer.mapping.flow` (the flow LPs).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, cast

import numpy as np

from optimizer import progress
from optimizer.budget import TimeBudget
from optimizer.errors import InfeasibleError, SolverError
from optimizer.fabric import Fabric
from optimizer.mapping.cross import cross_exchange
from optimizer.mapping.dive import (
    DiveStuck,
    dive,
    dive_applies,
    guide_fixed,
    guide_fixes,
    volume_dive,
    volume_dive_applies,
)
from optimizer.mapping.domains import pair_domain_limit, split_over_domains
from optimizer.mapping.ocs import assign_ports, current_orientation, orient, split_over_ocs
from optimizer.mapping.ports import OcsPorts, PortModel, build_port_model, require_same_blocks
from optimizer.mapping.recolour import RecolouringStuck, recolour, recolour_pairs
from optimizer.mapping.regroup import DOMAIN_COLUMNS, DOMAIN_SECONDS, domain_columns, regroup, resolve_domain
from optimizer.mapping.repair import repair_from_current, small_change, units_wrong, with_current
from optimizer.topology import Circuit, Topology

log = logging.getLogger(__name__)

SMALL_DOMAIN_SIZE = 512  # OCSes x blocks in a domain, below which several seeds are tried
SMALL_DOMAIN_SEEDS = 4
#: Under a time budget, this share of it is kept for what follows the mapping.
DIVE_RESERVE = 0.1
#: :mod:`~optimizer.mapping.regroup` runs where pairs have fewer circuits than this per
#: domain on average: there the split over the domains decides the tear-downs (1.4-1.8x the
#: optimum without it, 12-16 blocks); on dense fabrics it gained 5-7 circuits of 6065 at 64
#: blocks for 4-7 s.
REGROUP_DENSITY = 2.0
#: A global repair stuck with more than this share of the change left is not finished
#: domain by domain (at 64 blocks the domain limits stop it early, and finishing costs more
#: than the per-domain mapping it competes with).
GLOBAL_REPAIR_FINISH = 0.5
#: OCSes x blocks from which the failure domains are mapped side by side when the caller
#: gives a ``parallel_map``: below it, shipping the domains to workers costs about what it
#: saves (8 Jupiter-shaped blocks, 2048: 6% slower on 2 cores; 16 blocks, 4096: the same).
PARALLEL_WORK = 4096

#: ``map``-like: applies a function to every item and returns the results in order (a process
#: pool's ``map``, e.g. ``concurrent.futures.ProcessPoolExecutor.map``; the function and the
#: items are picklable). The caller owns the pool: the mapping does no process management.
ParallelMap = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]

__all__ = [
    "BalanceViolation",
    "DomainLayout",
    "MappingOptions",
    "MappingResult",
    "ParallelMap",
    "change_lower_bound",
    "domain_balance_violations",
    "domain_layout",
    "domain_pair_counts",
    "map_topology",
    "pair_domain_limit",
]


@dataclass(frozen=True, slots=True)
class BalanceViolation:
    """Pair ``a``-``b`` has ``count`` of its ``total`` circuits in ``domain``; ``limit`` allowed."""

    a: str
    b: str
    domain: int
    count: int
    total: int
    limit: int


@dataclass(frozen=True)
class MappingResult:
    """The circuits realising a topology, and how they differ from today's.

    ``kept + added == len(circuits)`` and ``kept + removed == len(current)``.
    ``lower_bound`` is ``sum over pairs of max(0, L_old - L_new)``: no mapping removes
    fewer circuits. ``added_lower_bound`` is the same for additions.
    ``per_domain[d]`` is the topology placed in failure domain ``d``.
    """

    circuits: tuple[Circuit, ...]
    kept: int
    removed: int
    added: int
    lower_bound: int
    added_lower_bound: int
    removed_circuits: tuple[Circuit, ...]
    added_circuits: tuple[Circuit, ...]
    topology: Topology
    per_domain: Mapping[int, Topology] = field(repr=False)
    balance_violations: tuple[BalanceViolation, ...] = ()

    @property
    def domain_balanced(self) -> bool:
        return not self.balance_violations

    @property
    def changed(self) -> int:
        """Circuits torn down (each one is also re-made elsewhere, or its ports freed)."""
        return self.removed

    def changes_json(self) -> dict[str, int]:
        return {
            "kept": self.kept,
            "removed": self.removed,
            "added": self.added,
            "lower_bound": self.lower_bound,
        }

def change_lower_bound(old: Topology, new: Topology) -> int:
    """``sum over pairs of max(0, L_old - L_new)`` (each pair counted once)."""
    diff = np.maximum(np.asarray(old.counts) - _reorder(new, old.blocks), 0)
    return int(np.triu(diff, 1).sum())


def _reorder(top: Topology, blocks: Sequence[str]) -> np.ndarray:
    index = [top.blocks.index(b) for b in blocks]
    return np.asarray(top.counts)[np.ix_(index, index)]


def domain_pair_counts(fabric: Fabric, circuits: Sequence[Circuit]) -> dict[int, Topology]:
    """Per failure domain, the topology formed by the circuits on its OCSes."""
    return {d: Topology(fabric.block_names, m) for d, m in _pair_matrices(fabric, circuits).items()}


def _pair_matrices(fabric: Fabric, circuits: Sequence[Circuit]) -> dict[int, np.ndarray]:
    """Per domain, the symmetric pair-count matrix of the circuits (fast path)."""
    n = fabric.n_blocks
    block_of = {(w.ocs, w.port): fabric.block_index(w.block) for w in fabric.wiring}
    domain_of = {o.name: o.domain for o in fabric.ocs}
    out = {d: np.zeros((n, n), dtype=np.int64) for d in fabric.domains}
    for c in circuits:
        try:
            a, b = block_of[(c.ocs, c.a)], block_of[(c.ocs, c.b)]
        except KeyError:
            raise ValueError(f"circuit {c} uses an uncabled port") from None
        m = out[domain_of[c.ocs]]
        m[a, b] += 1
        m[b, a] += 1
    return out


def domain_balance_violations(
    fabric: Fabric, circuits: Sequence[Circuit], per_domain: Mapping[int, Topology] | None = None
) -> tuple[BalanceViolation, ...]:
    """Pairs with more circuits in one domain than :func:`pair_domain_limit` allows."""
    per_domain = dict(per_domain) if per_domain is not None else domain_pair_counts(fabric, circuits)
    ports = _domain_ports(fabric)
    total_ports = sum(ports.values())
    total = sum((np.asarray(t.counts) for t in per_domain.values()), np.zeros((fabric.n_blocks,) * 2))
    total = total.astype(np.int64)
    names = fabric.block_names
    out: list[BalanceViolation] = []
    for d, top in sorted(per_domain.items()):
        limit = pair_domain_limit(total, ports[d], total_ports)
        for a, b in np.argwhere(np.triu(np.asarray(top.counts) > limit, 1)):
            out.append(BalanceViolation(names[a], names[b], d, int(top.counts[a, b]),
                                        int(total[a, b]), int(limit[a, b])))
    return tuple(out)


def _domain_ports(fabric: Fabric) -> dict[int, int]:
    domain_of = {o.name: o.domain for o in fabric.ocs}
    ports = dict.fromkeys(fabric.domains, 0)
    for w in fabric.wiring:
        ports[domain_of[w.ocs]] += 1
    return ports


@dataclass(frozen=True)
class DomainLayout:
    """Per failure domain (in ``PortModel.domains()`` order): ``capacity[d][b]`` block ``b``'s
    cabled ports there, ``current_directed[d]`` today's circuits there (north block, south
    block) and ``limit[d]`` the most circuits of each pair the domain may hold."""

    capacity: np.ndarray
    current_directed: np.ndarray
    limit: np.ndarray


def domain_layout(model: PortModel, wanted: np.ndarray, rebalance: bool = False) -> DomainLayout:
    """The domains' ports, today's circuits and pair limits for the pair counts ``wanted``.

    The limit is :func:`pair_domain_limit` of each domain's share of the ports; unless
    ``rebalance``, a pair whose count does not change may keep today's split even above it.
    """
    n = wanted.shape[0]
    ocs_by_domain = [[o for o in model.ocs if o.domain == d] for d in model.domains()]
    capacity = np.array(
        [[sum(o.north_budget(a) + o.south_budget(a) for o in ocs) for a in range(n)]
         for ocs in ocs_by_domain],
        dtype=np.int64,
    )
    domain_ports = capacity.sum(axis=1)
    total_ports = int(domain_ports.sum())
    limit = np.stack([pair_domain_limit(wanted, int(p), total_ports) for p in domain_ports])
    current_directed = np.stack([current_orientation(ocs, n) for ocs in ocs_by_domain])
    current_by_domain = current_directed + np.transpose(current_directed, (0, 2, 1))
    if not rebalance:
        unchanged = wanted == current_by_domain.sum(axis=0)
        limit = np.where(unchanged[None, :, :], np.maximum(limit, current_by_domain), limit)
    return DomainLayout(capacity, current_directed, limit)


@dataclass(frozen=True, slots=True)
class MappingOptions:
    """Which passes :func:`map_topology` runs (the defaults: all of them, and no rebalance).

    ``rebalance``: also move a pair whose count stays the same when it is unbalanced over the
    domains. ``exchange_plan`` is the exchange LP of :mod:`optimizer.mapping.recolour`,
    ``dive`` the LP-guided dive of :mod:`optimizer.mapping.dive`, ``cross`` the two-OCS moves of
    :mod:`optimizer.mapping.cross`, ``regroup_ocs`` the regrouping pass on sparse fabrics, and
    ``resolve_domains`` the exact finish of small domains and the guide-fixed MIP of bigger ones.
    """

    rebalance: bool = False
    exchange_plan: bool = True
    dive: bool = True
    cross: bool = True
    regroup_ocs: bool = True
    resolve_domains: bool = True


DEFAULT_OPTIONS = MappingOptions()


def map_topology(
    fabric: Fabric,
    target: Topology,
    current: Sequence[Circuit] = (),
    source: str = "<topology>",
    options: MappingOptions = DEFAULT_OPTIONS,
    budget: TimeBudget | None = None,
    parallel_map: ParallelMap | None = None,
) -> MappingResult:
    """Circuits realising ``target`` on ``fabric``, keeping as many of ``current`` as possible.

    ``current`` may be any valid set of circuits (the uniform mesh, a previous result,
    nothing at all), in any order: it is read sorted, so the same set gives the same answer.

    Every pair whose circuit count changes is balanced over the domains. A pair whose
    count stays the same keeps its circuits even if today's are unbalanced (so an
    unchanged topology rewires nothing), unless ``options.rebalance`` is set; the result lists
    unbalanced pairs in ``balance_violations`` either way.

    ``options`` (:class:`MappingOptions`) switches passes off: without the exchange LP
    (:mod:`optimizer.mapping.recolour`) and the LP-guided dive (:mod:`optimizer.mapping.dive`)
    the mapping is several times faster at 64 blocks, with more circuits changed (see
    ``benchmarks/RESULTS_mapping.md``); ``resolve_domains=False`` skips the exact finish of small
    domains (:func:`~optimizer.mapping.regroup.resolve_domain`) and the guide-fixed MIP of
    bigger ones (:func:`~optimizer.mapping.dive.guide_fixed`). ``budget`` is the plan's time
    limit.

    ``parallel_map`` (a process pool's ``map``, owned by the caller) maps the failure domains
    side by side on big fabrics; the circuits are the same with it or without.

    Raises :class:`~optimizer.errors.ConfigError` when the topology is over other blocks
    than the fabric or a current circuit is invalid, and
    :class:`~optimizer.errors.InfeasibleError` (naming the block) when a block needs more
    circuits than it has ports or the circuits cannot be placed.
    """
    rebalance, exchange_plan, dive = options.rebalance, options.exchange_plan, options.dive
    cross, regroup_ocs, resolve_domains = options.cross, options.regroup_ocs, options.resolve_domains
    order = require_same_blocks(fabric, target.blocks, source)
    n = fabric.n_blocks
    names = fabric.block_names
    wanted = np.zeros((n, n), dtype=np.int64)
    wanted[np.ix_(order, order)] = np.asarray(target.counts)
    current = sorted(current)
    model = build_port_model(fabric, current, "<current circuits>")
    _check_degrees(model, wanted, names)
    if current and not rebalance and np.array_equal(sum(_pair_matrices(fabric, current).values()), wanted):
        # today's circuits realise the target already: an unchanged topology rewires nothing
        # (what the passes below would find, at 64 blocks after half a minute)
        return _result(fabric, current, list(current))

    domains = model.domains()
    layout = domain_layout(model, wanted, rebalance)
    split = split_over_domains(wanted, layout.current_directed, layout.capacity, layout.limit, names)
    upper = np.triu(wanted, 1)  # wanted is symmetric: each pair once
    sparse = upper.sum() < REGROUP_DENSITY * max(1, int(np.count_nonzero(upper))) * len(domains)
    regrouping = regroup_ocs and sparse and len(domains) > 1
    # where the regrouping pass runs, the domains are re-solved exactly after it instead (from
    # the exact per-domain optima its neighbourhoods found less: 47/38 against 44/35 removed on
    # the sparse 16-block instances of benchmarks/mapping_optimum.py)
    mapped = _map_domains(model, domains, split.counts, names, exchange_plan, dive, budget, parallel_map,
                          resolve_domains and not regrouping)
    # (side by side, the domains run on the pool while the global repair runs here)
    room = budget is None or budget.remaining() > DIVE_RESERVE * budget.seconds
    repaired = None
    if room and not _odd_any_ocs(model.ocs, n) and small_change(model.ocs, wanted):
        repaired = _repair_globally(model, domains, wanted, layout, names, exchange_plan)
    per_ocs = mapped()
    # balance first (a pair the split left over a domain's limit loses more to that domain's
    # failure), then the circuits kept
    if repaired is not None and (
        _over_limits(model, domains, repaired, layout), -_kept(model.ocs, repaired)
    ) < (_over_limits(model, domains, per_ocs, layout), -_kept(model.ocs, per_ocs)):
        per_ocs = repaired
    if cross and any(o.north_budget(b) > 1 for o in model.ocs for b in range(n)):
        # (with one north port per block per OCS, two-OCS moves were not found: see cross.py)
        domain_index = [domains.index(o.domain) for o in model.ocs]
        per_ocs = cross_exchange(model.ocs, per_ocs, domain_index, layout.limit, budget)
    if regrouping:
        share = None if budget is None else budget.share(1.0 - DIVE_RESERVE)
        domain_index = [domains.index(o.domain) for o in model.ocs]
        per_ocs = regroup(model.ocs, per_ocs, domain_index, layout.limit, share)
        if resolve_domains:
            per_ocs = _resolve_each_domain(model, domains, per_ocs, budget)
    circuits: list[Circuit] = []
    for o, counts in zip(model.ocs, per_ocs, strict=True):
        circuits.extend(assign_ports(o, counts))
    realised = sum(_pair_matrices(fabric, circuits).values())
    if not np.array_equal(realised, wanted):
        raise SolverError("internal error: the mapped circuits do not realise the target topology")
    return _result(fabric, current, circuits)


def _over_limits(
    model: PortModel, domains: list[int], per_ocs: list[np.ndarray], layout: DomainLayout
) -> int:
    """Circuits over the domains' pair limits in a per-OCS mapping (the global repair keeps
    to them while it completes; its finish may not)."""
    total = 0
    for di, d in enumerate(domains):
        pairs = sum((c + c.T for o, c in zip(model.ocs, per_ocs, strict=True) if o.domain == d),
                    np.zeros_like(layout.limit[di]))
        total += int(np.triu(np.maximum(pairs - layout.limit[di], 0), 1).sum())
    return total


def _map_domains(
    model: PortModel,
    domains: list[int],
    split: np.ndarray,
    names: tuple[str, ...],
    exchange_plan: bool,
    use_dive: bool = True,
    budget: TimeBudget | None = None,
    parallel_map: ParallelMap | None = None,
    use_resolve: bool = True,
) -> Callable[[], list[np.ndarray]]:
    """Per-OCS directed counts (in ``model.ocs`` order) realising ``split[d]`` in each domain
    (:func:`_map_domain`): whichever candidate keeps more. Returned as a call that gives them:
    side by side, the domains are running on the pool meanwhile (the caller has other work).

    The domains are independent, so with a ``parallel_map`` (e.g. a process pool's ``map``)
    and at least :data:`PARALLEL_WORK` of work they are mapped side by side; each gives the
    same answer wherever it runs. With a ``budget`` (the plan's time limit), each domain gets
    a share of what is left of it (less :data:`DIVE_RESERVE` of the budget for the steps
    after the mapping): one by one, an equal share of what is left at its start, and the
    time each optional candidate took on the previous domain decides whether it still fits;
    side by side, every domain gets an equal share of what is left before the first starts
    (as much as or more than one by one, however the domains are spread over the workers)
    and counts its own time from when it starts.
    """
    n = len(names)
    jobs = [
        _DomainJob(d, [o for o in model.ocs if o.domain == d], split[di], names, exchange_plan, use_dive,
                   use_resolve)
        for di, d in enumerate(domains)
    ]
    spare = None if budget is None else budget.remaining() - DIVE_RESERVE * budget.seconds
    work = sum(len(job.ocs) for job in jobs) * n
    done: Iterable[_DomainMapped]
    if parallel_map is not None and len(jobs) > 1 and work >= PARALLEL_WORK:
        progress.report("mapping", f"{len(jobs)} failure domains side by side")
        jobs = [replace(job, share=None if spare is None else spare / len(jobs)) for job in jobs]
        done = parallel_map(_map_domain, jobs)  # a pool's map has submitted them all
    else:
        done = []
        took: dict[str, float] = {}
        for di, job in enumerate(jobs):
            progress.report("mapping", f"failure domain {job.domain} ({di + 1} of {len(jobs)})")
            if budget is not None:
                spare = budget.remaining() - DIVE_RESERVE * budget.seconds
            share = None if spare is None else spare / (len(jobs) - di)
            done.append(_map_domain(replace(job, share=share, took=took)))
            took = done[-1].took

    def collect() -> list[np.ndarray]:
        counts_by_ocs: dict[str, np.ndarray] = {}
        for job, mapped in zip(jobs, done, strict=True):
            for o, c, (north, south) in zip(job.ocs, mapped.per_ocs, mapped.sides, strict=True):
                counts_by_ocs[o.name] = c
                # the sides an ``any`` OCS's ports took in the domain's mapping (a worker's copy)
                o.north, o.south = north, south
        return [counts_by_ocs[o.name] for o in model.ocs]

    return collect


@dataclass(frozen=True)
class _DomainJob:
    """One failure domain to map: its OCSes, pair counts ``pairs`` and knobs; ``share`` the
    seconds it may take (None: no limit) and ``took`` the seconds each optional candidate
    took on the previous domain (the estimate of what it takes here)."""

    domain: int
    ocs: list[OcsPorts]
    pairs: np.ndarray
    names: tuple[str, ...]
    exchange_plan: bool
    use_dive: bool
    use_resolve: bool = True
    share: float | None = None
    took: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class _DomainMapped:
    """A domain's per-OCS directed counts (in ``job.ocs`` order), the sides of every OCS's
    ports they use (``any`` OCSes may have changed them), and the seconds each optional
    candidate took."""

    per_ocs: list[np.ndarray]
    sides: list[tuple[list[list[int]], list[list[int]]]]
    took: dict[str, float]


def _map_domain(job: _DomainJob) -> _DomainMapped:
    """One domain's per-OCS directed counts: the recolouring (a few seeds on small domains),
    for small changes the domain repaired from today's circuits, and on Jupiter-shaped
    domains the LP-guided dive (``use_dive``): whichever keeps more. The recolouring always
    runs, then the dive and the repair (in that order: the dive keeps more) each if the
    time it took on the previous domain still fits in the job's share.

    A module-level function of picklable arguments, so that a process pool can run it.
    """
    d, ocs_list, pairs, names = job.domain, job.ocs, job.pairs, job.names
    n = len(names)
    domain_started = time.perf_counter()
    took = dict(job.took)

    def fits(candidate: str, extra: float = 0.0) -> bool:
        if job.share is None:
            return True
        spent = time.perf_counter() - domain_started
        if spent + took.get(candidate, 0.0) + extra <= job.share:
            return True
        log.info("failure domain %s: no %s (the plan's time limit: %.1f s of this domain's %.1f s "
                 "share spent, it took %.1f s)", d, candidate, spent, job.share, took.get(candidate, 0.0))
        return False

    where = f"failure domain {d}"
    exchange_plan = job.exchange_plan
    try:
        if _odd_any_ocs(ocs_list, n):
            directed = _orient_domain(ocs_list, pairs, names, where)
            per_ocs = recolour(ocs_list, directed, exchange_plan=exchange_plan)
        else:
            orienter = _orienter(ocs_list, pairs, names, where)
            # Small domains are cheap: try a few seeds (deterministic) and keep the best.
            seeds = range(SMALL_DOMAIN_SEEDS if len(ocs_list) * n <= SMALL_DOMAIN_SIZE else 1)
            tries = [recolour_pairs(ocs_list, pairs, orienter, seed=seed, exchange_plan=exchange_plan)
                     for seed in seeds]
            repair_wanted = small_change(ocs_list, pairs)
            diving = job.use_dive and dive_applies(ocs_list, pairs)
            # the repair first, unless the time left has room for only one of them: then
            # the dive, which keeps more
            both = not diving or fits("repair", extra=took.get("dive", 0.0))
            if repair_wanted and both:
                started = time.perf_counter()
                tries.append(_repaired(ocs_list, pairs, orienter, exchange_plan))
                took["repair"] = time.perf_counter() - started
            if diving and fits("dive"):
                started = time.perf_counter()
                try:
                    if volume_dive_applies(ocs_list, pairs):  # (see volume_dive)
                        tries.append(volume_dive(ocs_list, pairs, max(_kept(ocs_list, t) for t in tries)))
                    else:
                        tries.append(dive(ocs_list, pairs))
                except DiveStuck as exc:  # never expected: the other candidates stand
                    log.error("failure domain %s: %s", d, exc)
                took["dive"] = time.perf_counter() - started
            if repair_wanted and not both and fits("repair"):
                started = time.perf_counter()
                tries.append(_repaired(ocs_list, pairs, orienter, exchange_plan))
                took["repair"] = time.perf_counter() - started
            tries.extend(_guide_fixed(job, tries, fits, took, domain_started))
            per_ocs = max(tries, key=lambda t: _kept(ocs_list, t))
            per_ocs = _resolved(job, per_ocs, fits, took, domain_started)
    except RecolouringStuck as exc:
        log.info("failure domain %s: recolouring got stuck (%s); using the flow construction", d, exc)
        per_ocs = _flow_construction(ocs_list, pairs, names, where)
    return _DomainMapped(list(per_ocs), [(o.north, o.south) for o in ocs_list], took)


def _guide_fixed(
    job: _DomainJob,
    tries: list[list[np.ndarray]],
    fits: Callable[[str], bool],
    took: dict[str, float],
    domain_started: float,
) -> list[list[np.ndarray]]:
    """The guide-fixed candidate (:func:`~optimizer.mapping.dive.guide_fixed`) on Jupiter-shaped
    domains too big for the exact re-solve and small enough for it (32 blocks), as a list of
    zero or one candidates."""
    ocs_list, pairs = job.ocs, job.pairs
    if not (job.use_resolve and job.use_dive) or domain_columns(ocs_list, pairs) <= DOMAIN_COLUMNS:
        return []  # (off, or the whole domain is re-solved exactly instead)
    if not guide_fixes(ocs_list, pairs) or not fits("guide-fixed"):
        return []
    started = time.perf_counter()
    seconds = _seconds_left(job, started - domain_started)
    known = max(_kept(ocs_list, t) for t in tries)
    solved = guide_fixed(ocs_list, pairs, known, seconds)
    took["guide-fixed"] = time.perf_counter() - started
    gained = None if solved is None else _kept(ocs_list, solved) - known
    log.debug("failure domain %s: the guide-fixed MIP keeps %s more circuits (%.1f s)", job.domain,
              "no" if gained is None else gained, took["guide-fixed"])
    return [] if solved is None else [solved]


def _seconds_left(job: _DomainJob, spent: float) -> float:
    """What a MIP finish of the domain may take: the rest of the job's share after ``spent``
    seconds, or :data:`~optimizer.mapping.regroup.DOMAIN_SECONDS` where the plan sets no limit."""
    return DOMAIN_SECONDS if job.share is None else job.share - spent


def _resolved(
    job: _DomainJob,
    per_ocs: list[np.ndarray],
    fits: Callable[[str], bool],
    took: dict[str, float],
    domain_started: float,
) -> list[np.ndarray]:
    """The domain re-solved exactly from ``per_ocs`` (its best candidate) where it is small enough
    (:data:`~optimizer.mapping.regroup.DOMAIN_COLUMNS`) and the time it took on the previous domain
    still fits: whichever keeps more."""
    if not job.use_resolve or domain_columns(job.ocs, job.pairs) > DOMAIN_COLUMNS or not fits("exact"):
        return per_ocs
    started = time.perf_counter()
    seconds = _seconds_left(job, started - domain_started)
    solved = resolve_domain(job.ocs, per_ocs, job.pairs, seconds)
    took["exact"] = time.perf_counter() - started
    gained = -1 if solved is None else _kept(job.ocs, solved) - _kept(job.ocs, per_ocs)
    log.debug("failure domain %s: the exact re-solve keeps %d more circuits (%.1f s)", job.domain,
              max(gained, 0), took["exact"])
    return per_ocs if solved is None or gained <= 0 else solved


def _resolve_each_domain(
    model: PortModel, domains: list[int], per_ocs: list[np.ndarray], budget: TimeBudget | None
) -> list[np.ndarray]:
    """Every domain small enough re-solved exactly from ``per_ocs``, its pair counts as they are
    (after the regrouping pass, which moved circuits between domains), one after the other."""
    out = list(per_ocs)
    for d in domains:
        index = [i for i, o in enumerate(model.ocs) if o.domain == d]
        ocs_list, counts = [model.ocs[i] for i in index], [per_ocs[i] for i in index]
        pairs = sum((c + c.T for c in counts), np.zeros_like(counts[0]))
        if domain_columns(ocs_list, pairs) > DOMAIN_COLUMNS:
            continue
        seconds = DOMAIN_SECONDS if budget is None else budget.remaining() - DIVE_RESERVE * budget.seconds
        solved = resolve_domain(ocs_list, counts, pairs, seconds)
        if solved is not None and _kept(ocs_list, solved) > _kept(ocs_list, counts):
            for i, c in zip(index, solved, strict=True):
                out[i] = c
    return out


def _repair_globally(
    model: PortModel,
    domains: list[int],
    wanted: np.ndarray,
    layout: DomainLayout,
    names: tuple[str, ...],
    exchange_plan: bool,
) -> list[np.ndarray] | None:
    """Repair today's circuits over all OCSes at once (every domain within its limits), so
    that a change can land in whichever domain it is cheapest; if that gets stuck, split the
    pairs over the domains from where the repair left them and finish domain by domain.
    ``None`` if the finish fails (the caller keeps the per-domain answer)."""
    domain_of = [domains.index(o.domain) for o in model.ocs]
    counts, complete = repair_from_current(model.ocs, wanted, domain_limit=layout.limit, domain_of=domain_of)
    if complete:
        return counts
    left, before = units_wrong(model.ocs, wanted, counts), units_wrong(model.ocs, wanted)
    if left > GLOBAL_REPAIR_FINISH * before:
        log.debug("global repair stuck with %d of %d pair units wrong: not finishing it", left, before)
        return None
    n = len(names)
    directed = np.zeros((len(domains), n, n), dtype=np.int64)
    for c, di in zip(counts, domain_of, strict=True):
        directed[di] += c
    try:
        split = split_over_domains(wanted, directed, layout.capacity, layout.limit, names)
        out: dict[int, np.ndarray] = {}
        for di, d in enumerate(domains):
            index = [i for i, x in enumerate(domain_of) if x == di]
            ocs_list = [model.ocs[i] for i in index]
            orienter = _orienter(ocs_list, split.counts[di], names, f"failure domain {d}")
            part = _repaired(ocs_list, split.counts[di], orienter, exchange_plan, [counts[i] for i in index])
            out.update(zip(index, part, strict=True))
    except (InfeasibleError, RecolouringStuck) as exc:
        log.info("the global repair could not be finished (%s); keeping the per-domain mapping", exc)
        return None
    return [out[i] for i in range(len(model.ocs))]


def _repaired(
    ocs_list: Sequence[OcsPorts], pairs: np.ndarray, orienter: Callable[[np.ndarray], np.ndarray],
    exchange_plan: bool, start: Sequence[np.ndarray] | None = None,
) -> list[np.ndarray]:
    """The domain repaired from ``start`` (default today's circuits); if the repair gets
    stuck, the recolouring finishes it, starting from the partial repair instead of today's
    circuits."""
    repaired, complete = repair_from_current(ocs_list, pairs, start)
    if complete:
        return repaired
    hinted = [with_current(o, c) for o, c in zip(ocs_list, repaired, strict=True)]
    return recolour_pairs(hinted, pairs, orienter, exchange_plan=exchange_plan)


def _kept(ocs_list: Sequence[OcsPorts], per_ocs: Sequence[np.ndarray]) -> int:
    """Today's circuits that per-OCS directed counts keep."""
    return sum(o.kept(c) for o, c in zip(ocs_list, per_ocs, strict=True))


def _odd_any_ocs(ocs_list: Sequence[OcsPorts], n: int) -> list[OcsPorts]:
    """The ``any`` OCSes on which some block has an odd number of ports."""
    return [o for o in ocs_list if o.flexible and any(
        (o.north_budget(a) + o.south_budget(a)) % 2 for a in range(n))]


def _orienter(
    ocs_list: Sequence[OcsPorts], pairs: np.ndarray, names: tuple[str, ...], where: str
) -> Callable[[np.ndarray], np.ndarray]:
    """Orientation of the domain's pairs that agrees most with given directed counts."""
    n = len(names)
    north = np.array([sum(o.north_budget(a) for o in ocs_list) for a in range(n)], dtype=np.int64)
    south = np.array([sum(o.south_budget(a) for o in ocs_list) for a in range(n)], dtype=np.int64)
    return lambda current: orient(pairs, north, south, current, names, where)


def _orient_domain(
    ocs_list: Sequence[OcsPorts], pairs: np.ndarray, names: tuple[str, ...], where: str
) -> np.ndarray:
    """Orient the domain's pairs. On ``any`` OCSes with an odd per-block share, the free
    ports then take the sides the orientation needs (round-robin over those OCSes); with
    even shares the half-and-half split of :mod:`optimizer.mapping.ports` always works."""
    n = len(names)
    odd_any = _odd_any_ocs(ocs_list, n)
    flex = np.array([sum(o.flexible_count(a) for o in odd_any) for a in range(n)], dtype=np.int64)
    north = np.array([sum(o.north_budget(a) for o in ocs_list) for a in range(n)], dtype=np.int64)
    south = np.array([sum(o.south_budget(a) for o in ocs_list) for a in range(n)], dtype=np.int64)
    fixed_north = north - np.array(
        [sum(len(set(o.north[a]) & o.flexible[a]) for o in odd_any) for a in range(n)],
        dtype=np.int64,
    )
    fixed_south = north + south - flex - fixed_north
    directed = orient(pairs, fixed_north + flex, fixed_south + flex, current_orientation(ocs_list, n),
                      names, where)
    if flex.any():
        out = directed.sum(axis=1)
        for a in np.nonzero(flex)[0].tolist():
            need = int(np.clip(out[a] - fixed_north[a], 0, flex[a]))
            any_ocs = [o for o in odd_any if o.flexible_count(a)]
            share = dict.fromkeys(range(len(any_ocs)), 0)
            while need:
                for i, o in enumerate(any_ocs):
                    if need and share[i] < o.flexible_count(a):
                        share[i] += 1
                        need -= 1
            for i, o in enumerate(any_ocs):
                o.set_flexible_north(a, share[i])
    return directed


def _flow_construction(
    ocs_list: Sequence[OcsPorts], pairs: np.ndarray, names: tuple[str, ...], where: str
) -> list[np.ndarray]:
    """The always-feasible construction for one domain: orientation, then OCS by OCS."""
    return split_over_ocs(_orient_domain(ocs_list, pairs, names, where), ocs_list, names, where)


def _check_degrees(model: PortModel, wanted: np.ndarray, names: tuple[str, ...]) -> None:
    n = len(names)
    ports = np.zeros(n, dtype=np.int64)
    for o in model.ocs:
        for a in range(n):
            ports[a] += o.north_budget(a) + o.south_budget(a)
    degree = wanted.sum(axis=1)
    for a in np.nonzero(degree > ports)[0].tolist():
        raise InfeasibleError(
            f"block {names[a]} needs {int(degree[a])} circuits but has only {int(ports[a])} OCS ports"
        )


def unchanged_mapping(fabric: Fabric, current: Sequence[Circuit]) -> MappingResult:
    """Today's circuits as the mapping of today's topology: nothing removed or added."""
    return _result(fabric, current, list(current))


def _result(fabric: Fabric, current: Sequence[Circuit], circuits: list[Circuit]) -> MappingResult:
    new_set = set(circuits)
    old_set = set(current)
    kept = new_set & old_set
    removed = tuple(sorted(old_set - new_set))
    added = tuple(sorted(new_set - old_set))
    old_top = Topology(fabric.block_names, cast(np.ndarray, sum(_pair_matrices(fabric, current).values())))
    per_domain = domain_pair_counts(fabric, circuits)
    new_counts = cast(np.ndarray, sum(np.asarray(t.counts) for t in per_domain.values()))
    new_top = Topology(fabric.block_names, new_counts)
    result = MappingResult(
        circuits=tuple(sorted(circuits)),
        kept=len(kept),
        removed=len(removed),
        added=len(added),
        lower_bound=change_lower_bound(old_top, new_top),
        added_lower_bound=change_lower_bound(new_top, old_top),
        removed_circuits=removed,
        added_circuits=added,
        topology=new_top,
        per_domain=MappingProxyType(per_domain),
        balance_violations=domain_balance_violations(fabric, circuits, per_domain),
    )
    log.info(
        "mapped %d circuits: kept %d, removed %d, added %d (lower bound %d)%s",
        len(circuits), result.kept, result.removed, result.added, result.lower_bound,
        "" if result.domain_balanced else f", {len(result.balance_violations)} pairs unbalanced",
    )
    return result
