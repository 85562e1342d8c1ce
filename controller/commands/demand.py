"""``heliostat demand generate``: seeded traffic matrices for tests, benchmarks and demos."""

from __future__ import annotations

import argparse

from controller.commands.output import emit
from optimizer.config import load_fabric
from optimizer.traffic import MatrixKind, dump_matrix, generate_matrix


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demand", help="generate traffic matrices")
    dsub = p.add_subparsers(dest="demand_command", required=True, metavar="ACTION")
    g = dsub.add_parser("generate", help="write a seeded traffic matrix for a fabric")
    g.add_argument("--fabric", required=True)
    g.add_argument("--kind", choices=[k.value for k in MatrixKind], default=MatrixKind.GRAVITY.value)
    g.add_argument("--seed", type=int, default=1)
    g.add_argument(
        "--load", type=float, default=0.5, help="busiest block's load, as a fraction of its uplinks"
    )
    g.add_argument("--phase", type=int, default=0, help="ring phase (kind ring)")
    g.add_argument("--format", choices=("json", "csv"), default="json")
    g.add_argument("--out", default=None)
    g.set_defaults(handler=_generate)


def _generate(args: argparse.Namespace) -> int:
    fab = load_fabric(args.fabric)
    tm = generate_matrix(fab, args.kind, seed=args.seed, load=args.load, phase=args.phase)
    emit(dump_matrix(tm, args.format), args.out)
    return 0
