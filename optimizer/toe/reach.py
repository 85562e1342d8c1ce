"""Keeping every demand pair within two hops after rounding.

Traffic engineering routes a pair directly or through one transit block (or a spine). The LP's
relaxation gives every pair with demand such a path, but with a sliver of a circuit where the
demand is small (the background between blocks whose jobs want all their uplinks elsewhere);
rounding floors those slivers to nothing and can leave a pair with no path of one or two hops
at all: TE then finds the topology infeasible and the whole plan is thrown away.

:func:`reach_two_hops` mends that with degree-preserving swaps: block ``i`` with unreachable
destinations gives up one circuit of its largest pair ``i-x``, a block ``z`` chosen to cover
most of them gives up one of ``z-y``, and ``i-z`` and ``x-y`` are added. Every block keeps its
degree (so its port budget holds), no pair goes below one circuit (so nothing reachable becomes
unreachable), and each swap makes at least one more of ``i``'s destinations reachable. Pure.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from optimizer.toe.rounding import removed_count

log = logging.getLogger(__name__)


def unreachable_pairs(counts: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """Boolean [n, n]: pairs with demand (either way) and no path of one or two circuits."""
    adj = (counts > 0).astype(np.int64)
    reach = (adj > 0) | ((adj @ adj) > 0)
    need = (demand + demand.T) > 0
    np.fill_diagonal(need, False)
    out: np.ndarray = need & ~reach
    return out


def reach_two_hops(
    counts: np.ndarray,
    demand: np.ndarray,
    current: np.ndarray | None = None,
    max_removed: int | None = None,
    names: Sequence[str] | None = None,
) -> tuple[np.ndarray, int]:
    """``counts`` with swaps until every pair with demand has a path of at most two circuits
    (or no swap can help, or one would remove more than ``max_removed`` of ``current``'s
    circuits); returns the counts and the number of swaps made."""
    counts = np.array(counts, dtype=np.int64)
    label = [str(i) for i in range(counts.shape[0])] if names is None else list(names)
    swaps = 0
    for _ in range(counts.shape[0] ** 2):
        missing = unreachable_pairs(counts, demand)
        if not missing.any():
            break
        trial = _best_swap(counts, missing, current, max_removed)
        if trial is None:
            log.warning("toe: %d block pairs have no path of two hops and no swap gives one",
                        int(missing.sum()) // 2)
            break
        counts, (i, z) = trial
        swaps += 1
        log.info("toe: circuit %s-%s added (a swap) so that %s reaches its peers in two hops",
                 label[i], label[z], label[i])
    return counts, swaps


def _best_swap(
    counts: np.ndarray, missing: np.ndarray, current: np.ndarray | None, max_removed: int | None
) -> tuple[np.ndarray, tuple[int, int]] | None:
    adj = (counts > 0).astype(np.int64)
    i = int(np.argmax(missing.sum(axis=1)))
    want = missing[i].astype(np.int64)
    cover = want + adj @ want  # destinations of i that a circuit i-z makes reachable
    cover[i] = -1
    for z in np.argsort(-cover, kind="stable"):
        z = int(z)
        if cover[z] <= 0:
            return None
        x = _largest_pair(counts, i, exclude=(z,))
        if x is None:
            return None
        y = _largest_pair(counts, z, exclude=(i, x))
        if y is None:
            continue
        trial = counts.copy()
        for a, b, step in ((i, x, -1), (z, y, -1), (i, z, 1), (x, y, 1)):
            trial[a, b] += step
            trial[b, a] += step
        if current is not None and max_removed is not None and removed_count(current, trial) > max_removed:
            continue
        return trial, (i, z)
    return None


def _largest_pair(counts: np.ndarray, a: int, exclude: tuple[int, ...]) -> int | None:
    """The peer of ``a`` it shares the most circuits with, at least two, not in ``exclude``."""
    row = counts[a].astype(np.float64).copy()
    row[list(exclude)] = -1
    b = int(np.argmax(row))
    return b if row[b] >= 2 else None
