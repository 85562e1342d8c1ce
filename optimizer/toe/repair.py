"""Repairing a rounded topology that left a block with free ports, checked by traffic engineering.

Rounding (:mod:`optimizer.toe.rounding`) never goes below the floor of the relaxation (nor, under
a change limit, below today's circuits): it joins blocks that both have free ports and splices
a lone block into a circuit of a pair it rounded up. So it can leave one block with free
ports when every other block is full and no pair is above that floor (all of the block's
relaxed links were fractional, or the change limit put today's circuits back). No circuit can
be added then, but trading one circuit x-y for x-b and y-b gives block ``b`` two of its ports
at no port cost to x and y. Whether that helps depends on the traffic, so a trade is kept only
when the scale factor of the planned demand (1 / worst MLU over the matrices) goes up.

Only block ``b``'s degree changes (by two, within its free ports), so the result stays within
every block's port budget, which is what makes a topology realisable on the OCSes (see
:mod:`optimizer.toe.rounding` for why, including the odd shares on ``sides: any`` OCSes).
Pure: no I/O; the evaluation is a parameter.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from optimizer.toe.rounding import least_loaded_pair, removed_count, splice

log = logging.getLogger(__name__)

#: counts -> the scale factor of the planned demand on that topology (higher is better).
ScaleFunction = Callable[[np.ndarray], float]

#: A trade must raise the scale factor by this fraction: less is solver noise.
MIN_GAIN = 1e-6


@dataclass(frozen=True)
class Trade:
    """Block ``block`` got circuits to both ends of ``given_up``, which lost one."""

    block: int
    given_up: tuple[int, int]
    scale_before: float
    scale_after: float


@dataclass(frozen=True)
class Repair:
    counts: np.ndarray
    trades: tuple[Trade, ...]
    scale: float | None  # the scale factor of ``counts`` if it was evaluated, else None


def repair_starved_blocks(
    counts: np.ndarray,
    budget: np.ndarray,
    current: np.ndarray,
    demand: np.ndarray,
    scale_of: ScaleFunction,
    max_removed: int | None = None,
    names: Sequence[str] | None = None,
) -> Repair:
    """Give a block's free ports (two at a time) circuits taken from the least loaded pair,
    while that raises ``scale_of``.

    ``counts`` is a rounded symmetric L within ``budget``; ``demand`` the (combined) predicted
    matrix, used to pick the pair per circuit least used; ``current`` and ``max_removed`` the
    change limit, which a trade never breaks. A pair keeps at least one circuit. Evaluates
    nothing when no block has two free ports. ``names`` (the blocks') are for the log.
    """
    counts = np.array(counts, dtype=np.int64)
    label = [str(i) for i in range(counts.shape[0])] if names is None else list(names)
    if not (budget - counts.sum(axis=1) >= 2).any():
        return Repair(counts, (), None)
    best = scale_of(counts)
    trades: list[Trade] = []
    for _ in range(int(budget.sum()) // 2):
        spare = budget - counts.sum(axis=1)
        b = int(np.argmax(spare))
        if spare[b] < 2:
            break
        pair = _least_loaded_pair(counts, b, demand, current, max_removed)
        if pair is None:
            break
        trial = _trade(counts, b, pair)
        scale = scale_of(trial)
        if not scale > best * (1 + MIN_GAIN):
            log.info(
                "toe repair: %s keeps %d free ports (a %s-%s circuit for two: scale %.4f, not above %.4f)",
                label[b],
                spare[b],
                label[pair[0]],
                label[pair[1]],
                scale,
                best,
            )
            break
        log.info(
            "toe repair: %s had %d free ports; traded a %s-%s circuit for two (scale %.4f -> %.4f)",
            label[b],
            spare[b],
            label[pair[0]],
            label[pair[1]],
            best,
            scale,
        )
        trades.append(Trade(b, pair, best, scale))
        counts, best = trial, scale
    return Repair(counts, tuple(trades), best)


def _least_loaded_pair(
    counts: np.ndarray, b: int, demand: np.ndarray, current: np.ndarray, max_removed: int | None
) -> tuple[int, int] | None:
    """The pair x < y (neither ``b``) with at least two circuits and the least demand per circuit
    whose trade keeps the change limit, or None."""
    eligible = counts >= 2
    if max_removed is not None:
        # removing x-y removes one of today's circuits when x-y is not above today's count;
        # adding b-x (b-y) puts one back when it is below today's count
        lost = (counts <= current).astype(np.int64)
        back = (counts[b] < current[b]).astype(np.int64)
        change = lost - back[:, None] - back[None, :]
        eligible &= removed_count(current, counts) + change <= max_removed
    return least_loaded_pair(counts, b, demand, eligible)


def _trade(counts: np.ndarray, b: int, pair: tuple[int, int]) -> np.ndarray:
    trial = counts.copy()
    splice(trial, b, pair)
    return trial
