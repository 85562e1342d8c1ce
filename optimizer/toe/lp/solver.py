"""The LP relaxation of topology engineering, solved with HiGHS and column generation.

Three steps, three modules (PyPSA's habit: build, solve, read back apart):
:mod:`optimizer.toe.lp.build` lays out the rows and defines one constraint family per
function, :mod:`optimizer.toe.lp.columns` seeds and prices transit paths, and
:mod:`optimizer.toe.lp.result` reads the answer back. :class:`ToeLp` here owns the HiGHS
instance: it loads what the builders return, runs the rounds and switches the stages.

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
from dataclasses import replace

import highspy
import numpy as np
from highspy._core import _Highs

from optimizer import progress
from optimizer.budget import TimeBudget
from optimizer.errors import SolverError, SolverTimeLimit
from optimizer.toe.lp.build import (
    INF,
    Column,
    RowLayout,
    ToeProblem,
    column_arrays,
    fixed_columns,
    path_column_arrays,
    row_bounds,
)
from optimizer.toe.lp.columns import NewPaths, price_transit_paths, seed_transit_paths
from optimizer.toe.lp.result import PathIndex, Relaxation, read_relaxation, weighted_transit

__all__ = ["Relaxation", "ToeLp", "ToeProblem", "max_scale"]

log = logging.getLogger(__name__)

_MAX_ROUNDS = 200
_DUAL_SIMPLEX = 1
_PRIMAL_SIMPLEX = 4
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
# Once a round went to IPM that way the LP is of that degenerate kind, and each later round
# that adds at least _IPM_DEGENERATE_ADDED paths goes to IPM with crossover too, whatever its
# growth: on the 64-block hot-pairs arrival (benchmarks/jobs/arrival_plan.py --hot) the four
# rounds after the first IPM ones added 2.7-5.5k paths to 55-67k and took 33-50 s of primal
# simplex each (20-27k iterations) against about 10 s by IPM with crossover.
_IPM_DEGENERATE_ADDED = 2000


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
        self.n = problem.n
        self.n_matrices = len(problem.demands)
        self.mesh_weight = mesh_weight
        self.layout = RowLayout(problem, track_mesh=mesh_weight > 0)
        self.n_rows = self.layout.n_rows
        self.n_fixed_cols = self.layout.n_fixed_cols
        self.stretch_row = -1
        self.h = _Highs()  # the private class: the public one prints a banner to stdout
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("threads", 1)
        self.budget = budget
        self.last_round: Relaxation | None = None  # the latest completed round's solution
        self.converged = True  # False once column generation stops at the round limit
        self._ipm_next = False  # solve the next run by IPM + crossover (see _IPM_AFTER_GROWTH)
        self._degenerate = False  # a round went to IPM for its growth (see _IPM_DEGENERATE_ADDED)
        self._transit_cost = np.zeros(self.n_matrices)
        self._transit_weight = np.zeros(self.n_matrices)
        self.paths = PathIndex(self.n, self.n_matrices)
        self.rounds = 0
        self._load_rows()
        self._load_fixed_columns()
        self._add_initial_paths()

    # -- loading what the builders define ----------------------------------------------------
    def _load_rows(self) -> None:
        lower, upper = row_bounds(self.layout, self.p)
        empty = np.zeros(self.n_rows + 1, dtype=np.int32)
        self._check(
            self.h.addRows(self.n_rows, lower, upper, 0, empty[:-1], np.zeros(0, np.int32), np.zeros(0)),
            "adding rows",
        )

    def _load_fixed_columns(self) -> None:
        cols, costs, lower, upper = fixed_columns(self.layout, self.p)
        self._add_columns(cols, costs, lower, upper)

    def _add_columns(
        self, cols: list[Column], costs: np.ndarray, lower: np.ndarray, upper: np.ndarray
    ) -> None:
        starts, index, value, nnz = column_arrays(cols)
        self._check(
            self.h.addCols(len(cols), costs, lower, upper, nnz, starts, index, value), "adding columns"
        )

    def _add_paths(self, new: NewPaths) -> None:
        if not len(new):
            return
        cols = path_column_arrays(
            self.layout,
            new.m,
            new.s,
            new.k,
            new.d,
            self._transit_cost,
            self._transit_weight,
            self.stretch_row,
        )
        count = len(new)
        self._check(
            self.h.addCols(
                count,
                cols.costs,
                np.zeros(count),
                np.full(count, INF),
                cols.nnz,
                cols.starts,
                cols.index,
                cols.value,
            ),
            "adding path columns",
        )
        self.paths.add(new.m, new.s, new.k, new.d)

    def _add_initial_paths(self) -> None:
        ms, ss, ds = np.nonzero(self.layout.dem_row >= 0)
        self._add_paths(NewPaths(ms, ss, np.full(len(ss), -1), ds))
        for sp in range(self.p.n_spines):
            self._add_paths(NewPaths(ms, ss, np.full(len(ss), self.n + sp), ds))
        for seed in seed_transit_paths(self.layout, self.p):
            self._add_paths(seed)

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
        """Solve to optimality over all paths, generating transit paths as they pay off
        (:func:`~optimizer.toe.lp.columns.price_transit_paths` chooses them each round).

        Returns whether pricing proved the optimum (False after ``_MAX_ROUNDS`` rounds: the
        solution is then feasible but maybe not optimal). Raises SolverTimeLimit when the
        budget runs out; :attr:`last_round` keeps the latest completed round's solution.
        """
        for _ in range(_MAX_ROUNDS):
            self._run()
            self.rounds += 1
            self.last_round = self.result()
            progress.report("ToE LP", f"round {self.rounds}, {self.columns()} path columns")
            # new path columns enter at zero: the basis stays primal feasible, so the
            # primal simplex warm-starts each next round (the dual one starts over)
            self.h.setOptionValue("simplex_strategy", _PRIMAL_SIMPLEX)
            self.h.setOptionValue("presolve", "off")
            duals = np.asarray(self.h.getSolution().row_dual)
            new = price_transit_paths(
                self.layout,
                duals,
                self.paths.present,
                self._transit_cost,
                self._transit_weight,
                self.stretch_row,
            )
            if not len(new):
                return True
            self._ipm_next = _ipm_pays(len(new), self.columns(), self._degenerate)
            self._degenerate = self._degenerate or self._ipm_next
            self._add_paths(new)
            log.debug(
                "toe lp round %d: theta %.6f, %d transit paths added", self.rounds, self.theta(), len(new)
            )
        log.warning("topology LP column generation stopped after %d rounds", _MAX_ROUNDS)
        self.converged = False
        return False

    # -- the lexicographic stages --------------------------------------------------------
    def set_stage2(self, theta_floor: float, tie_break: float = 1e-3) -> None:
        """Keep theta >= floor and minimise the share of traffic sent through a transit block.

        Changes and mesh distance get ``tie_break`` times their stage 3 weight, so that among
        equal-stretch topologies the LP already leans towards today's.
        """
        p = self.p
        # the basis stays primal feasible while only costs change: primal simplex warm-starts
        self.h.setOptionValue("simplex_strategy", _PRIMAL_SIMPLEX)
        self._check(self.h.changeColBounds(self.layout.theta_col, theta_floor, INF), "fixing theta")
        self._check(self.h.changeColCost(self.layout.theta_col, 0.0), "changing costs")
        totals = np.array([max(float(dem.sum()), 1e-12) for dem in p.demands])
        self._transit_weight = 1.0 / (self.n_matrices * totals * max(theta_floor, 1e-12))
        self._set_transit_costs(self._transit_weight)
        self._set_change_costs(tie_break)

    def set_stage3(self, transit_cap: float, mesh_weight: float) -> None:
        """Cap the transit share at ``transit_cap`` and minimise removed circuits (+ mesh distance)."""
        idx = np.zeros(0, dtype=np.int64)
        coef = np.zeros(0)
        transit = self.paths.transit()
        if transit is not None:
            m, mask = transit
            idx = np.nonzero(mask)[0] + self.n_fixed_cols
            coef = self._transit_weight[m]
        self._check(
            self.h.addRow(-INF, transit_cap, len(idx), idx.astype(np.int32), coef.astype(np.float64)),
            "adding the stretch row",
        )
        self.stretch_row = self.n_rows
        self.n_rows += 1
        self._set_transit_costs(np.zeros(self.n_matrices))
        self._set_change_costs(1.0, mesh_weight)

    def _set_transit_costs(self, per_matrix: np.ndarray) -> None:
        self._transit_cost = per_matrix
        transit = self.paths.transit()
        if transit is None:
            return
        m, mask = transit
        idx = np.nonzero(mask)[0] + self.n_fixed_cols
        if len(idx):
            costs = per_matrix[m].astype(np.float64)
            self._check(self.h.changeColsCost(len(idx), idx.astype(np.int32), costs), "changing costs")

    def _set_change_costs(self, scale: float, mesh_weight: float | None = None) -> None:
        p, layout = self.p, self.layout
        pairs = layout.n_pairs
        total_current = max(float(p.current.sum() / 2), 1.0)
        d_cols = np.arange(layout.d_base, layout.d_base + pairs, dtype=np.int32)
        d_costs = np.full(pairs, scale / total_current)
        self._check(self.h.changeColsCost(pairs, d_cols, d_costs), "changing costs")
        if layout.track_mesh:
            weight = self.mesh_weight if mesh_weight is None else mesh_weight
            total_mesh = max(float(p.mesh.sum() / 2), 1.0)
            u_cols = np.arange(layout.u_base, layout.u_base + pairs, dtype=np.int32)
            u_costs = np.full(pairs, scale * weight / total_mesh)
            self._check(self.h.changeColsCost(pairs, u_cols, u_costs), "changing costs")

    def transit_share_of(self, counts: np.ndarray) -> float | None:
        """Stage 2's measure for L fixed to ``counts`` (None if it cannot reach the theta floor).

        Warm-started on this LP (its transit paths are already generated); the L bounds, the
        stretch cap and :attr:`last_round` are restored afterwards, also when the time budget
        runs out (SolverTimeLimit is raised then).
        """
        layout = self.layout
        pairs = layout.n_pairs
        lv = counts[layout.pi, layout.pj].astype(np.float64)
        cols = np.arange(layout.l_base, layout.l_base + pairs, dtype=np.int32)
        ub = np.minimum(self.p.budget[layout.pi], self.p.budget[layout.pj]).astype(np.float64)
        cap = None
        if self.stretch_row >= 0:
            lp = self.h.getLp()
            cap = float(lp.row_upper_[self.stretch_row])
            self._check(self.h.changeRowBounds(self.stretch_row, -INF, INF), "freeing the stretch cap")
        saved_costs = self._transit_cost
        self._set_transit_costs(self._transit_weight)
        self._check(self.h.changeColsBounds(pairs, cols, lv, lv), "fixing L")
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
            self._check(self.h.changeColsBounds(pairs, cols, np.zeros(pairs), ub), "freeing L")
            self._set_transit_costs(saved_costs)
            if cap is not None:
                self._check(self.h.changeRowBounds(self.stretch_row, -INF, cap), "restoring the stretch cap")
        return share

    # -- reading back --------------------------------------------------------------------
    def _values(self) -> np.ndarray:
        return np.asarray(self.h.getSolution().col_value)

    def transit_share(self) -> float:
        """The stage 2 measure of the current solution: weighted transit flow."""
        return weighted_transit(self._values(), self.paths, self.n_fixed_cols, self._transit_weight)

    def columns(self) -> int:
        """Path columns in the LP."""
        return int(self.h.getNumCol()) - self.n_fixed_cols

    def theta(self) -> float:
        return float(self.h.getSolution().col_value[self.layout.theta_col])

    def result(self) -> Relaxation:
        return read_relaxation(self._values(), self.layout, self.paths, self.p.current, self.rounds)


def _ipm_pays(added: int, columns: int, degenerate: bool) -> bool:
    """Whether the round that adds ``added`` paths to ``columns`` is solved by IPM with
    crossover: a big growth, or (``degenerate``: an earlier round was) a big round."""
    if added >= _IPM_MIN_ADDED and added > _IPM_AFTER_GROWTH * columns:
        return True
    return degenerate and added >= _IPM_DEGENERATE_ADDED


def max_scale(problem: ToeProblem) -> float:
    """The largest scale factor of every matrix that fits on ``problem.fixed`` (an independent
    min-MLU check: MLU = 1 / scale)."""
    if problem.fixed is None:
        raise ValueError("max_scale needs problem.fixed")
    lp = ToeLp(problem)
    lp.solve()
    return lp.theta()
