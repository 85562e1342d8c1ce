"""``heliostat ctl job add FILE | remove NAME | list``: announce training jobs to the controller.

``add`` sends the job file (optimizer/jobs/spec.py) with its start (``--start``: an ISO 8601
time, UTC unless it says otherwise, or ``+SECONDS`` from now; default now) and optional end;
the controller validates it against its fabric, journals it and plans for it from
``intervals.job_lead_time`` before its start. A refusal exits 1 with the controller's named
error (``unknown_block: ...``, ``degrees: ...``, ``out_of_range: ...``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from controller.commands.output import emit, emit_json
from controller.northbound.client import ControllerClient
from optimizer import limits, schema
from optimizer.errors import ConfigError

ARGS = "<command line>"
CtlHandler = Callable[[ControllerClient, argparse.Namespace], int]


def register(actions: argparse._SubParsersAction, common: argparse.ArgumentParser,
             run: Callable[[argparse.Namespace], int]) -> None:
    """Add ``job`` to ``heliostat ctl``'s actions; ``run`` dials the controller."""
    job = actions.add_parser("job", help="announce, remove and list training jobs (scheduler hooks)")
    verbs = job.add_subparsers(dest="job_command", required=True, metavar="VERB")

    def verb(name: str, help_text: str, handler: CtlHandler) -> argparse.ArgumentParser:
        v = verbs.add_parser(name, help=help_text, parents=[common])
        v.set_defaults(handler=run, ctl_handler=handler)
        return v

    add = verb("add", "announce a job file; the controller plans for it ahead of its start", _add)
    add.add_argument("file", help="the job file (YAML, configs/jobs/ has examples)")
    add.add_argument("--start", default=None, metavar="ISO|+SECONDS", help="when it starts (default: now)")
    add.add_argument("--end", default=None, metavar="ISO|+SECONDS", help="when it ends (default: on removal)")
    remove = verb("remove", "forget an announced job (it ended or was cancelled)", _remove)
    remove.add_argument("name", help="the job's name (its file's name:)")
    verb("list", "the announced jobs and whether they are announced, due, running or ended", _list)


def parse_time(text: str, key: str, now: float) -> float:
    """``+SECONDS`` from ``now``, or an ISO 8601 time (UTC when it names no zone)."""
    value = text.strip()
    if value.startswith("+"):
        try:
            seconds = float(value[1:])
        except ValueError:
            seconds = -1.0
        if not 0 <= seconds <= limits.MAX_SECONDS:
            raise ConfigError(ARGS, key, f"+SECONDS must be a number of seconds from now, got {text!r}")
        return now + seconds
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(ARGS, key, f"expected an ISO 8601 time (2026-12-03T08:00:00Z) or +SECONDS, "
                          f"got {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _show(args: argparse.Namespace, data: Any, text: str) -> int:
    if args.format == "json":
        emit_json(data, None)
    else:
        emit(text, None)
    return 0


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _add(client: ControllerClient, args: argparse.Namespace) -> int:
    now = time.time()
    start = None if args.start is None else parse_time(args.start, "--start", now)
    end = None if args.end is None else parse_time(args.end, "--end", now)
    if start is not None and end is not None and end <= start:
        raise ConfigError(ARGS, "--end", "must be after --start")
    text = schema.read_file(args.file, limits.MAX_YAML_FILE_BYTES)
    job = client.add_job(text, start, end)
    line = (f"job {job['name']} announced ({job['phase']}): starts {_when(job['start'])}, "
            f"{len(job['blocks'])} blocks, {job['accelerators']} accelerators, {job['gbps']:.1f} Gbit/s "
            "between blocks on average; journaled\n")
    return _show(args, job, line)


def _remove(client: ControllerClient, args: argparse.Namespace) -> int:
    message = client.remove_job(args.name)
    return _show(args, {"name": args.name, "message": message}, message + "\n")


def jobs_table(data: dict[str, Any]) -> str:
    jobs = data["jobs"]
    lead = float(data["lead_time_s"])
    if not jobs:
        return f"no jobs announced (lead time {lead:g} s)\n"
    rows = [("NAME", "PHASE", "START", "END", "BLOCKS", "ACCEL", "GBIT/S", "COMM/IT-BEFORE", "COMM/IT-NOW")]
    for j in jobs:
        comm = j.get("comm_seconds") or {}
        rows.append((j["name"], j["phase"], _when(j["start"]), _when(j["end"]), ",".join(j["blocks"]),
                     str(j["accelerators"]), f"{j['gbps']:.1f}", _seconds(comm.get("announced")),
                     _seconds(comm.get("now"))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    note = (f"(planned for from {lead:g} s before their start; COMM/IT: communication time per iteration "
            "on the routing in force when announced and now)")
    return "\n".join(lines) + "\n" + note + "\n"


def _seconds(value: float | None) -> str:
    """A communication time per iteration (-: not known, or the routing blackholes the job)."""
    return "-" if value is None else f"{value:.3f}s"


def _list(client: ControllerClient, args: argparse.Namespace) -> int:
    data = client.list_jobs()
    return _show(args, data, jobs_table(data))
