"""How far is the mapping from the true optimum? An exact MIP on small fabrics.

Not part of the product (an ILP over ports does not scale): it solves the mapping
exactly for small fabrics with HiGHS (scipy.optimize.milp) - the fewest circuits removed
such that the circuits realise the target, every OCS port is used at most once north to
south, and every pair respects its domain limit - and prints it beside the polynomial
mapping's count and the lower bound sum(max(0, L_old - L_new)).

    python -m benchmarks.mapping_optimum
    python -m benchmarks.mapping_optimum --dense [--sizes 16 32] [--seconds 600]

``--dense``: is the 64-block gap the mapping's or the bound's? At 64 blocks
(``benchmarks/bench_toe.py``) the mapping removes 1.5-1.6x the wiring bound of
``benchmarks/mapping_bound.py``, and no MIP can say where the optimum lies in between. This mode
measures the same kind of instance smaller, where a MIP still finishes: Jupiter-shaped fabrics (one
north and one south port per block per OCS, every port in use) as dense as the 64-block one (about
two circuits per pair per domain), the uniform mesh -> ToE's topology for a skewed gravity matrix
(the ToE benchmark's first step). Per size: circuits removed by the mapping without and with its
MIP finishes (``resolve_domains``: the exact re-solve of each domain up to ``DOMAIN_COLUMNS``, the
guide-fixed MIP of bigger domains up to 32 blocks), the wiring bound, the exact optimum of one
domain with the mapping's split over the domains (the same MIP with no node limit), the same
domain with the arcs the dive's LP guide nearly settles fixed and the rest solved exactly
(:func:`optimizer.mapping.guide_fixed`, the product's candidate), and on 16 blocks the exact
optimum over every port and split (:func:`exact_removed`).
"""

from __future__ import annotations

import argparse
import logging
import time
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from benchmarks.bench_toe import LOAD, SKEW
from benchmarks.mapping_bound import wiring_lower_bound
from optimizer.config import generate_fabric
from optimizer.mapping import (
    MappingOptions,
    build_port_model,
    domain_layout,
    guide_fixed,
    map_topology,
    resolve_domain,
)
from optimizer.toe import plan_topology
from optimizer.topology import mesh_topology, uniform_mesh
from optimizer.traffic import gravity_matrix
from tests.support.mapping_helpers import gravity_topology, perturb

log = logging.getLogger("mapping_optimum")


def exact_removed(fabric, target, current, time_limit: float = 120.0) -> tuple[int | None, str]:
    """Fewest removed circuits over all valid mappings (None if the MIP did not finish)."""
    model = build_port_model(fabric, current)
    n, n_ocs = fabric.n_blocks, len(model.ocs)
    arcs = [(a, b) for a in range(n) for b in range(n) if a != b]
    n_arcs = len(arcs)
    size = 2 * n_ocs * n_arcs  # x[o, arc] circuits, k[o, arc] kept ones

    def x(o: int, e: int) -> int:
        return o * n_arcs + e

    def k(o: int, e: int) -> int:
        return n_ocs * n_arcs + o * n_arcs + e

    rows: list[tuple[list[int], list[float], float, float]] = []
    for o, ports in enumerate(model.ocs):
        for v in range(n):
            rows.append(([x(o, e) for e, (a, _) in enumerate(arcs) if a == v], [], 0, ports.north_budget(v)))
            rows.append(([x(o, e) for e, (_, b) in enumerate(arcs) if b == v], [], 0, ports.south_budget(v)))
        for e, arc in enumerate(arcs):
            rows.append(([k(o, e), x(o, e)], [1.0, -1.0], -np.inf, 0))
            rows.append(([k(o, e)], [], 0, len(ports.current.get(arc, []))))
    wanted = np.asarray(target.counts)
    domains = model.domains()
    # the product's limits: each domain's share of the ports (equal domains: 1/D of a pair)
    limit = domain_layout(model, wanted, rebalance=True).limit
    for a in range(n):
        for b in range(a + 1, n):
            both = (arcs.index((a, b)), arcs.index((b, a)))
            count = int(wanted[a, b])
            rows.append(([x(o, e) for o in range(n_ocs) for e in both], [], count, count))
            for i, d in enumerate(domains):
                cols = [x(o, e) for o in range(n_ocs) if model.ocs[o].domain == d for e in both]
                rows.append((cols, [], 0, int(limit[i][a, b])))
    data, ri, ci, lo, hi = [], [], [], [], []
    for r, (cols, vals, low, high) in enumerate(rows):
        for j, c in enumerate(cols):
            ri.append(r)
            ci.append(c)
            data.append(vals[j] if vals else 1.0)
        lo.append(low)
        hi.append(high)
    matrix = sp.csr_matrix((data, (ri, ci)), shape=(len(rows), size))
    cost = np.zeros(size)
    cost[n_ocs * n_arcs:] = -1.0
    result = milp(cost, constraints=LinearConstraint(matrix, lo, hi), integrality=np.ones(size),
                  bounds=Bounds(0, 1 << 20), options={"time_limit": time_limit})
    if result.status != 0 or result.fun is None:
        return None, result.message
    return len(current) - round(-result.fun), "optimal"


def jupiter_like(blocks: int, n_ocs: int, domains: int = 4):
    """One north and one south port per block on every OCS."""
    return generate_fabric(blocks, 2 * n_ocs, n_ocs, 2 * blocks + 8, domains=domains)


#: blocks -> OCSes: 4 domains of about one OCS per block, so pairs average two circuits per domain
DENSE_FABRICS = {16: 64, 32: 128}
#: Up to this many blocks the whole problem (every split over the domains) is solved exactly too.
GLOBAL_EXACT_BLOCKS = 16


def run_dense(blocks: int, seconds: float) -> dict[str, Any]:
    fabric = jupiter_like(blocks, DENSE_FABRICS[blocks])
    mesh = uniform_mesh(fabric)
    target = plan_topology(fabric, gravity_matrix(fabric, seed=1, load=LOAD, skew=SKEW), mesh).topology
    started = time.perf_counter()
    without = map_topology(fabric, target, mesh, options=MappingOptions(resolve_domains=False))
    without_s = time.perf_counter() - started
    started = time.perf_counter()
    resolved = map_topology(fabric, target, mesh)
    resolved_s = time.perf_counter() - started
    bound = wiring_lower_bound(fabric, target, mesh, resolved.kept)
    # domain 0 with the mapping's split, solved to the end (or ``seconds``)
    domain = fabric.domains[0]
    model = build_port_model(fabric, sorted(without.circuits))
    ocs_list = [o for o in model.ocs if o.domain == domain]
    per_ocs = []  # the mapping's circuits, per OCS: north block x south block
    for o in ocs_list:
        counts = np.zeros((fabric.n_blocks, fabric.n_blocks), dtype=np.int64)
        for (a, b), circuits in o.current.items():
            counts[a, b] = len(circuits)
        per_ocs.append(counts)
    pairs = sum((c + c.T for c in per_ocs), np.zeros_like(per_ocs[0]))
    today = build_port_model(fabric, sorted(mesh))
    for o in ocs_list:  # score against today's circuits, not the mapping's
        o.current = next(t for t in today.ocs if t.name == o.name).current
    started = time.perf_counter()
    exact = resolve_domain(ocs_list, per_ocs, pairs, seconds, nodes=1_000_000)
    exact_s = time.perf_counter() - started
    current = sum(len(v) for o in ocs_list for v in o.current.values())

    def removed(counts: list[np.ndarray]) -> int:
        return current - sum(o.kept(c) for o, c in zip(ocs_list, counts, strict=True))

    started = time.perf_counter()
    fixed = guide_fixed(ocs_list, pairs, current - removed(per_ocs), seconds)  # the product's candidate
    fixed_s = time.perf_counter() - started
    optimum = None
    if blocks <= GLOBAL_EXACT_BLOCKS:
        optimum, _ = exact_removed(fabric, target, mesh, time_limit=seconds)
    return {
        "optimum": "-" if optimum is None else str(optimum),
        "blocks": blocks, "ocs": DENSE_FABRICS[blocks], "pair_bound": resolved.lower_bound, "wiring": bound,
        "without": without.removed, "without_s": without_s, "resolved": resolved.removed,
        "resolved_s": resolved_s, "domain_mapped": removed(per_ocs),
        "domain_exact": removed(exact or per_ocs), "domain_exact_s": exact_s,
        "domain_fixed": "-" if fixed is None else str(removed(fixed)), "domain_fixed_s": fixed_s,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dense", action="store_true", help="the dense fabrics instead (see above)")
    parser.add_argument("--sizes", type=int, nargs="+", default=sorted(DENSE_FABRICS))
    parser.add_argument("--seconds", type=float, default=600.0, help="time limit of a dense domain's MIP")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    log.setLevel(logging.INFO)
    if args.dense:
        log.info("| fabric | pair bound | wiring bound | exact optimum | mapping without MIP finishes"
                 " | with them | with / wiring bound | domain 0: mapping | domain 0: exact (its split)"
                 " | exact MIP (s) | domain 0: guide-fixed MIP |")
        log.info("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for blocks in args.sizes:
            r = run_dense(blocks, args.seconds)
            log.info("| %d blocks x %d OCS (1N/1S), 4 domains | %d | %d | %s | %d (%.1f s) | %d (%.1f s) "
                     "| %.2f | %d | %d | %.0f | %s (%.1f s) |", r["blocks"], r["ocs"], r["pair_bound"],
                     r["wiring"], r["optimum"], r["without"], r["without_s"], r["resolved"], r["resolved_s"],
                     r["resolved"] / r["wiring"], r["domain_mapped"], r["domain_exact"], r["domain_exact_s"],
                     r["domain_fixed"], r["domain_fixed_s"])
        return 0
    log.info("| fabric | change | pair bound | wiring bound | exact optimum | polynomial mapping "
             "| mapping / optimum | mapping time (s) |")
    log.info("|---|---|---:|---:|---:|---:|---:|---:|")
    cases = []
    for label, fabric in (
        ("8 blocks x 64, 32 OCS (1N/1S per OCS), 4 domains", generate_fabric(8, 64, 32, 24, domains=4)),
        ("8 blocks x 64, 8 OCS (4N/4S per OCS), 4 domains", generate_fabric(8, 64, 8, 72, domains=4)),
    ):
        mesh_top = mesh_topology(fabric)
        skewed = gravity_topology(fabric, np.random.default_rng(1), 1.0)
        swapped = perturb(mesh_top, len(uniform_mesh(fabric)) // 10, np.random.default_rng(1))
        cases.append((label, fabric, "mesh -> gravity (skew 1)", skewed))
        cases.append((label, fabric, "mesh -> 20% swaps", swapped))
    for blocks, n_ocs, swaps in ((16, 16, 10), (12, 32, 16)):
        fabric = jupiter_like(blocks, n_ocs)
        label = f"{blocks} blocks x {2 * n_ocs}, {n_ocs} OCS (1N/1S per OCS), 4 domains"
        for seed in (1, 2):
            target = perturb(mesh_topology(fabric), swaps, np.random.default_rng(seed))
            cases.append((label, fabric, f"mesh -> {swaps} pair swaps (seed {seed})", target))
    for label, fabric, change, target in cases:
        mesh = uniform_mesh(fabric)
        start = time.perf_counter()
        result = map_topology(fabric, target, mesh, options=MappingOptions(rebalance=True))
        seconds = time.perf_counter() - start
        bound = wiring_lower_bound(fabric, target, mesh, result.kept)
        best, status = exact_removed(fabric, target, mesh)
        ratio = f"{result.removed / best:.2f}" if best else "-"
        log.info("| %s | %s | %d | %d | %s | %d | %s | %.2f |", label, change, result.lower_bound, bound,
                 best if best is not None else status, result.removed, ratio, seconds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
