"""The uniform mesh's cost from 8 to 1,024 blocks (``python -m benchmarks.scale.mesh_sweep``).

What ``heliostat fabric check`` spends on a fabric of each size: building the fabric, the
uniform mesh (:func:`optimizer.topology.uniform_mesh`) and its gaps, each case in a fresh
process (wall and CPU seconds, peak RSS). Four series:

- sparse: N blocks x 8 uplinks over 4 OCSes of 2N ports (issue 32's fabric), one domain and
  four; every block has fewer ports than partners, so most pairs stay apart;
- dense: N blocks x 8*ceil((N-1)/8) uplinks over uplinks/2 OCSes of 2N ports (one port per
  block and side of an OCS; 1,024 blocks is the 1M-port limit), one domain and four.

Results go to benchmarks/RESULTS_mesh.md (gathered into RESULTS.md by ``benchmarks.run``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import sys
import time
from pathlib import Path

from benchmarks.child import run_module
from benchmarks.machine import machine_summary

HERE = Path(__file__).resolve().parent.parent
SIZES = (8, 16, 32, 64, 128, 256, 512, 1024)
SERIES = (("sparse", 1), ("sparse", 4), ("dense", 1), ("dense", 4))
log = logging.getLogger(__name__)


def shape(kind: str, blocks: int) -> tuple[int, int, int]:
    """(uplinks per block, OCSes, ports per OCS) of a series' fabric."""
    uplinks = 8 if kind == "sparse" else 8 * -(-(blocks - 1) // 8)
    ocs = 4 if kind == "sparse" else uplinks // 2
    return uplinks, ocs, 2 * blocks * uplinks // ocs


def case(kind: str, blocks: int, domains: int) -> dict[str, object]:
    """One case in this process: seconds per step and the mesh's score."""
    from optimizer.config import generate_fabric
    from optimizer.topology import _mesh_score, mesh_gaps, uniform_mesh

    uplinks, ocs, ports = shape(kind, blocks)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    fabric = generate_fabric(blocks, uplinks, ocs, ports, min(domains, ocs))
    wall1 = time.perf_counter()
    circuits = uniform_mesh(fabric)
    wall2 = time.perf_counter()
    gaps = mesh_gaps(fabric)
    wall3 = time.perf_counter()
    _, excess = _mesh_score(fabric, circuits)
    return {
        "kind": kind, "blocks": blocks, "domains": domains, "uplinks": uplinks, "ocs": ocs,
        "ports": ports, "circuits": len(circuits), "gaps": len(gaps), "excess": excess,
        "build_s": wall1 - wall0, "mesh_s": wall2 - wall1, "gaps_s": wall3 - wall2,
        "wall_s": wall3 - wall0, "cpu_s": time.process_time() - cpu0,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def report(rows: list[dict[str, object]]) -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        "## Uniform mesh at scale (`python -m benchmarks.scale.mesh_sweep`)",
        "",
        f"Machine: {machine_summary()}; load average {load} (shared)",
        "",
        "A fresh process per case: fabric built, uniform mesh, its gaps (what `fabric check` does).",
        "sparse = N x 8 uplinks on 4 OCSes of 2N ports; dense = N x 8*ceil((N-1)/8) uplinks on",
        "uplinks/2 OCSes of 2N ports. gaps = pairs apart (sparse: at the floor, every circuit a",
        "pair of its own); excess = a pair's circuits over its share in a domain. Before issue 32",
        "sparse took 12.6 s at 100 blocks and did not finish in 60 s from 200.",
        "",
        "| series | blocks | circuits | gaps | excess | build s | mesh s | gaps s | wall s | CPU s "
        "| peak MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['kind']}, {r['domains']} domain{'s' if r['domains'] != 1 else ''} | {r['blocks']} "
            f"| {r['circuits']:,} | {r['gaps']:,} | {r['excess']:,} | {r['build_s']:.2f} | {r['mesh_s']:.2f} "
            f"| {r['gaps_s']:.2f} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['rss_mb']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--case", nargs=3, metavar=("KIND", "BLOCKS", "DOMAINS"), help=argparse.SUPPRESS)
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS_mesh.md")
    args = parser.parse_args(argv)
    if args.case:
        kind, blocks, domains = args.case
        print(json.dumps(case(kind, int(blocks), int(domains))))
        return 0
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    rows = []
    for kind, domains in SERIES:
        for blocks in args.sizes:
            row = run_module("benchmarks.scale.mesh_sweep", "--case", kind, str(blocks), str(domains))
            log.info("%s", row)
            rows.append(row)
    text = report(rows)
    args.out.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
