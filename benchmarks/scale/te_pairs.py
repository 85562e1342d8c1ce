"""Degenerate TE at scale: blocks paired off (``paired_matrix`` seed 1 at 90%) on the mesh.

``python -m benchmarks.scale.te_pairs [--sizes 48 64]`` times, cold and in one process each,
three ways of solving the same path LP (``optimizer/te/lp.py``):

- **ipm-cg** (the default now): column generation on the interior point method without
  crossover, from the start when the master looks degenerate, stopped by the Lagrangian bound;
- **simplex-first**: the same, but only after the simplex hits its iteration limit (what a
  master that does not look degenerate goes through);
- **every-path-ipm**: every candidate path at once, interior point with crossover (the method
  before, after its simplex attempt; here without the attempt).

It writes ``benchmarks/RESULTS_te_pairs.md``. Compare the ratios of one run: the machine is
shared.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import highspy
import numpy as np

from benchmarks.machine import machine_summary
from optimizer.config import generate_fabric
from optimizer.te import lp as te_lp
from optimizer.te import solve as te_solve
from optimizer.topology import mesh_topology
from optimizer.traffic import paired_matrix

HERE = Path(__file__).resolve().parents[1]
METHODS = ("ipm-cg", "simplex-first", "every-path-ipm")
log = logging.getLogger(__name__)


def _every_path_with_crossover(self: Any) -> None:
    self.add(self.paths.valid)
    for option, value in (("solver", "ipm"), ("run_crossover", "on"), ("simplex_iteration_limit", 2**31 - 1)):
        self.highs.setOptionValue(option, value)
    self.highs.clearSolver()
    self.highs.run()
    if self.highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError("every-path interior point: not optimal")


def run_one(blocks: int, method: str) -> dict[str, Any]:
    fabric = generate_fabric(blocks, 512, 256, 136, 4)
    inst = te_solve._instance(fabric, mesh_topology(fabric), paired_matrix(fabric, seed=1, load=0.9), None)
    if method == "simplex-first":
        te_lp.IPM_FIRST_ROWS = 10**9
    elif method == "every-path-ipm":
        te_lp.looks_degenerate = lambda *a: True
        te_lp._Master.solve_by_ipm = _every_path_with_crossover  # type: ignore[method-assign]
        te_lp.LAGRANGIAN_GAP = np.inf  # one round: every path is in
    started = time.perf_counter()
    solution, _ = te_lp.solve_path_lp(inst.graph, inst.comm, inst.comm_paths, None, None)
    return {"seconds": time.perf_counter() - started, "mlu": solution.mlu, "columns": solution.columns,
            "rounds": solution.rounds, "candidates": int(inst.comm_paths.valid.sum())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[48, 64])
    parser.add_argument("--worker", nargs=2, metavar=("BLOCKS", "METHOD"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        sys.stdout.write(json.dumps(run_one(int(args.worker[0]), args.worker[1])) + "\n")
        return 0
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    rows = []
    for blocks in args.sizes:
        results = {}
        for method in METHODS:
            command = [sys.executable, "-m", "benchmarks.scale.te_pairs", "--worker", str(blocks), method]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            results[method] = json.loads(done.stdout.strip().splitlines()[-1])
            log.info("%d blocks, %s: %s", blocks, method, results[method])
        best = results["every-path-ipm"]["mlu"]
        for method in METHODS:
            r = results[method]
            rows.append(f"| {blocks} | {method} | {r['seconds']:.2f} | {r['rounds']} | {r['columns']} of "
                        f"{r['candidates']} | {r['mlu']:.9f} | {(r['mlu'] - best) / best:+.1e} | "
                        f"{results['every-path-ipm']['seconds'] / r['seconds']:.1f}x |")
    text = "\n".join([
        "## Degenerate TE: blocks paired off", "",
        f"`python -m benchmarks.scale.te_pairs --sizes {' '.join(map(str, args.sizes))}` on "
        f"{machine_summary()}.", "",
        "The path LP of `paired_matrix` seed 1 at 90% on the mesh of `generate_fabric(n, 512, 256, 136, 4)`"
        " (64 blocks = configs/fabric-64.yaml), cold, each in its own process. MLU gap: against every path"
        " by the interior point method with crossover (the exact optimum).", "",
        "| blocks | method | LP (s) | rounds | columns | MLU | gap | speed-up |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
        *rows,
    ])
    (HERE / "RESULTS_te_pairs.md").write_text(text + "\n", encoding="utf-8")
    log.info("wrote %s", HERE / "RESULTS_te_pairs.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
