"""Small typed readers for configuration mappings.

Every reader takes the source (a file name) and the key path of the value, so that the
:class:`ConfigError` it raises says exactly where the problem is. Used by every config
loader in the project (fabric, traffic matrices, devices file, controller config, the OpenFlow
agent spec) so they all speak alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from optimizer.errors import ConfigError

E = TypeVar("E", bound=StrEnum)


def read_file(path: str | Path) -> str:
    """The text of the config or data file at ``path``; ConfigError naming it if it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read file: {exc.strerror or exc}") from exc


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
            raise ConfigError(source, join(key, str(k)), "keys must be strings")
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
            raise ConfigError(
                source, join(key, k), f"unknown key; expected one of: {', '.join(sorted(allowed_set))}"
            )
    for k in required:
        if k not in value:
            raise ConfigError(source, join(key, k), "required key is missing")


def string(value: object, source: str, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(source, key, f"expected a non-empty string, got {type_name(value)}")
    return value


def integer(value: object, source: str, key: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(source, key, f"expected an integer, got {type_name(value)} {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(source, key, f"must be >= {minimum}, got {value}")
    return value


def number(
    value: object,
    source: str,
    key: str,
    minimum: float | None = None,
    positive: bool = False,
) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(source, key, f"expected a number, got {type_name(value)} {value!r}")
    result = float(value)
    if not math.isfinite(result):
        raise ConfigError(source, key, f"must be a finite number, got {value!r}")
    if positive and result <= 0:
        raise ConfigError(source, key, f"must be > 0, got {value}")
    if minimum is not None and result < minimum:
        raise ConfigError(source, key, f"must be >= {minimum}, got {value}")
    return result


def boolean(value: object, source: str, key: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(source, key, f"expected true or false, got {type_name(value)} {value!r}")
    return value


def choice(value: object, source: str, key: str, enum: type[E]) -> E:
    options = [e.value for e in enum]
    if not isinstance(value, str) or value not in options:
        raise ConfigError(source, key, f"expected one of {', '.join(options)}, got {value!r}")
    return enum(value)
