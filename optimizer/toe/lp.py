"""The LP relaxation of topology engineering, solved with HiGHS and column generation.

Variables: the scale factor ``theta``; ``L[p]`` (continuous circuit count) for every block
pair ``p``; ``d[p] >= L_current[p] - L[p]`` (circuits of ``p`` removed); ``u[p] >= |L[p] -
L_mesh[p]|`` when staying near the mesh has a weight; and, per predicted matrix ``m``, a flow
on each path of each commodity: direct, through one transit block, or through a spine switch.

Rows, per matrix: ``theta * D[s,d] <= sum of the commodity's path flows`` and, for every
directed block link ``(i, j)``, ``flows over it <= speed(i,j) * L[pair(i,j)]``; spine links
have fixed capacities. Shared rows: each block's circuits within its port budget, and (with a
change limit) ``sum d <= max_removed``.

Stage 1 maximises ``theta``. Stage 2 keeps ``theta >= floor`` and minimises the share of
traffic sent through a transit block (stretch). Stage 3 also caps that share near its stage 2
optimum and minimises the circuits removed plus (weighted) the distance from the mesh.

Transit paths (``n^3`` of them per matrix) are generated on demand: a path enters the LP when
its reduced cost ``c_p - A_p^T y`` is negative under the current duals. Spine and direct
paths are always present.

A :class:`~optimizer.budget.TimeBudget` bounds every HiGHS run of one instance together: each
run gets what is left of it as HiGHS's ``time_limit``, and a run that stops on it (or a budget
already spent) raises :class:`~optimizer.errors.SolverTimeLimit`. Every completed round's
solution of the restricted LP is feasible for the full LP (it only lacks paths), so
:attr:`ToeLp.last_round` is a usable solution when a later round is cut.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import highspy
import numpy as np

from optimizer.budget import TimeBudget
from optimizer.errors import SolverError, SolverTimeLimit

log = logging.getLogger(__name__)

_INF = highspy.kHighsInf
_RC_TOL = 1e-7
_MAX_ROUNDS = 200
_SEED_ALL_UP_TO = 24  # blocks: below this every transit path is in the LP from the start
_SEED_PER_COMMODITY = 6  # with L fixed (evaluation), where pricing alone converges slowly
_DUAL_SIMPLEX = 1
_PRIMAL_SIMPLEX = 4
_ROUND_BUDGET = 16384  # transit paths added per column generation round (about)
_SEED_FREE_L = 0  # with L free, pricing converges in a few rounds and extra columns slow HiGHS
_SOLUTION_FEASIBLE = 2  # HiGHS's kSolutionStatusFeasible
# A round that adds more than this share of the path columns already in the LP, and at least
# _IPM_MIN_ADDED of them, is solved by the interior point method with crossover, not by the
# warm-started primal simplex: on the degenerate 64-block ring + gravity LP one such round
# (6,462 paths added to 8,512) took 81k primal simplex iterations (79 s; a cold dual simplex
# 134k, 141 s) against 11 s for IPM with crossover. Smaller rounds stay on the simplex: their
# slow runs (two ring matrices) come from degeneracy, not growth, and IPM there only changes
# the path the column generation takes.
_IPM_AFTER_GROWTH = 0.25
_IPM_MIN_ADDED = 4000


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
class Relaxation:
    theta: float  # the scale factor of the solution read back
    counts: np.ndarray  # n x n continuous circuit counts
    transit_share: float  # share of routed traffic that crosses a transit block
    removed: float  # sum over pairs of max(0, current - L)
    columns: int  # path columns in the LP at the end
    rounds: int  # column generation rounds


class ToeLp:
    """Build, solve and read back the relaxation. One instance per planning run."""

    def __init__(
        self, problem: ToeProblem, mesh_weight: float = 0.0, budget: TimeBudget | None = None
    ) -> None:
        # Work in units of the fastest circuit: Gbit/s figures in the thousands next to
        # circuit counts make the simplex crawl (theta does not depend on the unit).
        unit = float(problem.speed.max()) if problem.speed.size and problem.speed.max() > 0 else 1.0
        problem = replace(
            problem,
            speed=problem.speed / unit,
            demands=tuple(d / unit for d in problem.demands),
            spine_capacity=problem.spine_capacity / unit,
        )
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
        self.mesh_weight = mesh_weight
        self.stretch_row = -1
        self.h = highspy._Highs()  # the private class: the public one prints a banner to stdout
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("threads", 1)
        self.budget = budget
        self.last_round: Relaxation | None = None  # the latest completed round's solution
        self.converged = True  # False once column generation stops at the round limit
        self._ipm_next = False  # solve the next run by IPM + crossover (see _IPM_AFTER_GROWTH)
        self._transit_cost = np.zeros(self.n_matrices)
        self._transit_weight = np.zeros(self.n_matrices)
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
        in_stretch = transit & (self.stretch_row >= 0)
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
            index[at] = self.stretch_row
            value[at] = self._transit_weight[m[in_stretch]]
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
        per_commodity = _SEED_PER_COMMODITY if self.p.fixed is not None else _SEED_FREE_L
        take = n - 2 if n <= _SEED_ALL_UP_TO else min(per_commodity, n - 2)
        if take <= 0:
            return
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
        ipm, self._ipm_next = self._ipm_next, False
        if ipm:  # crossover leaves a basis, so the simplex warm-starts again afterwards
            self.h.setOptionValue("solver", "ipm")
            self.h.setOptionValue("run_crossover", "on")
        try:
            self._run_highs()
        finally:
            if ipm:
                self.h.setOptionValue("solver", "simplex")

    def _run_highs(self) -> None:
        if self.budget is not None:
            remaining = self.budget.remaining()
            if remaining <= 0.0:
                raise SolverTimeLimit(f"the topology LP's time budget of {self.budget.seconds:g} s is spent")
            # HiGHS compares time_limit with its run clock, which adds up over the runs of
            # one instance (HiGHS 1.x): give it what is left of the budget from now on.
            self.h.setOptionValue("time_limit", self.h.getRunTime() + remaining)
        self._check(self.h.run(), "solving the topology LP")
        status = self.h.getModelStatus()
        if status == highspy.HighsModelStatus.kTimeLimit:
            raise SolverTimeLimit(
                f"the topology LP stopped at its time budget of {self.budget.seconds:g} s"
                if self.budget is not None
                else "the topology LP stopped at its time limit"
            )
        if status != highspy.HighsModelStatus.kOptimal:
            raise SolverError(f"topology LP stopped without an optimum: {self.h.modelStatusToString(status)}")

    def feasible_point(self) -> Relaxation | None:
        """The solution HiGHS holds after an interrupted run, if HiGHS says it is primal feasible
        (the primal simplex keeps feasibility while it improves the objective)."""
        if self.h.getInfo().primal_solution_status != _SOLUTION_FEASIBLE:
            return None
        if len(self.h.getSolution().col_value) != self.h.getNumCol():
            return None  # a solution from before columns were added
        return self.result()

    def solve(self) -> bool:
        """Solve to optimality over all paths, generating transit paths as they pay off.

        Each round adds up to about ``_ROUND_BUDGET`` paths, shared between the matrices, at
        least 4 per commodity that has paths with negative reduced cost (more when a matrix
        has few commodities, as a ring has). Returns whether pricing proved the optimum (False
        after ``_MAX_ROUNDS`` rounds: the solution is then feasible but maybe not optimal).
        Raises SolverTimeLimit when the budget runs out; :attr:`last_round` keeps the latest
        completed round's solution.
        """
        n = self.n
        eye = np.eye(n, dtype=bool)
        invalid = eye[:, :, None] | eye[None, :, :] | eye[:, None, :]  # s==k, k==d, s==d
        for _ in range(_MAX_ROUNDS):
            self._run()
            self.rounds += 1
            self.last_round = self.result()
            # new path columns enter at zero: the basis stays primal feasible, so the
            # primal simplex warm-starts each next round (the dual one starts over)
            self.h.setOptionValue("simplex_strategy", _PRIMAL_SIMPLEX)
            self.h.setOptionValue("presolve", "off")
            duals = np.asarray(self.h.getSolution().row_dual)
            added = 0
            new_m, new_s, new_k, new_d = [], [], [], []
            for m in range(self.n_matrices):
                rows = self.dem_row[m]
                commodities = max(int((rows >= 0).sum()), 1)
                per_matrix_budget = _ROUND_BUDGET // self.n_matrices
                max_new_per_commodity = max(4, -(-per_matrix_budget // commodities))
                y_dem = np.where(rows >= 0, duals[np.maximum(rows, 0)], 0.0)
                y_link = duals[self.link_base + m * n * n : self.link_base + (m + 1) * n * n].reshape(n, n)
                # reduced cost of s -> k -> d: c - (-y_dem[s,d] + y_link[s,k] + y_link[k,d])
                rc = self._transit_cost[m] + y_dem[:, None, :] - y_link[:, :, None] - y_link[None, :, :]
                if self.stretch_row >= 0:
                    rc = rc - duals[self.stretch_row] * self._transit_weight[m]
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
                return True
            self._ipm_next = added >= _IPM_MIN_ADDED and added > _IPM_AFTER_GROWTH * self.columns()
            self._add_path_columns(
                np.concatenate(new_m), np.concatenate(new_s), np.concatenate(new_k), np.concatenate(new_d)
            )
            log.debug("toe lp round %d: theta %.6f, %d transit paths added", self.rounds, self.theta(), added)
        log.warning("topology LP column generation stopped after %d rounds", _MAX_ROUNDS)
        self.converged = False
        return False

    def set_stage2(self, theta_floor: float, tie_break: float = 1e-3) -> None:
        """Keep theta >= floor and minimise the share of traffic sent through a transit block.

        Changes and mesh distance get ``tie_break`` times their stage 3 weight, so that among
        equal-stretch topologies the LP already leans towards today's.
        """
        p = self.p
        # the basis stays primal feasible while only costs change: primal simplex warm-starts
        self.h.setOptionValue("simplex_strategy", _PRIMAL_SIMPLEX)
        self._check(self.h.changeColBounds(self.theta_col, theta_floor, _INF), "fixing theta")
        self._check(self.h.changeColCost(self.theta_col, 0.0), "changing costs")
        totals = np.array([max(float(dem.sum()), 1e-12) for dem in p.demands])
        self._transit_weight = 1.0 / (self.n_matrices * totals * max(theta_floor, 1e-12))
        self._set_transit_costs(self._transit_weight)
        self._set_change_costs(tie_break)

    def set_stage3(self, transit_cap: float, mesh_weight: float) -> None:
        """Cap the transit share at ``transit_cap`` and minimise removed circuits (+ mesh distance)."""
        flows = self._flow_arrays()
        idx = np.zeros(0, dtype=np.int64)
        coef = np.zeros(0)
        if flows is not None:
            m, _, k, _ = flows
            transit = (k >= 0) & (k < self.n)
            idx = np.nonzero(transit)[0] + self.n_fixed_cols
            coef = self._transit_weight[m[transit]]
        self._check(
            self.h.addRow(-_INF, transit_cap, len(idx), idx.astype(np.int32), coef.astype(np.float64)),
            "adding the stretch row",
        )
        self.stretch_row = self.n_rows
        self.n_rows += 1
        self._set_transit_costs(np.zeros(self.n_matrices))
        self._set_change_costs(1.0, mesh_weight)

    def _set_transit_costs(self, per_matrix: np.ndarray) -> None:
        self._transit_cost = per_matrix
        flows = self._flow_arrays()
        if flows is None:
            return
        m, _, k, _ = flows
        transit = (k >= 0) & (k < self.n)
        idx = np.nonzero(transit)[0] + self.n_fixed_cols
        if len(idx):
            costs = per_matrix[m[transit]].astype(np.float64)
            self._check(self.h.changeColsCost(len(idx), idx.astype(np.int32), costs), "changing costs")

    def _set_change_costs(self, scale: float, mesh_weight: float | None = None) -> None:
        p = self.p
        total_current = max(float(p.current.sum() / 2), 1.0)
        d_cols = np.arange(self.d_base, self.d_base + self.n_pairs, dtype=np.int32)
        d_costs = np.full(self.n_pairs, scale / total_current)
        self._check(self.h.changeColsCost(self.n_pairs, d_cols, d_costs), "changing costs")
        if self.track_mesh:
            weight = self.mesh_weight if mesh_weight is None else mesh_weight
            total_mesh = max(float(p.mesh.sum() / 2), 1.0)
            u_cols = np.arange(self.u_base, self.u_base + self.n_pairs, dtype=np.int32)
            u_costs = np.full(self.n_pairs, scale * weight / total_mesh)
            self._check(self.h.changeColsCost(self.n_pairs, u_cols, u_costs), "changing costs")

    def transit_share_of(self, counts: np.ndarray) -> float | None:
        """Stage 2's measure for L fixed to ``counts`` (None if it cannot reach the theta floor).

        Warm-started on this LP (its transit paths are already generated); the L bounds, the
        stretch cap and :attr:`last_round` are restored afterwards, also when the time budget
        runs out (SolverTimeLimit is raised then).
        """
        lv = counts[self.pi, self.pj].astype(np.float64)
        cols = np.arange(self.l_base, self.l_base + self.n_pairs, dtype=np.int32)
        ub = np.minimum(self.p.budget[self.pi], self.p.budget[self.pj]).astype(np.float64)
        cap = None
        if self.stretch_row >= 0:
            lp = self.h.getLp()
            cap = float(lp.row_upper_[self.stretch_row])
            self._check(self.h.changeRowBounds(self.stretch_row, -_INF, _INF), "freeing the stretch cap")
        saved_costs = self._transit_cost
        self._set_transit_costs(self._transit_weight)
        self._check(self.h.changeColsBounds(self.n_pairs, cols, lv, lv), "fixing L")
        self.h.setOptionValue("simplex_strategy", _DUAL_SIMPLEX)  # new bounds: dual warm-starts
        saved_round = self.last_round
        try:
            self.solve()
            share: float | None = self.transit_share()
        except SolverTimeLimit:
            raise
        except SolverError:
            share = None
        finally:
            self.last_round = saved_round
            self._check(self.h.changeColsBounds(self.n_pairs, cols, np.zeros(self.n_pairs), ub), "freeing L")
            self._set_transit_costs(saved_costs)
            if cap is not None:
                self._check(self.h.changeRowBounds(self.stretch_row, -_INF, cap), "restoring the stretch cap")
        return share

    def transit_share(self) -> float:
        """The stage 2 measure of the current solution: weighted transit flow."""
        flows = self._flow_arrays()
        if flows is None:
            return 0.0
        m, _, k, _ = flows
        transit = (k >= 0) & (k < self.n)
        x = np.asarray(self.h.getSolution().col_value)[self.n_fixed_cols :]
        return float((x[transit] * self._transit_weight[m[transit]]).sum())

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

    def columns(self) -> int:
        """Path columns in the LP."""
        return int(self.h.getNumCol()) - self.n_fixed_cols

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
