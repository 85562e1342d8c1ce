"""Integer weights against the LP (``python -m benchmarks.bench_wcmp``): link MLU of the weights
over the LP's MLU, at 128 entries a group, on every fabric in ``configs/`` and a hot-fabric
family (issue 29, item 2; the target is <= 1.02 everywhere).

Hot-fabric family: 8, 16, 24 and 32 blocks of 32 uplinks, each block 100G or 200G at random,
8 OCSes in 4 domains, with and without a 100G spine (4 links a block), seeds 1 and 2; the
matrices are skewed gravity (sigma 2), gravity (sigma 1), hotspot and ring (seed as the
fabric's), scaled to LP MLUs 0.6, 0.9, 1.0 and 1.3. The configs get the same matrices (seed
3) at 0.6, 1.0 and 1.3. For each slice: cases, the worst ratio, how many exceed 1.02, and
the mean plan time. Results go to benchmarks/RESULTS_wcmp.md.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from benchmarks.machine import machine_summary
from optimizer.config import load_fabric
from optimizer.fabric import Block, Fabric, Ocs, SpineSwitch, build_fabric
from optimizer.te import TeSolver, solve_te
from optimizer.traffic import TrafficMatrix, gravity_matrix, hotspot_matrix, ring_matrix

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CONFIGS = (
    "fabric-4", "fabric-8", "fabric-hybrid-4", "fabric-hybrid-8", "fabric-pod-a", "fabric-pod-b", "fabric-64"
)
BOUND = 1.02
log = logging.getLogger(__name__)


def hot_fabric(n: int, spine: bool, seed: int) -> Fabric:
    rng = np.random.default_rng(seed)
    blocks = [Block(f"b{i:02d}", 32, float(rng.choice([100.0, 200.0]))) for i in range(n)]
    ocs = [Ocs(f"o{k}", n * 4 + 4, k % 4) for k in range(8)]
    switches = (SpineSwitch("s1", tuple((b.name, 4) for b in blocks), 100.0),) if spine else ()
    return build_fabric(f"hot{n}", blocks, ocs, switches)


def matrices(fabric: Fabric, seed: int) -> Iterator[tuple[str, TrafficMatrix]]:
    yield "skewed", gravity_matrix(fabric, seed, 0.5, skew=2.0)
    yield "gravity", gravity_matrix(fabric, seed, 0.5, skew=1.0)
    yield "hotspot", hotspot_matrix(fabric, seed, 0.5)
    yield "ring", ring_matrix(fabric, seed, 0.5)


def cases(sizes: tuple[int, ...]) -> Iterator[tuple[str, Fabric, TrafficMatrix]]:
    for name in CONFIGS:
        fabric = load_fabric(ROOT / "configs" / f"{name}.yaml")
        solver = TeSolver(fabric)
        for kind, tm in matrices(fabric, 3):
            optimum = solver.min_mlu(None, tm)
            for load in (0.6, 1.0, 1.3):
                yield f"{name} {kind}", fabric, tm.scaled(load / optimum)
    for n in sizes:
        for spine in (False, True):
            for seed in (1, 2):
                fabric = hot_fabric(n, spine, seed)
                solver = TeSolver(fabric)
                for kind, tm in matrices(fabric, seed):
                    optimum = solver.min_mlu(None, tm)
                    for load in (0.6, 0.9, 1.0, 1.3):
                        yield f"hot {n}{' +spine' if spine else ''} {kind}", fabric, tm.scaled(load / optimum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="*", default=[8, 16, 24, 32])
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("optimizer").setLevel(logging.ERROR)
    slices: dict[str, list[tuple[float, float]]] = {}
    for label, fabric, tm in cases(tuple(args.sizes)):
        started = time.perf_counter()
        result = solve_te(fabric, None, tm)
        seconds = time.perf_counter() - started
        ratio = result.mlu_quantized / result.mlu if result.mlu > 0 else 1.0
        slices.setdefault(label, []).append((ratio, seconds))
        log.info("%-32s %.4f (%.1f s)", label, ratio, seconds)
    rows = [
        "| fabric, matrix | cases | worst ratio | above 1.02 | mean plan (s) |",
        "|---|---:|---:|---:|---:|",
    ]
    everything = [r for values in slices.values() for r in values]
    for label, values in slices.items():
        ratios = [r for r, _ in values]
        rows.append(
            f"| {label} | {len(values)} | {max(ratios):.4f} | {sum(r > BOUND + 1e-9 for r in ratios)} | "
            f"{np.mean([s for _, s in values]):.2f} |"
        )
    worst = max(r for r, _ in everything)
    above = sum(r > BOUND + 1e-9 for r, _ in everything)
    text = "\n".join(
        [
            "## Integer weights against the LP: link MLU / LP MLU at 128 entries a group",
            "",
            f"`python -m benchmarks.bench_wcmp` on {machine_summary()}.",
            "",
            __doc__.split("\n\n", 1)[1].strip(),
            "",
            f"All: {len(everything)} cases, worst {worst:.4f}, {above} above {BOUND}.",
            "",
            *rows,
        ]
    )
    (HERE / "RESULTS_wcmp.md").write_text(text + "\n", encoding="utf-8")
    log.info("wrote %s", HERE / "RESULTS_wcmp.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
