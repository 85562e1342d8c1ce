"""Run one benchmark case in a fresh Python process, so that its peak memory is its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_module(module: str, *args: str) -> dict[str, Any]:
    """``python -m module args`` from the repository root; the JSON object on the last line of
    its stdout. Raises RuntimeError with the child's stderr when it fails."""
    proc = subprocess.run(
        [sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{module} {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])
