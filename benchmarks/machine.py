"""A one-line description of the machine a benchmark ran on."""

from __future__ import annotations

import datetime as dt
import os
import platform
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def memory_gib() -> float:
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 0.0
    return pages / 2**30


def machine_summary() -> str:
    return (
        f"{os.cpu_count()} cores ({cpu_model()}), {memory_gib():.0f} GiB, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}, "
        f"{dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}"
    )
