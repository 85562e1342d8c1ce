"""Benchmark: ``heliostat toe``'s planner on a family of hot fabrics (issue 30).

Mixed 100G/200G blocks, with and without a spine switch, under skewed, ring and shift matrices
scaled so that the uniform mesh runs at 0.9 and 1.2 (``tests/support/hot_fabrics.py``). For each:
the mesh's MLU, the relaxed bound (the LP over every continuous topology), the MLU the plan's
stages reach, the share of the gap to the bound they close, the stages, the time, and how the
plan ended (staged, a step towards the target, nothing to gain, or refused with the reason).

    python -m benchmarks.hot.family [--sizes 8 16] [--time-limit 60] [--stage-limit 0.8]
        [--loads 0.9 1.2] [--out benchmarks/RESULTS_hot.md]

``--stage-limit`` is the operator's stage limit (at most 1; the stage rule holds every drained
stage to ``max(limit, MLU where the stage starts)``).
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from benchmarks.machine import machine_summary
from optimizer.errors import InfeasibleError
from optimizer.staging import DEFAULT_THRESHOLD
from optimizer.toe import DEFAULT_MIN_GAIN, ToeKnobs, plan_reconfiguration
from tests.support.hot_fabrics import HotCase, family

ROOT = Path(__file__).resolve().parents[2]
log = logging.getLogger(__name__)


def run_case(case: HotCase, time_limit: float, stage_limit: float = DEFAULT_THRESHOLD) -> str:
    knobs = ToeKnobs(time_limit=time_limit, min_gain=DEFAULT_MIN_GAIN)
    started = time.perf_counter()
    try:
        plan = plan_reconfiguration(case.fabric, case.matrix, knobs=knobs, threshold=stage_limit)
    except InfeasibleError as exc:
        seconds = time.perf_counter() - started
        why = str(exc).split(";")[0][:150]
        return f"| {case.name} | - | - | - | - | 0 | {seconds:.1f} | refused: {why} |"
    seconds = time.perf_counter() - started
    toe, staging = plan.toe, plan.staging
    bound = 1 / toe.throughput_scale_relaxed if toe.throughput_scale_relaxed else float("nan")
    gap = toe.current_mlu - bound
    closed = f"{(toe.current_mlu - staging.final_mlu) / gap:.0%}" if gap > 1e-9 else "-"
    if toe.nothing_to_gain is not None:
        outcome = "nothing to gain"
    elif staging.complete and not staging.stages:
        outcome = "today's topology kept (the rounded plan is no better)"
    elif staging.complete:
        outcome = "staged"
    else:
        outcome = "a step towards the target"
    return (
        f"| {case.name} | {toe.current_mlu:.3f} | {bound:.3f} | {staging.final_mlu:.3f} | {closed} | "
        f"{len(staging.stages)} | {seconds:.1f} | {outcome} |"
    )


def _extra(args: argparse.Namespace) -> str:
    words = ""
    if args.stage_limit != DEFAULT_THRESHOLD:
        words += f" --stage-limit {args.stage_limit:g}"
    if list(args.loads) != [0.9, 1.2]:
        words += " --loads " + " ".join(f"{x:g}" for x in args.loads)
    return words


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--stage-limit", type=float, default=DEFAULT_THRESHOLD)
    parser.add_argument("--loads", type=float, nargs="+", default=[0.9, 1.2])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "RESULTS_hot.md"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    lines = [
        "## Topology engineering on hot fabrics",
        "",
        f"`python -m benchmarks.hot.family --sizes {' '.join(map(str, args.sizes))} --time-limit "
        f"{args.time_limit:g}{_extra(args)}` on {machine_summary()}.",
        "",
        "| case | mesh MLU | bound | reached | gap closed | stages | seconds | outcome |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for case in family(tuple(args.sizes), tuple(args.loads)):
        row = run_case(case, args.time_limit, args.stage_limit)
        log.warning("%s", row)
        lines.append(row)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
