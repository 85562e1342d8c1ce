"""Integer WCMP weights that fit a group-table budget, after Zhou et al. (EuroSys'14).

A group wants to split its traffic in fractions ``f_i``; the switch can only split by
integer weights ``w_i`` (one table entry per unit of weight). Member i then receives
``w_i / W`` of the traffic (``W = sum w_i``), and its *over-subscription* is
``(w_i / W) / f_i``: how much more than planned it carries. The group's over-subscription
is the maximum over its members; it bounds how far any link's load can rise above the LP
plan, so ``quantised MLU <= LP MLU * max over-subscription``.

For a fixed total W the best weights come from handing out the W units one at a time to
the member with the smallest ``(w_i + 1) / f_i`` (the W smallest values of all
``k / f_i`` are exactly the units any assignment must pay for, so no assignment has a
smaller maximum). The group's over-subscription at W is then ``v_W / W`` with ``v_W`` the
W-th smallest ``k / f_i``. It is not monotone in W, so every W up to the budget is
evaluated (vectorised over groups) and the smallest W whose over-subscription stays
within the bound wins; if none does, the W with the least over-subscription.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optimizer.errors import ConfigError

DEFAULT_TABLE_SIZE = 128
DEFAULT_MAX_OVERSUBSCRIPTION = 1.02
_CHUNK_ELEMENTS = 4_000_000  # bounds the temporary (groups x members x budget) array
_RELATIVE_EPS = 1e-12


@dataclass(frozen=True)
class ReducedWeights:
    """Integer weights per group (rows), with the over-subscription they cause."""

    weights: np.ndarray  # (G, M) int64; row sums <= the table size
    oversubscription: np.ndarray  # (G,) >= 1; 1 for groups with no traffic fractions


def reduce_weights(
    fractions: np.ndarray,
    table_size: int = DEFAULT_TABLE_SIZE,
    max_oversubscription: float = DEFAULT_MAX_OVERSUBSCRIPTION,
    fill: bool = False,
) -> ReducedWeights:
    """Smallest integer weights per row of ``fractions`` whose over-subscription is in bound.

    ``fractions`` is (G, M), non-negative; each non-zero row is normalised to sum 1.
    All-zero rows get all-zero weights. With ``fill``, every active row instead gets the
    best weights that use the whole table (the finest units; the bound is ignored).
    """
    if table_size < 1:
        raise ConfigError("<te>", "table_size", f"must be >= 1, got {table_size}")
    if not max_oversubscription >= 1.0:
        raise ConfigError("<te>", "max_oversubscription", f"must be >= 1, got {max_oversubscription}")
    fractions = np.asarray(fractions, dtype=np.float64)
    groups, members = fractions.shape
    totals = fractions.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        normalised = np.where(totals[:, None] > 0, fractions / totals[:, None], 0.0)
    weights = np.zeros((groups, members), dtype=np.int64)
    oversub = np.ones(groups)
    active_rows = np.flatnonzero(totals > 0)
    if not len(active_rows):
        return ReducedWeights(weights, oversub)
    # Compact each row's non-zero fractions to the left, largest first, and take the rows
    # by member count, so that each chunk is only as wide as it must be.
    active = normalised[active_rows]
    order = np.argsort(-active, axis=1, kind="stable")
    compact = np.take_along_axis(active, order, axis=1)
    counts = (compact > 0).sum(axis=1)
    for width in np.unique(counts).tolist():
        same_width = np.flatnonzero(counts == width)
        chunk = max(1, _CHUNK_ELEMENTS // (width * table_size))
        for start in range(0, len(same_width), chunk):
            rows = same_width[start : start + chunk]
            w, o = _reduce_compact(compact[rows, :width], table_size, max_oversubscription, fill)
            full = np.zeros((len(rows), members), dtype=np.int64)
            np.put_along_axis(full, order[rows, :width], w, axis=1)
            weights[active_rows[rows]] = full
            oversub[active_rows[rows]] = o
    return ReducedWeights(weights, oversub)


def _reduce_compact(
    fractions: np.ndarray, table_size: int, bound: float, fill: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The reduction for rows whose non-zero fractions come first, sorted descending."""
    groups, width = fractions.shape
    k = np.arange(1, table_size + 1, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore"):
        unit_costs = k[None, None, :] / fractions[:, :, None]  # inf for absent members
    unit_costs = unit_costs.reshape(groups, width * table_size)
    if unit_costs.shape[1] > table_size:
        unit_costs.partition(table_size - 1, axis=1)
        unit_costs = unit_costs[:, :table_size]
    unit_costs.sort(axis=1)  # v_1 <= v_2 <= ... <= v_T
    totals = np.arange(1, table_size + 1, dtype=np.float64)
    oversub_at = unit_costs / totals[None, :]  # over-subscription with W units in the table
    within = oversub_at <= bound * (1.0 + _RELATIVE_EPS)
    # Otherwise the smallest W whose over-subscription is the least (up to rounding).
    least = oversub_at.min(axis=1, keepdims=True)
    best = np.argmax(oversub_at <= least * (1.0 + 1e-9), axis=1)
    chosen = np.where(within.any(axis=1), np.argmax(within, axis=1), best)
    if fill:
        chosen = np.full(groups, table_size - 1)
    total = chosen + 1
    threshold = unit_costs[np.arange(groups), chosen]
    weights = np.floor(threshold[:, None] * fractions * (1.0 + _RELATIVE_EPS)).astype(np.int64)
    weights = np.minimum(weights, table_size)
    _trim_ties(weights, fractions, total)
    achieved = _oversubscription(weights, fractions)
    return weights, achieved


def _trim_ties(weights: np.ndarray, fractions: np.ndarray, total: np.ndarray) -> None:
    """Members tied at the threshold can overshoot W: take units back from the most loaded."""
    excess = weights.sum(axis=1) - total
    for g in np.flatnonzero(excess > 0):
        for _ in range(int(excess[g])):
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(weights[g] > 0, weights[g] / fractions[g], -np.inf)
            weights[g, int(np.argmax(ratio))] -= 1


def _oversubscription(weights: np.ndarray, fractions: np.ndarray) -> np.ndarray:
    """Weight on a member that should get nothing is an infinite over-subscription."""
    total = weights.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        share = weights / np.maximum(total, 1)[:, None]
        ratio = np.where(fractions > 0, share / fractions, np.where(weights > 0, np.inf, 0.0))
    ratio_max: np.ndarray = np.maximum(ratio.max(axis=1), 1.0)
    return ratio_max


def oversubscription(weights: np.ndarray, fractions: np.ndarray) -> np.ndarray:
    """Per row: max over members of (w_i / sum w) / f_i, with ``fractions`` normalised per row."""
    fractions = np.asarray(fractions, dtype=np.float64)
    totals = fractions.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        normalised = np.where(totals > 0, fractions / totals, 0.0)
    return _oversubscription(np.asarray(weights), normalised)
