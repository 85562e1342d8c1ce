"""Benchmark: deferred ToE plans on the hot-fabric family (issue 30).

For each hot case (``tests/support/hot_fabrics.py``) the daemon's planner
(:class:`~controller.reconfig.toe_run.ToePlanner`: stage limit 0.8 less the WCMP margin, the
policy's 10% minimum gain) plans from the uniform mesh. When it applies nothing because no
safe way reaches the target, the target is deferred; it is then re-staged (as at each later
ToE check) on the same matrix scaled down by 10% at a time, down to 30%, until every stage
fits: the load at which the deferred plan would apply, and the MLU before and after at that
load, tell the window it waits for and what it gains.

    python -m benchmarks.hot.deferred [--sizes 8 16] [--time-limit 60] [--out FILE]
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from benchmarks.machine import machine_summary
from controller.reconfig.deferred import Verdict
from controller.reconfig.toe_run import ToePlanner
from optimizer.errors import InfeasibleError
from optimizer.policy import ReconfigurePolicy
from optimizer.topology import uniform_mesh
from tests.support.hot_fabrics import HotCase, family

log = logging.getLogger(__name__)

POLICY = ReconfigurePolicy(min_gain=0.1, min_interval_s=0.0)
STAGE_MLU = 0.8
#: the loads tried, as shares of the case's matrix, highest first
SCALES = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)


def run_case(case: HotCase, time_limit: float) -> str:
    planner = ToePlanner(case.fabric, STAGE_MLU, time_limit=time_limit, deferred_ttl=1e9)
    live = frozenset(uniform_mesh(case.fabric))
    started = time.perf_counter()
    try:
        proposal = planner.propose("auto", case.matrix, live, 0.0, None, POLICY)
    except InfeasibleError as exc:
        return f"| {case.name} | - | - | - | - | - | {time.perf_counter() - started:.1f} | failed: " \
               f"{str(exc).split(';')[0][:70]} |"
    planned = time.perf_counter() - started
    deferred = proposal.deferred
    if deferred is None:
        outcome = "applied now" if proposal.verdict.apply else "not deferred: " + proposal.verdict.reason[:60]
        return (f"| {case.name} | {proposal.current_mlu:.3f} | - | - | - | - | {planned:.1f} | {outcome} |")
    head = (f"| {case.name} | {deferred.current_mlu:.3f} | {deferred.target_mlu:.3f} | "
            f"{deferred.misfit.mlu:.3f} / {deferred.misfit.limit:.3f}")
    plan = deferred
    for k, scale in enumerate(SCALES, start=1):
        check, applied = planner.restage(plan, case.matrix.scaled(scale), live, float(k), None, POLICY)
        if check.verdict is Verdict.APPLY and applied is not None:
            seconds = time.perf_counter() - started
            before, after = check.plan.latest_current_mlu or 0.0, check.plan.latest_target_mlu or 0.0
            return (f"{head} | x{scale:g}: {before:.3f} -> {after:.3f} | {len(applied.stages)} | "
                    f"{seconds:.1f} | applies when the load falls |")
        if not check.keep:
            seconds = time.perf_counter() - started
            why = f"{check.verdict.value} at x{scale:g}: {check.reason[:60]}"
            return f"{head} | - | - | {seconds:.1f} | {why} |"
        plan = check.plan
    seconds = time.perf_counter() - started
    return f"{head} | - | - | {seconds:.1f} | waits below x{SCALES[-1]:g} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--out", default=None, help="write the table here too (default: print only)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    lines = [
        "## Deferred ToE plans on hot fabrics",
        "",
        f"`python -m benchmarks.hot.deferred --sizes {' '.join(map(str, args.sizes))} --time-limit "
        f"{args.time_limit:g}` on {machine_summary()}.",
        "",
        "The daemon's planner from the mesh (stage limit 0.8, LP held to 0.8/1.02, minimum gain 10%); "
        "a target it cannot reach safely is deferred and re-staged on the matrix scaled by 0.9, 0.8, "
        "... 0.3 until every stage fits. *stage / limit*: the drained MLU of the stage that does not "
        "fit at today's load against its limit; *applies at*: the first load that leaves room, with "
        "today's and the target's MLU there.",
        "",
        "| case | MLU now | target | stage / limit | applies at | stages | seconds | outcome |",
        "|---|---:|---:|---:|---|---:|---:|---|",
    ]
    for case in family(tuple(args.sizes)):
        row = run_case(case, args.time_limit)
        log.warning("%s", row)
        lines.append(row)
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
