"""How quickly the command line answers (``python -m benchmarks.bench_cli``).

Times, as an operator's shell would see them (a fresh process each run, wall clock):
``heliostat --help``, ``--version``, ``plan --help``, ``config check``, and ``ctl status``
(table and JSON) against a real ``heliostat run`` on an emulated fabric-4 served by this
process. Targets (issue 15): ``--help`` <= 0.3 s, ``ctl status`` <= 0.5 s. ``python -c pass``
is the floor any Python command pays.

``--baseline ROOT`` times the same commands with another checkout's ``.venv`` (e.g. the main
branch before a change) in the same run, so the two columns compare on one noisy machine.
Results go to benchmarks/RESULTS_cli.md.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import yaml

from benchmarks.machine import machine_summary
from emulation.fabric import EmulatedFabric
from emulation.service import run as run_fabric

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FABRIC = ROOT / "configs" / "fabric-4.yaml"
TARGETS = {"--help": 0.3, "ctl status": 0.5, "ctl status --format json": 0.5}
log = logging.getLogger(__name__)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_controller(tmp: Path, python: str) -> Iterator[str]:
    """An emulated fabric-4 in this process and ``heliostat run`` on it; yields the API address."""
    fabric = EmulatedFabric.from_config(FABRIC, tick_s=0.5, devices_file=tmp / "devices.yaml")
    address = f"127.0.0.1:{_free_port()}"
    config = tmp / "controller.yaml"
    config.write_text(yaml.safe_dump({
        "fabric": str(FABRIC), "devices": str(tmp / "devices.yaml"), "store": str(tmp / "journal.db"),
        "intervals": {"te_interval": 1.0},
        "listen": {"northbound": address, "metrics": "127.0.0.1:0"},
    }))
    stop = threading.Event()
    with fabric:
        thread = threading.Thread(target=run_fabric, args=(fabric, stop),
                                  kwargs={"speed": 10.0, "duration_s": 0.0}, daemon=True)
        thread.start()
        with open(tmp / "daemon.log", "ab") as out:
            daemon = subprocess.Popen([python, "-m", "controller.cli", "run", "--config", str(config)],
                                      cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            yield address
        finally:
            if daemon.poll() is None:
                daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(timeout=20)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait(timeout=5)
            stop.set()
            thread.join(timeout=5)


def wall_times(argv: Sequence[str], runs: int, cwd: Path) -> list[float]:
    """Seconds each of ``runs`` fresh processes took; a failed run stops the benchmark."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return times


def wait_until_serving(heliostat: str, address: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while subprocess.run([heliostat, "ctl", "--address", address, "status"], capture_output=True).returncode:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the controller at {address} did not answer within {timeout_s:g} s")
        time.sleep(0.5)


def cases(address: str, config: Path) -> list[tuple[str, list[str]]]:
    return [
        ("--help", ["--help"]),
        ("--version", ["--version"]),
        ("plan --help", ["plan", "--help"]),
        ("config check", ["config", "check", str(config)]),
        ("ctl status", ["ctl", "--address", address, "status"]),
        ("ctl status --format json", ["ctl", "--address", address, "status", "--format", "json"]),
    ]


def measure(root: Path, address: str, config: Path, runs: int) -> dict[str, list[float]]:
    heliostat = str(root / ".venv" / "bin" / "heliostat")
    out = {"python -c pass": wall_times([str(root / ".venv" / "bin" / "python"), "-c", "pass"], runs, root)}
    for name, args in cases(address, config):
        try:
            out[name] = wall_times([heliostat, *args], runs, root)
        except RuntimeError as exc:  # a baseline without the command (e.g. no `config check`)
            log.info("%s: %s", name, exc)
    return out


def _commit(root: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def report(results: dict[str, dict[str, list[float]]], runs: int, baseline: Path | None) -> str:
    labels = list(results)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    against = f"; baseline: {baseline} at {_commit(baseline)}" if baseline is not None else ""
    lines = [
        "## CLI start-up (`python -m benchmarks.bench_cli`)",
        "",
        f"Machine: {machine_summary()}; load average {load} (shared)",
        "",
        f"Wall-clock seconds of a fresh process, median and max of {runs} runs; `ctl status` against",
        f"`heliostat run` on an emulated fabric-4 (this machine, loopback). This branch at {_commit(ROOT)}"
        f"{against}.",
        "",
        "| command | " + " | ".join(f"{label} median | {label} max" for label in labels) + " | target |",
        "|---|" + "---:|---:|" * len(labels) + "---:|",
    ]
    names = list(dict.fromkeys(n for r in results.values() for n in r))
    for name in names:
        cells = []
        for label in labels:
            times = results[label].get(name)
            if times is None:
                cells += ["n/a", "n/a"]
            else:
                cells += [f"{statistics.median(times):.3f}", f"{max(times):.3f}"]
        target = "" if name not in TARGETS else f"<= {TARGETS[name]}"
        lines.append(f"| `{name}` | " + " | ".join(cells) + f" | {target} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10, help="processes per command")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another checkout with its own .venv to time the same commands with")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS_cli.md")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    python = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv").exists() else sys.executable
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp_name:
        tmp = Path(tmp_name)
        with running_controller(tmp, python) as address:
            wait_until_serving(str(ROOT / ".venv" / "bin" / "heliostat"), address)
            results = {"this branch": measure(ROOT, address, tmp / "controller.yaml", args.runs)}
            if args.baseline is not None:
                results["baseline"] = measure(args.baseline.resolve(), address, tmp / "controller.yaml",
                                              args.runs)
    text = report(results, args.runs, args.baseline)
    args.out.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    missed = [n for n, t in TARGETS.items() if statistics.median(results["this branch"][n]) > t]
    if missed:
        log.warning("over target: %s", ", ".join(missed))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
