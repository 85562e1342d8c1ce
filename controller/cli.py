"""The ``heliostat`` command line. Each subcommand lives in ``controller/commands/``.

Only this module and the command modules print or exit; everything they call raises.

A command's module is imported only when that command runs: ``heliostat --help`` lists the
commands from :data:`COMMANDS` without importing any of them (the daemon, scipy and the gRPC
stack take about a second to import), and ``heliostat ctl status`` imports the client and
not the optimiser. Keep it that way: a command module imports at its top only what its
``register`` needs, and its handlers import the rest.

Global options (``-v``, ``-q``, ``--log-format``, and ``--format`` where the action has it)
may stand before or after the command and its action: they are moved behind the action
before parsing, and every action's parser accepts them. Exit statuses:
:mod:`controller.commands.exit_codes`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import re
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from controller.commands.exit_codes import INTERRUPTED, USAGE, exit_code_of

#: command -> (module with ``register(sub)``, one line of help). The help is the module's
#: own (tests check they agree); it is repeated here so the listing needs no import.
COMMANDS: dict[str, tuple[str, str]] = {
    "fabric": ("controller.commands.fabric", "generate, check and inspect fabric descriptions"),
    "demand": ("controller.commands.demand", "generate traffic matrices"),
    "plan": ("controller.commands.plan", "compute WCMP weights (traffic engineering) for a traffic matrix"),
    "toe": (
        "controller.commands.toe",
        "plan the logical topology, its circuits on every OCS and the stages to get there",
    ),
    "replay": (
        "controller.commands.replay",
        "run the controller's loop over a series of traffic matrices, in simulated time",
    ),
    "run": ("controller.commands.run", "run the controller daemon"),
    "demo": (
        "controller.commands.demo",
        "run the controller against an emulated fabric through a demand shift",
    ),
    "emulate": ("controller.commands.emulator", "run an emulated fabric as a service"),
    "emuctl": (
        "controller.commands.emuctl",
        "poke a running emulated fabric: demand, fibres, OCSes, agents, blocks",
    ),
    "ctl": ("controller.commands.ctl", "query and steer a running controller"),
    "config": ("controller.commands.config_check", "validate a controller config and the files it names"),
    "certs": ("controller.commands.certs", "issue a CA and the TLS certificates for the API and the devices"),
    "completion": ("controller.commands.completion", "print a shell completion script (bash, zsh or tcsh)"),
}

#: Flags every action accepts, before or after it: name -> takes a value.
_GLOBAL_FLAGS = {"-v": False, "--verbose": False, "-q": False, "--quiet": False,
                 "--log-format": True, "--format": True}
_REPEATED_V = re.compile(r"^-v+$")


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Shows each option's default after its help (argparse's ArgumentDefaultsHelpFormatter),
    but not when there is none (None, False, an empty list) or the help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default is argparse.SUPPRESS
            or default is None
            or default is False
            or default == []
            or not action.option_strings
        ):
            return text
        return f"{text} (default: %(default)s)" if text else "default: %(default)s"


class _Version(argparse.Action):
    """``--version``: the installed package's version, looked up only when asked."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0,
                         help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            text = version("heliostat")
        except PackageNotFoundError:
            text = "unknown (not installed)"
        sys.stdout.write(f"heliostat {text}\n")
        parser.exit()


def _add_global_options(parser: argparse.ArgumentParser, top: bool) -> None:
    """-v, -q and --log-format. At the top they carry the defaults; on an action they are
    SUPPRESSed, so an action that is not given them keeps the top's values."""
    taken = {s for a in parser._actions for s in a.option_strings}
    default = (lambda value: value) if top else (lambda _: argparse.SUPPRESS)
    group = parser.add_argument_group("global options (before or after the action)")
    if "-v" not in taken:
        group.add_argument("-v", "--verbose", action="count", default=default(0),
                           help="more logging (-vv for debug)")
    if "-q" not in taken:
        group.add_argument("-q", "--quiet", action="store_true", default=default(False),
                           help="only errors in the log (and no progress line)")
    if "--log-format" not in taken:
        group.add_argument("--log-format", choices=("text", "json"), default=default("text"),
                           help="log lines as text or as one JSON object each (default: text)")


def _parsers(parser: argparse.ArgumentParser) -> Iterator[tuple[argparse.ArgumentParser, bool]]:
    """Every parser under ``parser`` (itself included), each with whether it is a leaf."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    yield parser, not subs
    seen: set[int] = set()
    for action in subs:
        for child in action.choices.values():
            if id(child) not in seen:
                seen.add(id(child))
                yield from _parsers(child)


def build_parser(command: str | None = None, everything: bool = False) -> argparse.ArgumentParser:
    """The parser with ``command`` registered in full (every command with ``everything``, for
    completion scripts) and the others listed only; registering imports the command's module."""
    parser = argparse.ArgumentParser(
        prog="heliostat",
        description="SDN controller for hybrid optical-electrical datacenter fabrics.",
        epilog="Exit status: 0 done, 1 refused or failed, 2 usage or bad config, 3 controller "
        "unreachable. `heliostat COMMAND --help` describes a command.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("--version", action=_Version)
    # every command in full, for a handler that describes the whole CLI (``completion``)
    parser.set_defaults(full_parser=lambda: build_parser(everything=True))
    _add_global_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        if everything or name == command:
            importlib.import_module(module).register(sub)
        else:
            sub.add_parser(name, help=help_text)
    for child, leaf in _parsers(parser):
        child.formatter_class = DefaultsHelpFormatter
        if leaf and child is not parser:
            _add_global_options(child, top=False)
    return parser


def hoist_global_flags(argv: Sequence[str]) -> list[str]:
    """``argv`` with the global flags moved to its end (behind the action that parses them);
    ``--`` ends the search."""
    rest: list[str] = []
    hoisted: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            rest.extend(argv[i:])
            break
        name = token.split("=", 1)[0]
        if _REPEATED_V.match(token) or name in _GLOBAL_FLAGS:
            hoisted.append(token)
            if _GLOBAL_FLAGS.get(name) and "=" not in token and i + 1 < len(argv):
                hoisted.append(argv[i + 1])
                i += 1
        else:
            rest.append(token)
        i += 1
    return rest + hoisted


def _command_of(argv: Sequence[str]) -> str | None:
    """The command named first in ``argv`` (after hoisting, nothing but -h and --version can
    stand before it), if it is one."""
    for token in argv:
        if not token.startswith("-"):
            return token if token in COMMANDS else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    quiet_grpc_core(argv)
    if argv[:1] == ["emulate"] and "--packet" in argv:
        # The packet-level fabric has its own options (and needs root); it lives apart from
        # the flow-level emulator so that importing the CLI never needs Mininet.
        from controller.commands.emulator import packet_main

        return packet_main(argv[1:])
    argv = hoist_global_flags(argv)
    try:
        parser = build_parser(_command_of(argv))
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help, --version (0) and usage errors (2)
        return USAGE if exc.code not in (0, None) else 0
    setup_logging(args.verbose, args.quiet, args.log_format)
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        return INTERRUPTED
    except Exception as exc:
        if not _is_heliostat_error(exc):
            raise
        print(f"heliostat: error: {exc}", file=sys.stderr)
        return exit_code_of(exc)


def quiet_grpc_core(argv: Sequence[str]) -> None:
    """Keep gRPC's C-core log lines (``E1202 ... Invalid private key``) off the terminal: the
    commands explain failures themselves. Must run before grpc is imported; with -v the core's
    errors are kept; a GRPC_VERBOSITY already set is left alone."""
    verbose = any(re.fullmatch(r"-v+|--verbose", arg) for arg in argv)
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR" if verbose else "NONE")


# -- logging: the level from -v/-q, the format from --log-format ------------------------------
# ``--log-format json`` writes one JSON object a line on stderr (``time``, ``level``, ``logger``,
# ``message``, and ``exception`` with the traceback), which journald and log shippers parse
# without a pattern; ``text`` (the default) is the usual ``time LEVEL logger: message``.

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonLogFormatter(logging.Formatter):
    """One JSON object per record; times in UTC, ISO 8601 with milliseconds."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


#: libraries whose INFO is one line per message on the wire
CHATTY_LIBRARIES = ("ncclient", "paramiko")


def log_level(verbose: int, quiet: bool) -> int:
    """WARNING by default; -v INFO, -vv DEBUG; -q only errors (it wins over -v)."""
    if quiet:
        return logging.ERROR
    return logging.WARNING - 10 * min(verbose, 2)


def setup_logging(verbose: int = 0, quiet: bool = False, log_format: str = "text") -> None:
    """Configure the root logger once for this process (what ``logging.basicConfig`` does,
    with the chosen formatter)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLogFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    level = log_level(verbose, quiet)
    logging.basicConfig(level=level, handlers=[handler])
    # the SSH and NETCONF libraries log every message at INFO: theirs only at -vv
    for chatty in CHATTY_LIBRARIES:
        logging.getLogger(chatty).setLevel(max(level, logging.WARNING) if verbose < 2 else level)


def _is_heliostat_error(exc: BaseException) -> bool:
    from optimizer.errors import HeliostatError

    return isinstance(exc, HeliostatError)


if __name__ == "__main__":
    sys.exit(main())
