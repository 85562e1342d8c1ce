"""Benchmark: stages merged within their failure domain (issue 30), on the sequences the search
finds at a stage limit (default 1, where the shifts took up to 20 stages).

For each hot 16-block case: the search of safe stages from the mesh without a time limit (so
the sequence does not depend on the machine's load), then :func:`optimizer.toe.merge.merge_stages`
on it: the stages before and after, the TE checks the merges cost, the worst drained MLU of a
merged stage against its limit (every merged stage is within the rule), and the seconds.

    python -m benchmarks.hot.merge [--stage-limit 1] [--load 0.9] [--out benchmarks/RESULTS_hot.md]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks.jobs.results_file import write_section
from benchmarks.machine import machine_summary
from optimizer.fabric import Fabric
from optimizer.te import TeSolver
from optimizer.toe import te_evaluator
from optimizer.toe.merge import merge_stages
from optimizer.toe.sequence import sequence_steps
from optimizer.topology import Topology, uniform_mesh
from optimizer.traffic import TrafficMatrix
from tests.support.hot_fabrics import mesh_scaled, mixed_fabric, ring, shift, skewed

ROOT = Path(__file__).resolve().parents[2]
BEGIN = "### Stages merged within a failure domain"
END = "<!-- end: hot merge -->"


def run_case(name: str, fabric: Fabric, tm: TrafficMatrix, limit: float) -> str:
    solver = TeSolver(fabric)
    evaluate = te_evaluator(solver)
    mesh = uniform_mesh(fabric)
    started = time.perf_counter()
    plan = sequence_steps(fabric, mesh, [tm], evaluate, limit)
    searched = time.perf_counter() - started
    if plan is None:
        return f"| {name} | - | - | - | - | - | {searched:.1f} | - | no safe sequence lowers the MLU |"
    checks = 0

    def counted(f: Fabric, topo: Topology, m: TrafficMatrix) -> float:
        nonlocal checks
        checks += 1
        return evaluate(f, topo, m)

    started = time.perf_counter()
    merged = merge_stages(fabric, mesh, plan, [tm], counted)
    seconds = time.perf_counter() - started
    worst = max(s.mlu_drained / max(limit, s.mlu_start) for s in merged.stages)
    domains = len({s.domain for s in plan.stages})
    return (
        f"| {name} | {plan.start_mlu:.3f} -> {plan.final_mlu:.3f} | {len(plan.stages)} | {domains} | "
        f"{len(merged.stages)} | {checks} | {searched:.1f} | {seconds:.1f} | {worst:.4f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stage-limit", type=float, default=1.0)
    parser.add_argument("--load", type=float, default=0.9)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "RESULTS_hot.md"))
    args = parser.parse_args(argv)
    rows = []
    for spine_links in (0, 2):
        fabric = mixed_fabric(16, spine_links=spine_links)
        for kind, make in (("skewed", skewed), ("ring", ring), ("shift", shift)):
            tm = mesh_scaled(fabric, make(fabric), args.load)
            rows.append(run_case(f"{fabric.name} {kind} x{args.load:g}", fabric, tm, args.stage_limit))
            print(rows[-1], flush=True)
    lines = [
        BEGIN,
        "",
        f"`python -m benchmarks.hot.merge --stage-limit {args.stage_limit:g} --load {args.load:g}` on "
        f"{machine_summary()}.",
        "",
        "| case | MLU | stages found | domains | stages merged | TE checks | search (s) | merge (s) | "
        "worst merged drain / limit |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        END,
    ]
    write_section(Path(args.out), BEGIN, END, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
