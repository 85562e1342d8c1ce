"""Column generation for the topology LP: which transit paths enter it, and when.

A matrix has ``n^3`` transit paths ``s -> k -> d``; few carry flow. The LP starts with the
direct and spine paths and a seed of transit paths (:func:`seed_transit_paths`); each round
then prices every absent transit path under the current duals and adds the most negative
reduced costs (:func:`price_transit_paths`), until none is negative: the optimum over all
paths. Pure array functions; :class:`~optimizer.toe.lp.solver.ToeLp` runs the rounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optimizer.toe.lp.build import RowLayout, ToeProblem

RC_TOL = 1e-7
#: Transit paths added per column generation round (about), shared between the matrices.
ROUND_BUDGET = 16384
_SEED_ALL_UP_TO = 24  # blocks: below this every transit path is in the LP from the start
_SEED_PER_COMMODITY = 6  # with L fixed (evaluation), where pricing alone converges slowly
_SEED_FREE_L = 0  # with L free, pricing converges in a few rounds and extra columns slow HiGHS


@dataclass(frozen=True)
class NewPaths:
    """Transit paths to add: matrix, source, transit block and destination per path."""

    m: np.ndarray
    s: np.ndarray
    k: np.ndarray
    d: np.ndarray

    def __len__(self) -> int:
        return len(self.s)


def invalid_transit(n: int) -> np.ndarray:
    """``[s, k, d]`` combinations that are not transit paths (s == k, k == d or s == d)."""
    eye = np.eye(n, dtype=bool)
    return eye[:, :, None] | eye[None, :, :] | eye[:, None, :]


def seed_transit_paths(layout: RowLayout, problem: ToeProblem) -> list[NewPaths]:
    """Every commodity's widest transit paths on a reference topology, per matrix.

    Max-scale duals sit on the bottleneck commodities only, so pricing alone adds few
    paths per round; seeding the widest paths (by min(L[s,k], L[k,d]) on the fixed or
    today's topology) makes the first LP nearly optimal. Small fabrics get every path.
    """
    n = layout.n
    if n < 3:
        return []
    ref = (problem.fixed if problem.fixed is not None else problem.current).astype(np.float64)
    width = np.minimum(ref[:, :, None], ref[None, :, :])  # [s, k, d]
    width = np.where(invalid_transit(n), -1.0, width)
    per_commodity = _SEED_PER_COMMODITY if problem.fixed is not None else _SEED_FREE_L
    take = n - 2 if n <= _SEED_ALL_UP_TO else min(per_commodity, n - 2)
    if take <= 0:
        return []
    best_k = np.argpartition(-width, take - 1, axis=1)[:, :take, :]
    grid = np.indices(best_k.shape)  # (s, k, d) index arrays
    s_idx, d_idx = grid[0], grid[2]
    seeds = []
    for m in range(layout.n_matrices):
        keep = (layout.dem_row[m][s_idx, d_idx] >= 0) & (width[s_idx, best_k, d_idx] >= 0)
        if n > _SEED_ALL_UP_TO:
            keep &= width[s_idx, best_k, d_idx] > 0
        s, k, d = s_idx[keep], best_k[keep], d_idx[keep]
        seeds.append(NewPaths(np.full(len(s), m), s, k, d))
    return seeds


def price_transit_paths(
    layout: RowLayout,
    duals: np.ndarray,
    present: np.ndarray,
    transit_cost: np.ndarray,
    transit_weight: np.ndarray,
    stretch_row: int,
) -> NewPaths:
    """The absent transit paths with negative reduced cost, at most a share of
    :data:`ROUND_BUDGET` per matrix and at least 4 per commodity that has any (more when a
    matrix has few commodities, as a ring has).

    The reduced cost of ``s -> k -> d`` is ``c - (-y_dem[s,d] + y_link[s,k] + y_link[k,d])``
    (minus the stretch row's dual times the path's weight there, once stage 3 added it).
    """
    n = layout.n
    invalid = invalid_transit(n)
    new_m, new_s, new_k, new_d = [], [], [], []
    for m in range(layout.n_matrices):
        rows = layout.dem_row[m]
        commodities = max(int((rows >= 0).sum()), 1)
        per_matrix_budget = ROUND_BUDGET // layout.n_matrices
        max_new_per_commodity = max(4, -(-per_matrix_budget // commodities))
        y_dem = np.where(rows >= 0, duals[np.maximum(rows, 0)], 0.0)
        y_link = duals[layout.link_base + m * n * n : layout.link_base + (m + 1) * n * n].reshape(n, n)
        rc = transit_cost[m] + y_dem[:, None, :] - y_link[:, :, None] - y_link[None, :, :]
        if stretch_row >= 0:
            rc = rc - duals[stretch_row] * transit_weight[m]
        bad = invalid | (rows < 0)[:, None, :] | present[m]
        rc = np.where(bad, np.inf, rc)
        take = min(max_new_per_commodity, n)
        if n > take:
            best_k = np.argpartition(rc, take - 1, axis=1)[:, :take, :]
            grid = np.indices(best_k.shape)  # (s, k, d) index arrays
            s_idx, d_idx = grid[0], grid[2]
            keep = rc[s_idx, best_k, d_idx] < -RC_TOL
            s, k, d = s_idx[keep], best_k[keep], d_idx[keep]
        else:
            s, k, d = np.nonzero(rc < -RC_TOL)
        if len(s):
            new_m.append(np.full(len(s), m))
            new_s.append(s)
            new_k.append(k)
            new_d.append(d)
    if not new_s:
        empty = np.zeros(0, dtype=np.int64)
        return NewPaths(empty, empty, empty, empty)
    return NewPaths(
        np.concatenate(new_m), np.concatenate(new_s), np.concatenate(new_k), np.concatenate(new_d)
    )
