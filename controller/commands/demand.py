"""``heliostat demand generate``: seeded traffic matrices for tests, benchmarks and demos."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

#: Matrix kinds (optimizer.traffic.MatrixKind's values: kept here so --help imports no numpy).
KINDS = ("uniform", "gravity", "hotspot", "ring", "all-to-all")
FORMATS = ("json", "csv")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demand", help="generate traffic matrices")
    dsub = p.add_subparsers(dest="demand_command", required=True, metavar="ACTION")
    g = dsub.add_parser("generate", help="write a seeded traffic matrix for a fabric")
    g.add_argument("--fabric", required=True, help="fabric YAML")
    g.add_argument("--kind", choices=KINDS, default="gravity")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument(
        "--load",
        type=float,
        default=0.5,
        help="busiest block's load, as a fraction of its uplinks (above 1 overloads it: a warning)",
    )
    g.add_argument("--phase", type=int, default=0, help="ring phase (kind ring)")
    g.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="default: from the --out file's extension (.csv or .json), else json",
    )
    g.add_argument("--out", default=None, help="file to write (default: stdout)")
    g.add_argument(
        "--job",
        action="append",
        default=None,
        metavar="FILE",
        help="a training job file (configs/jobs/); repeat for several: the matrix is their traffic "
        "averaged over an iteration (--kind, --seed, --load and --phase do not apply)",
    )
    g.add_argument(
        "--peak",
        action="store_true",
        help="with --job: per pair, the highest rate of any phase (the bursts) instead of the average",
    )
    g.add_argument(
        "--series",
        type=int,
        default=None,
        metavar="ITERATIONS",
        help="with --job: write the series heliostat replay reads (CSV time,src,dst,gbps) of this many "
        "iterations of every job, phase by phase, instead of one matrix",
    )
    g.set_defaults(handler=_generate)


def output_format(explicit: str | None, out: str | None) -> str:
    """--format if given, else the extension of --out when it names one, else json."""
    if explicit is not None:
        return explicit
    suffix = Path(out).suffix.lower().lstrip(".") if out and out != "-" else ""
    return suffix if suffix in FORMATS else "json"


def _generate(args: argparse.Namespace) -> int:
    from controller.commands.output import emit
    from optimizer.config import load_fabric
    from optimizer.errors import ConfigError
    from optimizer.traffic import dump_matrix, generate_matrix

    fab = load_fabric(args.fabric)
    if args.job:
        return _from_jobs(args, fab)
    if args.series is not None or args.peak:
        raise ConfigError(
            "<command line>", "--series" if args.series is not None else "--peak", "needs --job"
        )
    tm = generate_matrix(fab, args.kind, seed=args.seed, load=args.load, phase=args.phase)
    if args.load > 1:
        print(
            f"warning: --load {args.load:g}: the busiest block is offered more than its uplinks carry; "
            "no routing can serve this matrix without dropping traffic",
            file=sys.stderr,
        )
    emit(dump_matrix(tm, output_format(args.format, args.out)), args.out)
    return 0


#: Iterations a --series may ask for (each is two snapshots per job).
MAX_SERIES_ITERATIONS = 100_000


def _from_jobs(args: argparse.Namespace, fab: Any) -> int:
    """The jobs' traffic: their average (or peak) matrix, or their phases over time."""
    import numpy as np

    from controller.commands.output import emit
    from controller.replay.series import Series
    from optimizer.errors import ConfigError
    from optimizer.jobs import job_traffic, jobs_series, load_job
    from optimizer.traffic import TrafficMatrix, dump_matrix

    traffic = [job_traffic(load_job(path, fab), fab) for path in args.job]
    names = [t.job.name for t in traffic]
    if len(set(names)) < len(names):
        raise ConfigError("<command line>", "--job", f"two job files name the same job ({', '.join(names)})")
    if args.series is not None:
        if not 1 <= args.series <= MAX_SERIES_ITERATIONS:
            raise ConfigError("<command line>", "--series", f"must be from 1 to {MAX_SERIES_ITERATIONS:,}")
        times, gbps = jobs_series(traffic, args.series)
        emit(Series(fab.block_names, times, gbps).to_csv(), args.out)
        return 0
    parts = [(t.peak() if args.peak else t.mean()).gbps for t in traffic]
    emit(
        dump_matrix(
            TrafficMatrix(fab.block_names, np.sum(parts, axis=0)), output_format(args.format, args.out)
        ),
        args.out,
    )
    return 0

