"""``heliostat toe``: topology engineering, per-OCS circuits and safe stages for predicted demand."""

from __future__ import annotations

import argparse
import logging
import math
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from controller.commands.output import emit, emit_json, read_json
from controller.commands.toe.defer import defer_window, deferred_only, window_text
from controller.reconfig.workers import domain_pool
from optimizer.budget import check_time_limit
from optimizer.config import load_plannable_fabric
from optimizer.errors import ConfigError
from optimizer.limits import MAX_TABLE_SIZE
from optimizer.progress import PROGRESS_LOGGER
from optimizer.staging import DEFAULT_THRESHOLD, StagingBlocked
from optimizer.te import DEFAULT_TABLE_SIZE
from optimizer.toe import (
    DEFAULT_MIN_GAIN,
    DEFAULT_TIME_LIMIT,
    MAX_STAGE_LIMIT,
    STATUS_OPTIMAL,
    ReconfigurationPlan,
    ToeKnobs,
    ToePlan,
    plan_reconfiguration,
)
from optimizer.topology import circuits_from_json
from optimizer.traffic import load_matrix

ARGS = "<command line>"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "toe",
        help="plan the logical topology, its circuits on every OCS and the stages to get there",
    )
    p.add_argument("--fabric", required=True, help="fabric YAML")
    p.add_argument(
        "--demand",
        required=True,
        action="append",
        help="predicted traffic matrix (CSV or JSON); repeat to plan for the worst of several",
    )
    p.add_argument(
        "--current", default=None, help="today's circuits as JSON {circuits: [...]} (default: uniform mesh)"
    )
    p.add_argument(
        "--max-change", type=float, default=1.0, help="largest fraction of today's circuits that may change"
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=DEFAULT_THRESHOLD,
        help="MLU a drained stage may reach (or the MLU it starts from, if higher); above 0.8 for a hot "
        "fabric, never above 1",
    )
    p.add_argument("--hedge", type=float, default=None, help="TE hedging S in (0, 1]; default: plain min-MLU")
    p.add_argument("--mesh-weight", type=float, default=0.0, help="weight for staying near the uniform mesh")
    p.add_argument(
        "--min-gain", type=float, default=DEFAULT_MIN_GAIN, metavar="FRACTION",
        help="keep today's circuits unless some topology lowers the MLU by at least this fraction; 0 "
        "plans for shorter paths alone too (the daemon uses its thresholds.reconfig_gain; default "
        f"{DEFAULT_MIN_GAIN:g})",
    )
    p.add_argument("--table-size", type=int, default=DEFAULT_TABLE_SIZE, help="group table entries per group")
    p.add_argument(
        "--time-limit",
        type=float,
        default=DEFAULT_TIME_LIMIT,
        metavar="SECONDS",
        help="time budget of the topology LP; when it runs out the plan is cut short and says so "
        f"(default {DEFAULT_TIME_LIMIT:g})",
    )
    p.add_argument(
        "--workers", type=int, default=None, metavar="N",
        help="processes mapping the failure domains side by side on big fabrics (default: one per core, "
        "at most 4; 1: none); the circuits are the same either way",
    )
    p.add_argument(
        "--defer", action="store_true",
        help="when the target cannot be staged whole at this demand, say at which share of it every "
        "stage fits (the load the daemon's deferred plan waits for)",
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--out", default=None, help="file to write (default stdout)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")
    p.add_argument(
        "--plot", default=None, metavar="FILE.png",
        help="PNG of the traffic matrix, the topology before and after, and link utilisation",
    )
    p.set_defaults(handler=_toe)


def _check_args(args: argparse.Namespace) -> None:
    if math.isnan(args.max_change) or not 0.0 <= args.max_change <= 1.0:
        raise ConfigError(ARGS, "--max-change", f"must be between 0 and 1, got {args.max_change}")
    if not 0.0 < args.threshold <= MAX_STAGE_LIMIT:
        limit = f"{MAX_STAGE_LIMIT:g} (no stage may plan for loss)"
        problem = f"must be a number above 0 and at most {limit}, got {args.threshold}"
        raise ConfigError(ARGS, "--threshold", problem)
    if args.hedge is not None and not 0.0 < args.hedge <= 1.0:
        raise ConfigError(ARGS, "--hedge", f"must be in (0, 1], got {args.hedge}")
    if not 0.0 <= args.min_gain < 1.0:
        raise ConfigError(ARGS, "--min-gain", f"must be from 0 to below 1, got {args.min_gain}")
    if not 0.0 <= args.mesh_weight < math.inf:
        raise ConfigError(ARGS, "--mesh-weight", f"must be a number >= 0, got {args.mesh_weight}")
    if not 1 <= args.table_size <= MAX_TABLE_SIZE:
        problem = f"must be from 1 to {MAX_TABLE_SIZE:,}, got {args.table_size}"
        raise ConfigError(ARGS, "--table-size", problem)
    check_time_limit(args.time_limit, ARGS, "--time-limit")
    if args.workers is not None and args.workers < 1:
        raise ConfigError(ARGS, "--workers", f"must be a whole number >= 1, got {args.workers}")


def _toe(args: argparse.Namespace) -> int:
    _check_args(args)
    plot = None
    if args.plot is not None:
        from controller.ui.plots import check_plot_path

        plot = check_plot_path(args.plot)
    fabric = load_plannable_fabric(args.fabric)
    matrices = [load_matrix(path, fabric) for path in args.demand]
    current = None
    if args.current is not None:
        current = circuits_from_json(read_json(args.current), fabric, args.current)
    knobs = ToeKnobs(
        max_change=args.max_change,
        mesh_weight=args.mesh_weight,
        hedge=args.hedge,
        time_limit=args.time_limit,
        min_gain=args.min_gain,
    )
    started = time.perf_counter()
    with (
        progress_line(sys.stderr, enabled=not args.quiet and sys.stderr.isatty()),
        domain_pool(args.workers, fabric) as parallel_map,
    ):
        try:
            plan = plan_reconfiguration(
                fabric, matrices, current, knobs, threshold=args.threshold, table_size=args.table_size,
                parallel_map=parallel_map,
            )
        except StagingBlocked as exc:
            if not args.defer or exc.target is None:
                raise
            return deferred_only(args, fabric, matrices, current, exc)
    seconds = time.perf_counter() - started
    window = None
    if args.defer and not plan.staging.complete:
        window = defer_window(fabric, current, plan.mapping.circuits, matrices, args)
    if plot is not None:
        from controller.ui.plots import plot_toe

        plot_toe(plot, matrices, plan)
    if args.format == "json":
        data = plan.to_json()
        timing = {"seconds": round(seconds, 3), "time_limit": args.time_limit}
        data["solver"] = {**timing, **plan.toe.solver_json()}
        data["reached_mlu"] = round(plan.staging.final_mlu, 6)
        if args.defer:
            data["deferred"] = None if window is None else window.to_json(fabric)
        emit_json(data, args.out)
    else:
        text = format_table(plan, seconds)
        if args.defer and not plan.staging.complete:
            text += "\n" + window_text(window, plan.toe.current_mlu, plan.toe.mlu)
        emit(text, args.out)
    return 0


class _ProgressLine(logging.Handler):
    """The plan's progress records on one line of a terminal, rewritten in place."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(logging.INFO)
        self.stream = stream
        self.started = time.perf_counter()

    def emit(self, record: logging.LogRecord) -> None:
        elapsed = time.perf_counter() - self.started
        self.stream.write(f"\r\x1b[K{elapsed:6.1f} s  {record.getMessage()}")
        self.stream.flush()


@contextmanager
def progress_line(stream: TextIO, enabled: bool) -> Iterator[None]:
    """Show the plan's steps (:mod:`optimizer.progress`) on ``stream`` while the block runs."""
    if not enabled:
        yield
        return
    logger = logging.getLogger(PROGRESS_LOGGER)
    handler = _ProgressLine(stream)
    previous = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
        stream.write("\r\x1b[K")
        stream.flush()


def format_table(plan: ReconfigurationPlan, seconds: float) -> str:
    toe, mapping, staging = plan.toe, plan.mapping, plan.staging
    if toe.throughput_scale_relaxed is None:
        bound = "not proven (the LP stopped before stage 1's optimum)"
    else:
        bound = f"{toe.throughput_scale_relaxed:.4f}  (rounding gives up {toe.rounding_gap:.2%})"
    lines = [
        f"fabric {plan.fabric.name}: {plan.fabric.n_blocks} blocks, {len(mapping.circuits)} circuits planned",
        "",
        f"  throughput scale (new)       {toe.throughput_scale:.4f}",
        f"  throughput scale (today)     {toe.current_throughput_scale:.4f}",
        f"  LP relaxation bound          {bound}",
        f"  MLU of the predicted demand  {toe.current_mlu:.4f} -> {staging.final_mlu:.4f}"
        + ("" if staging.complete else f"  (a step towards the planned {toe.mlu:.4f})"),
        f"  circuits kept/removed/added  {mapping.kept} / {mapping.removed} / {mapping.added}"
        f"  (lower bound {mapping.lower_bound} removed)",
        f"  gain for the cost            {_gain_and_cost(plan)}",
        f"  routing MLU (int. weights)   {plan.routing.mlu_quantized:.4f}, "
        f"stretch {plan.routing.stretch:.3f} block hops",
        f"  plan time                    {seconds:.2f} s",
        f"  LP solver                    {_solver_line(toe)}",
        "",
        f"stages (drained MLU limit: max({staging.threshold:g}, MLU at the stage's start)):",
    ]
    if not staging.stages:
        lines.append("  none: the circuits do not change")
    if toe.nothing_to_gain is not None:
        lines += ["", toe.nothing_to_gain.message(plan.routing.stretch)]
    for i, s in enumerate(staging.stages, start=1):
        lines.append(
            f"  {i:>3}. domain {s.domain}: -{len(s.remove)} +{len(s.add)} circuits, "
            f"MLU {s.mlu_start:.4f} -> drained {s.mlu_drained:.4f} -> {s.mlu_after:.4f}"
        )
    if not staging.complete:
        lines += ["", f"not reached yet: {staging.blocked}",
                  "(plan again from the reached circuits to go on)"]
    return "\n".join(lines) + "\n"


def _gain_and_cost(plan: ReconfigurationPlan) -> str:
    """What the stages buy and what they cost, side by side: the MLU's relative drop and the
    circuits torn down, also as a share of today's."""
    toe, staging = plan.toe, plan.staging
    removed = sum(len(s.remove) for s in staging.stages)
    today = toe.current.total_circuits()
    gain = 1.0 - staging.final_mlu / toe.current_mlu if toe.current_mlu > 0 else 0.0
    share = f" ({removed / today:.1%} of today's {today})" if today else ""
    return f"MLU {-gain:+.1%} for {removed} circuits torn down and re-made{share}"


def _solver_line(toe: ToePlan) -> str:
    if toe.timed_out:
        return f"cut short by the time limit in stage {toe.cut_stage}: the plan is not optimal"
    if toe.solver_status != STATUS_OPTIMAL:
        return f"stopped early ({toe.solver_status}): the plan is not proven optimal"
    return "optimal"
