"""``heliostat emuctl``: poke a running emulated fabric (``heliostat emulate --control``) to
rehearse a failure against a daemon: change the demand, cut and restore a fibre, power an OCS
off and on, stop and restart a device agent, take a block down and bring it back.

The emulator's control endpoint (:mod:`emulation.control`) is found from ``--control URL`` or
from the file the emulator writes beside its devices file (``--devices-file F`` reads
``F.control``). Output is the emulator's JSON answer (``--format json``) or one line.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError, HeliostatError

ARGS = "<command line>"
TIMEOUT_S = 10.0


class EmulatorError(HeliostatError):
    """The emulator refused the request or could not be reached."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("emuctl", help="poke a running emulated fabric: demand, fibres, OCSes, agents, blocks")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--control", help="the emulator's control URL (heliostat emulate --control prints it)")
    where.add_argument(
        "--devices-file", type=Path, help="the emulator's devices file (its URL is in FILE.control)"
    )
    actions = p.add_subparsers(dest="emuctl_action", required=True, metavar="ACTION")
    actions.add_parser("status", help="emulated time, MLU, bytes delivered, dropped and lost, what is failed")
    demand = actions.add_parser("demand", help="offer a generated matrix or a matrix file from now on")
    demand.add_argument("--kind", default="gravity", help="a demand generate kind (default gravity)")
    demand.add_argument("--seed", type=int, default=1)
    demand.add_argument("--load", type=float, default=0.5)
    demand.add_argument("--matrix", type=Path, help="a matrix file (JSON) instead of a generated kind")
    for verb, what in (("fail-link", "cut the fibre at a block's port"), ("restore-link", "mend that fibre")):
        a = actions.add_parser(verb, help=what)
        a.add_argument("device")
        a.add_argument("port", type=int)
    for verb, what in (
        ("fail-ocs", "power an OCS off (its circuits are lost)"),
        ("restore-ocs", "power it back on (no circuits)"),
    ):
        actions.add_parser(verb, help=what).add_argument("name")
    for verb, what in (
        ("kill-agent", "stop a device's agent (the device keeps forwarding)"),
        ("restart-agent", "serve it again on the same address"),
    ):
        actions.add_parser(verb, help=what).add_argument("device")
    for verb, what in (("fail-block", "cut every uplink of a block"), ("restore-block", "mend them all")):
        actions.add_parser(verb, help=what).add_argument("block")
    for action in actions.choices.values():  # --format goes after the action (the CLI hoists it there)
        action.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(handler=_emuctl)


def control_url(args: argparse.Namespace) -> str:
    if args.control:
        return str(args.control).rstrip("/")
    path = Path(f"{args.devices_file}.control")
    try:
        url = path.read_text().strip()
    except OSError as exc:
        raise ConfigError(
            str(path),
            "--devices-file",
            f"no control endpoint is recorded ({exc.strerror}): run heliostat emulate with --control",
        ) from exc
    if not url.startswith("http://"):
        raise ConfigError(str(path), "--devices-file", f"expected an http:// URL, got {url[:80]!r}")
    return url


def request(url: str, verb: str, body: dict[str, Any] | None) -> dict[str, Any]:
    """GET /status (``body`` None) or POST /verb with ``body``; the answer, or EmulatorError."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"{url}/{verb}",
        data=data,
        method="GET" if body is None else "POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as reply:
            answer: dict[str, Any] = json.loads(reply.read())
            return answer
    except urllib.error.HTTPError as exc:
        try:
            why = json.loads(exc.read()).get("error", exc.reason)
        except ValueError:
            why = exc.reason
        raise EmulatorError(f"the emulator refused {verb}: {why}") from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise EmulatorError(
            f"no emulator answers at {url} ({reason}): is heliostat emulate --control running?"
        ) from exc


def _body(args: argparse.Namespace) -> dict[str, Any] | None:
    action = args.emuctl_action
    if action == "status":
        return None
    if action == "demand":
        if args.matrix is not None:
            from optimizer.schema import parse_json, read_file

            return {"matrix": parse_json(read_file(args.matrix), str(args.matrix))}
        return {"kind": args.kind, "seed": args.seed, "load": args.load}
    if action in ("fail-link", "restore-link"):
        return {"device": args.device, "port": args.port}
    if action in ("fail-ocs", "restore-ocs"):
        return {"name": args.name}
    if action in ("kill-agent", "restart-agent"):
        return {"device": args.device}
    return {"block": args.block}


def _emuctl(args: argparse.Namespace) -> int:
    answer = request(control_url(args), args.emuctl_action, _body(args))
    if args.format == "json":
        sys.stdout.write(json.dumps(answer, indent=1) + "\n")
    else:
        print(", ".join(f"{k} {json.dumps(v)}" for k, v in answer.items()))
    return 0
