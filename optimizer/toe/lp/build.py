"""Building the topology LP: where its rows are, and one function per constraint family.

Rows, in order (:class:`RowLayout` computes their indices once):

- demand rows, per matrix ``m`` and commodity ``(s, d)``: ``theta * D[s,d] <= sum of the
  commodity's path flows`` (:func:`theta_column` puts ``D`` on them, the path columns ``-1``);
- link rows, per matrix and directed block link ``(i, j)``: ``flows over it <= speed(i,j) *
  L[pair(i,j)]`` (:func:`circuit_columns` puts ``-speed`` on them);
- spine rows, per matrix: flows up and down each spine link within its fixed capacity
  (:func:`define_spine_capacity`);
- port rows, per block: its circuits within its port budget (:func:`define_port_budget`);
- removal rows, per pair: ``L + d >= today's count``, so ``d`` counts removed circuits
  (:func:`define_removals`);
- mesh rows (with a mesh weight), per pair: ``u >= |L - L_mesh|`` (:func:`define_mesh_distance`);
- the change row (with a change limit): ``sum d <= max_removed`` (:func:`define_change_limit`).

Columns: ``theta``, ``L`` and ``d`` per pair, ``u`` per pair with a mesh weight
(:func:`fixed_columns`), then path columns (:func:`path_column_arrays`), which column
generation (:mod:`optimizer.toe.lp.columns`) adds as they pay off. Everything here returns
arrays; :class:`~optimizer.toe.lp.solver.ToeLp` hands them to HiGHS.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import highspy
import numpy as np

INF = highspy.kHighsInf

#: (rows, values) of one column.
Column = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class ToeProblem:
    """Everything the relaxation needs, as arrays over the fabric's blocks (index order)."""

    speed: np.ndarray  # n x n: Gbit/s of one circuit between i and j
    budget: np.ndarray  # n: OCS ports each block may use for circuits
    demands: tuple[np.ndarray, ...]  # one n x n Gbit/s matrix per predicted matrix
    current: np.ndarray  # n x n: today's circuit counts
    mesh: np.ndarray  # n x n: the uniform mesh's circuit counts
    spine_capacity: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # n x spines, Gbit/s
    max_removed: int | None = None
    fixed: np.ndarray | None = None  # when given, L is fixed to these counts (evaluation)

    @property
    def n(self) -> int:
        return int(self.speed.shape[0])

    @property
    def n_spines(self) -> int:
        return int(self.spine_capacity.shape[1]) if self.spine_capacity.size else 0


class RowLayout:
    """Row and fixed-column indices of one LP instance (pairs are the upper triangle)."""

    def __init__(self, problem: ToeProblem, track_mesh: bool) -> None:
        n = problem.n
        self.n = n
        self.n_spines = problem.n_spines
        self.n_matrices = len(problem.demands)
        self.track_mesh = track_mesh
        self.pi, self.pj = np.triu_indices(n, 1)
        self.n_pairs = len(self.pi)
        self.dem_row = np.full((self.n_matrices, n, n), -1, dtype=np.int64)
        row = 0
        for m, dem in enumerate(problem.demands):
            s, d = np.nonzero(dem)
            self.dem_row[m, s, d] = row + np.arange(len(s))
            row += len(s)
        self.n_dem = row
        self.link_base = row
        row += self.n_matrices * n * n
        self.spine_base = row
        row += self.n_matrices * 2 * n * self.n_spines
        self.deg_base = row
        row += n
        self.rem_base = row
        row += self.n_pairs
        self.mesh_base = row
        if track_mesh:
            row += 2 * self.n_pairs
        self.change_row = row if problem.max_removed is not None else -1
        if problem.max_removed is not None:
            row += 1
        self.n_rows = row
        # fixed columns: theta, then L, d and u per pair
        self.theta_col = 0
        self.l_base = 1
        self.d_base = 1 + self.n_pairs
        self.u_base = 1 + 2 * self.n_pairs
        self.n_fixed_cols = 1 + (3 if track_mesh else 2) * self.n_pairs

    def link_row(self, m: int | np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        rows: np.ndarray = self.link_base + (np.asarray(m) * self.n + i) * self.n + j
        return rows

    def spine_up_row(self, m: int, i: np.ndarray, sp: np.ndarray) -> np.ndarray:
        ns = self.n_spines
        rows: np.ndarray = self.spine_base + m * 2 * self.n * ns + i * ns + sp
        return rows

    def spine_down_row(self, m: int, sp: np.ndarray, j: np.ndarray) -> np.ndarray:
        ns = self.n_spines
        rows: np.ndarray = self.spine_base + m * 2 * self.n * ns + self.n * ns + j * ns + sp
        return rows


# -- rows: one function per constraint family (each writes its rows' bounds) -----------------


def define_spine_capacity(
    layout: RowLayout, problem: ToeProblem, lower: np.ndarray, upper: np.ndarray
) -> None:
    """Flows up and down each spine link stay within its capacity (per matrix)."""
    n, ns = layout.n, layout.n_spines
    cap = problem.spine_capacity.reshape(-1)  # (i, sp) row-major, same order as the rows
    for m in range(layout.n_matrices):
        base = layout.spine_base + m * 2 * n * ns
        upper[base : base + n * ns] = cap
        upper[base + n * ns : base + 2 * n * ns] = cap


def define_port_budget(layout: RowLayout, problem: ToeProblem, lower: np.ndarray, upper: np.ndarray) -> None:
    """Each block's circuits within the ports it may use."""
    upper[layout.deg_base : layout.deg_base + layout.n] = problem.budget


def define_removals(layout: RowLayout, problem: ToeProblem, lower: np.ndarray, upper: np.ndarray) -> None:
    """``L[p] + d[p] >= today's count``: ``d`` counts the circuits of ``p`` removed."""
    rows = slice(layout.rem_base, layout.rem_base + layout.n_pairs)
    lower[rows] = problem.current[layout.pi, layout.pj].astype(np.float64)
    upper[rows] = INF


def define_mesh_distance(
    layout: RowLayout, problem: ToeProblem, lower: np.ndarray, upper: np.ndarray
) -> None:
    """``u[p] - L[p] >= -mesh[p]`` and ``u[p] + L[p] >= mesh[p]``: ``u >= |L - mesh|``."""
    if not layout.track_mesh:
        return
    mesh = problem.mesh[layout.pi, layout.pj].astype(np.float64)
    base, pairs = layout.mesh_base, layout.n_pairs
    lower[base : base + pairs] = -mesh
    lower[base + pairs : base + 2 * pairs] = mesh
    upper[base : base + 2 * pairs] = INF


def define_change_limit(layout: RowLayout, problem: ToeProblem, lower: np.ndarray, upper: np.ndarray) -> None:
    """At most ``max_removed`` circuits removed in all."""
    if layout.change_row >= 0:
        upper[layout.change_row] = float(problem.max_removed or 0)


def row_bounds(layout: RowLayout, problem: ToeProblem) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of every row. Demand and link rows are ``<= 0`` (their
    right-hand sides are in the columns)."""
    lower = np.full(layout.n_rows, -INF)
    upper = np.zeros(layout.n_rows)
    for define in (
        define_spine_capacity,
        define_port_budget,
        define_removals,
        define_mesh_distance,
        define_change_limit,
    ):
        define(layout, problem, lower, upper)
    return lower, upper


# -- the fixed columns --------------------------------------------------------------------


def theta_column(layout: RowLayout, problem: ToeProblem) -> Column:
    """``theta``: the demand of every commodity, scaled, on its demand row."""
    rows = layout.dem_row[layout.dem_row >= 0]
    vals = np.concatenate([dem[dem > 0] for dem in problem.demands]) if len(rows) else np.zeros(0)
    order = np.argsort(rows)
    return rows[order], vals[order]


def circuit_columns(layout: RowLayout, problem: ToeProblem) -> tuple[list[Column], np.ndarray, np.ndarray]:
    """``L[p]``: capacity on both directions' link rows in every matrix, a port on each
    end's budget row, and its removal (and mesh) rows. Bounds: the smaller port budget of
    the two blocks, or the fixed counts when the problem fixes L."""
    cols: list[Column] = []
    lower, upper = [], []
    ub = np.minimum(problem.budget[layout.pi], problem.budget[layout.pj]).astype(np.float64)
    for q in range(layout.n_pairs):
        i, j = int(layout.pi[q]), int(layout.pj[q])
        r = [layout.link_row(m, np.array(i), np.array(j)) for m in range(layout.n_matrices)]
        r += [layout.link_row(m, np.array(j), np.array(i)) for m in range(layout.n_matrices)]
        rows = [int(x) for x in r] + [layout.deg_base + i, layout.deg_base + j, layout.rem_base + q]
        vals = [-float(problem.speed[i, j])] * (2 * layout.n_matrices) + [1.0, 1.0, 1.0]
        if layout.track_mesh:
            rows += [layout.mesh_base + q, layout.mesh_base + layout.n_pairs + q]
            vals += [-1.0, 1.0]
        cols.append((np.array(rows), np.array(vals)))
        if problem.fixed is not None:
            lower.append(float(problem.fixed[i, j]))
            upper.append(float(problem.fixed[i, j]))
        else:
            lower.append(0.0)
            upper.append(float(ub[q]))
    return cols, np.array(lower), np.array(upper)


def removed_columns(layout: RowLayout) -> list[Column]:
    """``d[p] >= 0`` on its removal row and the change row."""
    extra = [layout.change_row] if layout.change_row >= 0 else []
    return [(np.array([layout.rem_base + q, *extra]), np.ones(1 + len(extra))) for q in range(layout.n_pairs)]


def mesh_columns(layout: RowLayout) -> list[Column]:
    """``u[p] >= 0`` on its two mesh rows (only with a mesh weight)."""
    if not layout.track_mesh:
        return []
    base, pairs = layout.mesh_base, layout.n_pairs
    return [(np.array([base + q, base + pairs + q]), np.ones(2)) for q in range(pairs)]


def fixed_columns(
    layout: RowLayout, problem: ToeProblem
) -> tuple[list[Column], np.ndarray, np.ndarray, np.ndarray]:
    """theta, L, d and u in the order :class:`RowLayout` numbers them: columns, costs (stage
    1 maximises theta), lower and upper bounds."""
    l_cols, l_lower, l_upper = circuit_columns(layout, problem)
    d_cols = removed_columns(layout)
    u_cols = mesh_columns(layout)
    cols = [theta_column(layout, problem), *l_cols, *d_cols, *u_cols]
    free = len(d_cols) + len(u_cols)
    lower = np.concatenate([[0.0], l_lower, np.zeros(free)])
    upper = np.concatenate([[INF], l_upper, np.full(free, INF)])
    costs = np.zeros(len(cols))
    costs[layout.theta_col] = -1.0
    return cols, costs, lower, upper


def column_arrays(cols: list[Column]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Column-wise sparse arrays (starts, indices, values, non-zeros) for HiGHS."""
    starts = np.zeros(len(cols), dtype=np.int32)
    nnz = 0
    for c, (rows, _) in enumerate(cols):
        starts[c] = nnz
        nnz += len(rows)
    index = np.concatenate([r for r, _ in cols]).astype(np.int32) if cols else np.zeros(0, np.int32)
    value = np.concatenate([v for _, v in cols]).astype(np.float64) if cols else np.zeros(0)
    return starts, index, value, nnz


# -- path columns ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PathColumns:
    """Sparse arrays of a batch of path columns, ready for HiGHS ``addCols``."""

    costs: np.ndarray
    starts: np.ndarray
    index: np.ndarray
    value: np.ndarray
    nnz: int
    transit: np.ndarray  # bool per column: through a transit block


def path_column_arrays(
    layout: RowLayout,
    m: np.ndarray,
    s: np.ndarray,
    k: np.ndarray,
    d: np.ndarray,
    transit_cost: np.ndarray,
    transit_weight: np.ndarray,
    stretch_row: int,
) -> PathColumns:
    """Path columns (vectorised): each has -1 in its demand row and +1 on each link it uses;
    ``k`` is -1 for the direct path, a block for a transit path, ``n + j`` for spine ``j``.
    Transit columns cost ``transit_cost[m]`` and, once stage 3 added the stretch row, count
    ``transit_weight[m]`` in it."""
    count = len(s)
    dem = layout.dem_row[m, s, d]
    n = layout.n
    direct = k < 0
    spine = k >= n
    transit = ~direct & ~spine
    first = np.where(direct, layout.link_row(m, s, d), 0)
    second = np.full(count, -1, dtype=np.int64)
    kt = np.where(transit, k, 0)
    first = np.where(transit, layout.link_row(m, s, kt), first)
    second = np.where(transit, layout.link_row(m, kt, d), second)
    if spine.any():
        sp = np.where(spine, k - n, 0)
        for idx in np.nonzero(spine)[0]:
            first[idx] = layout.spine_up_row(int(m[idx]), s[idx], sp[idx])
            second[idx] = layout.spine_down_row(int(m[idx]), sp[idx], d[idx])
    in_stretch = transit & (stretch_row >= 0)
    n_entries = np.where(second >= 0, 3, 2) + in_stretch
    starts = np.zeros(count, dtype=np.int64)
    starts[1:] = np.cumsum(n_entries)[:-1]
    nnz = int(n_entries.sum())
    index = np.empty(nnz, dtype=np.int64)
    value = np.ones(nnz)
    index[starts] = dem
    value[starts] = -1.0
    index[starts + 1] = first
    has2 = second >= 0
    index[starts[has2] + 2] = second[has2]
    if in_stretch.any():  # transit columns also count in the stage 3 stretch cap
        at = starts[in_stretch] + 3
        index[at] = stretch_row
        value[at] = transit_weight[m[in_stretch]]
    costs = np.where(transit, transit_cost[m], 0.0)
    return PathColumns(costs, starts.astype(np.int32), index.astype(np.int32), value, nnz, transit)
