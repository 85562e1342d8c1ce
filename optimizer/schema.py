"""Small typed readers for configuration mappings.

Every reader takes the source (a file name) and the key path of the value, so that the
:class:`ConfigError` it raises says exactly where the problem is. Used by every config
loader in the project (fabric, traffic matrices, devices file, controller config, the OpenFlow
agent spec) so they all speak alike. The limits they enforce are in :mod:`optimizer.limits`:
file size and encoding (:func:`read_file`), JSON nesting, duplicate keys and huge numbers
(:func:`parse_json`), names (:func:`name`), and ranges (``maximum=`` of :func:`integer` and
:func:`number`). Values quoted in a message are cut short (:func:`shown`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from optimizer import limits
from optimizer.errors import ConfigError

E = TypeVar("E", bound=StrEnum)


def read_file(path: str | Path, max_bytes: int = limits.MAX_FILE_BYTES) -> str:
    """The text of the config or data file at ``path``: UTF-8, at most ``max_bytes``;
    ConfigError naming it if it cannot be read, is larger or is not UTF-8 text."""
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read file: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        raise ConfigError(str(path), "", f"larger than the limit of {max_bytes:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            str(path), f"line {line}", f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, for error messages (an input may be huge)."""
    if isinstance(value, list | dict | tuple | set):
        return f"a {type_name(value)} of {len(value)} items"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**limits.MAX_INT_DIGITS:
        return f"an integer of more than {limits.MAX_INT_DIGITS} digits"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def key_text(key: object) -> str:
    """A key as it goes into a key path: itself when short and printable, else quoted and cut."""
    if isinstance(key, str) and len(key) <= 40 and key.isprintable():
        return key
    return shown(key, 40)


def parse_json(text: str, source: str) -> Any:
    """JSON with the limits of :mod:`optimizer.limits`: nesting, no duplicate keys (the last
    one silently won), no integers of more digits than allowed. NaN and Infinity parse as
    floats, for the reader of the value to refuse naming its key."""
    check_text_nesting(text, source, "{[")

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in items:
            if k in out:
                raise ConfigError(source, key_text(k), "duplicate key (each key may appear once)")
            out[k] = v
        return out

    def integer_text(digits: str) -> int:
        if len(digits.lstrip("-")) > limits.MAX_INT_DIGITS:
            problem = f"an integer of {len(digits)} digits (at most {limits.MAX_INT_DIGITS})"
            raise ConfigError(source, "", problem)
        return int(digits)

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_int=integer_text)
    except json.JSONDecodeError as exc:
        raise ConfigError(source, f"line {exc.lineno}", f"invalid JSON: {exc.msg}") from exc
    except RecursionError:
        raise ConfigError(source, "", f"nested deeper than {limits.MAX_NESTING} levels") from None


def check_text_nesting(text: str, source: str, openers: str) -> None:
    """Refuse text whose brackets nest deeper than MAX_NESTING, before a recursive parser
    meets it (JSON nested 100,000 deep used to end in RecursionError). Brackets inside
    quoted strings are skipped (JSON's and YAML flow style's double quotes)."""
    closers = {"{": "}", "[": "]"}
    ends = {closers[o] for o in openers}
    depth = line = 0
    in_string = escaped = False
    for ch in text:
        if ch == "\n":
            line += 1
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in openers:
            depth += 1
            if depth > limits.MAX_NESTING:
                problem = f"nested deeper than {limits.MAX_NESTING} levels"
                raise ConfigError(source, f"line {line + 1}", problem)
        elif ch in ends:
            depth -= 1


def join(key: str, child: str | int) -> str:
    """Extend a key path: ``join("blocks", 3)`` is ``blocks[3]``, then ``.uplinks``."""
    if isinstance(child, int):
        return f"{key}[{child}]"
    return f"{key}.{child}" if key else child


def type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def mapping(value: object, source: str, key: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(source, key or "<top>", f"expected a mapping, got {type_name(value)}")
    for k in value:
        if not isinstance(k, str):
            raise ConfigError(source, join(key, key_text(k)), "keys must be strings")
    return value


def sequence(value: object, source: str, key: str) -> list[Any]:
    if not isinstance(value, list):
        raise ConfigError(source, key, f"expected a list, got {type_name(value)}")
    return value


def check_keys(
    value: Mapping[str, Any],
    source: str,
    key: str,
    allowed: Iterable[str],
    required: Iterable[str] = (),
) -> None:
    allowed_set = set(allowed)
    for k in value:
        if k not in allowed_set:
            expected = ", ".join(sorted(allowed_set))
            raise ConfigError(source, join(key, key_text(k)), f"unknown key; expected one of: {expected}")
    for k in required:
        if k not in value:
            raise ConfigError(source, join(key, k), "required key is missing")


def string(value: object, source: str, key: str, max_chars: int = 4096) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(source, key, f"expected a non-empty string, got {type_name(value)}")
    if len(value) > max_chars:
        raise ConfigError(source, key, f"at most {max_chars} characters, got {len(value)}")
    if "\0" in value:
        raise ConfigError(source, key, "must not contain a NUL character")
    return value


def name(value: object, source: str, key: str) -> str:
    """A block, OCS, spine, fabric or device name: 1-MAX_NAME_CHARS characters, ASCII letters,
    digits and ``- _ . :`` (names end up in YAML, CSV, logs, metrics labels and ids)."""
    text = string(value, source, key, max_chars=limits.MAX_NAME_CHARS)
    bad = next((c for c in text if not (c.isascii() and (c.isalnum() or c in limits.NAME_PUNCTUATION))), None)
    if bad is not None:
        raise ConfigError(
            source, key, f"name {shown(text)} has {bad!r}; names are letters, digits and "
            f"'{limits.NAME_PUNCTUATION}'"
        )
    return text


def integer(
    value: object, source: str, key: str, minimum: int | None = None, maximum: int | None = None
) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(source, key, f"expected an integer, got {type_name(value)} {shown(value)}")
    if minimum is not None and value < minimum:
        raise ConfigError(source, key, f"must be >= {minimum}, got {shown(value)}")
    if maximum is not None and value > maximum:
        raise ConfigError(source, key, f"must be <= {maximum:,}, got {shown(value)}")
    return value


def number(
    value: object,
    source: str,
    key: str,
    minimum: float | None = None,
    positive: bool = False,
    maximum: float | None = None,
) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(source, key, f"expected a number, got {type_name(value)} {shown(value)}")
    try:
        result = float(value)
    except OverflowError:
        raise ConfigError(source, key, f"must be a finite number, got {shown(value)}") from None
    if not math.isfinite(result):
        raise ConfigError(source, key, f"must be a finite number, got {shown(value)}")
    if positive and result <= 0:
        raise ConfigError(source, key, f"must be > 0, got {value}")
    if minimum is not None and result < minimum:
        raise ConfigError(source, key, f"must be >= {minimum}, got {value}")
    if maximum is not None and result > maximum:
        raise ConfigError(source, key, f"must be <= {maximum:g}, got {value:g}")
    return result


def choice(value: object, source: str, key: str, enum: type[E]) -> E:
    options = [e.value for e in enum]
    if not isinstance(value, str) or value not in options:
        raise ConfigError(source, key, f"expected one of {', '.join(options)}, got {shown(value)}")
    return enum(value)
