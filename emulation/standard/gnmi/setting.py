"""gNMI ``Set`` on the emulated switch: the admin state (``config/enabled``) and
``config/forwarding-viable`` of its interfaces, by update, replace or delete (delete restores
the default, true), as a leaf or as the ``config`` container in JSON_IETF. All or nothing:
every operation is checked before the device is touched.

Refusals: a wildcard, a value of the wrong type, or a state (read-only) leaf is
INVALID_ARGUMENT; an interface the device does not have is NOT_FOUND (a delete of one is
accepted, as the spec says of deletes of what does not exist); any other config leaf and
``union_replace`` are UNIMPLEMENTED.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc

from emulation.errors import DeviceRefusal, MalformedRequest
from southbound.standard.gnmi import paths, values
from southbound.standard.pb import gnmi_pb2

SETTABLE = {"enabled": "admin_down", "forwarding-viable": "not_viable"}
OP = gnmi_pb2.UpdateResult


class NotFound(DeviceRefusal):
    code = grpc.StatusCode.NOT_FOUND


class Unimplemented(DeviceRefusal):
    code = grpc.StatusCode.UNIMPLEMENTED


@dataclass(frozen=True)
class Change:
    """One leaf to set on one port (``value`` None: back to the default)."""

    port: int
    leaf: str  # enabled or forwarding-viable
    value: bool


def changes(request: gnmi_pb2.SetRequest, num_ports: int,
            naming: paths.PortNaming) -> tuple[list[Change], list[gnmi_pb2.UpdateResult]]:
    """The request's changes in the spec's order (deletes, replaces, updates) and the results
    to answer with; raises a DeviceRefusal for anything the target does not do."""
    if request.union_replace:
        raise Unimplemented("union_replace is not supported by this target")
    out: list[Change] = []
    results: list[gnmi_pb2.UpdateResult] = []
    prefix = request.prefix if request.HasField("prefix") else None
    for path in request.delete:
        full = paths.joined(prefix, path)
        out.extend(_targets(full, None, num_ports, naming, deleting=True))
        results.append(OP(path=path, op=OP.DELETE))
    for op, updates in ((OP.REPLACE, request.replace), (OP.UPDATE, request.update)):
        for update in updates:
            full = paths.joined(prefix, update.path)
            out.extend(_targets(full, update.val, num_ports, naming, deleting=False))
            results.append(OP(path=update.path, op=op))
    return out, results


def _targets(path: gnmi_pb2.Path, val: gnmi_pb2.TypedValue | None, num_ports: int,
             naming: paths.PortNaming, *, deleting: bool) -> Iterator[Change]:
    where = paths.text(path)
    if paths.is_wildcard(path):
        raise MalformedRequest(f"{where}: Set takes no wildcards")
    names = [e.name for e in path.elem]
    if names[:2] != ["interfaces", "interface"] or "name" not in path.elem[1].key:
        raise Unimplemented(f"{where}: this target sets only /interfaces/interface[name=*]/config/"
                            f"{{{', '.join(SETTABLE)}}}")
    name = path.elem[1].key["name"]
    port = naming.port(name)
    if port is None or not 0 <= port < num_ports:
        if deleting:
            return
        raise NotFound(f"unknown port {port if port is not None else name}: no interface {name} "
                       f"(the device has {naming.name(0)}..{naming.name(num_ports - 1)})")
    rest = names[2:]
    if "state" in rest:
        raise MalformedRequest(f"{where}: a state leaf is read-only")
    if rest == ["config"]:
        content = _json_object(val, where) if val is not None else dict.fromkeys(SETTABLE, True)
        for key, value in content.items():
            leaf = key.rpartition(":")[2]
            if leaf not in SETTABLE:
                raise Unimplemented(f"{where}: config leaf {leaf!r} is not settable on this target")
            yield Change(port, leaf, _as_bool(value, f"{where}/{leaf}"))
        return
    if len(rest) == 2 and rest[0] == "config" and rest[1] in SETTABLE:
        value = True if val is None else _bool(val, where)
        yield Change(port, rest[1], value)
        return
    raise Unimplemented(f"{where}: this target sets only config/{{{', '.join(SETTABLE)}}}")


def _bool(val: gnmi_pb2.TypedValue, where: str) -> bool:
    try:
        return _as_bool(values.decode(val), where)
    except values.BadValue as exc:
        raise MalformedRequest(f"{where}: {exc}") from exc


def _as_bool(value: Any, where: str) -> bool:
    try:
        return values.as_bool(value, where)
    except values.BadValue as exc:
        raise MalformedRequest(str(exc)) from exc


def _json_object(val: gnmi_pb2.TypedValue, where: str) -> dict[str, Any]:
    try:
        content = values.decode(val)
    except values.BadValue as exc:
        raise MalformedRequest(f"{where}: {exc}") from exc
    if not isinstance(content, dict):
        raise MalformedRequest(f"{where}: expected a JSON object of config leaves, got {content!r}")
    return content
