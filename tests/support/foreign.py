"""Run a foreign client (finsy, pygnmi) of the standard protocols in its own environment.

The clients live in ``.venv-foreign`` (``make`` builds it from tests/foreign/requirements.txt):
their protobuf pins differ from the controller's, so each script runs in its own process and
talks to the emulated devices over loopback, as any operator's tool would. A script prints one
JSON document on stdout; a non-zero exit fails the test with its stderr.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOREIGN_PYTHON = ROOT / ".venv-foreign" / "bin" / "python"
SCRIPTS = ROOT / "tests" / "foreign"


def foreign_python() -> Path:
    """The foreign environment's interpreter; a clear skip reason when ``make`` has not built it."""
    if not FOREIGN_PYTHON.exists():
        pytest.skip(f"{FOREIGN_PYTHON} is missing: `make test` builds it (tests/foreign/requirements.txt)")
    return FOREIGN_PYTHON


def run_foreign(script: str, *args: str, timeout_s: float = 60.0) -> Any:
    """Run ``tests/foreign/<script>`` with ``args``; return the JSON it printed."""
    done = subprocess.run(
        [str(foreign_python()), str(SCRIPTS / script), *args],
        capture_output=True, text=True, timeout=timeout_s, cwd=ROOT, check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"{script} exited {done.returncode}:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout)
