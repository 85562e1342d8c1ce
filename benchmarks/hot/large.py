"""Benchmark: ``heliostat toe`` end to end at 64 blocks (issue 30's targets: <= 20 s, and circuits
removed <= 1.35x the wiring bound where a change is made).

Each case runs the real command (``python -m controller.cli toe ... --format json``) in a fresh
process; time is its wall clock, peak RSS the largest process of its tree (the command and
its mapping workers; ``os.wait4``). Cases: ``configs/fabric-64.yaml`` under a skewed gravity
matrix (seed 1, busiest block at 50%; the mesh is at the bound: the answer is "nothing to
gain"), the same with ``--min-gain 0`` (a change for shorter paths only: its circuits removed
against the wiring bound of ``benchmarks/mapping_bound.py``), and hot-64 (64 mixed 100G/200G
blocks of 64 uplinks, ``tests/support/hot_fabrics.py``) under skewed, ring and shift matrices
at mesh MLU 0.9.

    python -m benchmarks.hot.large [--time-limit 60] [--out benchmarks/RESULTS_hot.md]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.jobs.results_file import write_section
from benchmarks.machine import machine_summary
from benchmarks.mapping_bound import wiring_lower_bound
from optimizer.config import dump_fabric_yaml, load_plannable_fabric
from optimizer.topology import Topology, circuits_from_json, uniform_mesh
from optimizer.traffic import dump_matrix, gravity_matrix
from tests.support.hot_fabrics import mesh_scaled, mixed_fabric, ring, shift, skewed

ROOT = Path(__file__).resolve().parents[2]
BEGIN = "## `heliostat toe` at 64 blocks (issue 30's targets)"
END = "<!-- end: hot 64 -->"


def run_toe(fabric: Path, demand: Path, out: Path, extra: list[str]) -> tuple[float, float, int]:
    """(seconds, peak RSS in MB, exit status) of ``heliostat toe`` writing its JSON to ``out``."""
    cmd = [sys.executable, "-m", "controller.cli", "toe", "--fabric", str(fabric), "--demand", str(demand),
           "--format", "json", "-q", "--out", str(out), *extra]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return seconds, usage.ru_maxrss / 1024, proc.returncode


def row(name: str, fabric_path: Path, demand: Path, tmp: Path, extra: list[str]) -> str:
    out = tmp / "plan.json"
    out.unlink(missing_ok=True)
    seconds, rss, code = run_toe(fabric_path, demand, out, extra)
    if code != 0 or not out.exists():
        return f"| {name} | - | - | - | - | - | - | {seconds:.1f} | {rss:.0f} | exit {code} |"
    data: dict[str, Any] = json.loads(out.read_text())
    bound = data["bound"]
    now = 1 / bound["current_throughput_scale"]
    relaxed = bound["throughput_scale_relaxed"]
    bound_mlu = f"{1 / relaxed:.3f}" if relaxed else "-"
    removed = data["changes"]["removed"]
    wiring = "-"
    if removed:
        fabric = load_plannable_fabric(str(fabric_path))
        target = Topology.from_circuits(fabric, circuits_from_json(data, fabric, str(out)))
        mesh = uniform_mesh(fabric)
        lb = wiring_lower_bound(fabric, target, mesh, len(mesh) - removed)
        wiring = f"{removed / lb:.3f}x of {lb}" if lb else "-"
    verdict = bound.get("nothing_to_gain")
    if verdict is not None:
        outcome = "nothing to gain"
    elif data["complete"]:
        outcome = "staged" if data["stages"] else "today's topology kept"
    else:
        outcome = "a step towards the target"
    stretch = data["routing"]["stretch"]
    return (
        f"| {name} | {now:.3f} | {bound_mlu} | {data['reached_mlu']:.3f} | {len(data['stages'])} | "
        f"{removed} | {wiring} | {seconds:.1f} | {rss:.0f} | {outcome}, stretch {stretch:.3f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "RESULTS_hot.md"))
    args = parser.parse_args(argv)
    limit = ["--time-limit", f"{args.time_limit:g}"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="heliostat-hot64-") as tmp_name:
        tmp = Path(tmp_name)
        jupiter = ROOT / "configs" / "fabric-64.yaml"
        fabric = load_plannable_fabric(str(jupiter))
        demand = tmp / "jupiter-skewed.json"
        demand.write_text(dump_matrix(gravity_matrix(fabric, 1, 0.5, skew=2.0), "json"))
        rows.append(row("jupiter-64 skewed", jupiter, demand, tmp, limit))
        rows.append(row("jupiter-64 skewed, --min-gain 0", jupiter, demand, tmp, [*limit, "--min-gain", "0"]))
        hot = mixed_fabric(64, uplinks=64)
        hot_path = tmp / "hot-64.yaml"
        hot_path.write_text(dump_fabric_yaml(hot))
        for kind, make in (("skewed", skewed), ("ring", ring), ("shift", shift)):
            demand = tmp / f"hot-{kind}.json"
            demand.write_text(dump_matrix(mesh_scaled(hot, make(hot), 0.9), "json"))
            rows.append(row(f"hot-64 {kind} x0.9", hot_path, demand, tmp, limit))
            print(rows[-1], file=sys.stderr, flush=True)
    lines = [
        BEGIN,
        "",
        f"`python -m benchmarks.hot.large --time-limit {args.time_limit:g}` on {machine_summary()}.",
        "",
        "| case | MLU today | bound | reached | stages | removed | removed / wiring bound | seconds | "
        "peak RSS (MB) | outcome |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        *rows,
        "",
        END,
    ]
    write_section(Path(args.out), BEGIN, END, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
