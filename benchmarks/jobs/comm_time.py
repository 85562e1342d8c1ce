"""Benchmark: training jobs' communication time per iteration on the uniform mesh against a
topology planned for them (issue 31).

For each case the jobs' traffic is modelled (:mod:`optimizer.jobs`), TE routes it on a topology
and every job's exposed communication time per iteration is computed with max-min fair sharing
(:func:`optimizer.jobs.job_iteration_seconds`: the all-reduces of all jobs at once, plus
compute-phase transfers that outlast the compute). Topologies: the uniform mesh; ToE planned
for the jobs' average matrix; ToE planned for their peak (the bursts). TE routes the jobs' peak
matrix on each.

    python -m benchmarks.jobs.comm_time [--out benchmarks/RESULTS_jobs.md]
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.machine import machine_summary
from optimizer.config import generate_fabric, load_fabric
from optimizer.fabric import Fabric
from optimizer.jobs import JobTraffic, job_iteration_seconds, job_traffic, load_job, parse_job
from optimizer.te import TeSolver
from optimizer.toe import plan_topology
from optimizer.topology import Topology, mesh_topology
from optimizer.traffic import TrafficMatrix

ROOT = Path(__file__).resolve().parents[2]
log = logging.getLogger(__name__)


def sixteen_block_jobs(fabric: Fabric) -> list[JobTraffic]:
    """Four jobs of different shapes on a 16-block fabric: a dense ring over 4 blocks, a tree
    over 4, a hierarchical MoE over 4 with pipeline stages, and a pipeline-heavy job over 4."""
    b = fabric.block_names
    specs: list[dict[str, Any]] = [
        {
            "name": "dense-ring",
            "model": {"parameters": 3.0e10},
            "parallelism": {"data": 32, "tensor": 8},
            "placement": {"accelerators_per_block": 64, "blocks": [b[0], b[5], b[10], b[15]]},
            "collective": "ring",
            "iteration_seconds": 1.0,
        },
        {
            "name": "dense-tree",
            "model": {"parameters": 1.0e10},
            "parallelism": {"data": 16, "tensor": 16},
            "placement": {"accelerators_per_block": 64, "blocks": [b[1], b[6], b[11], b[12]]},
            "collective": "tree",
            "iteration_seconds": 0.8,
        },
        {
            "name": "moe",
            "model": {"parameters": 2.0e10},
            "parallelism": {"data": 16, "tensor": 4, "pipeline": 4, "expert": 4},
            "placement": {"accelerators_per_block": 64, "blocks": [b[2], b[7], b[8], b[13]]},
            "collective": "hierarchical",
            "iteration_seconds": 1.2,
            "pipeline": {"microbatches": 8, "activation_bytes": 1.0e8},
            "experts": {"all_to_all_bytes": 1.0e9},
        },
        {
            "name": "pipeline",
            "model": {"parameters": 7.0e10},
            "parallelism": {"data": 8, "tensor": 8, "pipeline": 4},
            "placement": {"accelerators_per_block": 64, "blocks": [b[3], b[4], b[9], b[14]]},
            "collective": "ring",
            "iteration_seconds": 2.0,
            "pipeline": {"microbatches": 16, "activation_bytes": 2.0e8},
        },
    ]
    return [job_traffic(parse_job(s, f"<{s['name']}>", fabric), fabric) for s in specs]


def times(
    fabric: Fabric, jobs: list[JobTraffic], topology: Topology, routed: TrafficMatrix
) -> dict[str, float]:
    result = TeSolver(fabric).solve(topology, routed)
    speed = np.array([[fabric.link_speed_gbps(a, c) for c in fabric.block_names] for a in fabric.block_names])
    capacity = np.asarray(topology.counts) * speed
    return job_iteration_seconds(jobs, fabric.block_names, result.weights_by_source(), capacity)


def run_case(name: str, fabric: Fabric, jobs: list[JobTraffic]) -> list[str]:
    peak = TrafficMatrix(fabric.block_names, np.sum([j.peak().gbps for j in jobs], axis=0))
    mean = TrafficMatrix(fabric.block_names, np.sum([j.mean().gbps for j in jobs], axis=0))
    mesh = mesh_topology(fabric)
    started = time.perf_counter()
    for_peak = plan_topology(fabric, peak).topology
    plan_s = time.perf_counter() - started
    for_mean = plan_topology(fabric, mean).topology
    rows = []
    base = times(fabric, jobs, mesh, peak)
    for label, topology in (
        ("uniform mesh", mesh),
        ("ToE on the average", for_mean),
        ("ToE on the bursts", for_peak),
    ):
        got = base if topology is mesh else times(fabric, jobs, topology, peak)
        total_ratio = sum(got.values()) / max(sum(base.values()), 1e-12)
        cells = " | ".join(f"{got[j.job.name] * 1000:.1f}" for j in jobs)
        rows.append(f"| {name} | {label} | {cells} | {total_ratio:.2f} |")
        log.info("%s %s: %s", name, label, got)
    header = " | ".join(j.job.name for j in jobs)
    return [
        f"{name}: the ToE plan for the bursts took {plan_s:.1f} s",
        "",
        f"| fabric | topology | {header} (ms) | all jobs / mesh |",
        "|---|---|" + "---:|" * (len(jobs) + 1),
        *rows,
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "RESULTS_jobs.md"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    lines = [
        "## Training jobs: communication time per iteration",
        "",
        f"`python -m benchmarks.jobs.comm_time` on {machine_summary()}.",
        "",
        "Exposed communication time of one iteration per job (ms; max-min fair sharing, every job's",
        "all-reduce at once), TE routing the jobs' peak matrix on each topology.",
        "",
    ]
    fabric8 = load_fabric(ROOT / "configs" / "fabric-8.yaml")
    shipped = [
        job_traffic(load_job(p, fabric8), fabric8) for p in sorted((ROOT / "configs" / "jobs").glob("*.yaml"))
    ]
    lines += run_case("fabric-8, configs/jobs", fabric8, shipped)
    fabric16 = generate_fabric(16, 32, 4, 16 * 8 + 8, domains=2, name="jobs-16")
    lines += run_case("16 blocks, 4 jobs", fabric16, sixteen_block_jobs(fabric16))
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
