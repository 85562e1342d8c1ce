"""The staging of the link repair (:mod:`optimizer.te.linkfit`), before any MILP: fine
groups at their finest weights, coarse groups re-quantised, bulk moves, a search over totals."""

from __future__ import annotations

import logging
import math

import numpy as np

from optimizer.te.bulkmoves import peak_utilisation
from optimizer.te.linkmilp import Repaired
from optimizer.te.repair_inputs import RepairInputs
from optimizer.te.slackmove import refill_fine, round_against_plan, settle
from optimizer.te.totalsearch import search_totals

log = logging.getLogger(__name__)

_COARSE = 0.005  # a group is coarse when one entry of a full table is this much of a link
_SETTLE_ROUNDS = 3  # re-quantise-and-move rounds of the staging (a 64-block ring needs two)
_EPS = 1e-12


def stage(inputs: RepairInputs, plan: Repaired, frozen: np.ndarray) -> np.ndarray:
    """The fine groups at their finest weights, the coarse ones re-quantised each against
    the rest with bulk moves after (settled again while that lowers the peak), then if still
    above the target a search over the coarse groups' totals (optimizer.te.totalsearch)."""
    target_mlu = inputs.target_mlu
    fixed = frozen | coarse_rows(inputs, plan.weights, frozen)
    staged = refill_fine(inputs, plan.fractions, plan.weights, fixed)
    coarse = fixed & ~frozen
    staged, peak = _settled(inputs, staged, coarse, frozen)
    if peak > target_mlu * (1 + _EPS):
        # Each coarse group's best answer to the others' rounded weights can stay far from the
        # plan where they are most of the load: round them all against the plan instead.
        rounded = round_against_plan(inputs, plan.fractions, staged, coarse)
        rounded, rounded_peak = _settled(inputs, rounded, coarse, frozen)
        if rounded_peak < peak:
            staged, peak = rounded, rounded_peak
    if peak > target_mlu * (1 + _EPS):
        staged = search_totals(inputs, staged, coarse, frozen)
    if _fits(inputs, plan.weights) and not _fits(inputs, staged):
        log.warning("staged weights dropped: they break a table or the switch budget")
        return plan.weights
    return staged


def _settled(
    inputs: RepairInputs, weights: np.ndarray, coarse: np.ndarray, frozen: np.ndarray
) -> tuple[np.ndarray, float]:
    """``weights`` settled (optimizer.te.slackmove.settle) again while the peak falls, and the peak."""
    peak = math.inf
    for _ in range(_SETTLE_ROUNDS):
        settled = settle(inputs, weights, coarse, frozen)
        settled_peak = peak_utilisation(inputs.graph, inputs.paths, inputs.demand_gbps, settled)
        if settled_peak >= peak * (1 - _EPS):
            break
        weights, peak = settled, settled_peak
        if peak <= inputs.target_mlu * (1 + _EPS):
            break
    return weights, peak


def _fits(inputs: RepairInputs, weights: np.ndarray) -> bool:
    """Weights non-negative, each group with demand at least one entry and within its table,
    each switch within the budget."""
    totals = weights.sum(axis=1)
    return bool(
        (weights >= 0).all()
        and (totals <= inputs.tables).all()
        and (totals[inputs.demand_gbps > 0] >= 1).all()
        and (np.bincount(inputs.sources, weights=totals) <= inputs.switch_budget).all()
    )


def coarse_rows(inputs: RepairInputs, weights: np.ndarray, frozen: np.ndarray) -> np.ndarray:
    """Rows with demand whose unit of a full table is over ``_COARSE`` of a link they use
    (and the frozen rows, whose weights are fixed anyway)."""
    paths, demand_gbps, tables = inputs.paths, inputs.demand_gbps, inputs.tables
    padded_caps = np.append(inputs.graph.capacity_gbps, np.inf)
    narrowest = np.minimum(padded_caps[paths.first], padded_caps[paths.second])
    narrowest = np.where(paths.valid & (weights > 0), narrowest, np.inf).min(axis=1)
    active = demand_gbps > 0
    coarse: np.ndarray = active & (frozen | (demand_gbps / np.maximum(tables, 1) > _COARSE * narrowest))
    return coarse
