"""The plain path LP, built in PuLP and solved by CBC: the yardstick TE is measured against.

Every candidate path is a variable, and the objective is the MLU alone. It is slow at
Jupiter scale (about 45 s with CBC at 64 blocks) and exists for benchmarks and cross-checks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pulp

from optimizer.errors import SolverError
from optimizer.fabric import Fabric, SpineSwitch
from optimizer.te.lp import hedge_bounds
from optimizer.te.paths import NO_LINK, build_link_graph, candidate_paths, check_routable, commodities_of
from optimizer.topology import Topology, mesh_topology
from optimizer.traffic import TrafficMatrix


def reference_mlu(
    fabric: Fabric,
    tm: TrafficMatrix,
    topology: Topology | None = None,
    spine: Sequence[SpineSwitch] | None = None,
    hedge: float | None = None,
    time_limit_s: float | None = None,
) -> float:
    """Min MLU of the full path LP (every direct, one-transit and spine path), by PuLP + CBC."""
    topology = mesh_topology(fabric) if topology is None else topology
    graph = build_link_graph(fabric, topology, spine)
    comm = commodities_of(tm, fabric)
    if comm.count == 0:
        return 0.0
    paths = candidate_paths(graph, comm.src, comm.dst)
    check_routable(paths, graph)
    bounds = hedge_bounds(paths, comm.demand_gbps, hedge)

    prob = pulp.LpProblem("path_lp", pulp.LpMinimize)
    mlu = pulp.LpVariable("mlu", lowBound=0)
    prob += mlu
    ks, vs = np.nonzero(paths.valid)
    flows = [
        pulp.LpVariable(f"x_{k}_{v}", lowBound=0, upBound=None if np.isinf(ub) else float(ub))
        for k, v, ub in zip(ks.tolist(), vs.tolist(), bounds[ks, vs].tolist(), strict=True)
    ]
    by_commodity: list[list[pulp.LpVariable]] = [[] for _ in range(comm.count)]
    by_link: list[list[pulp.LpVariable]] = [[] for _ in range(graph.n_links)]
    firsts = paths.first[ks, vs].tolist()
    seconds = paths.second[ks, vs].tolist()
    for var, k, first, second in zip(flows, ks.tolist(), firsts, seconds, strict=True):
        by_commodity[k].append(var)
        by_link[first].append(var)
        if second != NO_LINK:
            by_link[second].append(var)
    for k, variables in enumerate(by_commodity):
        prob += pulp.lpSum(variables) == float(comm.demand_gbps[k]), f"demand_{k}"
    for e, variables in enumerate(by_link):
        if variables:
            prob += pulp.lpSum(variables) <= float(graph.capacity_gbps[e]) * mlu, f"link_{e}"
    solver = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit_s)
    prob.solve(solver)
    if prob.status != pulp.LpStatusOptimal or prob.sol_status != pulp.LpSolutionOptimal:
        raise SolverError(
            f"CBC did not solve the reference path LP: {pulp.LpStatus[prob.status]}, "
            f"solution {pulp.LpSolution[prob.sol_status]}"
        )
    return float(mlu.varValue)
