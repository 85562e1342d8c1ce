"""Is the 64-block gap the mapping's or the bound's? Exact optima on dense 1N/1S fabrics.

At 64 blocks (``benchmarks/bench_toe.py``) the mapping removes 1.5-1.6x the wiring bound of
``benchmarks/mapping_bound.py``, and no MIP can say where the optimum lies in between. This
benchmark measures the same kind of instance smaller, where a MIP still finishes: Jupiter-shaped
fabrics (one north and one south port per block per OCS, every port in use) as dense as the
64-block one (about two circuits per pair per domain), the uniform mesh -> ToE's topology for a
skewed gravity matrix (the ToE benchmark's first step). Per size: circuits removed by the mapping
without and with the exact re-solve of each domain (``optimizer/mapping/regroup.resolve_domain``,
which runs only up to ``DOMAIN_COLUMNS``), the wiring bound, and the exact optimum of one domain
with the mapping's split over the domains (the same MIP with no node limit: the domain's optimum,
beside the polynomial mapping's count for that domain).

Not part of the product. ``python -m benchmarks.mapping_dense [--sizes 16 32] [--seconds 600]``
"""

from __future__ import annotations

import argparse
import logging
import time

import numpy as np

from benchmarks.bench_toe import LOAD, SKEW
from benchmarks.mapping_bound import wiring_lower_bound
from benchmarks.mapping_optimum import jupiter_like
from optimizer.mapping import build_port_model, map_topology, resolve_domain
from optimizer.toe import plan_topology
from optimizer.topology import Circuit, uniform_mesh
from optimizer.traffic import gravity_matrix

log = logging.getLogger("mapping_dense")

#: blocks -> OCSes: 4 domains of about one OCS per block, so pairs average two circuits per domain
FABRICS = {16: 64, 32: 128}


def _domain_removed(fabric, circuits: tuple[Circuit, ...], current: list[Circuit], domain: int) -> int:
    ours = {c for c in circuits if fabric.ocs_named(c.ocs).domain == domain}
    today = [c for c in current if fabric.ocs_named(c.ocs).domain == domain]
    return sum(1 for c in today if c not in ours)


def run(blocks: int, seconds: float) -> dict[str, object]:
    fabric = jupiter_like(blocks, FABRICS[blocks])
    mesh = uniform_mesh(fabric)
    target = plan_topology(fabric, gravity_matrix(fabric, seed=1, load=LOAD, skew=SKEW), mesh).topology
    started = time.perf_counter()
    without = map_topology(fabric, target, mesh, resolve_domains=False)
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
    kept = sum(min(int(c[a, b]), len(v)) for o, c in zip(ocs_list, exact or per_ocs, strict=True)
               for (a, b), v in o.current.items())
    return {
        "blocks": blocks, "ocs": FABRICS[blocks], "pair_bound": resolved.lower_bound, "wiring": bound,
        "without": without.removed, "without_s": without_s, "resolved": resolved.removed,
        "resolved_s": resolved_s, "domain_mapped": _domain_removed(fabric, without.circuits, mesh, domain),
        "domain_exact": current - kept, "domain_exact_s": exact_s,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=sorted(FABRICS))
    parser.add_argument("--seconds", type=float, default=600.0, help="time limit of the domain's exact MIP")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    log.setLevel(logging.INFO)
    log.info("| fabric | pair bound | wiring bound | mapping without re-solve | with re-solve "
             "| with / wiring bound | domain 0: mapping | domain 0: exact (its split) | exact MIP time (s) |")
    log.info("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for blocks in args.sizes:
        r = run(blocks, args.seconds)
        log.info("| %d blocks x %d OCS (1N/1S), 4 domains | %d | %d | %d (%.1f s) | %d (%.1f s) | %.2f "
                 "| %d | %d | %.0f |", r["blocks"], r["ocs"], r["pair_bound"], r["wiring"], r["without"],
                 r["without_s"], r["resolved"], r["resolved_s"], r["resolved"] / r["wiring"],
                 r["domain_mapped"], r["domain_exact"], r["domain_exact_s"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
