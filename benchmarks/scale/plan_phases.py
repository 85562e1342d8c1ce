"""Where a ``heliostat plan`` process spends its CPU, step by step (64 blocks).

``python -m benchmarks.scale.plan_phases [--runs 5] [--before DIR]``: fresh processes, each
doing what ``heliostat plan --fabric configs/fabric-64.yaml --demand TM`` does, one step at
a time, with the CPU time (``time.process_time``) of each: the interpreter's start (to this
module's first line), the command's imports (``build_parser("plan")``), the fabric, the
matrix, the uniform mesh, ``solve_te`` and the table. Medians over the runs, for this
checkout and, with ``--before``, another one (the same steps on its code). The matrices are
those of ``plan_process.py``. It prints a Markdown table; ``plan_process.py`` has the
process-level figures.
"""

from __future__ import annotations

import time

STARTED = time.process_time()  # before any other import: the interpreter's start and site

import json  # noqa: E402  (the command imports json and argparse too; the rest is in main)
import sys  # noqa: E402
from contextlib import AbstractContextManager, nullcontext  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

STEPS = ("start", "imports", "fabric", "matrix", "mesh", "solve", "table")
ROOT = Path(__file__).resolve().parents[2]


def worker(fabric_path: str, demand_path: str) -> dict[str, float]:
    """The steps in this process; CPU seconds of each."""
    marks = [0.0, STARTED]
    from controller.cli import build_parser

    build_parser("plan")
    from controller.commands import plan

    marks.append(time.process_time())
    paused: AbstractContextManager[Any] = getattr(plan, "no_cyclic_gc", nullcontext)()
    with paused:  # as the command runs (where the checkout pauses the collector)
        fabric = plan.load_plannable_fabric(fabric_path)
        marks.append(time.process_time())
        tm = plan.load_matrix(demand_path, fabric)
        marks.append(time.process_time())
        from optimizer.topology import mesh_topology

        mesh = mesh_topology(fabric)
        marks.append(time.process_time())
        result = plan.solve_te(fabric, mesh, tm)
        marks.append(time.process_time())
        plan.format_table(result, 0.0)
        marks.append(time.process_time())
    return {step: marks[i + 1] - marks[i] for i, step in enumerate(STEPS)} | {"total": marks[-1]}


def run(root: Path, fabric: Path, demand: Path) -> dict[str, float]:
    import os
    import subprocess

    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", str(fabric), str(demand)],
        cwd=root, env=dict(os.environ, PYTHONPATH=str(root)), capture_output=True, text=True, check=True,
    )
    figures: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> int:
    import argparse
    import statistics
    import tempfile

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        sys.stdout.write(json.dumps(worker(*args.worker)) + "\n")
        return 0
    from benchmarks.scale.plan_process import FABRIC, write_matrices

    roots = {"this checkout": ROOT} | ({"before": args.before} if args.before else {})
    lines = ["| matrix | code | " + " | ".join(STEPS) + " | total CPU (s) |"]
    lines.append("|---|---|" + "---:|" * (len(STEPS) + 1))
    with tempfile.TemporaryDirectory(prefix="plan-phases-") as tmp:
        files = write_matrices(Path(tmp), ["hotspot", "gravity"])
        for kind, demand in files.items():
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in roots}
            for _ in range(args.runs):  # interleaved
                for name, root in roots.items():
                    runs[name].append(run(root, FABRIC, demand))
            for name, got in runs.items():
                cells = [f"{statistics.median(r[s] for r in got):.3f}" for s in (*STEPS, "total")]
                lines.append(f"| {kind} | {name} | " + " | ".join(cells) + " |")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
