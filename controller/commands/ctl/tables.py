"""Readable tables for ``heliostat ctl`` (``--format table``, the default).

The JSON documents (plans, history entries) are shaped by the daemon, so they are shown
generically: scalars as ``key  value`` rows, lists of objects as tables (long ones cut
short), nested objects under a dotted key, a list inside a table cell as ``[its length]``.
``--format json`` prints everything.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from controller.northbound.api import StatusSnapshot

if TYPE_CHECKING:
    from controller.northbound.client import StatusReport

MAX_ROWS = 20  # rows shown of a list inside a plan or history entry
MAX_CELL = 40  # characters shown of a nested value in a table cell
GRID_MAX_BLOCKS = 16  # larger matrices are listed as pairs, biggest first
MAX_PAIRS = 40
_TIME_KEYS = ("time", "started", "finished", "created", "updated")


# -- generic pieces -----------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """Columns padded to their widest cell; columns of numbers are right-aligned."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    numeric = [bool(rows) and all(_is_number(r[i]) for r in rows) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric, strict=True)]
        return (indent + "  ".join(parts)).rstrip()

    return [line(headers), *(line(r) for r in rows)]


def value_text(value: Any, key: str = "") -> str:
    """One cell: ``-`` for None, yes/no, 4 significant digits, UTC times, counts of lists."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) and _is_time_key(key) and value > 1e8:
        return utc_text(float(value))
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return f"[{len(value)}]"
    if isinstance(value, Mapping):
        text = json.dumps(value, separators=(",", ":"))
        return text if len(text) <= MAX_CELL else text[: MAX_CELL - 3] + "..."
    return str(value)


def utc_text(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def records_table(records: Sequence[Any], indent: str = "", max_rows: int | None = MAX_ROWS) -> list[str]:
    """A table of JSON objects: one column per key (in first-seen order)."""
    objects = [r if isinstance(r, Mapping) else {"value": r} for r in records]
    columns: list[str] = []
    for obj in objects:
        columns += [k for k in obj if k not in columns]
    shown = objects if max_rows is None else objects[:max_rows]
    rows = [[value_text(obj.get(c), c) for c in columns] for obj in shown]
    lines = table(columns, rows, indent)
    if len(shown) < len(objects):
        lines.append(f"{indent}... {len(objects) - len(shown)} more (--format json shows all)")
    return lines


def document(data: Mapping[str, Any], prefix: str = "", indent: str = "") -> list[str]:
    """A JSON object as ``key  value`` rows, then a table per list of objects."""
    scalars: list[tuple[str, str]] = []
    sections: list[str] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            sections += document(value, f"{name}.", indent)
        elif isinstance(value, list | tuple) and value and all(isinstance(v, Mapping) for v in value):
            sections += ["", f"{indent}{name} ({len(value)}):", *records_table(value, indent + "  ")]
        elif isinstance(value, list | tuple):
            items = ", ".join(value_text(v) for v in value[:MAX_ROWS])
            more = f", ... ({len(value)} in all)" if len(value) > MAX_ROWS else ""
            scalars.append((name, items + more if value else "none"))
        else:
            scalars.append((name, value_text(value, key)))
    width = max((len(k) for k, _ in scalars), default=0)
    return [f"{indent}{k:<{width}}  {v}".rstrip() for k, v in scalars] + sections


# -- one formatter per ctl command ---------------------------------------------------------------


def _replica(details: dict) -> str:
    """``leader (epoch 42)`` or ``standby; leader replica-a at host:port (epoch 42)``."""
    epoch = f"epoch {details.get('epoch')}"
    if details["role"] == "leader":
        return f"leader ({epoch})"
    leader = details.get("leader")
    if not leader:
        return f"standby; no replica leads ({details.get('role_reason')})"
    where = f" at {details['leader_northbound']}" if details.get("leader_northbound") else ""
    return f"standby; leader {leader}{where} ({epoch})"


def _deferred(facts: dict, now: float) -> str:
    since = facts.get("since")
    age = f"since {max(0.0, now - since):.0f} s ago" if isinstance(since, int | float) else "deferred"
    before, after = value_text(facts.get("current_mlu")), value_text(facts.get("target_mlu"))
    return f"{age}, MLU {before} -> {after} once applied: {facts.get('why')}"


def status_text(report: StatusReport, now: float) -> str:
    s = report.status
    rows = [("phase", s.phase.value)]
    if s.details.get("role"):  # HA replicas (issue 14)
        rows.append(("replica", _replica(s.details)))
    if s.details.get("health") == "degraded":
        rows += [("health", "DEGRADED: " + "; ".join(map(str, s.details.get("degraded") or ())))]
    rows += [
        ("fabric", s.fabric),
        ("automatic ToE", "paused" if s.toe_paused else "on"),
        ("TE runs", _runs(s.te_runs, s.last_te_time, now)),
        ("ToE runs", _runs(s.toe_runs, s.last_toe_time, now)),
        ("MLU (TE plan)", value_text(s.mlu)),
        ("MLU measured", value_text(s.measured_mlu)),
        ("MLU predicted", value_text(s.predicted_mlu)),
        ("reconfiguration", _reconfiguration(s)),
        ("maintenance", ", ".join(s.maintenance) or "none"),
    ]
    deferred = s.details.get("deferred_plan")
    if isinstance(deferred, dict):  # a ToE plan waiting for room (controller/reconfig/deferred.py)
        rows.append(("deferred ToE plan", _deferred(deferred, now)))
    if s.last_error:
        rows.append(("last error", s.last_error))
    metrics = f"http://{report.metrics_address}/metrics" if report.metrics_address else "not served"
    rows.append(("metrics", metrics))
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    if s.details:
        lines += ["details:", *document(s.details, indent="  ")]
    return "\n".join(lines) + "\n"


def _runs(count: int, last: float | None, now: float) -> str:
    if last is None:
        return str(count)
    return f"{count}, last at {utc_text(last)} ({age_text(now - last)} ago)"


def age_text(seconds: float) -> str:
    """A duration the way people say it: 42 s, 17 min, 5 h, 3 d."""
    seconds = max(0.0, seconds)
    for unit, size, limit in (("s", 1, 120), ("min", 60, 120 * 60), ("h", 3600, 48 * 3600)):
        if seconds < limit:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds / 86400:.0f} d"


def _reconfiguration(s: StatusSnapshot) -> str:
    if s.reconfiguration_id is None and s.stage is None:
        return "none in flight"
    parts = [f"#{s.reconfiguration_id}" if s.reconfiguration_id is not None else "in flight"]
    if s.stage is not None:
        total = f" of {s.stages_total}" if s.stages_total is not None else ""
        parts.append(f"stage {s.stage + 1}{total}")
    if s.step:
        parts.append(f"step {s.step}")
    return ", ".join(parts)


def topology_text(data: Mapping[str, Any]) -> str:
    links = data["topology"]["links"]
    total = sum(link["count"] for link in links)
    lines = [f"{total} circuits between {len(links)} block pairs"]
    lines += table(["a", "b", "circuits"], [[x["a"], x["b"], str(x["count"])] for x in links])
    spine = data.get("spine") or ()
    if spine:
        up = sum(x["in_service"] for x in spine)
        cabled = sum(x["cabled"] for x in spine)
        lines += ["", f"spine: {up} of {cabled} links in service"]
        lines += table(
            ["spine", "block", "in service", "cabled"],
            [[x["spine"], x["block"], str(x["in_service"]), str(x["cabled"])] for x in spine],
        )
    return "\n".join(lines) + "\n"


def circuits_text(data: Mapping[str, Any]) -> str:
    circuits = data["circuits"]
    rows = [
        [c["ocs"], c["a"]["block"], str(c["a"]["port"]), c["b"]["block"], str(c["b"]["port"])]
        for c in circuits
    ]
    lines = [f"{len(circuits)} circuits", *table(["ocs", "a block", "a port", "b block", "b port"], rows)]
    return "\n".join(lines) + "\n"


def matrix_text(matrix: Mapping[str, Mapping[str, float]] | None, title: str, when: float | None) -> str:
    if matrix is None:
        return f"no {title} yet\n"
    at = f" at {utc_text(when)}" if when is not None else ""
    total = sum(g for row in matrix.values() for g in row.values())
    head = f"{title} (Gbit/s){at}; {total:.1f} Gbit/s in all"
    blocks = sorted({*matrix, *(dst for row in matrix.values() for dst in row)})
    if len(blocks) <= GRID_MAX_BLOCKS:
        rows = [[src, *(_gbps(matrix.get(src, {}).get(dst)) for dst in blocks)] for src in blocks]
        return "\n".join([head, *table(["src \\ dst", *blocks], rows)]) + "\n"
    pairs = sorted(((g, s, d) for s, row in matrix.items() for d, g in row.items() if g), reverse=True)
    rows = [[s, d, f"{g:.1f}"] for g, s, d in pairs[:MAX_PAIRS]]
    lines = [head, *table(["src", "dst", "gbps"], rows)]
    if len(pairs) > MAX_PAIRS:
        lines.append(f"... {len(pairs) - MAX_PAIRS} more pairs (--format json shows all)")
    return "\n".join(lines) + "\n"


def _gbps(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


#: ``ctl history`` and ``ctl reconfig`` fit a terminal this wide (the reason is cut to fit).
MAX_WIDTH = 100


def _short_time(seconds: Any) -> str:
    return time.strftime("%m-%d %H:%M:%S", time.gmtime(seconds)) if isinstance(seconds, int | float) else "-"


def _duration(start: Any, end: Any) -> str:
    if not isinstance(start, int | float) or not isinstance(end, int | float):
        return "-"
    return age_text(max(0.0, end - start))


def _mlu_change(before: Any, after: Any) -> str:
    if not isinstance(before, int | float) and not isinstance(after, int | float):
        return "-"
    return f"{value_text(before)}->{value_text(after)}"


def _fit(lines: list[str], width: int = MAX_WIDTH) -> list[str]:
    return [line if len(line) <= width else line[: width - 3] + "..." for line in lines]


def history_text(entries: Sequence[Mapping[str, Any]]) -> str:
    """One line per reconfiguration, newest first, within MAX_WIDTH columns (UTC times;
    ``ctl reconfig ID`` shows one in full, ``--format json`` everything)."""
    if not entries:
        return "no reconfigurations yet\n"
    rows = []
    for e in entries:
        removed, added = e.get("circuits_removed"), e.get("circuits_added")
        circuits = "-" if removed is None and added is None else f"-{removed or 0}/+{added or 0}"
        rows.append([
            str(e.get("id", "-")), str(e.get("state", "-")), str(e.get("trigger") or "-"),
            _short_time(e.get("created")), _duration(e.get("created"), e.get("finished")),
            value_text(e.get("stages")), circuits, _mlu_change(e.get("current_mlu"), e.get("planned_mlu")),
            str(e.get("reason") or "-"),
        ])
    head = ["id", "state", "trigger", "started (UTC)", "took", "stages", "circuits", "mlu", "reason"]
    return "\n".join(_fit(table(head, rows))) + "\n"


def _stage_lines(stages: Sequence[Mapping[str, Any]], numbered_from_zero: bool) -> list[str]:
    lines = []
    for i, s in enumerate(stages, start=1):
        index = s.get("index")
        number = s.get("number", index + 1 if numbered_from_zero and isinstance(index, int) else i)
        removed = s.get("circuits_removed", len(s.get("remove") or ()))
        added = s.get("circuits_added", len(s.get("add") or ()))
        domain = s.get("domain")
        where = f"domain {domain}" if domain is not None else "all domains"
        lines.append(
            f"  {number:>3}. {where}: -{removed} +{added} circuits, MLU {_mlu4(s.get('mlu_start'))} -> "
            f"drained {_mlu4(s.get('mlu_drained'))} -> {_mlu4(s.get('mlu_after'))}"
        )
    return lines


def _mlu4(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, int | float) else "-"


def plan_text(plan: Mapping[str, Any]) -> str:
    """A ToE plan as ``heliostat toe`` prints one: the figures, then one line per stage."""
    stages = [s for s in plan.get("stages") or () if isinstance(s, Mapping)]
    links = (plan.get("topology") or {}).get("links") or ()
    head = f"plan {plan['plan_id']}" if plan.get("plan_id") else "plan"
    planned_at = plan.get("planned_at")
    when = f", planned {utc_text(planned_at)}" if isinstance(planned_at, int | float) else ""
    lines = [f"{head} for fabric {plan.get('fabric', '-')} ({plan.get('trigger', '-')}{when})", ""]
    rows = [
        ("reason", str(plan.get("reason") or "-")),
        ("MLU of the predicted demand",
         f"{_mlu4(plan.get('current_mlu'))} -> {_mlu4(plan.get('planned_mlu'))}"),
        ("circuits removed/added",
         f"{plan.get('circuits_removed', '-')} / {plan.get('circuits_added', '-')}"),
        ("block pairs joined", str(len(links))),
    ]
    verdict = plan.get("verdict")
    if isinstance(verdict, Mapping):
        gain = f" (gain {verdict['gain']:.1%})" if isinstance(verdict.get("gain"), int | float) else ""
        rows.append(("verdict", f"{'apply' if verdict.get('apply') else 'not applied'}{gain}: "
                                f"{verdict.get('reason', '-')}"))
    if plan.get("complete") is False:
        rows.append(("complete", f"no: {plan.get('blocked') or 'a step towards the target'}"))
    width = max(len(k) for k, _ in rows)
    lines += [f"  {k:<{width}}  {v}" for k, v in rows]
    limit = plan.get("threshold")
    lines += ["", f"stages (drained MLU limit: max({value_text(limit)}, MLU at the stage's start)):"]
    lines += _stage_lines(stages, numbered_from_zero=True) or ["  none: the circuits do not change"]
    return "\n".join(lines) + "\n"


def reconfiguration_text(r: Mapping[str, Any]) -> str:
    """One reconfiguration: its figures, its stages, and the steps the executor journaled."""
    took = _duration(r.get("created"), r.get("finished"))
    lines = [
        f"reconfiguration {r.get('id')}: {r.get('state')} ({r.get('trigger')})",
        f"  started   {utc_text(r['created']) if isinstance(r.get('created'), int | float) else '-'}",
        f"  finished  {utc_text(r['finished']) if isinstance(r.get('finished'), int | float) else '-'}"
        + ("" if took == "-" else f" (took {took})"),
        f"  MLU       {_mlu4(r.get('current_mlu'))} -> planned {_mlu4(r.get('planned_mlu'))}",
    ]
    if r.get("reason"):
        lines.append(f"  reason    {r['reason']}")
    stages = r.get("stages") or []
    lines += ["", f"stages ({len(stages)}):", *(_stage_lines(stages, False) or ["  none"])]
    steps = r.get("steps") or []
    rows = [
        [str(s.get("stage")), str(s.get("name")), str(s.get("state")), _short_time(s.get("started")),
         _duration(s.get("started"), s.get("finished")), str(s.get("error") or "")]
        for s in steps
    ]
    lines += ["", f"steps ({len(steps)}):"]
    head = ["stage", "step", "state", "started (UTC)", "took", "error"]
    lines += _fit(table(head, rows, "  ")) if rows else ["  none journaled yet"]
    return "\n".join(lines) + "\n"


def event_line(event: Mapping[str, Any]) -> str:
    """One ``ctl watch`` line: UTC time, kind, the controller's message."""
    kind = str(event.get("kind", "")).removeprefix("EVENT_KIND_").lower()
    when = time.strftime("%H:%M:%S", time.gmtime(event["time"])) if "time" in event else "--:--:--"
    return f"{when} {kind:<15} {event.get('message', '')}"


# -- helpers ---------------------------------------------------------------------------------


def _is_number(text: str) -> bool:
    if text == "-":
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_time_key(key: str) -> bool:
    return key in _TIME_KEYS or key.endswith(("_time", "_at"))
