"""The ``heliostat`` command line. Each subcommand lives in ``controller/commands/``.

Only this module and the command modules print or exit; everything they call raises.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from controller.commands import certs, ctl, demand, demo, fabric, plan, replay, run, toe
from emulation import service as emulate
from optimizer.errors import HeliostatError

COMMANDS = (fabric, demand, plan, toe, replay, run, demo, emulate, ctl, certs)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="heliostat",
        description="SDN controller for hybrid optical-electrical datacenter fabrics.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["emulate"] and "--packet" in argv:
        # The packet-level fabric has its own options (and needs root); it lives apart from
        # the flow-level emulator so that importing the CLI never needs Mininet.
        from emulation.mininet import cli as packet_cli

        return packet_cli.main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return int(args.handler(args) or 0)
    except HeliostatError as exc:
        print(f"heliostat: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
