"""Benchmark of the per-OCS mapping: 8, 16, 32 and 64 blocks on the Jupiter OCS layer.

Every size uses 512 uplinks per block and 256 OCSes of 136 ports in 4 failure domains
(so each block has one north and one south port on every OCS, as in Jupiter). Each run
maps the uniform mesh onto a skewed gravity-shaped topology, then that result onto a
second one (a shift), and reports time, peak memory (each size in a fresh subprocess),
circuits changed against the lower bound, domain balance and the independent checker's
verdict.

    /work/venv/bin/python -m benchmarks.bench_mapping [--sizes 8 16 32 64] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.child import run_module
from benchmarks.machine import machine_summary

log = logging.getLogger("bench_mapping")

UPLINKS = 512
OCS_COUNT = 256
OCS_PORTS = 136
DOMAINS = 4
SKEW = 1.0
RESULTS = Path(__file__).resolve().parent / "RESULTS_mapping.md"


def run_size(blocks: int) -> dict:
    """One size, in this process: two mapping steps and their measurements."""
    from optimizer.config import generate_fabric
    from optimizer.mapping import MappingOptions, map_topology
    from optimizer.topology import uniform_mesh
    from tests.support.circuit_checker import check_mapping
    from tests.support.mapping_helpers import as_pairs, gravity_topology

    fabric = generate_fabric(blocks, UPLINKS, OCS_COUNT, OCS_PORTS, domains=DOMAINS)
    steps = []
    for mode, exchange_plan in (("default", True), ("fast (no exchange LP, dive, re-solve)", False)):
        current = uniform_mesh(fabric)
        for step, seed in (("mesh -> skewed", 1), ("skewed -> shifted", 2)):
            target = gravity_topology(fabric, np.random.default_rng(seed), SKEW)
            start = time.perf_counter()
            options = MappingOptions(exchange_plan=exchange_plan, dive=exchange_plan,
                                     resolve_domains=exchange_plan)
            result = map_topology(fabric, target, current, options=options)
            seconds = time.perf_counter() - start
            problems = check_mapping(fabric, result.circuits, as_pairs(target))
            steps.append({
                "mode": mode,
                "step": step,
                "seconds": round(seconds, 2),
                "circuits": len(result.circuits),
                "kept": result.kept,
                "removed": result.removed,
                "added": result.added,
                "lower_bound": result.lower_bound,
                "ratio": round(result.removed / result.lower_bound, 3) if result.lower_bound else 1.0,
                "unbalanced_pairs": len(result.balance_violations),
                "valid": not problems,
            })
            current = result.circuits
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"blocks": blocks, "peak_mb": round(peak_mb), "steps": steps}


def render(rows: list[dict], machine: str) -> str:
    lines = [
        "## Mapping benchmark (`python -m benchmarks.bench_mapping`)",
        "",
        f"Machine: {machine}. Other jobs shared the machine.",
        "",
        f"Fabric per size: N blocks x {UPLINKS} uplinks, {OCS_COUNT} OCS x {OCS_PORTS} ports in "
        f"{DOMAINS} domains (one north and one south port per block per OCS). Targets: gravity-shaped "
        f"topologies (`tests/support/mapping_helpers.gravity_topology`, skew {SKEW}) using every uplink; "
        "step 1 "
        "starts from the uniform mesh, step 2 from step 1's circuits. `removed` is the number of "
        "circuits torn down (each re-made elsewhere); `lower bound` = sum over pairs of "
        "max(0, L_old - L_new). Peak memory is the subprocess's max RSS (includes numpy/scipy).",
        "",
        "| blocks | mode | step | time (s) | peak MB | circuits | kept | removed | lower bound "
        "| removed / LB | unbalanced pairs | valid |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        for s in row["steps"]:
            lines.append(
                f"| {row['blocks']} | {s['mode']} | {s['step']} | {s['seconds']} | {row['peak_mb']} "
                f"| {s['circuits']} | {s['kept']} | {s['removed']} | {s['lower_bound']} | {s['ratio']} "
                f"| {s['unbalanced_pairs']} | {'yes' if s['valid'] else 'NO'} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 16, 32, 64])
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child mode
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.one:
        json.dump(run_size(args.one), sys.stdout)
        return 0
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    rows = []
    for size in args.sizes:
        row = run_module("benchmarks.bench_mapping", "--one", str(size))
        rows.append(row)
        for s in row["steps"]:
            log.info("%3d blocks  %-20s %-18s %6.2f s  %5d MB  removed %5d  LB %5d  ratio %.3f  "
                     "unbalanced %d  valid %s", size, s["mode"], s["step"], s["seconds"], row["peak_mb"],
                     s["removed"], s["lower_bound"], s["ratio"], s["unbalanced_pairs"], s["valid"])
    # keep the hand-written sections (notes, the optimum comparison) below the table
    previous = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    kept = previous[previous.index("\n### "):] if "\n### " in previous else ""
    args.out.write_text(render(rows, machine_summary()) + kept, encoding="utf-8")
    log.info("wrote %s", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
