"""``heliostat replay``: the controller's loop over a recorded series of traffic matrices."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from controller.commands.output import emit, emit_json
from controller.commands.replay_jobs import DEFAULT_POLICIES, replay_jobs
from controller.config import ControllerConfig, load_controller_config
from controller.replay.engine import ReplayEngine
from controller.replay.report import plot_replay, replay_json, replay_table, write_routes
from controller.replay.series import load_series
from optimizer.config import load_fabric
from optimizer.errors import ConfigError

ARGS = "<command line>"
#: Series at least this long get a progress bar (on a terminal, unless -q).
PROGRESS_FROM = 200


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay",
        help="run the controller's loop over a series of traffic matrices, in simulated time",
        description=(
            "Runs the daemon's own estimator, decisions, TE and (unless --no-toe) ToE over a "
            "series, on devices held in memory, and judges every snapshot on the routing in "
            "force when it starts (computed from earlier snapshots only): the MLU its integer "
            "weights give against the snapshot's min-MLU optimum on the same topology."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--fabric", required=True, help="fabric YAML")
    p.add_argument(
        "--series", default=None, help="CSV time,src,dst,gbps, or a .hist file (one N*N matrix a line)"
    )
    p.add_argument(
        "--jobs",
        default=None,
        metavar="SCHEDULE",
        help="instead of --series: a schedule of job arrivals and departures (YAML, "
        "optimizer/jobs/schedule.py); compares the uniform mesh, reactive ToE and job-aware ToE "
        "on each job's communication time per iteration",
    )
    p.add_argument(
        "--policies",
        default=",".join(DEFAULT_POLICIES),
        help="with --jobs: the policies to compare, comma-separated, the first the baseline "
        "(also job-aware-bursts: the book plans for each job's peak phase)",
    )
    p.add_argument(
        "--config", default=None, help="controller config whose intervals, thresholds and te: it uses"
    )
    p.add_argument("--no-toe", action="store_true", help="TE only: the topology stays the uniform mesh")
    p.add_argument("--interval", type=float, default=30.0, help=".hist: seconds between snapshots")
    p.add_argument("--unit-gbps", type=float, default=1.0, help=".hist: Gbit/s of one unit of the file")
    p.add_argument("--start", type=int, default=0, help="first snapshot to replay (0-based)")
    p.add_argument("--limit", type=int, default=None, help="replay at most this many snapshots")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--out", default=None, help="file to write (default stdout)")
    p.add_argument(
        "--routes-out", default=None, help="JSON lines: the topology and weights each time they change"
    )
    p.add_argument("--plot", default=None, help="PNG of MLU / optimal over time and its CDF")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(handler=_replay)


def _replay(args: argparse.Namespace) -> int:
    if (args.series is None) == (args.jobs is None):
        raise ConfigError(ARGS, "--series", "give one of --series and --jobs")
    if args.jobs is not None:
        fabric_path = Path(args.fabric).resolve()
        return replay_jobs(args, fabric_path, _config(args.config, fabric_path))
    if args.start < 0:
        raise ConfigError(ARGS, "--start", f"must be >= 0, got {args.start}")
    plot = None
    if args.plot is not None:
        from controller.ui.plots import check_plot_path

        plot = check_plot_path(args.plot)
    if args.limit is not None and args.limit < 2:
        raise ConfigError(ARGS, "--limit", f"a replay needs at least 2 snapshots, got {args.limit}")
    for flag, value in (("--interval", args.interval), ("--unit-gbps", args.unit_gbps)):
        if not (math.isfinite(value) and value > 0):
            raise ConfigError(ARGS, flag, f"must be a positive number, got {value}")
    fabric_path = Path(args.fabric).resolve()
    fabric = load_fabric(fabric_path)
    series = load_series(args.series, fabric, interval_s=args.interval, unit_gbps=args.unit_gbps)
    stop = None if args.limit is None else args.start + args.limit
    series = series.window(args.start, stop)
    if len(series) < 2:
        raise ConfigError(args.series, "", f"a replay needs at least 2 snapshots from --start {args.start}")
    config = _config(args.config, fabric_path)
    progress = None
    if not args.quiet and sys.stderr.isatty() and len(series) >= PROGRESS_FROM:
        progress = ProgressBar(len(series))
    result = ReplayEngine(fabric_path, fabric, series, config, toe=not args.no_toe, progress=progress).run()
    if progress is not None:
        progress.close()
    if args.routes_out:
        write_routes(Path(args.routes_out), fabric, result)
    if plot is not None:
        plot_replay(plot, result, title=f"{Path(args.series).name} on {fabric.name}")
    if args.format == "json":
        emit_json(replay_json(result), args.out)
    else:
        emit(replay_table(result) + "\n", args.out)
    return 0


def _config(path: str | None, fabric_path: Path) -> ControllerConfig:
    """The controller config replay runs with: the file's, or every default."""
    if path is not None:
        return load_controller_config(path)
    here = Path.cwd()
    return ControllerConfig(
        source="<defaults>", fabric=fabric_path, devices=here / "unused", store=here / "unused"
    )


class ProgressBar:
    """``[#####.....] 1234/7500 snapshots, 12 s`` on stderr, redrawn about once a second."""

    def __init__(self, total: int, width: int = 30) -> None:
        self.total = total
        self.width = width
        self.started = time.monotonic()
        self.drawn = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.drawn < 1.0 and done < total:
            return
        self.drawn = now
        filled = int(self.width * done / max(total, 1))
        bar = "#" * filled + "." * (self.width - filled)
        sys.stderr.write(f"\r[{bar}] {done}/{total} snapshots, {now - self.started:.0f} s")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()
