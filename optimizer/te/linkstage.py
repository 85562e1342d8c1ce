"""The staging of the link repair (:mod:`optimizer.te.linkfit`), before any MILP: fine
groups at their finest weights, coarse groups re-quantised, bulk moves, a search over totals."""

from __future__ import annotations

import logging
import math

import numpy as np

from optimizer.te.bulkmoves import peak_utilisation
from optimizer.te.linkmilp import Repaired
from optimizer.te.paths import CandidatePaths, LinkGraph
from optimizer.te.slackmove import refill_fine, round_against_plan, settle
from optimizer.te.totalsearch import search_totals

log = logging.getLogger(__name__)

_COARSE = 0.005  # a group is coarse when one entry of a full table is this much of a link
_SETTLE_ROUNDS = 3  # re-quantise-and-move rounds of the staging (a 64-block ring needs two)
_EPS = 1e-12


def stage(
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
    fixed = frozen | coarse_rows(graph, paths, demand_gbps, plan.weights, tables, frozen)
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
        settled_peak = peak_utilisation(graph, paths, demand_gbps, settled)
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


def coarse_rows(
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
