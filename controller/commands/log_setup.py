"""Logging for the command line: the level from ``-v``/``-q`` and the format from ``--log-format``.

``--log-format json`` writes one JSON object a line on stderr (``time``, ``level``, ``logger``,
``message``, and ``exception`` with the traceback), which journald and log shippers parse
without a pattern; ``text`` (the default) is the usual ``time LEVEL logger: message``.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonLogFormatter(logging.Formatter):
    """One JSON object per record; times in UTC, ISO 8601 with milliseconds."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def log_level(verbose: int, quiet: bool) -> int:
    """WARNING by default; -v INFO, -vv DEBUG; -q only errors (it wins over -v)."""
    if quiet:
        return logging.ERROR
    return logging.WARNING - 10 * min(verbose, 2)


def setup_logging(verbose: int = 0, quiet: bool = False, log_format: str = "text") -> None:
    """Configure the root logger once for this process (what ``logging.basicConfig`` does,
    with the chosen formatter)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLogFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=log_level(verbose, quiet), handlers=[handler])
