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
U by at most ``SECONDARY_WEIGHT`` times a lower bound of U (a relative error of 1e-5).

With hedging, most paths sit at their upper bound: those outside the master may be fixed
at either bound (their flow moved to the right-hand sides), and a path at its upper bound
enters the master when its reduced cost is positive. See :func:`initial_hedged_split`.

Degenerate masters. On most matrices a master solve takes well under one simplex iteration
per row (64 blocks, gravity or hotspot: 4.4-5.3k iterations for 8064 rows, 0.1 s). On
permutation-like matrices of hot pairs (blocks paired off, each pair exchanging close to
its egress, as ML jobs do) the masters are massively degenerate: at 64 blocks the first
one took 72k iterations and column generation as a whole several minutes. Such masters are
solved by the interior point method without crossover instead, round after round of the same
column generation (the duals of an interior optimum price the paths as well as a vertex's),
which stops once the Lagrangian bound proves the master within :data:`LAGRANGIAN_GAP` of the
full path LP's optimum (at 64 blocks: one round of 40k columns, against 254k columns for
every path; such a master starts with :data:`INITIAL_TWO_HOP_PATHS_IPM` paths a commodity).
A master goes to the interior point method from the start when its first columns say it is
of that kind (:func:`looks_degenerate`: many commodities that need many of their paths, on a
large LP), or when a simplex solve hits its iteration limit
(:data:`SIMPLEX_ITERATIONS_PER_ROW`). The path pool remembers it, so the next few solves of
the same solver go straight to the interior point method (:data:`IPM_SOLVES_REMEMBERED`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import highspy
import numpy as np
from highspy._core import _Highs

from optimizer.errors import ConfigError, SolverError
from optimizer.te.paths import NO_LINK, CandidatePaths, Commodities, LinkGraph

log = logging.getLogger(__name__)

SECONDARY_WEIGHT = 1e-5
"""The hop term's total weight, relative to a lower bound of the MLU."""

INITIAL_TWO_HOP_PATHS = 3
"""Two-hop paths per commodity in the first restricted master (besides the direct path)."""

INITIAL_TWO_HOP_PATHS_IPM = 8
"""The same for a master solved by the interior point method from the start: one round of a
larger master costs less than two (64 blocks paired off: 40k columns in one round, 5.4 s,
against 20k then 26k in two, 10.6 s, on one loaded machine)."""

NEW_PATHS_PER_ROUND = 4
COLUMNS_PER_ROUND = 20_000
"""A commodity's most improving paths enter the master in one round: NEW_PATHS_PER_ROUND of
them, or more when there are few commodities (about COLUMNS_PER_ROUND in all), so that a
few huge commodities (an ML ring) get all the paths they need in one or two rounds."""

FLOOR_COVER = 4.0
"""The first master has paths enough to carry each demand FLOOR_COVER times over at the MLU
lower bound: the paths a hot pair needs, found by the first pricing rounds otherwise."""

MAX_ROUNDS = 200

SIMPLEX_ITERATIONS_PER_ROW = 2.5
"""A master solve stops after this many simplex iterations per row of the LP, and the full
path LP is solved by the interior point method instead (see the module docstring). Paired
matrices at 48 blocks stay on the simplex at 2.5 (2.6 s; 5.5 s by the interior point
method), at 64 they switch (16-19 s, against minutes); ordinary masters take under 0.7."""

MIN_SIMPLEX_ITERATIONS = 1000
"""The iteration limit is never below this (small LPs are cheap however degenerate)."""

IPM_SOLVES_REMEMBERED = 8
"""After a solve that needed the interior point method, this many next solves that share
its pool use it from the start (a staging search asks about the same traffic many times)."""

LAGRANGIAN_GAP = 1e-5
"""Interior point rounds stop once the master's objective is within this (relative) of the
Lagrangian lower bound on the full path LP."""

DENSE_SHARE = 0.25
IPM_FIRST_ROWS = 4000
"""A master looks degenerate when at least one commodity per two blocks needs over
DENSE_SHARE of its paths at the MLU lower bound (blocks paired off: 64 such commodities at 64
blocks; a hotspot matrix has 16), on an LP of at least IPM_FIRST_ROWS rows (48 blocks and up;
below, the simplex copes in well under a second)."""
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
    #: Solves still to go straight to the interior point method (see IPM_SOLVES_REMEMBERED).
    ipm_solves: int = 0

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
    optimal: bool = True  # False if column generation hit MAX_ROUNDS (the MLU is then an upper bound)
    interior_point: bool = False  # the masters were solved by the interior point method


def hedge_bounds(paths: CandidatePaths, demand: np.ndarray, hedge: float | None) -> np.ndarray:
    """Per-path flow bounds D C_p / (B S), infinite without hedging."""
    if hedge is None:
        return np.where(paths.valid, np.inf, 0.0)
    if not 0.0 < hedge <= 1.0:
        raise ConfigError("<te>", "hedge", f"must be in (0, 1], got {hedge}")
    capacity_sum = paths.capacity_sum()
    floor: np.ndarray = demand[:, None] * paths.bottleneck_gbps / (capacity_sum[:, None] * hedge)
    return floor


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
    paths: CandidatePaths,
    demand: np.ndarray,
    mlu_floor: float,
    pool: np.ndarray | None,
    two_hop: int = INITIAL_TWO_HOP_PATHS,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """(K, N) mask of the first master's paths, widest first (ties in a fixed random order).

    Per commodity: the direct path and ``two_hop`` widest two-hop paths;
    enough of the widest paths to carry the demand at the MLU lower bound (a commodity as
    big as its block's egress, as in an ML ring, gets all of them: pricing would otherwise
    find them a few per round, the duals being degenerate); and the paths of the previous
    solve (the pool). Without hedging: see :func:`initial_hedged_split` for hedged masters.
    ``order``: :func:`_widest_first` of ``paths``, if the caller has it already.
    """
    n_nodes = paths.valid.shape[1]
    direct = paths.valid & (paths.hops == 1)
    order = _widest_first(paths) if order is None else order
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(n_nodes)[None, :], axis=1)
    has_direct = direct.any(axis=1)
    chosen = rank < (two_hop + has_direct.astype(np.int64))[:, None]
    floor_capacity = np.where(paths.valid, paths.bottleneck_gbps * mlu_floor, 0.0)
    chosen |= _prefix_until(order, floor_capacity, demand * FLOOR_COVER)
    if pool is not None:
        chosen |= pool
    mask: np.ndarray = chosen & paths.valid
    return mask


HEDGED_WINDOW = 3
"""Hedged masters start with this many paths either side of where the bounds cover D."""


def initial_hedged_split(
    paths: CandidatePaths, bounds: np.ndarray, demand: np.ndarray, pool: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The first hedged master's paths, and the paths fixed at their upper bound.

    Hedging forces traffic onto many paths (all of them at S = 1), most at their bound.
    Taking the paths widest first (direct first), those whose bounds fill the demand are
    fixed at the bound, except for HEDGED_WINDOW paths either side of where the demand is
    covered, which enter the master (with the direct path and the pool's paths).
    """
    n_nodes = paths.valid.shape[1]
    order = _widest_first(paths)
    in_order = np.take_along_axis(np.where(paths.valid, bounds, 0.0), order, axis=1)
    before = np.cumsum(in_order, axis=1) - in_order
    crossing = np.argmax(before + in_order >= demand[:, None] * (1.0 - 1e-9), axis=1)
    position = np.arange(n_nodes)[None, :]
    upper_in_order = position < (crossing - HEDGED_WINDOW)[:, None]
    master_in_order = ~upper_in_order & (position <= (crossing + HEDGED_WINDOW)[:, None])
    upper = np.empty_like(upper_in_order)
    np.put_along_axis(upper, order, upper_in_order, axis=1)
    master = np.empty_like(master_in_order)
    np.put_along_axis(master, order, master_in_order, axis=1)
    master |= paths.valid & (paths.hops == 1)
    if pool is not None:
        master |= pool
    upper &= ~master
    return master & paths.valid, upper & paths.valid


def _widest_first(paths: CandidatePaths) -> np.ndarray:
    """Per commodity, path indices: the direct path, then by bottleneck capacity (ties in a
    fixed random order so that commodities do not all pick the same transit)."""
    k_count, n_nodes = paths.valid.shape
    rng = np.random.default_rng(12345)
    jitter = rng.random((k_count, n_nodes)) * 1e-6
    width = np.where(paths.valid, paths.bottleneck_gbps * (1.0 + jitter), -1.0)
    width = np.where(paths.valid & (paths.hops == 1), np.inf, width)
    return np.argsort(-width, axis=1, kind="stable")


def _prefix_until(order: np.ndarray, amounts: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Mask of the shortest prefix (in ``order``) of each row whose ``amounts`` reach ``target``."""
    in_order = np.take_along_axis(amounts, order, axis=1)
    before = np.cumsum(in_order, axis=1) - in_order
    needed_in_order = before < target[:, None] * (1.0 - 1e-9)
    needed: np.ndarray = np.empty_like(needed_in_order)
    np.put_along_axis(needed, order, needed_in_order, axis=1)
    return needed


def path_loads_scaled(paths: CandidatePaths, flow: np.ndarray, n_links: int) -> np.ndarray:
    mask = paths.valid & (flow != 0)
    load = np.bincount(paths.first[mask], weights=flow[mask], minlength=n_links)
    two_hop = mask & (paths.second != NO_LINK)
    return load + np.bincount(paths.second[two_hop], weights=flow[two_hop], minlength=n_links)


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
        at_upper: np.ndarray,
    ) -> None:
        self.paths = paths
        self.n_links = graph.n_links
        self.demand = demand / unit
        self.bounds = bounds / unit
        self.hop_cost = hop_cost
        # Paths outside the master sit at a bound: 0, or (hedging) their upper bound, whose
        # flow is then a constant moved to the right-hand sides.
        self.at_upper = at_upper & paths.valid
        fixed = np.where(self.at_upper, self.bounds, 0.0)
        self.fixed_link_load = path_loads_scaled(paths, fixed, self.n_links)
        self.fixed_demand = fixed.sum(axis=1)
        self.path_cost = np.where(paths.hops > 1, hop_cost, 0.0)
        self.in_master = np.zeros(paths.valid.shape, dtype=bool)
        self.col_commodity = np.zeros(0, dtype=np.int64)
        self.col_via = np.zeros(0, dtype=np.int64)
        self.iterations = 0
        # The thin binding: the ``highspy.Highs`` wrapper prints a banner to stdout.
        self.highs = _Highs()
        for option, value in (
            ("output_flag", False),
            ("presolve", "off"),
            ("solver", "simplex"),
            ("threads", 1),
        ):
            self.highs.setOptionValue(option, value)
        k_count = paths.count
        n_rows = self.n_links + k_count
        remaining = self.demand - self.fixed_demand
        row_lower = np.concatenate([np.full(self.n_links, -highspy.kHighsInf), remaining])
        row_upper = np.concatenate([-self.fixed_link_load, remaining])
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
        self._release_fixed(mask & self.at_upper)
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

    def _release_fixed(self, mask: np.ndarray) -> None:
        """Take paths fixed at their upper bound out of the right-hand sides."""
        if not mask.any():
            return
        released = np.where(mask, self.bounds, 0.0)
        self.fixed_link_load -= path_loads_scaled(self.paths, released, self.n_links)
        self.fixed_demand -= released.sum(axis=1)
        self.at_upper &= ~mask
        links = np.unique(np.concatenate([self.paths.first[mask], self.paths.second[mask]]))
        links = links[links != NO_LINK]
        commodities = np.unique(np.nonzero(mask)[0])
        remaining = self.demand[commodities] - self.fixed_demand[commodities]
        rows = np.concatenate([links, self.n_links + commodities]).astype(np.int32)
        lower = np.concatenate([np.full(len(links), -highspy.kHighsInf), remaining])
        upper = np.concatenate([-self.fixed_link_load[links], remaining])
        # highspy's stubs omit the vectorised changeRowsBounds that the binding has
        status = self.highs.changeRowsBounds(len(rows), rows, lower, upper)  # type: ignore[attr-defined]
        if status == highspy.HighsStatus.kError:
            raise SolverError("HiGHS rejected new row bounds")

    def solve(self, iteration_limit: int) -> bool:
        """Solve the master by the simplex; False if it stopped at ``iteration_limit``."""
        self.highs.setOptionValue("simplex_iteration_limit", iteration_limit)
        self.highs.run()
        self.iterations += int(self.highs.getInfo().simplex_iteration_count)
        status = self.highs.getModelStatus()
        if status == highspy.HighsModelStatus.kIterationLimit:
            return False
        if status != highspy.HighsModelStatus.kOptimal:
            raise SolverError(f"HiGHS stopped without an optimal TE solution: {status.name}")
        return True

    def solve_by_ipm(self) -> None:
        """Solve the master by the interior point method, without crossover (a degenerate
        master's vertex costs more than its interior optimum, and prices no better)."""
        for option, value in (("solver", "ipm"), ("run_crossover", "off"),
                              ("simplex_iteration_limit", 2**31 - 1)):
            self.highs.setOptionValue(option, value)
        self.highs.run()
        status = self.highs.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise SolverError(f"HiGHS (interior point) stopped without an optimal TE solution: {status.name}")

    def lagrangian_gap(self, reduced: np.ndarray) -> float:
        """How far the master's objective may be above the full path LP's optimum, relative:
        each commodity could at best move all of its demand to its cheapest path (``reduced``:
        every path's reduced cost, +inf for those in the master). Without hedging only."""
        cheapest = np.minimum(reduced.min(axis=1), 0.0)
        objective = self.objective()
        return float(-(self.demand * cheapest).sum() / max(abs(objective), 1e-12))

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

    def flows(self) -> tuple[float, np.ndarray]:
        """The MLU and the (K, N) path flows, in scaled units."""
        col_value = np.asarray(self.highs.getSolution().col_value)
        flow = np.where(self.at_upper, self.bounds, 0.0)
        flow[self.col_commodity, self.col_via] = np.clip(col_value[1:], 0.0, None)
        return float(col_value[0]), flow


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
    pool_mask = _pool_mask(pool, graph, comm)
    ipm_solves = pool.ipm_solves if pool is not None and pool.nodes == graph.nodes else 0
    rows = graph.n_links + comm.count
    interior_point = ipm_solves > 0
    order = _widest_first(paths) if hedge is None else None  # for both: computed once
    if not interior_point and hedge is None and looks_degenerate(paths, demand, lower, rows, order):
        log.info("TE master: %d rows with hot pairs needing many of their paths: solving by the "
                 "interior point method", rows)
        interior_point, ipm_solves = True, IPM_SOLVES_REMEMBERED + 1
    if hedge is None:
        two_hop = INITIAL_TWO_HOP_PATHS_IPM if interior_point else INITIAL_TWO_HOP_PATHS
        columns = initial_columns(paths, demand, lower, pool_mask, two_hop, order)
        at_upper = np.zeros_like(columns)
    else:
        columns, at_upper = initial_hedged_split(paths, bounds, demand, pool_mask)
    master = _Master(graph, paths, demand, bounds, unit, total, hop_cost, at_upper)
    master.add(columns)
    tolerance = REDUCED_COST_TOLERANCE * max(total, 1.0)
    rounds, optimal = 0, True
    iteration_limit = max(MIN_SIMPLEX_ITERATIONS, int(SIMPLEX_ITERATIONS_PER_ROW * rows))
    while True:
        if interior_point:
            master.solve_by_ipm()
        elif not master.solve(iteration_limit):
            log.info(
                "TE master %d stopped at %d simplex iterations (a degenerate LP): solving by the "
                "interior point method", rounds + 1, iteration_limit,
            )
            interior_point, ipm_solves = True, IPM_SOLVES_REMEMBERED + 1
            master.solve_by_ipm()
        rounds += 1
        reduced = master.reduced_costs()
        # A path at its upper bound improves things by lowering its flow: when its reduced
        # cost is positive.
        reduced = np.where(master.at_upper, -reduced, reduced)
        reduced = np.where(master.in_master, np.inf, reduced)
        if interior_point and hedge is None and master.lagrangian_gap(reduced) <= LAGRANGIAN_GAP:
            break
        per_commodity = max(NEW_PATHS_PER_ROUND, COLUMNS_PER_ROUND // comm.count)
        entering = _most_negative(reduced, tolerance, per_commodity)
        if not entering.any():
            break
        if rounds >= MAX_ROUNDS:
            log.warning("TE column generation stopped after %d rounds, not proven optimal", rounds)
            optimal = False
            break
        log.debug("TE round %d: objective %.9g, %d paths enter", rounds, master.objective(), entering.sum())
        master.add(entering)
    mlu, flow = master.flows()
    flow *= unit
    used = PathPool.empty(graph.nodes, graph.n_blocks)
    used.ipm_solves = max(0, ipm_solves - 1)
    # Next time, the master starts from the paths that carry traffic (not those at a bound).
    in_use = (flow > 0) & ~master.at_upper
    used.used[comm.src[:, None], comm.dst[:, None], np.arange(graph.n_nodes)[None, :]] = in_use
    log.debug(
        "TE LP: MLU %.6f after %d rounds, %d path columns, %d simplex iterations",
        mlu, rounds, len(master.col_via), master.iterations,
    )
    solution = LpSolution(mlu, flow, len(master.col_via), rounds, master.iterations, optimal, interior_point)
    return solution, used


def looks_degenerate(
    paths: CandidatePaths, demand: np.ndarray, mlu_floor: float, rows: int, order: np.ndarray | None = None
) -> bool:
    """A large master with many hot pairs, each needing many of its paths at the MLU lower
    bound: the simplex would wander its degenerate vertices (see the module docstring)."""
    if rows < IPM_FIRST_ROWS:
        return False
    floor_capacity = np.where(paths.valid, paths.bottleneck_gbps * mlu_floor, 0.0)
    order = _widest_first(paths) if order is None else order  # the first master's order
    needed = _prefix_until(order, floor_capacity, demand).sum(axis=1)
    dense = needed > DENSE_SHARE * paths.valid.sum(axis=1)
    return bool(int(dense.sum()) >= paths.valid.shape[1] / 2)


def _pool_mask(pool: PathPool | None, graph: LinkGraph, comm: Commodities) -> np.ndarray | None:
    if pool is None or pool.nodes != graph.nodes:
        return None
    return pool.used[comm.src, comm.dst, :]


def _most_negative(reduced: np.ndarray, tolerance: float, per_commodity: int) -> np.ndarray:
    """Mask of each commodity's ``per_commodity`` most negative reduced costs below -tolerance."""
    negative = reduced < -tolerance
    if not negative.any() or reduced.shape[1] <= per_commodity:
        return negative
    cut = np.partition(reduced, per_commodity - 1, axis=1)[:, per_commodity - 1]
    return negative & (reduced <= cut[:, None])
