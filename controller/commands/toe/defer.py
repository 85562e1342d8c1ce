"""``heliostat toe --defer``: for a target that cannot be staged whole at the predicted demand,
the share of that demand at which every stage fits (the load a daemon's deferred plan waits for:
controller/reconfig/deferred.py)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence

from controller.commands.exit_codes import FAILED
from controller.commands.output import emit, emit_json
from optimizer.budget import TimeBudget
from optimizer.fabric import Fabric
from optimizer.staging import StagingBlocked
from optimizer.te import TeSolver
from optimizer.toe.reconfigure import te_evaluator
from optimizer.toe.window import DEFAULT_SCALES, StagingWindow, staging_window
from optimizer.topology import Circuit, uniform_mesh
from optimizer.traffic import TrafficMatrix


def defer_window(
    fabric: Fabric,
    current: Sequence[Circuit] | None,
    target: Iterable[Circuit],
    matrices: Sequence[TrafficMatrix],
    args: argparse.Namespace,
) -> StagingWindow | None:
    """The share of the demand at which the whole target stages (``--defer``)."""
    today = tuple(uniform_mesh(fabric) if current is None else current)
    evaluate = te_evaluator(TeSolver(fabric, hedge=args.hedge, table_size=args.table_size))
    budget = TimeBudget(args.time_limit)
    return staging_window(fabric, today, target, matrices, evaluate, args.threshold, budget=budget)


def window_text(window: StagingWindow | None, current_mlu: float, target_mlu: float) -> str:
    head = f"deferred: the target (MLU {current_mlu:.4f} -> {target_mlu:.4f} at this demand)"
    if window is None:
        return f"{head} does not stage whole at any load down to x{min(DEFAULT_SCALES):g} of it\n"
    return (
        f"{head} stages whole once the demand falls to x{window.scale:g} of it: MLU "
        f"{window.current_mlu:.4f} -> {window.staging.final_mlu:.4f} there, {len(window.staging.stages)} "
        "stages within the rule (the daemon keeps such a plan and applies it then: "
        "thresholds.deferred_plan_ttl)\n"
    )


def deferred_only(
    args: argparse.Namespace,
    fabric: Fabric,
    matrices: Sequence[TrafficMatrix],
    current: Sequence[Circuit] | None,
    blocked: StagingBlocked,
) -> int:
    """``--defer`` for a plan no stage of which is safe now: the refusal, then the window."""
    target = blocked.target
    if target is None:  # pragma: no cover - the caller checked
        raise blocked
    window = defer_window(fabric, current, target.circuits, matrices, args)
    if args.format == "json":
        data = {
            "fabric": fabric.name,
            "refused": str(blocked),
            "current_mlu": round(target.current_mlu, 6),
            "target_mlu": round(target.mlu, 6),
            "deferred": None if window is None else window.to_json(fabric),
        }
        emit_json(data, args.out)
    else:
        emit(f"refused at this demand: {blocked}\n\n" + window_text(window, target.current_mlu, target.mlu),
             args.out)
    return FAILED
