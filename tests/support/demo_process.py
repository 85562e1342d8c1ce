"""``heliostat demo ... --serve`` in a process of its own, for the tests that talk to it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.support import ROOT
from tests.support.daemon_support import stop_process, wait_for


@dataclass
class ServedDemo:
    proc: subprocess.Popen[str]
    env: dict[str, str]
    lines: list[str] = field(default_factory=list)
    exit_code: int | None = None  # set once the demo is stopped (SIGTERM)

    @property
    def output(self) -> str:
        return "".join(self.lines)


@contextmanager
def served_demo(*args: str, summary_within_s: float) -> Iterator[ServedDemo]:
    """Start ``heliostat demo *args --serve`` and wait until its scripted part ended (it serves
    until SIGTERM) or the process did; stop it with SIGTERM on the way out (``exit_code``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "demo", *args, "--serve"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )
    demo = ServedDemo(proc, env)
    stdout = proc.stdout
    assert stdout is not None  # PIPE
    reader = threading.Thread(target=lambda: demo.lines.extend(iter(stdout.readline, "")), daemon=True)
    reader.start()
    try:
        scripted = lambda: any("serving until SIGTERM" in line for line in demo.lines)  # noqa: E731
        wait_for(lambda: scripted() or proc.poll() is not None, summary_within_s, interval=0.2,
                 what="the demo's summary")
        yield demo
    finally:
        demo.exit_code = stop_process(proc, signal.SIGTERM, timeout=30)
        reader.join(timeout=5)
