"""An independent min-MLU formulation for tests: arc flows on a two-layer graph, in PuLP.

It shares nothing with optimizer.te.paths / optimizer.te.lp: capacities are recomputed from the
topology counts and speeds here, and flow is modelled per commodity on links (first hop out
of the source, second hop into the destination, conserved at the intermediate node), not
per path.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulp

from optimizer.fabric import Fabric, SpineSwitch
from optimizer.topology import Topology
from optimizer.traffic import TrafficMatrix


def link_capacities(
    fabric: Fabric, topology: Topology, spine: Sequence[SpineSwitch] | None = None
) -> dict[tuple[str, str], float]:
    spine = fabric.spine if spine is None else spine
    caps: dict[tuple[str, str], float] = {}
    for a, b, count in topology.links():
        gbps = count * min(fabric.block(a).speed_gbps, fabric.block(b).speed_gbps)
        caps[(a, b)] = caps.get((a, b), 0.0) + gbps
        caps[(b, a)] = caps.get((b, a), 0.0) + gbps
    for s in spine:
        for block, count in s.links:
            if count:
                gbps = count * min(s.speed_gbps, fabric.block(block).speed_gbps)
                caps[(block, s.name)] = caps.get((block, s.name), 0.0) + gbps
                caps[(s.name, block)] = caps.get((s.name, block), 0.0) + gbps
    return caps


def arc_min_mlu(
    fabric: Fabric,
    topology: Topology,
    tm: TrafficMatrix,
    spine: Sequence[SpineSwitch] | None = None,
) -> float:
    caps = link_capacities(fabric, topology, spine)
    nodes = sorted({u for u, _ in caps} | {v for _, v in caps})
    prob = pulp.LpProblem("arc_mlu", pulp.LpMinimize)
    mlu = pulp.LpVariable("mlu", lowBound=0)
    prob += mlu
    load: dict[tuple[str, str], list[pulp.LpVariable]] = {e: [] for e in caps}
    for a, b, demand in tm.pairs():
        first = {v: pulp.LpVariable(f"f_{a}_{b}_{v}", lowBound=0) for v in nodes if (a, v) in caps}
        second = {
            v: pulp.LpVariable(f"g_{a}_{b}_{v}", lowBound=0)
            for v in nodes
            if (v, b) in caps and v not in (a, b)
        }
        prob += pulp.lpSum(first.values()) == demand
        for v, var in first.items():
            load[(a, v)].append(var)
            if v != b:
                # What reaches an intermediate node leaves it towards b, or nothing may enter.
                prob += var == second.get(v, 0)
        for v, var in second.items():
            load[(v, b)].append(var)
            if v not in first:
                prob += var == 0
    for e, variables in load.items():
        if variables:
            prob += pulp.lpSum(variables) <= caps[e] * mlu
    prob.solve(pulp.PULP_CBC_CMD(msg=False))
    if prob.status != pulp.LpStatusOptimal or prob.sol_status != pulp.LpSolutionOptimal:
        raise RuntimeError(f"reference arc LP failed: {pulp.LpStatus[prob.status]}")
    return float(mlu.varValue)
