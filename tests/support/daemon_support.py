"""Helpers for daemon, executor and decision tests: a running emulated fabric and configs."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from emulation.fabric import EmulatedFabric
from emulation.service import run as run_fabric
from tests.support import ROOT

CONFIGS = ROOT / "configs"


def wait_for(
    condition: Callable[[], Any], timeout: float = 30.0, interval: float = 0.05, what: str = ""
) -> Any:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what or condition}")
        time.sleep(interval)


@contextmanager
def running_fabric(
    fabric_file: str | Path, tmp: Path, speed: float = 20.0, tick_s: float = 0.5, **kwargs: Any
) -> Iterator[EmulatedFabric]:
    """An emulated fabric whose clock runs ``speed`` times real time in a background thread."""
    fabric = EmulatedFabric.from_config(
        fabric_file, tick_s=tick_s, devices_file=tmp / "devices.yaml", **kwargs
    )
    stop = threading.Event()
    with fabric:
        thread = threading.Thread(
            target=run_fabric, args=(fabric, stop), kwargs={"speed": speed, "duration_s": 0.0}, daemon=True
        )
        thread.start()
        try:
            yield fabric
        finally:
            stop.set()
            thread.join(timeout=5)


def controller_config(
    tmp: Path,
    fabric_file: str | Path,
    devices: Path,
    *,
    te_interval: float = 0.5,
    toe_check_interval: float = 2.0,
    prediction_window: float = 60.0,
    reconfig_gain: float = 0.05,
    min_reconfig_interval: float = 3600.0,
    timeouts: dict[str, float] | None = None,
    northbound: str = "127.0.0.1:0",
    te: dict[str, Any] | None = None,
    **thresholds: float,
) -> Path:
    """Write a controller config with short intervals; returns its path."""
    data = {
        "fabric": str(Path(fabric_file).resolve()),
        "devices": str(devices),
        "store": str(tmp / "journal.db"),
        "intervals": {
            "te_interval": te_interval,
            "prediction_window": max(prediction_window, te_interval),
            "toe_check_interval": toe_check_interval,
            "stale_after": max(10.0, te_interval),
        },
        "thresholds": {
            "reconfig_gain": reconfig_gain,
            "min_reconfig_interval": min_reconfig_interval,
            **thresholds,
        },
        "timeouts": timeouts
        or {"drain": 20, "verify_drain": 20, "apply_ocs": 20, "qualify": 20, "undrain": 20},
        "listen": {"northbound": northbound, "metrics": "127.0.0.1:0"},
    }
    if te is not None:
        data["te"] = te
    path = tmp / "controller.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_daemon_process(config: Path, log_file: Path, *extra: str) -> subprocess.Popen:
    """``heliostat run`` as a real process (its own session, so a SIGKILL hits only it)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(log_file, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "run", "--config", str(config), *extra],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_process(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(timeout=5)
