"""``heliostat demand generate``: seeded traffic matrices for tests, benchmarks and demos."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

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
        "--load", type=float, default=0.5,
        help="busiest block's load, as a fraction of its uplinks (above 1 overloads it: a warning)",
    )
    g.add_argument("--phase", type=int, default=0, help="ring phase (kind ring)")
    g.add_argument(
        "--format", choices=FORMATS, default=None,
        help="default: from the --out file's extension (.csv or .json), else json",
    )
    g.add_argument("--out", default=None, help="file to write (default: stdout)")
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
    from optimizer.traffic import dump_matrix, generate_matrix

    fab = load_fabric(args.fabric)
    tm = generate_matrix(fab, args.kind, seed=args.seed, load=args.load, phase=args.phase)
    if args.load > 1:
        print(
            f"warning: --load {args.load:g}: the busiest block is offered more than its uplinks carry; "
            "no routing can serve this matrix without dropping traffic",
            file=sys.stderr,
        )
    emit(dump_matrix(tm, output_format(args.format, args.out)), args.out)
    return 0
