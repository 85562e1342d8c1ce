"""``heliostat ctl``: ask a running controller (``heliostat run``) over its northbound API.

The address is ``--address HOST:PORT``, else ``listen.northbound`` of ``--config``, else
the default 127.0.0.1:50051. Every action prints a table, or JSON with ``--format json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from controller.commands.ctl import drill_down
from controller.commands.ctl import jobs as ctl_jobs
from controller.commands.ctl import tables as ctl_tables
from controller.commands.output import emit, emit_json
from controller.northbound.api import MAX_HISTORY_LIMIT, ApiError, ApiErrorCode, MaintenanceKind
from controller.northbound.client import (
    DEFAULT_DEADLINE_S,
    DEFAULT_DRY_RUN_DEADLINE_S,
    ControllerClient,
)
from controller.northbound.convert import status_to_json
from controller.northbound.events import KIND_NAMES as EVENT_KINDS
from controller.northbound.listen import DEFAULT_NORTHBOUND, ListenAddress, parse_listen_address
from optimizer.errors import ConfigError
from optimizer.limits import MAX_NAME_CHARS, MAX_RECORD_ID
from optimizer.schema import shown
from southbound.options import RetryPolicy
from southbound.tls import TlsConfig, TlsConfigError

ARGS = "<command line>"
#: Reads retry UNAVAILABLE for about a second and a half (five attempts), so a daemon that is
#: starting or restarting answers instead of the first refused connection failing the command.
CTL_READ_RETRY = RetryPolicy(max_attempts=5, initial_backoff_s=0.1, max_backoff_s=0.5)

#: Seconds between two looks at a reconfiguration ``ctl toe --wait`` waits for.
WAIT_POLL_S = 1.0
CtlHandler = Callable[[ControllerClient, argparse.Namespace], int]
#: A server bound to every address is dialled on loopback.
_WILDCARD_HOSTS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ctl", help="query and steer a running controller")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--address", default=None, help="northbound API host:port (default 127.0.0.1:50051)")
    where.add_argument("--config", default=None, help="controller config whose listen.northbound to dial")
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        help=f"deadline of the call in seconds (default {DEFAULT_DEADLINE_S:g}; "
        f"{DEFAULT_DRY_RUN_DEADLINE_S:g} for toe --dry-run, which waits for the plan)",
    )
    tls = p.add_argument_group("TLS (when the API is served over TLS)")
    tls.add_argument("--ca-cert", default=None, help="CA certificate that signed the server's (turns TLS on)")
    tls.add_argument("--cert", default=None, help="client certificate, for mutual TLS")
    tls.add_argument("--key", default=None, help="client private key, for mutual TLS")
    tls.add_argument("--server-name", default=None, help="name to check in the server certificate")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--format", choices=("table", "json"), default="table")
    actions = p.add_subparsers(dest="ctl_command", required=True, metavar="ACTION")

    def action(name: str, help_text: str, handler: CtlHandler) -> argparse.ArgumentParser:
        a = actions.add_parser(name, help=help_text, parents=[common])
        a.set_defaults(handler=_run, ctl_handler=handler)
        return a

    action("status", "phase, stage, last TE and ToE, MLU, predicted MLU", _status)
    action("topology", "circuits per block pair", _topology)
    action("circuits", "the circuits installed on the OCSes", _circuits)
    action("matrix", "the current (TE) traffic matrix", _matrix)
    action("prediction", "the predicted (peak) traffic matrix ToE plans for", _prediction)
    h = action("history", "past and in-flight reconfigurations, newest first", _history)
    h.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
    t = action("toe", "run topology engineering now (exit status 1 if not accepted)", _toe)
    t.add_argument(
        "--dry-run", action="store_true", help="plan and show the plan and its id; change nothing"
    )
    t.add_argument(
        "--apply",
        metavar="PLAN_ID",
        default=None,
        help="apply exactly the plan a dry run returned (refused with the reason if the fabric moved)",
    )
    t.add_argument(
        "--wait",
        action="store_true",
        help="block until the reconfiguration ends; exit 1 if it failed, rolled back or did not start",
    )
    t.add_argument("--wait-timeout", type=float, default=3600.0, metavar="S", help="give up waiting after S")
    action("pause", "pause automatic topology engineering", _pause)
    action("resume", "resume automatic topology engineering", _resume)
    maintenance = (
        ("drain", True, "drain a block, an OCS or a spine switch for maintenance (the controller re-plans "
         "around it)"),
        ("undrain", False, "return a drained block, OCS or spine switch to service"),
    )
    for name, drained, help_text in maintenance:
        m = action(name, help_text, _maintenance)
        m.add_argument("kind", choices=[k.value for k in MaintenanceKind])
        m.add_argument("name", help="block, OCS or spine switch name, as in the fabric file")
        m.set_defaults(drained=drained)
        if drained:
            m.add_argument(
                "--force",
                action="store_true",
                help="drain even if the predicted MLU afterwards exceeds the stage limit",
            )
    action("plan", "the last topology-engineering plan", _plan)
    r = action("reconfig", "one reconfiguration: its stages and the executor's steps", _reconfig)
    r.add_argument("id", type=int, help="reconfiguration id (from `ctl history`)")
    w = action("watch", "follow the controller's events (TE runs, ToE, steps, devices) until Ctrl-C", _watch)
    w.add_argument("--kind", action="append", choices=list(EVENT_KINDS), default=[],
                   help="only these kinds (repeat it; default: all)")
    w.add_argument("--count", type=int, default=None, metavar="N", help="stop after N events")
    drill_down.register(action)  # link, device
    ctl_jobs.register(actions, common, _run)


def _run(args: argparse.Namespace) -> int:
    if args.timeout is not None and not args.timeout > 0:
        raise ConfigError(ARGS, "--timeout", f"must be positive, got {args.timeout}")
    address = dial_address(args)
    tls = tls_config(args)
    if not getattr(args, "verbose", 0):
        # The retries' "giving up" warning repeats what the error message says: only with -v.
        logging.getLogger("southbound.grpc_native.rpc").setLevel(logging.ERROR)
    try:
        # Reads retry briefly (a daemon that is restarting answers within half a second);
        # actions are sent once (ControllerClient never retries them).
        client = ControllerClient(
            address,
            deadline_s=args.timeout or DEFAULT_DEADLINE_S,
            dry_run_deadline_s=args.timeout or DEFAULT_DRY_RUN_DEADLINE_S,
            read_retry=CTL_READ_RETRY,
            tls=tls,
        )
    except TlsConfigError as exc:
        raise ConfigError(ARGS, "--ca-cert/--cert/--key", str(exc)) from exc
    with client:
        return int(args.ctl_handler(client, args))


def tls_config(args: argparse.Namespace) -> TlsConfig | None:
    """TLS settings from --ca-cert, --cert, --key and --server-name (None: plaintext)."""
    if args.ca_cert is None:
        for option in ("cert", "key", "server_name"):
            if getattr(args, option) is not None:
                flag = "--" + option.replace("_", "-")
                raise ConfigError(ARGS, flag, "needs --ca-cert (TLS is off without it)")
        return None
    try:
        return TlsConfig(
            ca_cert=Path(args.ca_cert),
            client_cert=Path(args.cert) if args.cert else None,
            client_key=Path(args.key) if args.key else None,
            server_name=args.server_name,
        )
    except TlsConfigError as exc:
        raise ConfigError(ARGS, "--cert/--key", str(exc)) from exc


def dial_address(args: argparse.Namespace) -> str:
    """host:port to dial, from --address, --config, or the default listen address."""
    if args.address is not None:
        listen = parse_listen_address(args.address, ARGS, "--address")
    elif args.config is not None:
        from controller.config import load_controller_config  # the optimiser too: only when asked

        listen = load_controller_config(args.config).listen.northbound
    else:
        listen = DEFAULT_NORTHBOUND
    host = _WILDCARD_HOSTS.get(listen.host, listen.host)
    return str(ListenAddress(host, listen.port))


def _show(args: argparse.Namespace, data: Any, table: Callable[[], str]) -> int:
    if args.format == "json":
        emit_json(data, None)
    else:
        emit(table(), None)
    return 0


def _status(client: ControllerClient, args: argparse.Namespace) -> int:
    report = client.status_report()
    data = {**status_to_json(report.status), "metrics_address": report.metrics_address or None}
    return _show(args, data, lambda: ctl_tables.status_text(report, time.time()))


def _topology(client: ControllerClient, args: argparse.Namespace) -> int:
    data = client.topology()
    shown = {**data["topology"], "spine": data["spine"]} if data.get("spine") else data["topology"]
    return _show(args, shown, lambda: ctl_tables.topology_text(data))


def _circuits(client: ControllerClient, args: argparse.Namespace) -> int:
    data = client.topology()
    return _show(args, {"circuits": data["circuits"]}, lambda: ctl_tables.circuits_text(data))


def _matrix(client: ControllerClient, args: argparse.Namespace) -> int:
    data = client.matrices()
    text = partial(ctl_tables.matrix_text, data["current"], "current matrix", data["time"])
    return _show(args, {"matrix": data["current"], "time": data["time"]}, text)


def _prediction(client: ControllerClient, args: argparse.Namespace) -> int:
    data = client.matrices()
    text = partial(ctl_tables.matrix_text, data["prediction"], "predicted matrix", data["time"])
    return _show(args, {"prediction": data["prediction"], "time": data["time"]}, text)


def _history(client: ControllerClient, args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= MAX_HISTORY_LIMIT:
        raise ConfigError(ARGS, "--limit", f"must be from 1 to {MAX_HISTORY_LIMIT}, got {args.limit}")
    entries = client.history(args.limit)
    return _show(args, entries, lambda: ctl_tables.history_text(entries))


def _toe(client: ControllerClient, args: argparse.Namespace) -> int:
    if args.apply and args.dry_run:
        raise ConfigError(ARGS, "--apply", "a reviewed plan is applied, not planned again: drop --dry-run")
    if args.wait and args.dry_run:
        raise ConfigError(ARGS, "--wait", "a dry run starts nothing to wait for")
    if not args.wait_timeout > 0:
        raise ConfigError(ARGS, "--wait-timeout", f"must be > 0, got {args.wait_timeout}")
    marks = _toe_marks(client) if args.wait and not args.apply else None
    result = client.trigger_toe(dry_run=args.dry_run, plan_id=args.apply)
    data: dict[str, Any] = {
        "accepted": result.accepted,
        "dry_run": result.dry_run,
        "message": result.message,
        "plan_id": result.plan_id,
        "reconfiguration_id": result.reconfiguration_id,
        "plan": result.plan,
    }
    outcome: tuple[bool, str] | None = None
    if args.wait and result.accepted:
        outcome = wait_for_reconfiguration(client, result.reconfiguration_id, marks, args.wait_timeout)
        data["outcome"] = {"ok": outcome[0], "message": outcome[1]}

    def table() -> str:
        head = "dry run" if result.dry_run else ("started" if result.reconfiguration_id else (
            "queued" if result.accepted else "not accepted"))
        text = f"{head}: {result.message}\n"
        if result.dry_run and result.plan_id:
            text += (
                f"plan id {result.plan_id}: apply exactly this plan with "
                f"`heliostat ctl toe --apply {result.plan_id}`\n"
            )
        if outcome is not None:
            text += f"{'done' if outcome[0] else 'failed'}: {outcome[1]}\n"
        return text + ("\n" + ctl_tables.plan_text(result.plan) if result.plan is not None else "")

    _show(args, data, table)
    return 0 if result.accepted and (outcome is None or outcome[0]) else 1


@dataclass(frozen=True)
class _ToeMarks:
    """What the controller showed before a ToE request: the newest reconfiguration's id, the
    last ToE time and the last plan's time (to tell the request's own outcome apart)."""

    newest: int
    last_toe_time: float | None
    planned_at: float | None


def _toe_marks(client: ControllerClient) -> _ToeMarks:
    history = client.history(1)
    return _ToeMarks(
        int(history[0]["id"]) if history else 0, client.status().last_toe_time, _planned_at(client)
    )


def _planned_at(client: ControllerClient) -> float | None:
    try:
        return client.last_plan().get("planned_at")
    except ApiError as exc:
        if exc.code is ApiErrorCode.NOT_FOUND:
            return None
        raise


def wait_for_reconfiguration(
    client: ControllerClient,
    intent: int | None,
    marks: _ToeMarks | None,
    timeout: float,
    poll_s: float = WAIT_POLL_S,
) -> tuple[bool, str]:
    """Poll until the reconfiguration ``intent`` (or, for a queued ToE, the one it starts) ends:
    (True, ...) when every stage was applied, (False, why) otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        if intent is None and marks is not None:
            history = client.history(1)
            if history and int(history[0]["id"]) > marks.newest:
                intent = int(history[0]["id"])
            elif client.status().last_toe_time != marks.last_toe_time:
                plan = None
                if _planned_at(client) != marks.planned_at:
                    plan = client.last_plan()
                verdict = (plan or {}).get("verdict") or {}
                if plan is None:
                    error = client.status().last_error or "no plan was made"
                    return False, f"ToE started no reconfiguration: {error}"
                if not verdict.get("apply"):
                    why = verdict.get("reason", plan.get("reason"))
                    return False, f"ToE started no reconfiguration: {why}"
        if intent is not None:
            entry = next((e for e in client.history(50) if int(e["id"]) == intent), None)
            if entry is not None and entry["state"] != "in_progress":
                ok = entry["state"] == "done"
                return ok, f"reconfiguration {intent} {entry['state']}" + (
                    "" if ok or not entry.get("reason") else f": {entry['reason']}"
                )
        if time.monotonic() > deadline:
            what = f"reconfiguration {intent}" if intent is not None else "the ToE run"
            return False, f"gave up waiting for {what} after {timeout:g} s"
        time.sleep(poll_s)


def _pause(client: ControllerClient, args: argparse.Namespace) -> int:
    client.pause_toe()
    return _show(args, {"toe_paused": True}, lambda: "automatic ToE paused\n")


def _resume(client: ControllerClient, args: argparse.Namespace) -> int:
    client.resume_toe()
    return _show(args, {"toe_paused": False}, lambda: "automatic ToE resumed\n")


def _maintenance(client: ControllerClient, args: argparse.Namespace) -> int:
    kind = MaintenanceKind(args.kind)
    if len(args.name) > MAX_NAME_CHARS:
        raise ConfigError(ARGS, "name", f"{shown(args.name, 40)} has {len(args.name):,} characters; a "
                          f"{kind.value} name has at most {MAX_NAME_CHARS}")
    message = client.set_maintenance(kind, args.name, args.drained, getattr(args, "force", False))
    data = {"kind": kind.value, "name": args.name, "drained": args.drained, "message": message}
    return _show(args, data, lambda: f"{message}\n")


def _plan(client: ControllerClient, args: argparse.Namespace) -> int:
    plan = client.last_plan()
    return _show(args, plan, lambda: ctl_tables.plan_text(plan))


def _reconfig(client: ControllerClient, args: argparse.Namespace) -> int:
    if not 1 <= args.id <= MAX_RECORD_ID:
        raise ConfigError(ARGS, "id", "a reconfiguration id (`ctl history` lists them) is "
                          f"1..{MAX_RECORD_ID}, got {shown(args.id, 40)}")
    entry = client.reconfiguration(args.id)
    return _show(args, entry, lambda: ctl_tables.reconfiguration_text(entry))


def _watch(client: ControllerClient, args: argparse.Namespace) -> int:
    """Print each event as it comes (a line, or a JSON object a line); when the controller
    ends the stream (its length bound) watch again, until --count events or Ctrl-C."""
    import sys

    from google.protobuf.json_format import MessageToDict

    if args.count is not None and args.count < 1:
        raise ConfigError(ARGS, "--count", f"must be at least 1, got {args.count}")
    kinds = [EVENT_KINDS[k] for k in args.kind]
    seen = 0
    while True:
        for event in client.watch_events(kinds):
            data = MessageToDict(event, preserving_proto_field_name=True)
            data["sequence"] = int(data.get("sequence", 0))
            data["time"] = event.time.seconds + event.time.nanos / 1e9  # Unix seconds, as all ctl JSON
            line = json.dumps(data) if args.format == "json" else ctl_tables.event_line(data)
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
            seen += 1
            if args.count is not None and seen >= args.count:
                return 0
