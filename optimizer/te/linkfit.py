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

import itertools
import math

import numpy as np

from optimizer.errors import ConfigError
from optimizer.te.bulkmoves import link_utilisation, peak_utilisation
from optimizer.te.linkmilp import Repaired, round_jointly
from optimizer.te.linkstage import coarse_rows, stage
from optimizer.te.paths import NO_LINK, CandidatePaths, LinkGraph, entries_by_link
from optimizer.te.repair_inputs import RepairInputs
from optimizer.te.wcmp import reduce_weights

__all__ = ["DEFAULT_SWITCH_BUDGET", "Repaired", "fit_switch_budget", "repair_link_loads"]

DEFAULT_SWITCH_BUDGET = 49_152
"""Weight entries a switch holds over all its groups (PINS's fabric switch)."""

_INCLUDE = (1.0, 0.97)  # rows crossing a link above this share of the target are re-rounded: the
# links over the target alone first (a small MILP), then with those close to it
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
    peak = peak_utilisation(graph, paths, demand_gbps, weights)
    if peak <= target_mlu * (1 + _EPS):
        return Repaired(weights, fractions)
    best = Repaired(weights, fractions)
    inputs = RepairInputs(graph, paths, demand_gbps, tables, sources, switch_budget, target_mlu)
    # The cheap stages first (optimizer.te.slackmove); the rounding MILP only if they fall short.
    staged = [stage(inputs, best, frozen)]
    if peak_utilisation(graph, paths, demand_gbps, staged[0]) <= target_mlu * (1 + _EPS):
        return _with_split(best, staged[0])
    coarse = coarse_rows(inputs, weights, frozen)
    for include, fill in itertools.product(_INCLUDE, (False, True)):
        rounded, timed_out = round_jointly(inputs, best, max_oversubscription, coarse, frozen, fill, include)
        rounded_peak = (math.inf if rounded is None
                        else peak_utilisation(graph, paths, demand_gbps, rounded.weights))
        improved = rounded is not None and rounded_peak < peak
        if rounded is not None and improved:
            best, peak = rounded, rounded_peak
        if peak <= target_mlu * (1 + _EPS):
            return best
        if timed_out and not improved:
            break  # the backstop cut it: the next MILPs are as large or larger
    if best.weights is not weights:
        staged.append(stage(inputs, best, frozen))
    start = best
    for candidate in [*staged, start.weights]:
        if peak_utilisation(graph, paths, demand_gbps, candidate) >= peak and candidate is not start.weights:
            continue
        moved = _move_units(graph, paths, demand_gbps, candidate, target_mlu, frozen)
        moved_peak = peak_utilisation(graph, paths, demand_gbps, moved)
        if moved_peak < peak:
            best, peak = _with_split(start, moved), moved_peak
        if peak <= target_mlu * (1 + _EPS):
            break
    return best


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
    index = entries_by_link(paths, graph.n_links, movable)
    rows, vias = index.rows, index.vias
    unit = demand_gbps / np.maximum(weights.sum(axis=1), 1)
    first_cap = np.append(caps, np.inf)[paths.first]
    second_cap = np.append(caps, np.inf)[paths.second]
    padded = np.append(link_utilisation(graph, paths, demand_gbps, weights), -np.inf)
    for _ in range(_MAX_MOVES):
        link = int(np.argmax(padded[:-1]))
        peak = padded[link]
        if peak <= target_mlu * (1 + _EPS):
            break
        entries = index.on(link)
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


