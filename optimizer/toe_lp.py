"""The LP relaxation of topology engineering, solved with HiGHS and column generation.

Variables: the scale factor ``theta``; ``L[p]`` (continuous circuit count) for every block
pair ``p``; ``d[p] >= L_current[p] - L[p]`` (circuits of ``p`` removed); ``u[p] >= |L[p] -
L_mesh[p]|`` when staying near the mesh has a weight; and, per predicted matrix ``m``, a flow
on each path of each commodity: direct, through one transit block, or through a spine switch.

Rows, per matrix: ``theta * D[s,d] <= sum of the commodity's path flows`` and, for every
directed block link ``(i, j)``, ``flows over it <= speed(i,j) * L[pair(i,j)]``; spine links
have fixed capacities. Shared rows: each block's circuits within its port budget, and (with a
change limit) ``sum d <= max_removed``.

Stage 1 maximises ``theta``. Stage 2 keeps ``theta >= floor`` and minimises, in order of
weight, the share of traffic sent through a transit block (stretch), the circuits removed,
and the distance from the uniform mesh.

Transit paths (``n^3`` of them per matrix) are generated on demand: a path enters the LP when
its reduced cost ``c_p - A_p^T y`` is negative under the current duals. Spine and direct
paths are always present.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import highspy
import numpy as np

from optimizer.errors import SolverError

log = logging.getLogger(__name__)

_INF = highspy.kHighsInf
_RC_TOL = 1e-7
_MAX_ROUNDS = 200
_SEED_ALL_UP_TO = 24  # blocks: below this every transit path is in the LP from the start
_SEED_PER_COMMODITY = 6


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


@dataclass(frozen=True)
class StageWeights:
    """Stage 2 objective weights (each term is normalised to about 0..1)."""

    stretch: float = 1.0
    changes: float = 0.25
    mesh: float = 0.0


@dataclass(frozen=True)
class Relaxation:
    theta: float  # the scale factor of the solution read back
    counts: np.ndarray  # n x n continuous circuit counts
    transit_share: float  # share of routed traffic that crosses a transit block
    removed: float  # sum over pairs of max(0, current - L)
    columns: int  # path columns in the LP at the end
    rounds: int  # column generation rounds


class ToeLp:
    """Build, solve and read back the relaxation. One instance per planning run."""

    def __init__(self, problem: ToeProblem, mesh_weight: float = 0.0) -> None:
        self.p = problem
        n = problem.n
        self.n = n
        self.n_matrices = len(problem.demands)
        self.pi, self.pj = np.triu_indices(n, 1)
        self.n_pairs = len(self.pi)
        self.pair_of = np.full((n, n), -1, dtype=np.int64)
        self.pair_of[self.pi, self.pj] = np.arange(self.n_pairs)
        self.pair_of[self.pj, self.pi] = np.arange(self.n_pairs)
        self.track_mesh = mesh_weight > 0
        self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("threads", 1)
        self._transit_cost = np.zeros(self.n_matrices)
        self._layout_rows()
        self._add_rows()
        self._add_fixed_columns()
        self.col_m: list[np.ndarray] = []
        self.col_s: list[np.ndarray] = []
        self.col_k: list[np.ndarray] = []  # -1 direct, 0..n-1 transit block, n + j spine j
        self.col_d: list[np.ndarray] = []
        self.present = np.zeros((self.n_matrices, n, n, n), dtype=bool)  # transit columns in the LP
        self._add_initial_paths()
        self.rounds = 0

    # -- layout --------------------------------------------------------------------------
    def _layout_rows(self) -> None:
        n, p = self.n, self.p
        self.dem_row = np.full((self.n_matrices, n, n), -1, dtype=np.int64)
        row = 0
        for m, dem in enumerate(p.demands):
            s, d = np.nonzero(dem)
            self.dem_row[m, s, d] = row + np.arange(len(s))
            row += len(s)
        self.n_dem = row
        self.link_base = row
        row += self.n_matrices * n * n
        self.spine_base = row
        row += self.n_matrices * 2 * n * p.n_spines
        self.deg_base = row
        row += n
        self.rem_base = row
        row += self.n_pairs
        self.mesh_base = row
        if self.track_mesh:
            row += 2 * self.n_pairs
        self.change_row = row if p.max_removed is not None else -1
        if p.max_removed is not None:
            row += 1
        self.n_rows = row

    def link_row(self, m: int | np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        return self.link_base + (np.asarray(m) * self.n + i) * self.n + j

    def spine_up_row(self, m: int, i: np.ndarray, sp: np.ndarray) -> np.ndarray:
        ns = self.p.n_spines
        return self.spine_base + m * 2 * self.n * ns + i * ns + sp

    def spine_down_row(self, m: int, sp: np.ndarray, j: np.ndarray) -> np.ndarray:
        ns = self.p.n_spines
        return self.spine_base + m * 2 * self.n * ns + self.n * ns + j * ns + sp

    def _add_rows(self) -> None:
        n, p = self.n, self.p
        lower = np.full(self.n_rows, -_INF)
        upper = np.zeros(self.n_rows)
        ns = p.n_spines
        for m in range(self.n_matrices):
            base = self.spine_base + m * 2 * n * ns
            cap = p.spine_capacity.reshape(-1)  # (i, sp) row-major, same order as the rows
            upper[base : base + n * ns] = cap
            upper[base + n * ns : base + 2 * n * ns] = cap
        upper[self.deg_base : self.deg_base + n] = p.budget
        cur = p.current[self.pi, self.pj].astype(np.float64)
        lower[self.rem_base : self.rem_base + self.n_pairs] = cur
        upper[self.rem_base : self.rem_base + self.n_pairs] = _INF
        if self.track_mesh:
            mesh = p.mesh[self.pi, self.pj].astype(np.float64)
            lower[self.mesh_base : self.mesh_base + self.n_pairs] = -mesh
            lower[self.mesh_base + self.n_pairs : self.mesh_base + 2 * self.n_pairs] = mesh
            upper[self.mesh_base : self.mesh_base + 2 * self.n_pairs] = _INF
        if self.change_row >= 0:
            upper[self.change_row] = float(p.max_removed or 0)
        empty = np.zeros(self.n_rows + 1, dtype=np.int32)
        self._check(
            self.h.addRows(self.n_rows, lower, upper, 0, empty[:-1], np.zeros(0, np.int32), np.zeros(0)),
            "adding rows",
        )

    def _add_fixed_columns(self) -> None:
        """theta, L, d (removed circuits) and u (distance from the mesh)."""
        n, p, P = self.n, self.p, self.n_pairs
        cols: list[tuple[np.ndarray, np.ndarray]] = []  # (rows, values) per column
        lower: list[float] = []
        upper: list[float] = []
        # theta
        rows = self.dem_row[self.dem_row >= 0]
        vals = np.concatenate([dem[dem > 0] for dem in p.demands]) if len(rows) else np.zeros(0)
        order = np.argsort(rows)
        cols.append((rows[order], vals[order]))
        lower.append(0.0)
        upper.append(_INF)
        self.theta_col = 0
        # L
        self.l_base = 1
        ub = np.minimum(p.budget[self.pi], p.budget[self.pj]).astype(np.float64)
        for q in range(P):
            i, j = int(self.pi[q]), int(self.pj[q])
            r = [self.link_row(m, np.array(i), np.array(j)) for m in range(self.n_matrices)]
            r += [self.link_row(m, np.array(j), np.array(i)) for m in range(self.n_matrices)]
            rr = [int(x) for x in r] + [self.deg_base + i, self.deg_base + j, self.rem_base + q]
            vv = [-float(p.speed[i, j])] * (2 * self.n_matrices) + [1.0, 1.0, 1.0]
            if self.track_mesh:
                rr += [self.mesh_base + q, self.mesh_base + P + q]
                vv += [-1.0, 1.0]
            cols.append((np.array(rr), np.array(vv)))
            if p.fixed is not None:
                lower.append(float(p.fixed[i, j]))
                upper.append(float(p.fixed[i, j]))
            else:
                lower.append(0.0)
                upper.append(float(ub[q]))
        # d
        self.d_base = 1 + P
        for q in range(P):
            rr = [self.rem_base + q] + ([self.change_row] if self.change_row >= 0 else [])
            cols.append((np.array(rr), np.ones(len(rr))))
            lower.append(0.0)
            upper.append(_INF)
        # u
        self.u_base = 1 + 2 * P
        if self.track_mesh:
            for q in range(P):
                cols.append((np.array([self.mesh_base + q, self.mesh_base + P + q]), np.ones(2)))
                lower.append(0.0)
                upper.append(_INF)
        costs = np.zeros(len(cols))
        costs[0] = -1.0
        self._add_columns(cols, costs, np.array(lower), np.array(upper))
        self.n_fixed_cols = len(cols)
        del n

    def _add_columns(
        self,
        cols: list[tuple[np.ndarray, np.ndarray]],
        costs: np.ndarray,
        lower: np.ndarray,
        upper: np.ndarray,
    ) -> None:
        starts = np.zeros(len(cols), dtype=np.int32)
        nnz = 0
        for c, (rows, _) in enumerate(cols):
            starts[c] = nnz
            nnz += len(rows)
        index = np.concatenate([r for r, _ in cols]).astype(np.int32) if cols else np.zeros(0, np.int32)
        value = np.concatenate([v for _, v in cols]).astype(np.float64) if cols else np.zeros(0)
        status = self.h.addCols(len(cols), costs, lower, upper, nnz, starts, index, value)
        self._check(status, "adding columns")

    def _add_path_columns(self, m: np.ndarray, s: np.ndarray, k: np.ndarray, d: np.ndarray) -> None:
        """Add path columns (vectorised): each has -1 in its demand row and +1 on each link."""
        count = len(s)
        if not count:
            return
        dem = self.dem_row[m, s, d]
        n = self.n
        direct = k < 0
        spine = k >= n
        transit = ~direct & ~spine
        first = np.where(direct, self.link_row(m, s, d), 0)
        second = np.full(count, -1, dtype=np.int64)
        kt = np.where(transit, k, 0)
        first = np.where(transit, self.link_row(m, s, kt), first)
        second = np.where(transit, self.link_row(m, kt, d), second)
        if spine.any():
            sp = np.where(spine, k - n, 0)
            for idx in np.nonzero(spine)[0]:
                first[idx] = self.spine_up_row(int(m[idx]), s[idx], sp[idx])
                second[idx] = self.spine_down_row(int(m[idx]), sp[idx], d[idx])
        n_entries = np.where(second >= 0, 3, 2)
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
        # HiGHS wants row indices within a column; order does not matter but keep them sorted.
        costs = np.where(transit, self._transit_cost[m], 0.0)
        self._check(
            self.h.addCols(
                count,
                costs,
                np.zeros(count),
                np.full(count, _INF),
                nnz,
                starts.astype(np.int32),
                index.astype(np.int32),
                value,
            ),
            "adding path columns",
        )
        self.col_m.append(m)
        self.col_s.append(s)
        self.col_k.append(k)
        self.col_d.append(d)
        if transit.any():
            self.present[m[transit], s[transit], k[transit], d[transit]] = True

    def _add_initial_paths(self) -> None:
        ms, ss, ds = np.nonzero(self.dem_row >= 0)
        self._add_path_columns(ms, ss, np.full(len(ss), -1), ds)
        for sp in range(self.p.n_spines):
            self._add_path_columns(ms, ss, np.full(len(ss), self.n + sp), ds)
        self._seed_transit_paths()

    def _seed_transit_paths(self) -> None:
        """Start every commodity with its widest transit paths on a reference topology.

        Max-scale duals sit on the bottleneck commodities only, so pricing alone adds few
        paths per round; seeding the widest paths (by min(L[s,k], L[k,d]) on the fixed or
        today's topology) makes the first LP nearly optimal. Small fabrics get every path.
        """
        n = self.n
        if n < 3:
            return
        ref = (self.p.fixed if self.p.fixed is not None else self.p.current).astype(np.float64)
        width = np.minimum(ref[:, :, None], ref[None, :, :])  # [s, k, d]
        eye = np.eye(n, dtype=bool)
        invalid = eye[:, :, None] | eye[None, :, :] | eye[:, None, :]
        width = np.where(invalid, -1.0, width)
        take = n - 2 if n <= _SEED_ALL_UP_TO else min(_SEED_PER_COMMODITY, n - 2)
        best_k = np.argpartition(-width, take - 1, axis=1)[:, :take, :]
        s_idx, _, d_idx = np.indices(best_k.shape)
        for m in range(self.n_matrices):
            keep = (self.dem_row[m][s_idx, d_idx] >= 0) & (width[s_idx, best_k, d_idx] >= 0)
            if n > _SEED_ALL_UP_TO:
                keep &= width[s_idx, best_k, d_idx] > 0
            s, k, d = s_idx[keep], best_k[keep], d_idx[keep]
            self._add_path_columns(np.full(len(s), m), s, k, d)

    # -- solving -------------------------------------------------------------------------
    def _check(self, status: object, what: str) -> None:
        if status != highspy.HighsStatus.kOk and status != highspy.HighsStatus.kWarning:
            raise SolverError(f"HiGHS failed {what}: {status}")

    def _run(self) -> None:
        self._check(self.h.run(), "solving the topology LP")
        status = self.h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise SolverError(f"topology LP stopped without an optimum: {self.h.modelStatusToString(status)}")

    def solve(self, max_new_per_commodity: int = 4) -> None:
        """Solve to optimality over all paths, generating transit paths as they pay off."""
        n = self.n
        eye = np.eye(n, dtype=bool)
        invalid = eye[:, :, None] | eye[None, :, :] | eye[:, None, :]  # s==k, k==d, s==d
        for _ in range(_MAX_ROUNDS):
            self._run()
            self.rounds += 1
            duals = np.asarray(self.h.getSolution().row_dual)
            added = 0
            new_m, new_s, new_k, new_d = [], [], [], []
            for m in range(self.n_matrices):
                rows = self.dem_row[m]
                y_dem = np.where(rows >= 0, duals[np.maximum(rows, 0)], 0.0)
                y_link = duals[self.link_base + m * n * n : self.link_base + (m + 1) * n * n].reshape(n, n)
                # reduced cost of s -> k -> d: c - (-y_dem[s,d] + y_link[s,k] + y_link[k,d])
                rc = self._transit_cost[m] + y_dem[:, None, :] - y_link[:, :, None] - y_link[None, :, :]
                bad = invalid | (rows < 0)[:, None, :] | self.present[m]
                rc = np.where(bad, np.inf, rc)
                take = min(max_new_per_commodity, n)
                best_k = np.argpartition(rc, take - 1, axis=1)[:, :take, :] if n > take else None
                if best_k is None:
                    cand = np.nonzero(rc < -_RC_TOL)
                    s, k, d = cand
                else:
                    s_idx, _, d_idx = np.indices(best_k.shape)
                    vals = rc[s_idx, best_k, d_idx]
                    keep = vals < -_RC_TOL
                    s, k, d = s_idx[keep], best_k[keep], d_idx[keep]
                if len(s):
                    new_m.append(np.full(len(s), m))
                    new_s.append(s)
                    new_k.append(k)
                    new_d.append(d)
                    added += len(s)
            if not added:
                return
            self._add_path_columns(
                np.concatenate(new_m), np.concatenate(new_s), np.concatenate(new_k), np.concatenate(new_d)
            )
            log.debug("toe lp round %d: theta %.6f, %d transit paths added", self.rounds, self.theta(), added)
        log.warning("topology LP column generation stopped after %d rounds", _MAX_ROUNDS)

    def set_stage2(self, theta_floor: float, weights: StageWeights) -> None:
        """Fix theta >= floor and switch to the tie-breaking objective."""
        p = self.p
        self._check(self.h.changeColBounds(self.theta_col, theta_floor, _INF), "fixing theta")
        self._check(self.h.changeColCost(self.theta_col, 0.0), "changing costs")
        totals = np.array([max(float(dem.sum()), 1e-12) for dem in p.demands])
        self._transit_cost = weights.stretch / (self.n_matrices * totals * max(theta_floor, 1e-12))
        flows = self._flow_arrays()
        if flows is not None:
            m, _, k, _ = flows
            transit = (k >= 0) & (k < self.n)
            idx = np.nonzero(transit)[0] + self.n_fixed_cols
            if len(idx):
                costs = self._transit_cost[m[transit]]
                self._check(
                    self.h.changeColsCost(len(idx), idx.astype(np.int32), costs.astype(np.float64)),
                    "changing costs",
                )
        total_current = max(float(p.current.sum() / 2), 1.0)
        d_cols = np.arange(self.d_base, self.d_base + self.n_pairs, dtype=np.int32)
        d_costs = np.full(self.n_pairs, weights.changes / total_current)
        self._check(self.h.changeColsCost(self.n_pairs, d_cols, d_costs), "changing costs")
        if self.track_mesh:
            total_mesh = max(float(p.mesh.sum() / 2), 1.0)
            u_cols = np.arange(self.u_base, self.u_base + self.n_pairs, dtype=np.int32)
            self._check(
                self.h.changeColsCost(self.n_pairs, u_cols, np.full(self.n_pairs, weights.mesh / total_mesh)),
                "changing costs",
            )

    # -- reading back --------------------------------------------------------------------
    def _flow_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        if not self.col_m:
            return None
        return (
            np.concatenate(self.col_m),
            np.concatenate(self.col_s),
            np.concatenate(self.col_k),
            np.concatenate(self.col_d),
        )

    def theta(self) -> float:
        return float(self.h.getSolution().col_value[self.theta_col])

    def result(self) -> Relaxation:
        values = np.asarray(self.h.getSolution().col_value)
        counts = np.zeros((self.n, self.n))
        lv = values[self.l_base : self.l_base + self.n_pairs]
        counts[self.pi, self.pj] = lv
        counts[self.pj, self.pi] = lv
        flows = self._flow_arrays()
        share = 0.0
        columns = 0
        if flows is not None:
            _, _, k, _ = flows
            x = values[self.n_fixed_cols :]
            columns = len(x)
            total = float(x.sum())
            share = float(x[(k >= 0) & (k < self.n)].sum()) / total if total > 0 else 0.0
        removed = float(np.maximum(self.p.current[self.pi, self.pj] - lv, 0.0).sum())
        return Relaxation(self.theta(), counts, share, removed, columns, self.rounds)


def max_scale(problem: ToeProblem) -> float:
    """The largest scale factor of every matrix that fits on ``problem.fixed`` (an independent
    min-MLU check: MLU = 1 / scale)."""
    if problem.fixed is None:
        raise ValueError("max_scale needs problem.fixed")
    lp = ToeLp(problem)
    lp.solve()
    return lp.theta()
