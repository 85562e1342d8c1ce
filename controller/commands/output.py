"""Writing command output to stdout or a file."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError
from optimizer.schema import parse_json, read_file


def emit(text: str, out: str | None) -> None:
    """Write ``text`` to the file ``out`` or, if it is None or ``-``, to stdout."""
    if out is None or out == "-":
        sys.stdout.write(text)
        return
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(out, "", f"cannot write file: {exc.strerror or exc}") from exc


def emit_json(data: Any, out: str | None) -> None:
    emit(json.dumps(data, indent=1) + "\n", out)


def read_json(path: str) -> Any:
    """A JSON input file (circuits, topologies) within the limits of optimizer.limits."""
    return parse_json(read_file(path), path)
