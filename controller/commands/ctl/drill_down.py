"""``heliostat ctl link A B`` and ``heliostat ctl device NAME``: the page's drill-downs in a
terminal (GetLink, GetDevice): load, capacity, the load over the last polls, the circuits."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controller.commands.ctl.tables import table
from controller.commands.output import emit, emit_json
from controller.northbound.client import ControllerClient

#: Load samples the table shows (the JSON has every one the controller returned).
HISTORY_SHOWN = 10
Handler = Callable[[ControllerClient, argparse.Namespace], int]
ActionAdder = Callable[[str, str, Handler], argparse.ArgumentParser]


def register(action: ActionAdder) -> None:
    """Add ``link`` and ``device`` with ``action`` (ctl's: name, help, handler -> parser)."""
    link = action("link", "one block pair: load, capacity, history and its circuits with their OCS", _link)
    link.add_argument("a", help="a block")
    link.add_argument("b", help="the other block")
    device = action("device", "one block, OCS or spine switch: state, load, history, its circuits", _device)
    device.add_argument("name", help="block, OCS or spine switch name, as in the fabric file")


def _show(args: argparse.Namespace, data: Mapping[str, Any], text: Callable[[], str]) -> int:
    if args.format == "json":
        emit_json(data, None)
    else:
        emit(text(), None)
    return 0


def _link(client: ControllerClient, args: argparse.Namespace) -> int:
    data = client.link(args.a, args.b)
    return _show(args, data, lambda: link_text(data))


def _device(client: ControllerClient, args: argparse.Namespace) -> int:
    data = client.device(args.name)
    return _show(args, data, lambda: device_text(data))


def _gbps(value: Any) -> str:
    return "-" if value is None else f"{float(value):,.1f}"


def _load_line(data: Mapping[str, Any]) -> str:
    share = data.get("utilisation")
    return (f"load {_gbps(data.get('load_gbps'))} of {_gbps(data.get('capacity_gbps'))} Gbit/s"
            + ("" if share is None else f" ({100 * float(share):.1f}%)"))


def _counts_line(counts: Mapping[str, Any]) -> str:
    return (f"circuits: {counts.get('installed', 0)} installed, {counts.get('up', 0)} up, "
            f"{counts.get('carrying', 0)} carrying traffic, {counts.get('drained', 0)} drained, "
            f"{counts.get('down', 0)} down")


def _history_lines(history: Sequence[Mapping[str, Any]]) -> list[str]:
    import time

    shown = list(history)[-HISTORY_SHOWN:]
    if not shown:
        return ["no load polled yet"]
    rows = [[time.strftime("%H:%M:%S", time.gmtime(float(h["time"]))), _gbps(h.get("load_gbps")),
             _gbps(h.get("capacity_gbps"))] for h in shown]
    head = f"load over the last {len(shown)} polls:"
    return [head, *table(["time (UTC)", "load Gbit/s", "capacity"], rows)]


def _circuit_rows(circuits: Sequence[Mapping[str, Any]]) -> list[str]:
    rows = [[c["ocs"], c["a"]["block"], str(c["a"]["port"]), c["b"]["block"], str(c["b"]["port"]), c["state"]]
            for c in circuits]
    if not rows:
        return ["no circuits"]
    return table(["ocs", "a block", "a port", "b block", "b port", "state"], rows)


def link_text(data: Mapping[str, Any]) -> str:
    lines = [f"link {data['a']} - {data['b']}: {_load_line(data)}", _counts_line(data["circuits"]), ""]
    lines += _history_lines(data.get("history") or ())
    lines += ["", *_circuit_rows(data.get("circuit_list") or ())]
    return "\n".join(lines) + "\n"


def device_text(data: Mapping[str, Any]) -> str:
    flags = [f for f, on in (("maintenance", data.get("maintenance")), ("failed", data.get("failed"))) if on]
    head = f"{data['kind']} {data['name']}: {data['state']}" + (f" ({', '.join(flags)})" if flags else "")
    lines = [head]
    if data["kind"] == "spine":
        return "\n".join(lines) + "\n"
    lines += [_load_line(data), _counts_line(data["circuits"]), ""]
    pairs = [[f"{x['a']} - {x['b']}", str(x["circuits"]["installed"]), str(x["circuits"]["carrying"])]
             for x in data.get("links") or ()]
    if pairs:
        lines += [*table(["block pair", "circuits", "carrying"], pairs), ""]
    lines += _history_lines(data.get("history") or ())
    lines += ["", *_circuit_rows(data.get("circuit_list") or ())]
    return "\n".join(lines) + "\n"
