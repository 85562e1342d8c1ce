"""TE benchmark (``python -m benchmarks.bench_te``): column generation vs the plain path LP.

For 8, 16, 32 and 64 blocks (striped fabrics of 512-uplink blocks on 256 OCSes of 136 ports
in 4 domains, from ``generate_fabric``; 64 blocks is the Jupiter configuration) and a
gravity matrix, measure in fresh processes (so each peak RSS is its own):

- TE: ``solve_te`` from fabric and matrix to reduced WCMP weights and every reported
  figure (uniform mesh included), median of several cold runs; and a warm re-solve as the
  daemon does every cycle;
- the plain path LP for the same instance, built in PuLP and solved by CBC.

The two MLUs must agree within 0.5%. Results go to benchmarks/RESULTS_te.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from benchmarks.child import run_module
from benchmarks.machine import machine_summary
from optimizer.config import generate_fabric
from optimizer.fabric import Fabric
from optimizer.traffic import TrafficMatrix, gravity_matrix, hotspot_matrix, paired_matrix

HERE = Path(__file__).resolve().parent
SIZES = (8, 16, 32, 64)
MLU_TOLERANCE = 0.005
log = logging.getLogger(__name__)


def instance(blocks: int, kind: str) -> tuple[Fabric, TrafficMatrix]:
    fabric = generate_fabric(blocks, 512, 256, 136, domains=4, name=f"bench-{blocks}")
    if kind == "gravity":
        return fabric, gravity_matrix(fabric, seed=1, load=0.5)
    if kind == "pairs":
        return fabric, paired_matrix(fabric, seed=1, load=0.9)
    return fabric, hotspot_matrix(fabric, seed=1, load=0.9)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def run_te(blocks: int, kind: str, repeats: int) -> dict[str, Any]:
    from optimizer.te import TeSolver, solve_te

    fabric, tm = instance(blocks, kind)
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = solve_te(fabric, None, tm)
        times.append(time.perf_counter() - started)
    solver = TeSolver(fabric)
    solver.solve(None, tm)
    started = time.perf_counter()
    solver.solve(None, tm.scaled(1.05))  # the next cycle: a slightly different matrix
    warm = time.perf_counter() - started
    assert result is not None
    return {
        "te_median_s": statistics.median(times),
        "te_runs_s": times,
        "te_warm_s": warm,
        "mlu": result.mlu,
        "mlu_quantized": result.mlu_quantized,
        "oversubscription": result.oversubscription,
        "baseline_mlu": result.baseline_mlu,
        "stretch": result.stretch,
        "columns": result.lp_columns,
        "rounds": result.lp_rounds,
        "commodities": int((tm.gbps > 0).sum()),
        "peak_rss_mb": peak_rss_mb(),
    }


def run_reference(blocks: int, kind: str) -> dict[str, Any]:
    from tests.support.te_reference import reference_mlu

    fabric, tm = instance(blocks, kind)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PuLP 3.3 warns of its 4.0 API
        mlu = reference_mlu(fabric, tm)
    return {"ref_s": time.perf_counter() - started, "ref_mlu": mlu, "ref_peak_rss_mb": peak_rss_mb()}


def in_subprocess(role: str, blocks: int, kind: str, repeats: int) -> dict[str, Any]:
    return run_module("benchmarks.bench_te", "--worker", role, "--blocks", str(blocks),
                      "--kind", kind, "--repeats", str(repeats))


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| blocks | matrix | commodities | TE median (s) | TE warm (s) | TE peak RSS (MB) | columns / rounds "
        "| MLU (TE) | MLU (PuLP+CBC) | rel. diff | PuLP+CBC (s) | PuLP peak RSS (MB) | speed-up "
        "| MLU quantised | baseline MLU |\n"
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    lines = [head]
    for r in rows:
        diff = abs(r["mlu"] - r["ref_mlu"]) / r["ref_mlu"]
        lines.append(
            f"| {r['blocks']} | {r['kind']} | {r['commodities']} | {r['te_median_s']:.3f} "
            f"| {r['te_warm_s']:.3f} | {r['peak_rss_mb']:.0f} | {r['columns']} / {r['rounds']} "
            f"| {r['mlu']:.6f} | {r['ref_mlu']:.6f} | {diff:.1e} | {r['ref_s']:.2f} "
            f"| {r['ref_peak_rss_mb']:.0f} | {r['ref_s'] / r['te_median_s']:.1f}x "
            f"| {r['mlu_quantized']:.4f} | {r['baseline_mlu']:.4f} |"
        )
    return "\n".join(lines)


def report(rows: list[dict[str, Any]], repeats: int) -> str:
    return "\n".join(
        [
            "## Traffic engineering",
            "",
            f"Machine: {machine_summary()}",
            "",
            "`python -m benchmarks.bench_te`. Fabrics: `generate_fabric(n, 512, 256, 136, domains=4)`",
            "(64 blocks = configs/fabric-64.yaml), uniform mesh; gravity matrix seed 1, busiest block at",
            "50% of its uplinks; hotspot seed 1 at 90%; pairs = `paired_matrix` seed 1 at 90% (blocks paired",
            "off, each pair exchanging both ways: a degenerate LP, solved at 64 blocks by the interior point",
            "method on every path, see `optimizer/te/lp.py`). TE = `solve_te` end to end (mesh,",
            "column-generation LP on HiGHS, WCMP reduction to 128 entries, figures, ECMP baseline),",
            f"median of {repeats} cold",
            "runs; warm = the next cycle's re-solve (matrix x1.05) on a `TeSolver`. PuLP+CBC = the plain",
            "path LP over every direct/transit path, build and solve. Each column set in its own process.",
            "",
            table(rows),
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--worker", choices=("te", "reference"), help=argparse.SUPPRESS)
    parser.add_argument("--blocks", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--kind", nargs="*", default=["gravity", "hotspot", "pairs"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS_te.md")
    args = parser.parse_args(argv)
    if args.worker:
        blocks, kind = args.blocks[0], args.kind[0]
        work = run_te(blocks, kind, args.repeats) if args.worker == "te" else run_reference(blocks, kind)
        sys.stdout.write(json.dumps(work) + "\n")
        return 0
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    rows, failed = [], False
    for kind in args.kind:
        for blocks in args.blocks:
            row: dict[str, Any] = {"blocks": blocks, "kind": kind}
            row |= in_subprocess("te", blocks, kind, args.repeats)
            row |= in_subprocess("reference", blocks, kind, 1)
            diff = abs(row["mlu"] - row["ref_mlu"]) / row["ref_mlu"]
            log.info(
                "%s %d blocks: TE %.3f s (%.0f MB), PuLP+CBC %.2f s, MLU %.6f vs %.6f",
                kind, blocks, row["te_median_s"], row["peak_rss_mb"], row["ref_s"],
                row["mlu"], row["ref_mlu"],
            )
            if diff > MLU_TOLERANCE:
                log.error("MLUs differ by %.2f%% (> %.1f%%)", 100 * diff, 100 * MLU_TOLERANCE)
                failed = True
            rows.append(row)
    text = report(rows, args.repeats)
    sys.stdout.write(text)
    args.out.write_text(text, encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
