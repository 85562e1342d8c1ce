"""The rounding MILP of the link repair (:mod:`optimizer.te.linkfit`): the groups crossing
links near or above the target re-planned together, every other group's load fixed.

The MILP is bounded by work, not time, so the weights are a function of the inputs alone:
HiGHS on one thread (its search order is then fixed) stops after ``_MILP_NODES``
branch-and-bound nodes and keeps the best rounding found. HiGHS's MIP has no limit on LP
iterations (``simplex_iteration_limit`` is not passed to its LP relaxations, and its
callbacks do not report them), so the nodes, with the column cap ``MILP_MAX_COLUMNS``, are
the work bound. They do not bound the root node: its LP, cuts and sub-MIP heuristics took
5-50 s on models the staging never hands over on the benchmarks (ring matrices repaired
without it). For those, a wall-clock limit of ``_MILP_BACKSTOP_SECONDS`` stays as a safety
net: when it cuts (logged as a WARNING) the result depends on the machine's load.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

import highspy
import numpy as np
from highspy._core import _Highs

from optimizer.te.bulkmoves import link_utilisation
from optimizer.te.paths import NO_LINK
from optimizer.te.repair_inputs import RepairInputs
from optimizer.te.wcmp import reduce_weights

if TYPE_CHECKING:
    from scipy.sparse import csc_matrix

log = logging.getLogger(__name__)

MILP_MAX_COLUMNS = 5_000  # a larger rounding MILP is not tried: at 64 blocks one of 12-50k
# columns took many seconds and gained nothing (hotspot) or less than the smaller one
_MILP_NODES = 50  # branch-and-bound nodes: the work bound; the MILP keeps its best rounding
# (the MILPs of `python -m benchmarks.bench_te --wcmp` take 0.1-1.3 s each on a quiet machine)
_MILP_BACKSTOP_SECONDS = 10.0  # wall clock, a safety net only (see the module): 7x the
# slowest of those, so a machine loaded several times over does not reach it, while a model
# whose root node stalls (a ring repaired without the staging: 5-50 s) stays within seconds


@dataclasses.dataclass(frozen=True)
class Repaired:
    """Weights and the split they now stand for (rows the repair re-planned differ)."""

    weights: np.ndarray
    fractions: np.ndarray


def round_jointly(
    inputs: RepairInputs,
    plan: Repaired,
    max_oversubscription: float,
    coarse: np.ndarray,
    frozen: np.ndarray,
    fill: bool,
    include: float,
) -> tuple[Repaired | None, bool]:
    """Re-plan the rows that cross a link near or above the target, every other row's load
    fixed, by one MILP minimising the link MLU: a coarse row's weights are integers over
    all its paths (keeping its total, or with ``fill`` filling its table where the switch
    has entries to spare: finer units); a fine row's split is continuous, then reduced to
    weights within a quarter of the over-subscription bound. None if it found nothing; and
    whether the wall-clock backstop cut the MILP (then, and only then, the result depends
    on the machine's load)."""
    graph, paths, demand_gbps = inputs.graph, inputs.paths, inputs.demand_gbps
    tables, sources, switch_budget = inputs.tables, inputs.sources, inputs.switch_budget
    weights = plan.weights
    util = link_utilisation(graph, paths, demand_gbps, weights)
    hot_links = np.append(util > inputs.target_mlu * include, False)
    crosses = paths.valid & (weights > 0) & (hot_links[paths.first] | hot_links[paths.second])
    rows = np.flatnonzero(crosses.any(axis=1) & ~frozen & (demand_gbps > 0))
    if not len(rows) or int(paths.valid[rows].sum()) > MILP_MAX_COLUMNS:
        return None, False
    integer = coarse[rows]
    totals = weights.sum(axis=1)
    spare = switch_budget - np.bincount(sources, weights=totals, minlength=int(sources.max()) + 1)
    for row in rows[np.argsort(-demand_gbps[rows], kind="stable")].tolist() if fill else []:
        if not coarse[row]:
            continue
        extra = int(tables[row] - totals[row])
        if 0 < extra <= spare[sources[row]]:
            spare[sources[row]] -= extra
            totals[row] = tables[row]
    rest = weights.copy()
    rest[rows] = 0
    base_load = link_utilisation(graph, paths, demand_gbps, rest) * graph.capacity_gbps
    g_local, via = np.nonzero(paths.valid[rows])
    n = len(g_local)
    unit = (demand_gbps[rows] / totals[rows])[g_local]
    first = paths.first[rows[g_local], via]
    second = paths.second[rows[g_local], via]
    two = second != NO_LINK
    link_of = np.concatenate([first, second[two]])
    used, link_pos = np.unique(link_of, return_inverse=True)
    var_of = np.concatenate([np.arange(n), np.arange(n)[two]])
    coef = np.concatenate([unit, unit[two]])
    m = len(used)
    caps = graph.capacity_gbps[used]
    from scipy import sparse  # here: scipy.sparse takes ~0.25 s to import, most plans never get here

    load_rows = sparse.csr_matrix(
        (np.concatenate([coef, -caps]), (np.concatenate([link_pos, np.arange(m)]),
                                          np.concatenate([var_of, np.full(m, n)]))),
        shape=(m, n + 1),
    )
    sum_rows = sparse.coo_matrix((np.ones(n), (g_local, np.arange(n))), shape=(len(rows), n + 1))
    matrix = sparse.vstack([load_rows, sum_rows])
    lower = np.concatenate([np.full(m, -np.inf), totals[rows]])
    upper = np.concatenate([-base_load[used], totals[rows]])
    upper_bounds = np.concatenate([totals[rows][g_local], [highspy.kHighsInf]]).astype(np.float64)
    # z is bounded below by the target less the fine rows' rounding: the search stops as soon
    # as it gets there.
    fine_bound = 1.0 + (max_oversubscription - 1.0) / 4
    lower_bounds = np.concatenate([np.zeros(n), [inputs.target_mlu / fine_bound]])
    start = None
    if not fill:  # the current weights are a feasible start: the MILP can only improve them
        current = weights[rows[g_local], via].astype(np.float64)
        start_load = np.asarray(load_rows[:, :n] @ current).ravel() + base_load[used]
        start = np.concatenate([current, [max(float((start_load / caps).max()), lower_bounds[-1])]])
    integrality = np.concatenate([integer[g_local], [False]])
    solution, timed_out = _solve_milp(matrix.tocsc(), lower, upper, lower_bounds, upper_bounds, integrality,
                                      start)
    if solution is None:
        return None, timed_out
    split = np.zeros((len(rows), weights.shape[1]))
    split[g_local, via] = np.maximum(solution[:n], 0.0)
    new = weights.copy()
    new[rows[integer]] = np.round(split[integer]).astype(np.int64)
    for table in np.unique(tables[rows[~integer]]).tolist():
        same = ~integer & (tables[rows] == table)
        new[rows[same]] = reduce_weights(split[same], int(table), fine_bound).weights
    if (np.bincount(sources, weights=new.sum(axis=1)) > switch_budget).any():
        return None, timed_out
    fractions = plan.fractions.copy()
    fractions[rows] = split / split.sum(axis=1, keepdims=True)
    return Repaired(new, fractions), timed_out


def _solve_milp(
    matrix: csc_matrix,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray,
    col_upper: np.ndarray,
    integrality: np.ndarray,
    start: np.ndarray | None,
) -> tuple[np.ndarray | None, bool]:
    """min z (the last column) with the ``integrality`` columns integer; the best solution
    found within ``_MILP_NODES`` nodes (or None), and whether the wall-clock backstop cut
    the search first (logged as a WARNING: that result depends on the machine's load)."""
    cols = matrix.shape[1]
    highs = _Highs()  # the thin binding: the wrapper prints a banner to stdout
    for option, value in (
        ("output_flag", False),
        ("threads", 1),  # one search order, whatever the machine
        ("mip_max_nodes", _MILP_NODES),
        ("mip_rel_gap", 1e-4),
        ("time_limit", _MILP_BACKSTOP_SECONDS),
    ):
        highs.setOptionValue(option, value)
    objective = np.zeros(cols)
    objective[-1] = 1.0
    inf = highspy.kHighsInf
    status = highs.passModel(
        cols,
        matrix.shape[0],
        matrix.nnz,
        int(highspy.MatrixFormat.kColwise),
        int(highspy.ObjSense.kMinimize),
        0.0,
        objective,
        col_lower,
        col_upper,
        np.where(np.isfinite(row_lower), row_lower, -inf),
        np.where(np.isfinite(row_upper), row_upper, inf),
        matrix.indptr.astype(np.int32),
        matrix.indices.astype(np.int32),
        matrix.data.astype(np.float64),
        integrality.astype(np.int32),
    )
    if status == highspy.HighsStatus.kError:
        return None, False
    if start is not None:
        given = highspy.HighsSolution()
        given.col_value = start.tolist()
        given.value_valid = True
        highs.setSolution(given)
    highs.run()
    timed_out = highs.getModelStatus() == highspy.HighsModelStatus.kTimeLimit
    if timed_out:
        log.warning(
            "the link repair's rounding MILP (%d columns, %d rows) ran into its %.0f s wall-clock "
            "backstop after %d of its %d nodes: the weights now depend on the machine's load",
            cols, matrix.shape[0], _MILP_BACKSTOP_SECONDS, highs.getInfo().mip_node_count, _MILP_NODES,
        )
    if highs.getInfo().primal_solution_status != highspy.SolutionStatus.kSolutionStatusFeasible:
        return None, timed_out
    return np.asarray(highs.getSolution().col_value), timed_out
