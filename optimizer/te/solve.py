"""Traffic engineering: min-MLU routing over direct, one-transit and spine paths, as WCMP groups.

Public entry points:

- :func:`solve_te` — the full plan: LP, integer weights within the table budget, the
  figures an operator reads (MLU before and after quantisation, link utilisation, stretch,
  scale factor) and the uniform-mesh ECMP baseline;
- :func:`min_mlu` — the LP's MLU only, cheap enough to call many times (staging);
- :class:`TeSolver` — the same two, keeping the previous solve's paths to warm-start the
  next one (the daemon re-solves every cycle).

Pure: no I/O and no clock. Errors are :mod:`optimizer.errors` types.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from optimizer.errors import ConfigError
from optimizer.fabric import Fabric, SpineSwitch
from optimizer.te.linkfit import (
    DEFAULT_SWITCH_BUDGET,
    Repaired,
    fit_switch_budget,
    repair_link_loads,
)
from optimizer.te.lp import LpSolution, PathPool, solve_path_lp
from optimizer.te.paths import (
    CandidatePaths,
    Commodities,
    LinkGraph,
    all_pairs,
    build_link_graph,
    candidate_paths,
    check_routable,
    commodities_of,
    path_loads,
)
from optimizer.te.scenarios import (
    MAX_SCENARIO_ENTRIES,
    WARM_STEPS,
    PathOperator,
    ScenarioPlanner,
    capacity_split,
    path_caps,
)
from optimizer.te.wcmp import (
    DEFAULT_MAX_OVERSUBSCRIPTION,
    DEFAULT_TABLE_SIZE,
    oversubscription,
    reduce_weights,
)
from optimizer.topology import Topology, mesh_topology
from optimizer.traffic import TrafficMatrix


@dataclass(frozen=True, slots=True)
class NextHop:
    """A WCMP group member: ``via`` is the destination (direct), a transit block or a spine.

    ``share`` is the fraction of the group's traffic the plan gives it (the LP's split, or an
    equal split for an ``equal_split`` group); the weights give it ``weight / sum of weights``.
    """

    via: str
    weight: int
    share: float


@dataclass(frozen=True, slots=True)
class Group:
    """The weighted next-hop group block ``src`` uses for traffic to block ``dst``."""

    src: str
    dst: str
    next_hops: tuple[NextHop, ...]
    oversubscription: float  # max over members of (weight share) / (planned share)
    demand_gbps: float
    equal_split: bool = False  # planned as ECMP over all paths, not the LP split (see TeSolver)

    @property
    def entries(self) -> int:
        return sum(h.weight for h in self.next_hops)

    def to_json(self) -> dict[str, Any]:
        return {
            "src": self.src,
            "dst": self.dst,
            "next_hops": [
                {"via": h.via, "weight": h.weight, "share": round(h.share, 6)} for h in self.next_hops
            ],
            "oversubscription": round(self.oversubscription, 6),
            "equal_split": self.equal_split,
        }


@dataclass(frozen=True, slots=True)
class LinkUtilisation:
    """One directed link: capacity and the load the quantised weights (and the LP) put on it."""

    src: str
    dst: str
    capacity_gbps: float
    load_gbps: float
    utilisation: float
    utilisation_lp: float

    def to_json(self) -> dict[str, Any]:
        return {
            "src": self.src,
            "dst": self.dst,
            "capacity_gbps": round(self.capacity_gbps, 6),
            "load_gbps": round(self.load_gbps, 6),
            "utilization": round(self.utilisation, 6),
            "utilization_lp": round(self.utilisation_lp, 6),
        }


@dataclass(frozen=True)
class TeResult:
    """A TE plan and its figures. MLUs are fractions of link capacity (1.0 = full)."""

    fabric: str
    topology: Topology
    hedge: float | None
    table_size: int
    max_oversubscription: float  # the bound the weight reduction aimed for
    mlu: float  # the LP optimum
    mlu_quantized: float  # routing the matrix with the integer weights
    stretch: float  # traffic-weighted mean block hops with the integer weights
    stretch_lp: float
    oversubscription: float  # achieved: max over groups with demand (>= 1), against their plan
    groups: tuple[Group, ...]
    links: tuple[LinkUtilisation, ...]
    baseline_mlu: float  # uniform mesh, ECMP over all paths, same matrix (inf: a demand has no path)
    total_demand_gbps: float
    lp_columns: int
    lp_rounds: int
    lp_optimal: bool = True  # False only if column generation hit its round limit
    equal_split_groups: int = 0  # groups that fell back to ECMP over all their paths
    method: str = "min_mlu"  # what the split was planned for (min_mlu, or the scenario solve)

    @property
    def scale_factor(self) -> float | None:
        """The largest factor the matrix can be multiplied by and still fit (1 / MLU)."""
        return 1.0 / self.mlu if self.mlu > 0 else None

    def weights_by_source(self, include_spine: bool = True) -> dict[str, dict[str, dict[str, int]]]:
        """{src: {dst: {via: weight}}}: each block's source groups, as devices take them.

        Traffic that arrives at a block from an uplink (transit) only goes direct, so the
        transit groups are not part of the plan.
        """
        blocks = set(self.topology.blocks)
        tables: dict[str, dict[str, dict[str, int]]] = {b: {} for b in self.topology.blocks}
        for g in self.groups:
            hops = {h.via: h.weight for h in g.next_hops if include_spine or h.via in blocks}
            if hops:
                tables[g.src][g.dst] = hops
        return tables

    def group(self, src: str, dst: str) -> Group:
        for g in self.groups:
            if g.src == src and g.dst == dst:
                return g
        raise KeyError(f"no group {src}->{dst}")

    def to_json(self) -> dict[str, Any]:
        scale = self.scale_factor
        return {
            "fabric": self.fabric,
            "topology": self.topology.to_json(),
            "routing": {
                "mlu": round(self.mlu, 6),
                "mlu_quantized": round(self.mlu_quantized, 6),
                "stretch": round(self.stretch, 6),
                "stretch_lp": round(self.stretch_lp, 6),
                "scale_factor": None if scale is None else round(scale, 6),
                "hedge": self.hedge,
                "table_size": self.table_size,
                "max_oversubscription": self.max_oversubscription,
                "oversubscription": round(self.oversubscription, 6),
                "total_demand_gbps": round(self.total_demand_gbps, 6),
                "groups": [g.to_json() for g in self.groups],
                "links": [link.to_json() for link in self.links],
            },
            "baseline": {
                "mlu": round(self.baseline_mlu, 6) if np.isfinite(self.baseline_mlu) else None,
                "kind": "uniform mesh, ECMP over all paths",
            },
            "solver": {
                "columns": self.lp_columns,
                "rounds": self.lp_rounds,
                "optimal": self.lp_optimal,
                "method": self.method,
            },
            "equal_split_groups": self.equal_split_groups,
        }


@dataclass(frozen=True)
class _Instance:
    """A fabric, topology and matrix turned into arrays, with every block pair's paths."""

    graph: LinkGraph
    pairs: CandidatePaths  # every ordered block pair, row-major
    comm: Commodities  # the pairs with demand
    comm_rows: np.ndarray  # row of each commodity in ``pairs``
    comm_paths: CandidatePaths


def _instance(
    fabric: Fabric, topology: Topology, tm: TrafficMatrix, spine: Sequence[SpineSwitch] | None
) -> _Instance:
    graph = build_link_graph(fabric, topology, spine)
    topology.check_fits(fabric)
    comm = commodities_of(tm, fabric)
    src, dst = all_pairs(fabric.n_blocks)
    pairs = candidate_paths(graph, src, dst)
    row_of = np.full((fabric.n_blocks, fabric.n_blocks), -1, dtype=np.int64)
    row_of[src, dst] = np.arange(len(src))
    rows = row_of[comm.src, comm.dst]
    comm_paths = CandidatePaths(
        comm.src,
        comm.dst,
        pairs.valid[rows],
        pairs.first[rows],
        pairs.second[rows],
        pairs.bottleneck_gbps[rows],
        pairs.hops[rows],
    )
    check_routable(comm_paths, graph)
    return _Instance(graph, pairs, comm, rows, comm_paths)


def _rows(paths: CandidatePaths, rows: np.ndarray) -> CandidatePaths:
    return CandidatePaths(
        paths.src[rows],
        paths.dst[rows],
        paths.valid[rows],
        paths.first[rows],
        paths.second[rows],
        paths.bottleneck_gbps[rows],
        paths.hops[rows],
    )


def _check_parameters(hedge: float | None, table_size: int, max_oversubscription: float) -> None:
    if hedge is not None and not 0.0 < hedge <= 1.0:
        raise ConfigError("<te>", "hedge", f"must be in (0, 1], got {hedge}")
    if table_size < 1:
        raise ConfigError("<te>", "table_size", f"must be >= 1, got {table_size}")
    if not max_oversubscription >= 1.0:
        raise ConfigError("<te>", "max_oversubscription", f"must be >= 1, got {max_oversubscription}")


def _mlu(graph: LinkGraph, paths: CandidatePaths, flow_gbps: np.ndarray) -> tuple[float, np.ndarray]:
    load = path_loads(graph, paths, flow_gbps)
    utilisation = load / graph.capacity_gbps
    return (float(utilisation.max()) if len(utilisation) else 0.0), load


def ecmp_mlu(
    fabric: Fabric,
    tm: TrafficMatrix,
    spine: Sequence[SpineSwitch] | None = None,
    topology: Topology | None = None,
) -> float:
    """MLU when every pair splits its traffic equally over all its paths (default: the mesh)."""
    topology = mesh_topology(fabric) if topology is None else topology
    graph = build_link_graph(fabric, topology, spine)
    comm = commodities_of(tm, fabric)
    paths = candidate_paths(graph, comm.src, comm.dst)
    return _ecmp_mlu(graph, comm, paths)


def _ecmp_mlu(graph: LinkGraph, comm: Commodities, paths: CandidatePaths) -> float:
    """Equal split over every path; infinite if some demand has no path at all."""
    counts = paths.valid.sum(axis=1)
    if (counts == 0).any():
        return float("inf")
    flow = np.where(paths.valid, (comm.demand_gbps / np.maximum(counts, 1))[:, None], 0.0)
    return _mlu(graph, paths, flow)[0]


def _weighted_flow(demand_gbps: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Gbit/s per path when each row's demand is split by its integer weights."""
    totals = np.maximum(weights.sum(axis=1), 1)
    flow: np.ndarray = demand_gbps[:, None] * weights / totals[:, None]
    return flow


def _stretch(paths: CandidatePaths, flow_gbps: np.ndarray) -> float:
    total = float(flow_gbps.sum())
    return float((flow_gbps * paths.hops).sum()) / total if total > 0 else 1.0


class TeSolver:
    """Repeated TE on one fabric, warm-started from the previous solve's paths.

    Not thread-safe; one per loop. The pool is only a hint: a solve is exact whatever it holds.
    """

    def __init__(
        self,
        fabric: Fabric,
        hedge: float | None = None,
        table_size: int = DEFAULT_TABLE_SIZE,
        max_oversubscription: float = DEFAULT_MAX_OVERSUBSCRIPTION,
        switch_budget: int = DEFAULT_SWITCH_BUDGET,
    ) -> None:
        _check_parameters(hedge, table_size, max_oversubscription)
        if isinstance(switch_budget, bool) or not isinstance(switch_budget, int) or switch_budget < 1:
            raise ConfigError("<te>", "switch_budget", f"must be an integer >= 1, got {switch_budget!r}")
        self.fabric = fabric
        self.switch_budget = switch_budget
        self.hedge = hedge
        self.table_size = table_size
        self.max_oversubscription = max_oversubscription
        self._pool: PathPool | None = None
        self._mesh: Topology | None = None
        self._scenarios = ScenarioPlanner()  # the routing in force, for the next scenario solve
        self._operator_cache: tuple[tuple[bytes, bytes, bytes], PathOperator] | None = None

    @property
    def mesh(self) -> Topology:
        if self._mesh is None:
            self._mesh = mesh_topology(self.fabric)
        return self._mesh

    def min_mlu(
        self, topology: Topology | None, tm: TrafficMatrix, spine: Sequence[SpineSwitch] | None = None
    ) -> float:
        inst = _instance(self.fabric, self.mesh if topology is None else topology, tm, spine)
        return self._solve_lp(inst).mlu

    def solve(
        self, topology: Topology | None, tm: TrafficMatrix, spine: Sequence[SpineSwitch] | None = None
    ) -> TeResult:
        topology = self.mesh if topology is None else topology
        inst = _instance(self.fabric, topology, tm, spine)
        lp = self._solve_lp(inst)
        return self._plan_lp(inst, topology, spine, lp)

    def _solve_lp(self, inst: _Instance) -> LpSolution:
        lp, self._pool = solve_path_lp(inst.graph, inst.comm, inst.comm_paths, self.hedge, self._pool)
        return lp

    def solve_scenarios(
        self,
        topology: Topology | None,
        matrices: Sequence[TrafficMatrix],
        spine: Sequence[SpineSwitch] | None = None,
        warm_steps: int = WARM_STEPS,
        burst: float = 0.0,
        tail: float = 0.0,
    ) -> TeResult:
        """One routing for the recent ``matrices`` together (oldest first): the sample-average
        TE of :mod:`optimizer.te.scenarios`, capped by this solver's hedge, warm-started from
        the previous scenario solve on the same paths. Figures (MLU, links, stretch) are of the
        newest matrix, which the result is judged on as any other TE result. ``burst`` is the
        share of the objective on per-pair burst scenarios (:func:`~optimizer.te.scenarios.with_bursts`),
        ``tail`` the share on the CVaR of all the scenarios (:func:`~optimizer.te.scenarios.cvar`).

        At most :data:`~optimizer.te.scenarios.MAX_SCENARIO_ENTRIES` matrices x paths are
        used, the newest matrices first: a long window on a small fabric, about a dozen
        matrices at 64 blocks (a decision stays within its time there)."""
        topology = self.mesh if topology is None else topology
        latest = matrices[-1]
        inst = _instance(self.fabric, topology, latest, spine)
        pairs = inst.pairs
        matrices = matrices[-max(1, MAX_SCENARIO_ENTRIES // pairs.valid.size) :]
        blocks = self.fabric.block_names
        demands = np.array([m.gbps[pairs.src, pairs.dst] for m in matrices if m.blocks == blocks])
        active = demands.sum(axis=1) > 0
        if not active.any():
            fractions = capacity_split(pairs)
            iterations, objective, used = 0, 0.0, 0
        else:
            demands = demands[active]
            check_routable(_rows(pairs, np.flatnonzero(demands.max(axis=0) > 0)), inst.graph)
            operator = self._operator(inst)

            def lp_start() -> np.ndarray:
                return self._lp_fractions(inst, self._solve_lp(inst))

            caps = path_caps(pairs, self.hedge)
            solved, used = self._scenarios.plan(
                operator, demands, caps, lp_start, warm_steps, burst, tail
            )
            fractions, iterations, objective = solved.fractions, solved.iterations, solved.objective
        flow = fractions[inst.comm_rows] * inst.comm.demand_gbps[:, None]
        mlu, _ = _mlu(inst.graph, inst.comm_paths, flow)
        return self._plan(
            inst,
            topology,
            spine,
            fractions,
            mlu,
            flow,
            columns=int(pairs.valid.sum()),
            rounds=iterations,
            optimal=True,
            method=f"scenarios ({used} matrices, mean ratio {objective:.4f})",
        )

    def _operator(self, inst: _Instance) -> PathOperator:
        key = (
            inst.graph.capacity_gbps.tobytes(),
            inst.graph.link_src.tobytes(),
            inst.graph.link_dst.tobytes(),
        )
        if self._operator_cache is None or self._operator_cache[0] != key:
            self._operator_cache = (key, PathOperator(inst.graph, inst.pairs))
        return self._operator_cache[1]

    @staticmethod
    def _lp_fractions(inst: _Instance, lp: LpSolution) -> np.ndarray:
        """Every pair's split: the LP's where there is demand, else by path capacity."""
        fractions = capacity_split(inst.pairs)
        if inst.comm.count:
            fractions[inst.comm_rows] = lp.flow_gbps / inst.comm.demand_gbps[:, None]
        return fractions

    def _plan_lp(
        self,
        inst: _Instance,
        topology: Topology,
        spine: Sequence[SpineSwitch] | None,
        lp: LpSolution,
    ) -> TeResult:
        """The LP's split where there is demand, else in proportion to path capacity (the
        oblivious hedge) so that unforeseen traffic still spreads."""
        fractions = self._lp_fractions(inst, lp)
        method = "min_mlu (interior point)" if lp.interior_point else "min_mlu"
        return self._plan(
            inst, topology, spine, fractions, lp.mlu, lp.flow_gbps, lp.columns, lp.rounds, lp.optimal,
            method=method,
        )

    def _plan(
        self,
        inst: _Instance,
        topology: Topology,
        spine: Sequence[SpineSwitch] | None,
        fractions: np.ndarray,
        mlu: float,
        planned_flow: np.ndarray,
        columns: int,
        rounds: int,
        optimal: bool,
        method: str = "min_mlu",
    ) -> TeResult:
        """Integer weights for ``fractions`` (every pair's split over its paths) and the
        figures; ``mlu`` and ``planned_flow`` are the fractional plan's on the matrix."""
        graph, pairs, comm = inst.graph, inst.pairs, inst.comm
        demand_of_pair = np.zeros(pairs.count)
        demand_of_pair[inst.comm_rows] = comm.demand_gbps
        reduced, tables = fit_switch_budget(
            fractions, pairs.src, self.table_size, self.max_oversubscription, self.switch_budget
        )
        weights, equal_split = self._fallback_to_equal_split(inst, fractions, reduced, tables)
        if equal_split.any():
            # Those groups' plan is now ECMP: shares and over-subscription are against it.
            every_path = pairs.valid[equal_split]
            ecmp_fractions = fractions.copy()
            ecmp_fractions[equal_split] = every_path / every_path.sum(axis=1, keepdims=True)
        else:
            ecmp_fractions = fractions
        target = mlu * self.max_oversubscription
        repaired = self._repair(inst, demand_of_pair, ecmp_fractions, weights, tables, mlu, equal_split)
        if equal_split.any():
            # Those groups' weights free to change (from ECMP, then from the unequal splits) may
            # beat ECMP in the groups that missed the bound.
            for split, start in ((ecmp_fractions, weights), (fractions, reduced)):
                if _mlu_of(inst, repaired.weights) <= target * (1 + 1e-9):
                    break
                unfrozen = self._repair(inst, demand_of_pair, split, start, tables, mlu, None)
                if _mlu_of(inst, unfrozen.weights) < _mlu_of(inst, repaired.weights):
                    repaired, equal_split = unfrozen, np.zeros_like(equal_split)
        weights, fractions = repaired.weights, repaired.fractions
        group_oversubscription = oversubscription(weights, fractions)
        quantised_flow = _weighted_flow(comm.demand_gbps, weights[inst.comm_rows])
        mlu_quantized, load = _mlu(graph, inst.comm_paths, quantised_flow)
        _, lp_load = _mlu(graph, inst.comm_paths, planned_flow)
        if topology is self.mesh:
            mesh_graph, mesh_paths = graph, inst.comm_paths
        else:
            mesh_graph = build_link_graph(self.fabric, self.mesh, spine)
            mesh_paths = candidate_paths(mesh_graph, comm.src, comm.dst)

        groups = _groups(
            graph, pairs, weights, fractions, group_oversubscription, demand_of_pair, equal_split
        )
        with_demand = group_oversubscription[inst.comm_rows]
        return TeResult(
            fabric=self.fabric.name,
            topology=topology,
            hedge=self.hedge,
            table_size=self.table_size,
            max_oversubscription=self.max_oversubscription,
            mlu=mlu,
            mlu_quantized=mlu_quantized,
            stretch=_stretch(inst.comm_paths, quantised_flow),
            stretch_lp=_stretch(inst.comm_paths, planned_flow),
            oversubscription=float(with_demand.max()) if len(with_demand) else 1.0,
            groups=groups,
            links=_links(graph, load, lp_load),
            baseline_mlu=_ecmp_mlu(mesh_graph, comm, mesh_paths),
            total_demand_gbps=float(comm.demand_gbps.sum()),
            lp_columns=columns,
            lp_rounds=rounds,
            lp_optimal=optimal,
            equal_split_groups=int(equal_split.sum()),
            method=method,
        )

    def _repair(
        self,
        inst: _Instance,
        demand: np.ndarray,
        fractions: np.ndarray,
        weights: np.ndarray,
        tables: np.ndarray,
        plan_mlu: float,
        frozen: np.ndarray | None,
    ) -> Repaired:
        return repair_link_loads(
            inst.graph, inst.pairs, demand, fractions, weights, tables, inst.pairs.src,
            self.switch_budget, plan_mlu, self.max_oversubscription, frozen,
        )

    def _fallback_to_equal_split(
        self, inst: _Instance, fractions: np.ndarray, weights: np.ndarray, tables: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The reduced weights, or, if it routes the matrix with a lower MLU, the same with
        an equal split over all paths (ECMP) in every group that missed the bound.

        When a group spreads over more paths than its table has room for (an ML ring over
        63 transits in 128 entries), one entry is a large slice of a link, and rounding
        unequal shares can cost more than ECMP: the plan should never deploy worse.
        """
        comm, rows = inst.comm, inst.comm_rows
        missed = np.zeros(inst.pairs.count, dtype=bool)
        achieved = oversubscription(weights, fractions)
        missed[rows] = achieved[rows] > self.max_oversubscription * (1 + 1e-9)
        if not missed.any():
            return weights, missed
        every_path = inst.pairs.valid[missed].astype(np.float64)
        candidate = weights.copy()
        for table in np.unique(tables[missed]).tolist():
            same = tables[missed] == table
            rows_same = np.flatnonzero(missed)[same]
            candidate[rows_same] = reduce_weights(every_path[same], int(table), 1.0).weights
        graph, paths = inst.graph, inst.comm_paths
        mlu_reduced = _mlu(graph, paths, _weighted_flow(comm.demand_gbps, weights[rows]))[0]
        mlu_candidate = _mlu(graph, paths, _weighted_flow(comm.demand_gbps, candidate[rows]))[0]
        if mlu_candidate < mlu_reduced:
            return candidate, missed
        return weights, np.zeros_like(missed)


def _mlu_of(inst: _Instance, weights: np.ndarray) -> float:
    flow = _weighted_flow(inst.comm.demand_gbps, weights[inst.comm_rows])
    return _mlu(inst.graph, inst.comm_paths, flow)[0]


def _groups(
    graph: LinkGraph,
    pairs: CandidatePaths,
    weights: np.ndarray,
    fractions: np.ndarray,
    oversubscription: np.ndarray,
    demand: np.ndarray,
    equal_split: np.ndarray,
) -> tuple[Group, ...]:
    nodes = graph.nodes
    rows, vias = np.nonzero(weights)
    ends = np.searchsorted(rows, np.arange(pairs.count), side="right").tolist()
    vias_list, weight_list = vias.tolist(), weights[rows, vias].tolist()
    share_list = fractions[rows, vias].tolist()
    src, dst = pairs.src.tolist(), pairs.dst.tolist()
    groups = []
    begin = 0
    for row, end in enumerate(ends):
        if end == begin:
            continue
        hops = tuple(NextHop(nodes[vias_list[i]], weight_list[i], share_list[i]) for i in range(begin, end))
        groups.append(
            Group(
                nodes[src[row]],
                nodes[dst[row]],
                hops,
                float(oversubscription[row]),
                float(demand[row]),
                bool(equal_split[row]),
            )
        )
        begin = end
    return tuple(groups)


def _links(graph: LinkGraph, load: np.ndarray, lp_load: np.ndarray) -> tuple[LinkUtilisation, ...]:
    nodes = graph.nodes
    caps = graph.capacity_gbps
    return tuple(
        LinkUtilisation(nodes[s], nodes[d], float(c), float(q), float(q / c), float(p / c))
        for s, d, c, q, p in zip(
            graph.link_src.tolist(),
            graph.link_dst.tolist(),
            caps.tolist(),
            load.tolist(),
            lp_load.tolist(),
            strict=True,
        )
    )


def solve_te(
    fabric: Fabric,
    topology: Topology | None,
    tm: TrafficMatrix,
    spine: Sequence[SpineSwitch] | None = None,
    hedge: float | None = None,
    table_size: int = DEFAULT_TABLE_SIZE,
    max_oversubscription: float = DEFAULT_MAX_OVERSUBSCRIPTION,
    switch_budget: int = DEFAULT_SWITCH_BUDGET,
) -> TeResult:
    """Plan TE for ``tm`` on ``topology`` (None: the uniform mesh) and the spine.

    ``spine`` defaults to the fabric's spine; pass ``()`` to route without it. ``hedge`` is
    S in (0, 1] (None: plain min-MLU). ``table_size`` bounds each group's weights and
    ``switch_budget`` the sum of the weights of all the groups of one switch; the weights
    aim for ``mlu_quantized <= mlu * max_oversubscription`` on every link (see
    :mod:`optimizer.te.linkfit`). Raises InfeasibleError if a demand has no path.
    """
    return TeSolver(fabric, hedge, table_size, max_oversubscription, switch_budget).solve(topology, tm, spine)


def min_mlu(
    fabric: Fabric,
    topology: Topology | None,
    tm: TrafficMatrix,
    spine: Sequence[SpineSwitch] | None = None,
    hedge: float | None = None,
    pool: PathPool | None = None,
) -> float:
    """The LP's minimum MLU only (no weights): for staging, which asks many times."""
    _check_parameters(hedge, DEFAULT_TABLE_SIZE, DEFAULT_MAX_OVERSUBSCRIPTION)
    topology = mesh_topology(fabric) if topology is None else topology
    inst = _instance(fabric, topology, tm, spine)
    return solve_path_lp(inst.graph, inst.comm, inst.comm_paths, hedge, pool)[0].mlu


__all__ = [
    "Group",
    "LinkUtilisation",
    "NextHop",
    "PathPool",
    "TeResult",
    "TeSolver",
    "ecmp_mlu",
    "min_mlu",
    "solve_te",
]
