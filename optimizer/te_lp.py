"""The min-MLU path LP, solved by column generation on HiGHS.

The full LP has a variable per candidate path (direct, one-transit, spine): 254k of them
at 64 blocks. Almost none carry traffic at the optimum, so the restricted master starts
from each commodity's direct path and a few of its widest two-hop paths, and adds a path
only when the link prices (the duals of the capacity rows) say it would lower the
objective. When no path has a negative reduced cost the restricted optimum is the optimum
of the full path LP.

Variables (scaled by ``unit``, a typical link capacity, so numbers are near 1)::

    U                  maximum link utilisation
    x_p  >= 0          flow on path p of commodity k(p)

    minimise   W * U  +  hop_cost * sum_p (hops_p - 1) x_p
    subject to sum_{p through e} x_p - cap_e U <= 0      (one row per directed link)
               sum_{p of k} x_p = D_k                    (one row per commodity)
               x_p <= D_k C_p / (B_k S)                  (hedging, if S is given)

``W`` (the total demand) scales the objective so that reduced costs are well above the
solver's tolerances. The hop term breaks the degeneracy of plain min-MLU (traffic that
is not on a bottleneck stays on its direct path); it is small enough that it can raise
U by at most ``SECONDARY_WEIGHT`` times a lower bound of U, a relative error below 1e-4.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import highspy
import numpy as np

from optimizer.errors import ConfigError, SolverError
from optimizer.paths import NO_LINK, CandidatePaths, Commodities, LinkGraph

log = logging.getLogger(__name__)

SECONDARY_WEIGHT = 1e-5
"""The hop term's total weight, relative to a lower bound of the MLU."""

INITIAL_TWO_HOP_PATHS = 3
"""Two-hop paths per commodity in the first restricted master (besides the direct path)."""

NEW_PATHS_PER_ROUND = 4
"""At most this many priced paths per commodity enter the master in one round."""

MAX_ROUNDS = 200
REDUCED_COST_TOLERANCE = 1e-9
"""Relative to the objective scale: a path enters only if it improves by more than this."""


@dataclass
class PathPool:
    """The paths a previous solve used, kept to warm-start the next one.

    ``used[src, dst, via]`` is True for the path of (src, dst) through ``via``. The pool is
    tied to the node names it was built for; a solve over other nodes ignores it.
    """

    nodes: tuple[str, ...]
    used: np.ndarray = field(repr=False)

    @classmethod
    def empty(cls, nodes: tuple[str, ...], n_blocks: int) -> PathPool:
        return cls(nodes, np.zeros((n_blocks, n_blocks, len(nodes)), dtype=bool))


@dataclass(frozen=True)
class LpSolution:
    """The optimum of the path LP."""

    mlu: float
    flow_gbps: np.ndarray  # (K, N): Gbit/s of commodity k on its path through node v
    columns: int  # path columns in the final restricted master
    rounds: int  # master solves
    simplex_iterations: int


def hedge_bounds(paths: CandidatePaths, demand: np.ndarray, hedge: float | None) -> np.ndarray:
    """Per-path flow bounds D C_p / (B S), infinite without hedging."""
    if hedge is None:
        return np.where(paths.valid, np.inf, 0.0)
    if not 0.0 < hedge <= 1.0:
        raise ConfigError("<te>", "hedge", f"must be in (0, 1], got {hedge}")
    capacity_sum = paths.capacity_sum()
    return demand[:, None] * paths.bottleneck_gbps / (capacity_sum[:, None] * hedge)


def mlu_lower_bound(graph: LinkGraph, comm: Commodities) -> float:
    """No routing beats the busiest block's egress (or ingress) over its link capacity."""
    out_cap = np.bincount(graph.link_src, weights=graph.capacity_gbps, minlength=graph.n_nodes)
    in_cap = np.bincount(graph.link_dst, weights=graph.capacity_gbps, minlength=graph.n_nodes)
    egress = np.bincount(comm.src, weights=comm.demand_gbps, minlength=graph.n_nodes)
    ingress = np.bincount(comm.dst, weights=comm.demand_gbps, minlength=graph.n_nodes)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.concatenate([egress / out_cap, ingress / in_cap])
    ratios = ratios[np.isfinite(ratios)]
    return float(ratios.max()) if len(ratios) else 0.0


def initial_columns(
    paths: CandidatePaths, bounds: np.ndarray, demand: np.ndarray, pool: np.ndarray | None
) -> np.ndarray:
    """(K, N) mask of the first master's paths.

    The direct path, the ``INITIAL_TWO_HOP_PATHS`` widest two-hop paths (ties broken by a
    fixed pseudo-random order, so commodities do not pile onto the same transit), enough
    of the widest paths that the hedging bounds admit the whole demand, and the pool.
    """
    k_count, n_nodes = paths.valid.shape
    rng = np.random.default_rng(12345)
    jitter = rng.random((k_count, n_nodes)) * 1e-6
    width = np.where(paths.valid, paths.bottleneck_gbps * (1.0 + jitter), -1.0)
    direct = paths.valid & (paths.hops == 1)
    width = np.where(direct, np.inf, width)
    order = np.argsort(-width, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(n_nodes)[None, :], axis=1)
    has_direct = direct.any(axis=1)
    chosen = rank < (INITIAL_TWO_HOP_PATHS + has_direct.astype(np.int64))[:, None]
    if np.isfinite(bounds[paths.valid]).all():
        sorted_bounds = np.take_along_axis(np.where(paths.valid, bounds, 0.0), order, axis=1)
        admitted_before = np.cumsum(sorted_bounds, axis=1) - sorted_bounds
        needed_sorted = admitted_before < demand[:, None] * (1.0 + 1e-9)
        needed = np.empty_like(needed_sorted)
        np.put_along_axis(needed, order, needed_sorted, axis=1)
        chosen |= needed
    if pool is not None:
        chosen |= pool
    return chosen & paths.valid


class _Master:
    """The restricted master LP in a HiGHS instance that keeps its basis between rounds."""

    def __init__(
        self,
        graph: LinkGraph,
        paths: CandidatePaths,
        demand: np.ndarray,
        bounds: np.ndarray,
        unit: float,
        demand_weight: float,
        hop_cost: float,
    ) -> None:
        self.paths = paths
        self.n_links = graph.n_links
        self.demand = demand / unit
        self.bounds = bounds / unit
        self.hop_cost = hop_cost
        self.path_cost = np.where(paths.hops > 1, hop_cost, 0.0)
        self.in_master = np.zeros(paths.valid.shape, dtype=bool)
        self.col_commodity = np.zeros(0, dtype=np.int64)
        self.col_via = np.zeros(0, dtype=np.int64)
        self.iterations = 0
        # The thin binding: the ``highspy.Highs`` wrapper prints a banner to stdout.
        self.highs = highspy._Highs()
        for option, value in (
            ("output_flag", False),
            ("presolve", "off"),
            ("solver", "simplex"),
            ("threads", 1),
        ):
            self.highs.setOptionValue(option, value)
        k_count = paths.count
        n_rows = self.n_links + k_count
        row_lower = np.concatenate([np.full(self.n_links, -highspy.kHighsInf), self.demand])
        row_upper = np.concatenate([np.zeros(self.n_links), self.demand])
        capacity = graph.capacity_gbps / unit
        status = self.highs.passModel(
            1,
            n_rows,
            self.n_links,
            int(highspy.MatrixFormat.kColwise),
            int(highspy.ObjSense.kMinimize),
            0.0,
            np.array([demand_weight]),
            np.array([0.0]),
            np.array([highspy.kHighsInf]),
            row_lower,
            row_upper,
            np.array([0, self.n_links], dtype=np.int32),
            np.arange(self.n_links, dtype=np.int32),
            -capacity,
            np.zeros(1, dtype=np.int32),  # integrality: continuous
        )
        if status == highspy.HighsStatus.kError:
            raise SolverError("HiGHS rejected the TE model")

    def add(self, mask: np.ndarray) -> int:
        """Add the paths in ``mask`` that are not in the master yet; return how many."""
        mask = mask & ~self.in_master
        ks, vs = np.nonzero(mask)
        count = len(ks)
        if not count:
            return 0
        first = self.paths.first[ks, vs]
        second = self.paths.second[ks, vs]
        demand_row = self.n_links + ks
        two_hop = second != NO_LINK
        lengths = 2 + two_hop.astype(np.int64)
        starts = np.zeros(count + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        index = np.empty(int(starts[-1]), dtype=np.int64)
        index[starts[:-1]] = first
        index[starts[:-1] + 1] = np.where(two_hop, second, demand_row)
        index[starts[:-1][two_hop] + 2] = demand_row[two_hop]
        status = self.highs.addCols(
            count,
            self.path_cost[ks, vs],
            np.zeros(count),
            self.bounds[ks, vs],
            len(index),
            starts[:-1].astype(np.int32),
            index.astype(np.int32),
            np.ones(len(index)),
        )
        if status == highspy.HighsStatus.kError:
            raise SolverError("HiGHS rejected new path columns")
        self.in_master |= mask
        self.col_commodity = np.concatenate([self.col_commodity, ks])
        self.col_via = np.concatenate([self.col_via, vs])
        return count

    def solve(self) -> None:
        self.highs.run()
        status = self.highs.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise SolverError(f"HiGHS stopped without an optimal TE solution: {status.name}")
        self.iterations += int(self.highs.getInfo().simplex_iteration_count)

    def reduced_costs(self) -> np.ndarray:
        """c_p - y^T a_p for every candidate path, from the current row duals."""
        duals = np.asarray(self.highs.getSolution().row_dual)
        link_dual = np.append(duals[: self.n_links], 0.0)  # index NO_LINK (-1) reads the 0
        paths = self.paths
        reduced = self.path_cost - link_dual[paths.first] - link_dual[paths.second]
        reduced -= duals[self.n_links :][:, None]
        return np.where(paths.valid, reduced, np.inf)

    def objective(self) -> float:
        return float(self.highs.getObjectiveValue())

    def values(self) -> tuple[float, np.ndarray]:
        col_value = np.asarray(self.highs.getSolution().col_value)
        return float(col_value[0]), col_value[1:]


def solve_path_lp(
    graph: LinkGraph,
    comm: Commodities,
    paths: CandidatePaths,
    hedge: float | None = None,
    pool: PathPool | None = None,
) -> tuple[LpSolution, PathPool]:
    """Minimise the MLU over the candidate paths; return the optimum and the paths it used."""
    demand = comm.demand_gbps
    bounds = hedge_bounds(paths, demand, hedge)
    if comm.count == 0:
        flow = np.zeros(paths.valid.shape)
        return LpSolution(0.0, flow, 0, 0, 0), PathPool.empty(graph.nodes, graph.n_blocks)
    unit = float(np.median(graph.capacity_gbps))
    total = float(demand.sum()) / unit
    lower = mlu_lower_bound(graph, comm)
    # The hop term is at most hop_cost * total = SECONDARY_WEIGHT * lower * (weight of U).
    hop_cost = SECONDARY_WEIGHT * lower
    master = _Master(graph, paths, demand, bounds, unit, total, hop_cost)
    pool_mask = _pool_mask(pool, graph, comm)
    master.add(initial_columns(paths, bounds, demand, pool_mask))
    tolerance = REDUCED_COST_TOLERANCE * max(total, 1.0)
    rounds = 0
    while True:
        master.solve()
        rounds += 1
        reduced = master.reduced_costs()
        reduced = np.where(master.in_master, np.inf, reduced)
        entering = _most_negative(reduced, tolerance)
        if not entering.any():
            break
        if rounds >= MAX_ROUNDS:
            log.warning("TE column generation stopped after %d rounds, not proven optimal", rounds)
            break
        log.debug("TE round %d: objective %.9g, %d paths enter", rounds, master.objective(), entering.sum())
        master.add(entering)
    mlu, x = master.values()
    flow = np.zeros(paths.valid.shape)
    flow[master.col_commodity, master.col_via] = np.maximum(x, 0.0) * unit
    used = PathPool.empty(graph.nodes, graph.n_blocks)
    used.used[comm.src[:, None], comm.dst[:, None], np.arange(graph.n_nodes)[None, :]] = flow > 0
    log.debug(
        "TE LP: MLU %.6f after %d rounds, %d path columns, %d simplex iterations",
        mlu, rounds, len(master.col_via), master.iterations,
    )
    solution = LpSolution(mlu, flow, len(master.col_via), rounds, master.iterations)
    return solution, used


def _pool_mask(pool: PathPool | None, graph: LinkGraph, comm: Commodities) -> np.ndarray | None:
    if pool is None or pool.nodes != graph.nodes:
        return None
    return pool.used[comm.src, comm.dst, :]


def _most_negative(reduced: np.ndarray, tolerance: float) -> np.ndarray:
    """Mask of each commodity's NEW_PATHS_PER_ROUND most negative reduced costs below -tolerance."""
    negative = reduced < -tolerance
    if not negative.any():
        return negative
    n_nodes = reduced.shape[1]
    if n_nodes <= NEW_PATHS_PER_ROUND:
        return negative
    cut = np.partition(reduced, NEW_PATHS_PER_ROUND - 1, axis=1)[:, NEW_PATHS_PER_ROUND - 1]
    return negative & (reduced <= cut[:, None])
