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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from controller.northbound import ControllerClient
from controller.reconfig.journal import Journal
from emulation.fabric import EmulatedFabric
from emulation.service import run as run_fabric
from tests.support import ROOT

if TYPE_CHECKING:
    from controller.daemon import Daemon

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
    job_lead_time: float | None = None,
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
    if job_lead_time is not None:
        data["intervals"]["job_lead_time"] = job_lead_time  # type: ignore[index]
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


@dataclass
class Running:
    """A daemon in this process with its northbound API, a client and a reader of its journal."""

    daemon: Daemon
    client: ControllerClient
    journal: Journal
    address: str


@contextmanager
def serving_daemon(config: Path, tmp: Path, first_te_s: float = 60.0) -> Iterator[Running]:
    """``heliostat run``'s daemon and gRPC API (real, on loopback) from ``config`` (its journal
    ``tmp/journal.db``), its loop in a thread; yields once TE has run."""
    from controller.commands.run import start_api_servers
    from controller.config import load_controller_config
    from controller.daemon import Daemon

    daemon = Daemon(load_controller_config(config))
    daemon.start()
    servers = start_api_servers(daemon)
    loop = threading.Thread(target=daemon.run, daemon=True)
    loop.start()
    address = str(servers.grpc_address)
    client = ControllerClient(address, deadline_s=30.0)
    journal = Journal(tmp / "journal.db", check=False)
    try:
        wait_for(lambda: daemon.board.get("te_runs") > 0, first_te_s, what="a first TE run")
        yield Running(daemon, client, journal, address)
    finally:
        journal.close()
        client.close()
        daemon.stop()
        loop.join(timeout=60)
        servers.stop()
        daemon.close()
