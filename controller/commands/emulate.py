"""``heliostat emulate ...``: run an emulated fabric as a service (see emulation.service)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("emulate", help="run an emulated fabric (heliostat emulate --help)", add_help=False)
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(handler=_emulate)


def _emulate(args: argparse.Namespace) -> int:
    from emulation.service import main

    return main(list(args.args))
