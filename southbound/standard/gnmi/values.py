"""gNMI ``TypedValue``: decoding what a target sends (any scalar, JSON or JSON_IETF text) and
encoding the leaves a switch reports (JSON_IETF per RFC 7951, or PROTO scalars).

RFC 7951 writes 64-bit integers (OpenConfig's counter64) as JSON strings, enumerations as
their names and identities as ``module:NAME``; :func:`as_int` and :func:`as_bool` read either
form, so the driver takes a PROTO ``uint_val`` and a JSON_IETF ``"1234"`` alike.
"""

from __future__ import annotations

import json
from typing import Any

from southbound.standard.pb import gnmi_pb2

#: a leaf's value as the emulated target holds it
Scalar = int | bool | str | float


class BadValue(ValueError):
    """A TypedValue that is not of the kind the leaf needs."""


def decode(value: gnmi_pb2.TypedValue) -> Any:
    """The Python value of ``value``: JSON text is parsed, scalars returned as they are."""
    kind = value.WhichOneof("value")
    if kind is None:
        raise BadValue("empty TypedValue")
    if kind in ("json_ietf_val", "json_val"):
        raw = getattr(value, kind)
        try:
            return json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadValue(f"{kind} is not JSON: {raw[:80]!r}") from exc
    if kind == "decimal_val":
        return value.decimal_val.digits / 10**value.decimal_val.precision
    if kind == "leaflist_val":
        return [decode(e) for e in value.leaflist_val.element]
    if kind == "any_val":
        raise BadValue("any_val is not a scalar")
    return getattr(value, kind)


def as_int(value: Any, what: str = "value") -> int:
    """An integer leaf: an int, or RFC 7951's decimal string of a 64-bit one."""
    if isinstance(value, bool):
        raise BadValue(f"{what}: expected an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise BadValue(f"{what}: expected an integer, got {value!r}")


def as_bool(value: Any, what: str = "value") -> bool:
    """A boolean leaf: a bool, or the text ``true``/``false``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise BadValue(f"{what}: expected a boolean, got {value!r}")


def as_name(value: Any, what: str = "value") -> str:
    """An enumeration or identity: its name without the module prefix."""
    if not isinstance(value, str):
        raise BadValue(f"{what}: expected an enumeration name, got {value!r}")
    return value.rpartition(":")[2]


def json_ietf(value: Any) -> bytes:
    """RFC 7951 text of ``value``: integers beyond 32 bits as strings."""
    return json.dumps(_rfc7951(value), separators=(",", ":")).encode()


def _rfc7951(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and not -(2**31) <= value < 2**31:
        return str(value)
    if isinstance(value, dict):
        return {k: _rfc7951(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rfc7951(v) for v in value]
    return value


def encode(value: Scalar, encoding: gnmi_pb2.Encoding) -> gnmi_pb2.TypedValue:
    """``value`` as a TypedValue of ``encoding`` (JSON_IETF, JSON or PROTO). Integers are
    unsigned (counters, speeds): PROTO ``uint_val``."""
    if encoding in (gnmi_pb2.JSON_IETF, gnmi_pb2.JSON):
        text = json_ietf(value) if encoding == gnmi_pb2.JSON_IETF else json.dumps(value).encode()
        return (gnmi_pb2.TypedValue(json_ietf_val=text) if encoding == gnmi_pb2.JSON_IETF
                else gnmi_pb2.TypedValue(json_val=text))
    if isinstance(value, bool):
        return gnmi_pb2.TypedValue(bool_val=value)
    if isinstance(value, int):
        return gnmi_pb2.TypedValue(uint_val=value) if value >= 0 else gnmi_pb2.TypedValue(int_val=value)
    if isinstance(value, float):
        return gnmi_pb2.TypedValue(double_val=value)
    return gnmi_pb2.TypedValue(string_val=value)
