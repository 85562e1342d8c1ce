"""Conversions between the ControllerApi's values and ``heliostat.controller.v1`` messages.

The server encodes with ``*_to_pb``, the client decodes with ``*_from_pb``; a round trip
gives back what the daemon returned (JSON-shaped dicts compare equal). A value that does
not have the documented shape raises :class:`ConversionError` naming what is wrong.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, cast

from google.protobuf.timestamp_pb2 import Timestamp

from controller.northbound.api import MaintenanceKind, Phase, StatusSnapshot
from controller.northbound.errors import ConversionError
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2 as pb

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["ControllerService"].full_name

#: Channel and server arguments of both ends: a plan of a Jupiter-scale reconfiguration lists
#: tens of thousands of circuits, more than gRPC's default 4 MB.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MESSAGE_SIZE_OPTIONS: list[tuple[str, int]] = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
]

_PHASE_TO_PB: dict[Phase, int] = {
    phase: pb.Phase.Value(f"PHASE_{phase.name}")
    for phase in Phase
    if f"PHASE_{phase.name}" in pb.Phase.DESCRIPTOR.values_by_name
}
_PHASE_FROM_PB = {number: phase for phase, number in _PHASE_TO_PB.items()}

_KIND_TO_PB: dict[MaintenanceKind, int] = {
    MaintenanceKind.BLOCK: pb.MAINTENANCE_KIND_BLOCK,
    MaintenanceKind.OCS: pb.MAINTENANCE_KIND_OCS,
    MaintenanceKind.SPINE: pb.MAINTENANCE_KIND_SPINE,
}
_KIND_FROM_PB = {number: kind for kind, number in _KIND_TO_PB.items()}

#: StatusSnapshot fields that are None when unknown (``optional`` in the proto).
_OPTIONAL_STATUS_FIELDS = (
    "last_te_time",
    "last_toe_time",
    "mlu",
    "measured_mlu",
    "predicted_mlu",
    "reconfiguration_id",
    "stage",
    "stages_total",
    "step",
    "last_error",
)


# -- JSON fields ------------------------------------------------------------------------------


def dump_json(value: Any, what: str) -> str:
    """JSON text of ``value``; numpy scalars and arrays become plain numbers and lists."""
    try:
        return json.dumps(value, default=_plain)
    except (TypeError, ValueError) as exc:
        raise ConversionError(f"{what}: not JSON-serialisable: {exc}") from exc


def load_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConversionError(f"{what}: invalid JSON: {exc.msg}") from exc


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


# -- status -----------------------------------------------------------------------------------


def phase_to_pb(phase: Phase) -> pb.Phase:
    try:
        return cast(pb.Phase, _PHASE_TO_PB[Phase(phase)])
    except (KeyError, ValueError):
        raise ConversionError(f"phase: {phase!r} has no value in heliostat.controller.v1.Phase") from None


def phase_from_pb(number: int) -> Phase:
    try:
        return _PHASE_FROM_PB[number]
    except KeyError:
        raise ConversionError(f"phase: unknown value {number}") from None


#: StatusSnapshot.details keys with a typed field in pb.StatusDetails (lists, then scalars).
_DETAIL_LISTS = ("unreachable", "ocs_down", "degraded")
_DETAIL_SCALARS = ("mlu_quantized", "circuits_installed", "circuits_up", "poll_seconds",
                   "unexplained_drains", "journal_error", "health", "circuits_carrying")


def status_to_pb(status: StatusSnapshot) -> pb.Status:
    """The typed fields; details without a typed field go to the deprecated details_json."""
    details = dict(status.details)
    typed = {k: details.pop(k) for k in (*_DETAIL_LISTS, *_DETAIL_SCALARS) if k in details}
    try:
        message = pb.Status(
            phase=phase_to_pb(status.phase),
            fabric=status.fabric,
            toe_paused=status.toe_paused,
            te_runs=status.te_runs,
            toe_runs=status.toe_runs,
            maintenance=list(status.maintenance),
            details_json=dump_json(details, "status.details") if details else "",
        )
        for name in _OPTIONAL_STATUS_FIELDS:
            value = getattr(status, name)
            if value is not None:
                setattr(message, name, value)
        for name, field in (("last_te_time", "last_te_at"), ("last_toe_time", "last_toe_at")):
            if getattr(status, name) is not None:
                timestamp_to_pb(getattr(status, name), getattr(message, field))
        if typed:
            message.details.SetInParent()
            for name, value in typed.items():
                if name in _DETAIL_LISTS:
                    getattr(message.details, name).extend(str(v) for v in value or ())
                elif value is not None:
                    setattr(message.details, name, value)
    except (TypeError, ValueError) as exc:
        raise ConversionError(f"status: {exc}") from exc
    return message


def _details_from_pb(message: pb.Status) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if message.HasField("details"):
        typed = message.details
        for name in _DETAIL_SCALARS:
            details[name] = getattr(typed, name) if typed.HasField(name) else None
        for name in _DETAIL_LISTS:
            details[name] = list(getattr(typed, name))
    if message.details_json:
        details.update(load_json(message.details_json, "status.details"))
    return details


def status_from_pb(message: pb.Status) -> StatusSnapshot:
    optional = {
        name: getattr(message, name) if message.HasField(name) else None for name in _OPTIONAL_STATUS_FIELDS
    }
    details = _details_from_pb(message)
    return StatusSnapshot(
        phase=phase_from_pb(message.phase),
        fabric=message.fabric,
        toe_paused=message.toe_paused,
        te_runs=message.te_runs,
        toe_runs=message.toe_runs,
        maintenance=tuple(message.maintenance),
        details=details,
        **optional,
    )


def status_to_json(status: StatusSnapshot) -> dict[str, Any]:
    """The status as ``heliostat ctl status --format json`` prints it."""
    data = {name: getattr(status, name) for name in StatusSnapshot.__dataclass_fields__}
    data["phase"] = Phase(status.phase).value
    data["maintenance"] = list(status.maintenance)
    return data


# -- maintenance ------------------------------------------------------------------------------


def kind_to_pb(kind: MaintenanceKind) -> pb.MaintenanceKind:
    return cast(pb.MaintenanceKind, _KIND_TO_PB[MaintenanceKind(kind)])


def kind_from_pb(number: int) -> MaintenanceKind | None:
    """The kind, or None when it is unset or unknown."""
    return _KIND_FROM_PB.get(number)


# -- topology ---------------------------------------------------------------------------------


def topology_to_pb(data: Mapping[str, Any]) -> pb.GetTopologyResponse:
    """``{"topology": {"links": [{a, b, count}]}, "circuits": [{ocs, a: {block, port}, b}]}``."""
    topology = _field(data, "topology", "topology", Mapping, "mapping")
    links = _field(topology, "links", "topology.topology", list | tuple, "list")
    circuits = _field(data, "circuits", "topology", list | tuple, "list")
    try:
        return pb.GetTopologyResponse(
            links=[pb.Link(a=link["a"], b=link["b"], count=link["count"]) for link in links],
            circuits=[
                pb.Circuit(ocs=c["ocs"], a=_end_to_pb(c["a"]), b=_end_to_pb(c["b"])) for c in circuits
            ],
            spine_links=[
                pb.SpineLinks(
                    spine=x["spine"], block=x["block"], in_service=x["in_service"], cabled=x["cabled"]
                )
                for x in data.get("spine", ())
            ],
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConversionError(f"topology: a link or circuit is malformed: {exc!r}") from exc


def _end_to_pb(end: Mapping[str, Any]) -> pb.CircuitEnd:
    return pb.CircuitEnd(block=end["block"], port=end["port"])


def topology_from_pb(message: pb.GetTopologyResponse) -> dict[str, Any]:
    """The mapping :func:`topology_to_pb` took (``spine`` only when the fabric has one)."""
    out = {
        "topology": {"links": [{"a": x.a, "b": x.b, "count": x.count} for x in message.links]},
        "circuits": [
            {
                "ocs": c.ocs,
                "a": {"block": c.a.block, "port": c.a.port},
                "b": {"block": c.b.block, "port": c.b.port},
            }
            for c in message.circuits
        ],
    }
    if message.spine_links:
        out["spine"] = [
            {"spine": x.spine, "block": x.block, "in_service": x.in_service, "cabled": x.cabled}
            for x in message.spine_links
        ]
    return out


# -- matrices ---------------------------------------------------------------------------------


def matrices_to_pb(data: Mapping[str, Any]) -> pb.GetMatricesResponse:
    """``{"current": {src: {dst: gbps}} | None, "prediction": ... | None, "time": t | None}``."""
    if not isinstance(data, Mapping):
        raise ConversionError(f"matrices: expected a mapping, got {type(data).__name__}")
    message = pb.GetMatricesResponse()
    for key in ("current", "prediction"):
        matrix = data.get(key)
        if matrix is not None:
            getattr(message, key).CopyFrom(_matrix_to_pb(matrix, f"matrices.{key}"))
    if data.get("time") is not None:
        try:
            message.time = data["time"]
        except (TypeError, ValueError) as exc:
            raise ConversionError(f"matrices.time: {exc}") from exc
    return message


def _matrix_to_pb(matrix: Any, what: str) -> pb.TrafficMatrix:
    if not isinstance(matrix, Mapping):
        raise ConversionError(f"{what}: expected {{src: {{dst: gbps}}}}, got {type(matrix).__name__}")
    try:
        return pb.TrafficMatrix(
            demands=[
                pb.Demand(src=src, dst=dst, gbps=gbps)
                for src, row in matrix.items()
                for dst, gbps in row.items()
            ]
        )
    except (AttributeError, TypeError, ValueError) as exc:
        raise ConversionError(f"{what}: a demand is malformed: {exc}") from exc


def matrices_from_pb(message: pb.GetMatricesResponse) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key in ("current", "prediction"):
        data[key] = _matrix_from_pb(getattr(message, key)) if message.HasField(key) else None
    data["time"] = message.time if message.HasField("time") else None
    return data


def _matrix_from_pb(message: pb.TrafficMatrix) -> dict[str, dict[str, float]]:
    matrix: dict[str, dict[str, float]] = {}
    for demand in message.demands:
        matrix.setdefault(demand.src, {})[demand.dst] = demand.gbps
    return matrix


# -- helpers ----------------------------------------------------------------------------------


def _field(data: Any, key: str, what: str, kind: Any, kind_name: str) -> Any:
    if not isinstance(data, Mapping):
        raise ConversionError(f"{what}: expected a mapping, got {type(data).__name__}")
    if key not in data:
        raise ConversionError(f"{what}: the key {key!r} is missing")
    value = data[key]
    if not isinstance(value, kind):
        raise ConversionError(f"{what}.{key}: expected a {kind_name}, got {type(value).__name__}")
    return value


# -- one reconfiguration (GetReconfiguration) -------------------------------------------------

_STAGE_FIELDS = ("number", "domain", "circuits_removed", "circuits_added", "mlu_start", "mlu_drained",
                 "mlu_after")


def timestamp_to_pb(seconds: float, target: Timestamp) -> None:
    """Unix seconds into a Timestamp, the fraction kept to the nanosecond (seconds * 1e9
    as one float would lose the last digits of a 2020s time)."""
    whole = math.floor(seconds)
    nanos = round((seconds - whole) * 1e9)
    target.seconds, target.nanos = (whole + 1, 0) if nanos >= 1_000_000_000 else (whole, nanos)


def timestamp_from_pb(message: Any, name: str) -> float | None:
    """Unix seconds of the Timestamp field ``name`` of ``message``, None when unset."""
    if not message.HasField(name):
        return None
    stamp = getattr(message, name)
    return stamp.seconds + stamp.nanos / 1e9


def reconfiguration_to_pb(data: Mapping[str, Any]) -> pb.Reconfiguration:
    """``ControllerApi.reconfiguration``'s dict (the message's field names, times in Unix
    seconds, None for unset)."""
    what = "reconfiguration"
    try:
        message = pb.Reconfiguration(
            id=int(_field(data, "id", what, int, "integer")),
            state=str(_field(data, "state", what, str, "string")),
            trigger=str(data.get("trigger") or ""),
        )
        for name in ("reason", "current_mlu", "planned_mlu"):
            if data.get(name) is not None:
                setattr(message, name, data[name])
        for name in ("created", "finished"):
            if data.get(name) is not None:
                timestamp_to_pb(data[name], getattr(message, name))
        for stage in data.get("stages") or ():
            message.stages.add(**{k: stage[k] for k in _STAGE_FIELDS if stage.get(k) is not None})
        for step in data.get("steps") or ():
            added = message.steps.add(stage=step["stage"], name=step["name"], state=step["state"])
            if step.get("error") is not None:
                added.error = step["error"]
            for name in ("started", "finished"):
                if step.get(name) is not None:
                    timestamp_to_pb(step[name], getattr(added, name))
    except (KeyError, TypeError, ValueError) as exc:
        raise ConversionError(f"{what}: {type(exc).__name__}: {exc}") from exc
    return message


def reconfiguration_from_pb(message: pb.Reconfiguration) -> dict[str, Any]:
    def optional(holder: Any, name: str) -> Any:
        return getattr(holder, name) if holder.HasField(name) else None

    return {
        "id": message.id,
        "state": message.state,
        "trigger": message.trigger,
        "reason": optional(message, "reason"),
        "created": timestamp_from_pb(message, "created"),
        "finished": timestamp_from_pb(message, "finished"),
        "current_mlu": optional(message, "current_mlu"),
        "planned_mlu": optional(message, "planned_mlu"),
        "stages": [
            {"number": s.number, "domain": optional(s, "domain"), "circuits_removed": s.circuits_removed,
             "circuits_added": s.circuits_added, "mlu_start": optional(s, "mlu_start"),
             "mlu_drained": optional(s, "mlu_drained"), "mlu_after": optional(s, "mlu_after")}
            for s in message.stages
        ],
        "steps": [
            {"stage": s.stage, "name": s.name, "state": s.state, "error": optional(s, "error"),
             "started": timestamp_from_pb(s, "started"), "finished": timestamp_from_pb(s, "finished")}
            for s in message.steps
        ],
    }
