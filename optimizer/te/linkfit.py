"""Integer weights judged on link loads: a switch-wide budget, and a repair toward the LP's MLU.

:mod:`optimizer.te.wcmp` bounds each group's over-subscription, which bounds a link's load
only by the *worst* group crossing it, and a group spread over many members may have no
weights within the bound at all. What the operator sees is the link load, so after the
per-group reduction:

1. :func:`fit_switch_budget` keeps every switch (source block) within a budget on the sum
   of its groups' weights (a fabric switch has one shared WCMP table: PINS's allows
   49,152 entries), lowering the per-group table size of a switch over budget until its
   groups fit;
2. :func:`repair_link_loads` brings the link MLU toward the target (the LP's MLU times the
   bound). First the staging (:mod:`optimizer.te.slackmove`, :mod:`optimizer.te.bulkmoves`,
   :mod:`optimizer.te.totalsearch`): the fine groups crossing hot links at their finest
   weights, each coarse group re-quantised against the rest of the load (and, if that stays
   above the target, all of them against the LP's plan), bulk moves of units onto paths
   with slack (fine units making room for a coarse one), settled again while the peak
   falls, then a bounded search over the coarse groups' totals. If the target is still
   missed, a small MILP re-plans the groups crossing the hot links together, the staging
   runs again from its result, and single weight units move off the hottest link as long
   as each move lowers the hottest of the links it touches. Every step keeps each group
   within its table and each switch within the budget; the result is never worse than the
   per-group reduction.

A unit move changes loads by ``demand / total weight`` on at most four links, so each step
costs one look at the groups crossing the hottest link (a few hundred at 64 blocks).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math

import highspy
import numpy as np
from highspy._core import _Highs
from scipy import sparse

from optimizer.errors import ConfigError
from optimizer.te.bulkmoves import link_utilisation
from optimizer.te.paths import NO_LINK, CandidatePaths, LinkGraph
from optimizer.te.slackmove import refill_fine, round_against_plan, settle
from optimizer.te.totalsearch import search_totals
from optimizer.te.wcmp import reduce_weights

log = logging.getLogger(__name__)

DEFAULT_SWITCH_BUDGET = 49_152
"""Weight entries a switch holds over all its groups (PINS's fabric switch)."""

_INCLUDE = (1.0, 0.97)  # rows crossing a link above this share of the target are re-rounded: the
# links over the target alone first (a small MILP), then with those close to it
_MILP_MAX_COLUMNS = 5_000  # a larger rounding MILP is not tried: at 64 blocks one of 12-50k
# columns ran into the time limit and gained nothing (hotspot) or less than the smaller one
_MILP_SECONDS = 1.5  # a safety net: the plan stays within seconds
_MILP_NODES = 50  # branch-and-bound nodes (deterministic); the MILP keeps its best rounding
_COARSE = 0.005  # a group is coarse when one entry of a full table is this much of a link
_SETTLE_ROUNDS = 3  # re-quantise-and-move rounds of the staging (a 64-block ring needs two)
_MAX_MOVES = 500  # single-unit moves before the repair stops (each costs ~1 ms at 64 blocks)
_EPS = 1e-12


def fit_switch_budget(
    fractions: np.ndarray,
    sources: np.ndarray,
    table_size: int,
    max_oversubscription: float,
    switch_budget: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Reduced weights for ``fractions`` (one row a group) and each row's table size, such
    that the rows of each source sum to at most ``switch_budget``.

    A source over budget gets the largest per-group table size under which its groups fit.
    Raises ConfigError if the budget cannot give each of a source's groups one entry.
    """
    reduced = reduce_weights(fractions, table_size, max_oversubscription).weights
    tables = np.full(len(fractions), table_size, dtype=np.int64)
    sums = np.bincount(sources, weights=reduced.sum(axis=1))
    for source in np.flatnonzero(sums > switch_budget):
        rows = np.flatnonzero(sources == source)
        if len(rows) > switch_budget:
            raise ConfigError(
                "<te>",
                "switch_budget",
                f"{switch_budget} entries cannot hold one weight for each of the {len(rows)} groups "
                "of a switch",
            )
        low, high = 1, table_size - 1  # low always fits (one entry per group)
        best = reduce_weights(fractions[rows], 1, max_oversubscription).weights
        while low <= high:
            middle = (low + high) // 2
            trial = reduce_weights(fractions[rows], middle, max_oversubscription).weights
            if trial.sum() <= switch_budget:
                best, low = trial, middle + 1
                tables[rows] = middle
            else:
                high = middle - 1
        if tables[rows[0]] == table_size:
            tables[rows] = 1
        reduced[rows] = best
    return reduced, tables


@dataclasses.dataclass(frozen=True)
class Repaired:
    """Weights and the split they now stand for (rows the repair re-planned differ)."""

    weights: np.ndarray
    fractions: np.ndarray


def repair_link_loads(
    graph: LinkGraph,
    paths: CandidatePaths,
    demand_gbps: np.ndarray,
    fractions: np.ndarray,
    weights: np.ndarray,
    tables: np.ndarray,
    sources: np.ndarray,
    switch_budget: int,
    plan_mlu: float,
    max_oversubscription: float,
    frozen: np.ndarray | None = None,
) -> Repaired:
    """Weights (one row per group of ``paths``) whose link MLU is at most ``plan_mlu *
    max_oversubscription`` when the repair gets there, else as low as it got; never higher
    than the MLU of ``weights``.

    ``fractions`` is the planned split, ``tables`` each row's table size, ``sources`` each
    row's switch (for ``switch_budget``); rows ``frozen`` keep their weights. Rows the
    repair re-planned get their new split in the result's fractions: the fine groups
    re-solved around the coarse ones get the LP's new split, rows changed by unit moves
    the split of their new weights.
    """
    frozen = np.zeros(len(weights), dtype=bool) if frozen is None else frozen
    target_mlu = plan_mlu * max_oversubscription
    peak = _peak(graph, paths, demand_gbps, weights)
    if peak <= target_mlu * (1 + _EPS):
        return Repaired(weights, fractions)
    best = Repaired(weights, fractions)
    # The cheap stages first (optimizer.te.slackmove); the rounding MILP only if they fall short.
    staged = [_stage(graph, paths, demand_gbps, best, tables, sources, switch_budget, target_mlu, frozen)]
    if _peak(graph, paths, demand_gbps, staged[0]) <= target_mlu * (1 + _EPS):
        return _with_split(best, staged[0])
    coarse = _coarse(graph, paths, demand_gbps, weights, tables, frozen)
    for include, fill in itertools.product(_INCLUDE, (False, True)):
        rounded, timed_out = _round_jointly(
            graph, paths, demand_gbps, best, tables, sources, switch_budget, target_mlu,
            max_oversubscription, coarse, frozen, fill, include,
        )
        rounded_peak = math.inf if rounded is None else _peak(graph, paths, demand_gbps, rounded.weights)
        improved = rounded is not None and rounded_peak < peak
        if rounded is not None and improved:
            best, peak = rounded, rounded_peak
        if peak <= target_mlu * (1 + _EPS):
            return best
        if timed_out and not improved:
            break  # the next MILPs are as large or larger (a 64-block ring: 3 s each, no gain)
    if best.weights is not weights:
        staged.append(_stage(graph, paths, demand_gbps, best, tables, sources, switch_budget, target_mlu,
                             frozen))
    start = best
    for candidate in [*staged, start.weights]:
        if _peak(graph, paths, demand_gbps, candidate) >= peak and candidate is not start.weights:
            continue
        moved = _move_units(graph, paths, demand_gbps, candidate, target_mlu, frozen)
        moved_peak = _peak(graph, paths, demand_gbps, moved)
        if moved_peak < peak:
            best, peak = _with_split(start, moved), moved_peak
        if peak <= target_mlu * (1 + _EPS):
            break
    return best


def _stage(
    graph: LinkGraph,
    paths: CandidatePaths,
    demand_gbps: np.ndarray,
    plan: Repaired,
    tables: np.ndarray,
    sources: np.ndarray,
    switch_budget: int,
    target_mlu: float,
    frozen: np.ndarray,
) -> np.ndarray:
    """The fine groups at their finest weights, the coarse ones re-quantised each against
    the rest with bulk moves after (settled again while that lowers the peak), then if still
    above the target a search over the coarse groups' totals (optimizer.te.totalsearch)."""
    fixed = frozen | _coarse(graph, paths, demand_gbps, plan.weights, tables, frozen)
    staged = refill_fine(graph, paths, demand_gbps, plan.fractions, plan.weights, tables, sources,
                         switch_budget, target_mlu, fixed)
    coarse = fixed & ~frozen
    staged, peak = _settled(graph, paths, demand_gbps, staged, tables, sources, switch_budget, target_mlu,
                            coarse, frozen)
    if peak > target_mlu * (1 + _EPS):
        # Each coarse group's best answer to the others' rounded weights can stay far from the
        # plan where they are most of the load: round them all against the plan instead.
        rounded = round_against_plan(graph, paths, demand_gbps, plan.fractions, staged, tables, sources,
                                     switch_budget, coarse)
        rounded, rounded_peak = _settled(graph, paths, demand_gbps, rounded, tables, sources, switch_budget,
                                         target_mlu, coarse, frozen)
        if rounded_peak < peak:
            staged, peak = rounded, rounded_peak
    if peak > target_mlu * (1 + _EPS):
        staged = search_totals(graph, paths, demand_gbps, staged, tables, sources, switch_budget, target_mlu,
                               coarse, frozen)
    if _fits(plan.weights, demand_gbps, tables, sources, switch_budget) and not _fits(
        staged, demand_gbps, tables, sources, switch_budget
    ):
        log.warning("staged weights dropped: they break a table or the switch budget")
        return plan.weights
    return staged


def _settled(
    graph: LinkGraph,
    paths: CandidatePaths,
    demand_gbps: np.ndarray,
    weights: np.ndarray,
    tables: np.ndarray,
    sources: np.ndarray,
    switch_budget: int,
    target_mlu: float,
    coarse: np.ndarray,
    frozen: np.ndarray,
) -> tuple[np.ndarray, float]:
    """``weights`` settled (optimizer.te.slackmove.settle) again while the peak falls, and the peak."""
    peak = math.inf
    for _ in range(_SETTLE_ROUNDS):
        settled = settle(graph, paths, demand_gbps, weights, tables, sources, switch_budget, target_mlu,
                         coarse, frozen)
        settled_peak = _peak(graph, paths, demand_gbps, settled)
        if settled_peak >= peak * (1 - _EPS):
            break
        weights, peak = settled, settled_peak
        if peak <= target_mlu * (1 + _EPS):
            break
    return weights, peak


def _fits(
    weights: np.ndarray, demand_gbps: np.ndarray, tables: np.ndarray, sources: np.ndarray, switch_budget: int
) -> bool:
    """Weights non-negative, each group with demand at least one entry and within its table,
    each switch within the budget."""
    totals = weights.sum(axis=1)
    return bool(
        (weights >= 0).all()
        and (totals <= tables).all()
        and (totals[demand_gbps > 0] >= 1).all()
        and (np.bincount(sources, weights=totals) <= switch_budget).all()
    )


def _with_split(plan: Repaired, weights: np.ndarray) -> Repaired:
    """``weights`` with the split of ``plan``, except rows whose weights changed: theirs."""
    changed = (weights != plan.weights).any(axis=1)
    fractions = plan.fractions.copy()
    fractions[changed] = weights[changed] / weights[changed].sum(axis=1, keepdims=True)
    return Repaired(weights, fractions)


def _move_units(
    graph: LinkGraph,
    paths: CandidatePaths,
    demand_gbps: np.ndarray,
    weights: np.ndarray,
    target_mlu: float,
    frozen: np.ndarray,
) -> np.ndarray:
    """Single-unit moves off the hottest link while each lowers the links it touches."""
    weights = weights.copy()
    caps = graph.capacity_gbps
    movable = paths.valid & ~frozen[:, None] & (demand_gbps > 0)[:, None]
    rows, vias = np.nonzero(movable)
    entry_links = np.concatenate([paths.first[rows, vias], paths.second[rows, vias]])
    entry_ids = np.concatenate([np.arange(len(rows)), np.arange(len(rows))])
    keep = entry_links != NO_LINK
    order = np.argsort(entry_links[keep], kind="stable")
    by_link = entry_ids[keep][order]
    starts = np.searchsorted(entry_links[keep][order], np.arange(graph.n_links + 1))
    unit = demand_gbps / np.maximum(weights.sum(axis=1), 1)
    first_cap = np.append(caps, np.inf)[paths.first]
    second_cap = np.append(caps, np.inf)[paths.second]
    padded = np.append(_util(graph, paths, demand_gbps, weights), -np.inf)
    for _ in range(_MAX_MOVES):
        link = int(np.argmax(padded[:-1]))
        peak = padded[link]
        if peak <= target_mlu * (1 + _EPS):
            break
        entries = by_link[starts[link] : starts[link + 1]]
        entries = entries[weights[rows[entries], vias[entries]] > 0]
        if not len(entries):
            break
        k = rows[entries]
        # Every other member of each of those groups that avoids the hot link.
        dest_ok = movable[k] & (paths.first[k] != link) & (paths.second[k] != link)
        step = unit[k][:, None]
        new_first = padded[paths.first[k]] + step / first_cap[k]
        new_second = np.where(
            paths.second[k] != NO_LINK, padded[paths.second[k]] + step / second_cap[k], -np.inf
        )
        relieved = peak - unit[k] / caps[link]
        score = np.maximum(np.maximum(new_first, new_second), relieved[:, None])
        score = np.where(dest_ok, score, np.inf)
        best_entry, dest = divmod(int(np.argmin(score)), score.shape[1])
        if not score[best_entry, dest] < peak * (1 - 1e-9):
            break
        row, source_via = int(k[best_entry]), int(vias[entries[best_entry]])
        weights[row, source_via] -= 1
        weights[row, dest] += 1
        for via, sign in ((source_via, -1.0), (dest, 1.0)):
            for hop in (paths.first[row, via], paths.second[row, via]):
                if hop != NO_LINK:
                    padded[hop] += sign * unit[row] / caps[hop]
    return weights


def _peak(graph: LinkGraph, paths: CandidatePaths, demand_gbps: np.ndarray, weights: np.ndarray) -> float:
    util = _util(graph, paths, demand_gbps, weights)
    return float(util.max()) if len(util) else 0.0


def _util(
    graph: LinkGraph, paths: CandidatePaths, demand_gbps: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    return link_utilisation(graph, paths, demand_gbps, weights)


def _coarse(
    graph: LinkGraph,
    paths: CandidatePaths,
    demand_gbps: np.ndarray,
    weights: np.ndarray,
    tables: np.ndarray,
    frozen: np.ndarray,
) -> np.ndarray:
    """Rows with demand whose unit of a full table is over ``_COARSE`` of a link they use
    (and the frozen rows, whose weights are fixed anyway)."""
    padded_caps = np.append(graph.capacity_gbps, np.inf)
    narrowest = np.minimum(padded_caps[paths.first], padded_caps[paths.second])
    narrowest = np.where(paths.valid & (weights > 0), narrowest, np.inf).min(axis=1)
    active = demand_gbps > 0
    coarse: np.ndarray = active & (frozen | (demand_gbps / np.maximum(tables, 1) > _COARSE * narrowest))
    return coarse


def _round_jointly(
    graph: LinkGraph,
    paths: CandidatePaths,
    demand_gbps: np.ndarray,
    plan: Repaired,
    tables: np.ndarray,
    sources: np.ndarray,
    switch_budget: int,
    target_mlu: float,
    max_oversubscription: float,
    coarse: np.ndarray,
    frozen: np.ndarray,
    fill: bool,
    include: float,
) -> tuple[Repaired | None, bool]:
    """Re-plan the rows that cross a link near or above the target, every other row's load
    fixed, by one MILP minimising the link MLU: a coarse row's weights are integers over
    all its paths (keeping its total, or with ``fill`` filling its table where the switch
    has entries to spare: finer units); a fine row's split is continuous, then reduced to
    weights within a quarter of the over-subscription bound. None if it found nothing; and
    whether the MILP ran into its time limit."""
    weights = plan.weights
    util = _util(graph, paths, demand_gbps, weights)
    hot_links = np.append(util > target_mlu * include, False)
    crosses = paths.valid & (weights > 0) & (hot_links[paths.first] | hot_links[paths.second])
    rows = np.flatnonzero(crosses.any(axis=1) & ~frozen & (demand_gbps > 0))
    if not len(rows) or int(paths.valid[rows].sum()) > _MILP_MAX_COLUMNS:
        return None, False
    integer = coarse[rows]
    totals = weights.sum(axis=1)
    spare = switch_budget - np.bincount(sources, weights=totals, minlength=int(sources.max()) + 1)
    for row in rows[np.argsort(-demand_gbps[rows], kind="stable")].tolist() if fill else []:
        if not coarse[row]:
            continue
        extra = int(tables[row] - totals[row])
        if 0 < extra <= spare[sources[row]]:
            spare[sources[row]] -= extra
            totals[row] = tables[row]
    rest = weights.copy()
    rest[rows] = 0
    base_load = _util(graph, paths, demand_gbps, rest) * graph.capacity_gbps
    g_local, via = np.nonzero(paths.valid[rows])
    n = len(g_local)
    unit = (demand_gbps[rows] / totals[rows])[g_local]
    first = paths.first[rows[g_local], via]
    second = paths.second[rows[g_local], via]
    two = second != NO_LINK
    link_of = np.concatenate([first, second[two]])
    used, link_pos = np.unique(link_of, return_inverse=True)
    var_of = np.concatenate([np.arange(n), np.arange(n)[two]])
    coef = np.concatenate([unit, unit[two]])
    m = len(used)
    caps = graph.capacity_gbps[used]
    load_rows = sparse.csr_matrix(
        (np.concatenate([coef, -caps]), (np.concatenate([link_pos, np.arange(m)]),
                                          np.concatenate([var_of, np.full(m, n)]))),
        shape=(m, n + 1),
    )
    sum_rows = sparse.coo_matrix((np.ones(n), (g_local, np.arange(n))), shape=(len(rows), n + 1))
    matrix = sparse.vstack([load_rows, sum_rows])
    lower = np.concatenate([np.full(m, -np.inf), totals[rows]])
    upper = np.concatenate([-base_load[used], totals[rows]])
    upper_bounds = np.concatenate([totals[rows][g_local], [highspy.kHighsInf]]).astype(np.float64)
    # z is bounded below by the target less the fine rows' rounding: the search stops as soon
    # as it gets there.
    fine_bound = 1.0 + (max_oversubscription - 1.0) / 4
    lower_bounds = np.concatenate([np.zeros(n), [target_mlu / fine_bound]])
    start = None
    if not fill:  # the current weights are a feasible start: the MILP can only improve them
        current = weights[rows[g_local], via].astype(np.float64)
        start_load = np.asarray(load_rows[:, :n] @ current).ravel() + base_load[used]
        start = np.concatenate([current, [max(float((start_load / caps).max()), lower_bounds[-1])]])
    integrality = np.concatenate([integer[g_local], [False]])
    solution, timed_out = _solve_milp(matrix.tocsc(), lower, upper, lower_bounds, upper_bounds, integrality,
                                      start)
    if solution is None:
        return None, timed_out
    split = np.zeros((len(rows), weights.shape[1]))
    split[g_local, via] = np.maximum(solution[:n], 0.0)
    new = weights.copy()
    new[rows[integer]] = np.round(split[integer]).astype(np.int64)
    for table in np.unique(tables[rows[~integer]]).tolist():
        same = ~integer & (tables[rows] == table)
        new[rows[same]] = reduce_weights(split[same], int(table), fine_bound).weights
    if (np.bincount(sources, weights=new.sum(axis=1)) > switch_budget).any():
        return None, timed_out
    fractions = plan.fractions.copy()
    fractions[rows] = split / split.sum(axis=1, keepdims=True)
    return Repaired(new, fractions), timed_out


def _solve_milp(
    matrix: sparse.csc_matrix,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray,
    col_upper: np.ndarray,
    integrality: np.ndarray,
    start: np.ndarray | None,
) -> tuple[np.ndarray | None, bool]:
    """min z (the last column) with the ``integrality`` columns integer; the best solution
    found within ``_MILP_SECONDS`` (or None), and whether the time limit stopped it."""
    cols = matrix.shape[1]
    highs = _Highs()  # the thin binding: the wrapper prints a banner to stdout
    for option, value in (
        ("output_flag", False),
        ("threads", 1),
        ("time_limit", _MILP_SECONDS),
        ("mip_max_nodes", _MILP_NODES),
        ("mip_rel_gap", 1e-4),
    ):
        highs.setOptionValue(option, value)
    objective = np.zeros(cols)
    objective[-1] = 1.0
    inf = highspy.kHighsInf
    status = highs.passModel(
        cols,
        matrix.shape[0],
        matrix.nnz,
        int(highspy.MatrixFormat.kColwise),
        int(highspy.ObjSense.kMinimize),
        0.0,
        objective,
        col_lower,
        col_upper,
        np.where(np.isfinite(row_lower), row_lower, -inf),
        np.where(np.isfinite(row_upper), row_upper, inf),
        matrix.indptr.astype(np.int32),
        matrix.indices.astype(np.int32),
        matrix.data.astype(np.float64),
        integrality.astype(np.int32),
    )
    if status == highspy.HighsStatus.kError:
        return None, False
    if start is not None:
        given = highspy.HighsSolution()
        given.col_value = start.tolist()
        given.value_valid = True
        highs.setSolution(given)
    highs.run()
    timed_out = highs.getModelStatus() == highspy.HighsModelStatus.kTimeLimit
    if highs.getInfo().primal_solution_status != highspy.SolutionStatus.kSolutionStatusFeasible:
        return None, timed_out
    return np.asarray(highs.getSolution().col_value), timed_out
