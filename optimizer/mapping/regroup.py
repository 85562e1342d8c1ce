"""Exact re-mapping of small groups of OCSes (a large-neighbourhood search).

The per-domain mapping fixes each pair's split over the failure domains before it maps a
single OCS, and on sparse fabrics (fewer circuits per pair than domains, one north and one
south port per block per OCS) that split is where most of the extra tear-downs come from:
the exact optimum chooses the split together with the per-OCS matchings
(``benchmarks/RESULTS_mapping.md``). This pass takes a finished mapping and re-solves a few
OCSes at a time exactly (a small MIP, HiGHS through :func:`scipy.optimize.milp`): inside a
group the pairs keep their total number of circuits, every OCS keeps to its ports, each
domain keeps to its pair limits (or to today's count where that is already over them), and
the MIP keeps as many of today's circuits as it can. Groups mix domains, so a pair's
circuits can move from one domain to another, which no per-domain step can do.

A group is built around the OCS that loses most of today's circuits, joined by the OCSes
now holding the pairs it lost (they are what could give them back) and, failing those,
by OCSes of other domains. Each accepted group strictly keeps more circuits, so the pass
ends; it also stops after a run of groups that gain nothing, after a set number of groups,
or when the plan's time budget is spent.
The MIP's size grows with the circuits of the group, not with the fabric, so a group is
small at 64 blocks too.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from optimizer.budget import TimeBudget
from optimizer.mapping.ports import OcsPorts

log = logging.getLogger(__name__)

#: OCSes re-solved together.
GROUP_SIZE = 6
#: Groups in a row that gain nothing before the pass stops, and groups in all: the pass is
#: bounded by work, not time, so the same input gives the same circuits.
STALL_LIMIT = 12
MAX_GROUPS = 60
#: Branch-and-bound nodes one group's MIP may explore (and, as a safety, seconds).
GROUP_NODES = 500
GROUP_SECONDS = 5.0


def regroup(
    ocs_list: Sequence[OcsPorts],
    per_ocs: list[np.ndarray],
    domain_index: Sequence[int],
    limit: np.ndarray,
    budget: TimeBudget | None = None,
) -> list[np.ndarray]:
    """Per-OCS directed counts keeping at least as many of today's circuits as ``per_ocs``.

    ``per_ocs[o][a, b]`` counts the circuits from block ``a``'s north to ``b``'s south on
    ``ocs_list[o]``, ``domain_index[o]`` is its domain and ``limit[d]`` the pair limits of
    domain ``d``. The pass stops after :data:`STALL_LIMIT` groups in a row gain nothing,
    :data:`MAX_GROUPS` groups, or when ``budget`` (the plan's) is spent.
    """
    eligible = [o for o, ocs in enumerate(ocs_list) if not ocs.flexible and ocs.current]
    if len(eligible) < 2:
        return per_ocs
    per_ocs = [c.copy() for c in per_ocs]
    allowed = _allowed(per_ocs, domain_index, limit)
    tried: set[frozenset[int]] = set()
    stall = gained = groups = 0
    while stall < STALL_LIMIT and groups < MAX_GROUPS and (budget is None or not budget.expired()):
        group = _next_group(ocs_list, per_ocs, domain_index, eligible, tried)
        if group is None:
            break
        tried.add(frozenset(group))
        groups += 1
        seconds = GROUP_SECONDS if budget is None else min(GROUP_SECONDS, budget.remaining())
        solved = _solve_group(ocs_list, per_ocs, domain_index, allowed, group, seconds)
        before = sum(_kept_on(ocs_list[o], per_ocs[o]) for o in group)
        after = -1 if solved is None else sum(
            _kept_on(ocs_list[o], c) for o, c in zip(group, solved, strict=True))
        if solved is None or after <= before:
            stall += 1
            continue
        for o, counts in zip(group, solved, strict=True):
            per_ocs[o] = counts
        gained += after - before
        stall = 0
        tried.clear()  # the mapping moved: groups tried before may gain now
    log.debug("regroup: %d groups re-solved, %d more circuits kept", groups, gained)
    return per_ocs


def _allowed(per_ocs: Sequence[np.ndarray], domain_index: Sequence[int], limit: np.ndarray) -> np.ndarray:
    """Per domain, the most circuits of each pair it may hold: its limit, or what it holds
    now where that is more (a pair kept unbalanced stays as it is, never worse)."""
    allowed = np.array(limit, dtype=np.int64, copy=True)
    for d in range(len(allowed)):
        pairs = sum((c + c.T for c, di in zip(per_ocs, domain_index, strict=True) if di == d),
                    np.zeros_like(allowed[d]))
        allowed[d] = np.maximum(allowed[d], pairs)
    return allowed


def _kept_on(ocs: OcsPorts, counts: np.ndarray) -> int:
    return sum(min(int(counts[a, b]), len(cur)) for (a, b), cur in ocs.current.items())


def _lost_pairs(ocs: OcsPorts, counts: np.ndarray) -> list[tuple[int, int]]:
    return [(a, b) for (a, b), cur in ocs.current.items() if counts[a, b] < len(cur)]


def _next_group(
    ocs_list: Sequence[OcsPorts],
    per_ocs: Sequence[np.ndarray],
    domain_index: Sequence[int],
    eligible: Sequence[int],
    tried: set[frozenset[int]],
) -> list[int] | None:
    """The untried group around the OCS losing most: it, the OCSes now holding its lost
    pairs (most of them first), then OCSes of other domains."""
    losses = sorted(
        eligible, key=lambda o: (-sum(len(ocs_list[o].current[p]) - int(per_ocs[o][p])
                                      for p in _lost_pairs(ocs_list[o], per_ocs[o])), o)
    )
    size = min(GROUP_SIZE, len(eligible))
    for seed in losses:
        if not _lost_pairs(ocs_list[seed], per_ocs[seed]):
            return None  # every OCS keeps all it can: nothing to gain
        holders: dict[int, int] = {}
        for a, b in _lost_pairs(ocs_list[seed], per_ocs[seed]):
            for o in eligible:
                if o != seed and per_ocs[o][a, b] + per_ocs[o][b, a] > 0:
                    holders[o] = holders.get(o, 0) + 1
        ranked = sorted(holders, key=lambda o: (-holders[o], domain_index[o] == domain_index[seed], o))
        others = [o for o in eligible if o != seed and o not in holders]
        others.sort(key=lambda o: (domain_index[o] == domain_index[seed], o))
        candidates = ranked + others
        # several groups per seed: slide over its candidates
        for start in range(0, max(1, len(candidates) - size + 2)):
            group = [seed, *candidates[start:start + size - 1]]
            if len(group) == size and frozenset(group) not in tried:
                return group
    return None


def _solve_group(
    ocs_list: Sequence[OcsPorts],
    per_ocs: Sequence[np.ndarray],
    domain_index: Sequence[int],
    allowed: np.ndarray,
    group: list[int],
    seconds: float,
) -> list[np.ndarray] | None:
    """The group's directed counts keeping most of today's circuits (None: none found)."""
    if seconds <= 0.05:
        return None
    totals = sum(per_ocs[o] + per_ocs[o].T for o in group)
    pairs = [(int(a), int(b)) for a, b in zip(*np.nonzero(np.triu(totals, 1)), strict=True)]
    if not pairs:
        return None
    arcs = [arc for a, b in pairs for arc in ((a, b), (b, a))]
    n_arcs = len(arcs)
    g = len(group)
    size = 2 * g * n_arcs  # x[i, e] circuits on the group's i-th OCS, k[i, e] today's kept

    def x(i: int, e: int) -> int:
        return i * n_arcs + e

    def k(i: int, e: int) -> int:
        return (g + i) * n_arcs + e

    rows: list[tuple[list[int], list[float], float, float]] = []
    upper = np.zeros(size)
    for i, o in enumerate(group):
        ocs = ocs_list[o]
        for v in {a for arc in arcs for a in arc}:
            rows.append(([x(i, e) for e, (a, _) in enumerate(arcs) if a == v], [], 0, ocs.north_budget(v)))
            rows.append(([x(i, e) for e, (_, b) in enumerate(arcs) if b == v], [], 0, ocs.south_budget(v)))
        for e, (a, b) in enumerate(arcs):
            upper[x(i, e)] = min(ocs.north_budget(a), ocs.south_budget(b))
            upper[k(i, e)] = len(ocs.current.get((a, b), ()))
            rows.append(([k(i, e), x(i, e)], [1.0, -1.0], -np.inf, 0))
    outside = {d: sum((per_ocs[o] + per_ocs[o].T for o in range(len(per_ocs))
                       if domain_index[o] == d and o not in group), np.zeros_like(totals))
               for d in {domain_index[o] for o in group}}
    for p, (a, b) in enumerate(pairs):
        both = (2 * p, 2 * p + 1)
        rows.append(([x(i, e) for i in range(g) for e in both], [], totals[a, b], totals[a, b]))
        for d, held in outside.items():
            cols = [x(i, e) for i, o in enumerate(group) if domain_index[o] == d for e in both]
            rows.append((cols, [], 0, float(allowed[d][a, b] - held[a, b])))
    data, ri, ci, lo, hi = [], [], [], [], []
    for r, (cols, values, low, high) in enumerate(rows):
        ri.extend([r] * len(cols))
        ci.extend(cols)
        data.extend(values or [1.0] * len(cols))
        lo.append(low)
        hi.append(high)
    matrix = sp.csr_matrix((data, (ri, ci)), shape=(len(rows), size))
    cost = np.zeros(size)
    cost[g * n_arcs:] = -1.0
    result = milp(cost, constraints=LinearConstraint(matrix, lo, hi), integrality=np.ones(size),
                  bounds=Bounds(0, upper), options={"time_limit": seconds, "node_limit": GROUP_NODES})
    if result.x is None:
        return None
    values = np.rint(result.x).astype(np.int64)
    solved = []
    for i in range(g):
        counts = np.zeros_like(per_ocs[group[i]])
        for e, (a, b) in enumerate(arcs):
            counts[a, b] = values[x(i, e)]
        solved.append(counts)
    return solved
