"""Reading the topology LP's answer back: circuit counts, stretch and removals.

Pure functions over the solution vector HiGHS returns and the path columns in the LP
(:class:`PathIndex`); :class:`~optimizer.toe.lp.solver.ToeLp` calls them after each run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optimizer.toe.lp.build import RowLayout


@dataclass(frozen=True)
class Relaxation:
    theta: float  # the scale factor of the solution read back
    counts: np.ndarray  # n x n continuous circuit counts
    transit_share: float  # share of routed traffic that crosses a transit block
    removed: float  # sum over pairs of max(0, current - L)
    columns: int  # path columns in the LP at the end
    rounds: int  # column generation rounds


class PathIndex:
    """The path columns in the LP, in column order: matrix, source, via and destination each."""

    def __init__(self, n: int, n_matrices: int) -> None:
        self.n = n
        self._m: list[np.ndarray] = []
        self._s: list[np.ndarray] = []
        self._k: list[np.ndarray] = []  # -1 direct, 0..n-1 transit block, n + j spine j
        self._d: list[np.ndarray] = []
        self.present = np.zeros((n_matrices, n, n, n), dtype=bool)  # transit columns in the LP
        self._cache: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def add(self, m: np.ndarray, s: np.ndarray, k: np.ndarray, d: np.ndarray) -> None:
        self._m.append(m)
        self._s.append(s)
        self._k.append(k)
        self._d.append(d)
        self._cache = None
        transit = (k >= 0) & (k < self.n)
        if transit.any():
            self.present[m[transit], s[transit], k[transit], d[transit]] = True

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        if not self._m:
            return None
        if self._cache is None:
            self._cache = (
                np.concatenate(self._m),
                np.concatenate(self._s),
                np.concatenate(self._k),
                np.concatenate(self._d),
            )
        return self._cache

    def transit(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(matrix of each transit column, mask of transit columns among the path columns)."""
        flows = self.arrays()
        if flows is None:
            return None
        m, _, k, _ = flows
        mask = (k >= 0) & (k < self.n)
        return m[mask], mask


def weighted_transit(values: np.ndarray, paths: PathIndex, n_fixed: int, weight: np.ndarray) -> float:
    """Stage 2's measure: transit flow, each matrix's weighted by ``weight[m]``."""
    transit = paths.transit()
    if transit is None:
        return 0.0
    m, mask = transit
    x = values[n_fixed:]
    return float((x[mask] * weight[m]).sum())


def read_relaxation(
    values: np.ndarray, layout: RowLayout, paths: PathIndex, current: np.ndarray, rounds: int
) -> Relaxation:
    """The solution ``values`` as circuit counts, transit share and removed circuits."""
    n, pi, pj = layout.n, layout.pi, layout.pj
    counts = np.zeros((n, n))
    lv = values[layout.l_base : layout.l_base + layout.n_pairs]
    counts[pi, pj] = lv
    counts[pj, pi] = lv
    share = 0.0
    columns = 0
    transit = paths.transit()
    if transit is not None:
        _, mask = transit
        x = values[layout.n_fixed_cols :]
        columns = len(x)
        total = float(x.sum())
        share = float(x[mask].sum()) / total if total > 0 else 0.0
    removed = float(np.maximum(current[pi, pj] - lv, 0.0).sum())
    return Relaxation(float(values[layout.theta_col]), counts, share, removed, columns, rounds)
