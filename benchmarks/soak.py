"""A chaos soak: ``heliostat run`` on the flow-level emulated fabric, faults injected at random.

The emulated fabric runs in this process with its clock ``--speed`` times real time; the
daemon is a real ``heliostat run`` process with short intervals (``te_interval`` 0.5 s, i.e.
``0.5 * speed`` emulated seconds). Every ``--every`` seconds one fault or operator action is
injected, in a seeded random order (each kind once first):

- ``ocs_power``: an OCS loses power (all its circuits), restored a few seconds later;
- ``agent_kill``: a device's gRPC agent is killed (the device keeps forwarding), restarted later;
- ``fibre_cut``: one uplink fibre is cut, repaired later;
- ``daemon_kill``: the daemon is SIGKILLed and started again on the same journal;
- ``demand_shift``: a new traffic matrix (kind, seed and load drawn at random);
- ``drain``: ``ctl drain`` of a block (its traffic evacuated first), ``ctl undrain`` a few
  seconds later;
- ``burst``: 20 ``ctl pause``/``resume`` calls 0.05 s apart;
- ``toe``: ``ctl toe``, so reconfigurations run (and meet the faults) however the policy judges.

Invariants, checked throughout (each breach is recorded with the time and what happened):

- nothing is blackholed outside a fault: the data plane's blackholed bytes grow only while an
  optical fault (power loss, fibre cut) is in force or within ``--grace`` seconds after it;
- after every daemon restart the journal's circuits equal the devices' (once no
  reconfiguration is in flight and every OCS has power);
- no reconfiguration stays in flight longer than ``--stuck-after`` seconds;
- every acknowledged request is carried out: an acknowledged drain/undrain shows in
  ``status.maintenance`` within ``--grace`` seconds, and the last acknowledged pause/resume
  is the state at the end;
- no traceback in the daemon's log, and the daemon process never exits by itself.

``python -m benchmarks.soak --minutes 60`` writes ``benchmarks/RESULTS_soak.md``;
``tests/controller/hardening/test_soak.py`` runs a short one in the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controller.northbound import ControllerClient, ControllerClientError
from controller.northbound.api import MaintenanceKind
from controller.reconfig.journal import Journal
from emulation.fabric import EmulatedFabric
from emulation.service import run as run_fabric
from optimizer.topology import Circuit
from optimizer.traffic import TrafficMatrix, generate_matrix

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
KINDS = ("ocs_power", "agent_kill", "fibre_cut", "daemon_kill", "demand_shift", "drain", "burst", "toe")

log = logging.getLogger("soak")


@dataclass
class SoakSettings:
    fabric: Path = ROOT / "configs" / "fabric-8.yaml"
    minutes: float = 10.0
    seed: int = 1
    speed: float = 20.0  # emulated seconds per real second
    every: float = 4.0  # real seconds between injected events
    grace: float = 15.0  # real seconds a fault may take to be routed around / a request to show
    stuck_after: float = 180.0
    te_interval: float = 0.5


@dataclass
class SoakReport:
    settings: SoakSettings
    injected: Counter = field(default_factory=Counter)
    survived: Counter = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    blackholed_in_faults: float = 0.0
    blackholed_outside: float = 0.0
    reconfigurations: Counter = field(default_factory=Counter)
    te_runs: int = 0
    daemon_starts: int = 0
    wall_s: float = 0.0
    emulated_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.violations


class Soak:
    def __init__(self, settings: SoakSettings, workdir: Path) -> None:
        self.s = settings
        self.work = workdir
        self.rng = random.Random(settings.seed)
        self.report = SoakReport(settings)
        self.fabric = EmulatedFabric.from_config(
            settings.fabric, tick_s=0.5, devices_file=workdir / "devices.yaml"
        )
        self.proc: subprocess.Popen | None = None
        self.address = f"127.0.0.1:{_free_port()}"
        self.log_path = workdir / "daemon.log"
        self.config_path = workdir / "controller.yaml"
        self._optical_until = 0.0  # real time until which blackholing is expected
        self._pending: list[tuple[float, Any]] = []  # (when, undo) of faults in force
        self._drained: str | None = None
        self._expected_maintenance: set[str] = set()
        self._expected_paused: bool | None = None
        self._blackholed = 0.0
        self._by_reason: dict[str, float] = {}
        self._matrix: TrafficMatrix | None = None
        self._block_out: str | None = None
        self._maintenance_due: list[tuple[float, set[str]]] = []
        self._started = time.monotonic()

    # -- the run ------------------------------------------------------------------------------

    def run(self) -> SoakReport:
        stop = threading.Event()
        with self.fabric:
            self._matrix = generate_matrix(self.fabric.fabric, "gravity", seed=1, load=0.35)
            self._apply_demand()
            stepper = threading.Thread(target=run_fabric, args=(self.fabric, stop),
                                       kwargs={"speed": self.s.speed, "duration_s": 0.0}, daemon=True)
            stepper.start()
            started = self._started = time.monotonic()
            emulated_start = self.fabric.clock.now()
            try:
                self._write_config()
                self._start_daemon()
                self._wait_healthy(60)
                self._wait_te(60)  # before the first TE push the blocks have no groups: not a fault
                self._baseline()
                order = list(KINDS)
                self.rng.shuffle(order)
                end = started + self.s.minutes * 60
                next_event = time.monotonic()
                while time.monotonic() < end:
                    now = time.monotonic()
                    self._undo_due(now)
                    self._check(now)
                    if now >= next_event:
                        kind = order.pop(0) if order else self.rng.choice(KINDS)
                        self._inject(kind)
                        next_event = now + self.s.every
                    time.sleep(0.2)
                self._settle()
            finally:
                with contextlib.suppress(ControllerClientError):
                    self.report.te_runs = self._status().te_runs
                self._stop_daemon()
                stop.set()
                stepper.join(timeout=5)
                self.report.wall_s = time.monotonic() - started
                self.report.emulated_s = self.fabric.clock.now() - emulated_start
        self._read_journal()
        return self.report

    # -- faults -------------------------------------------------------------------------------

    def _inject(self, kind: str) -> None:
        busy = {p[1] for p in self._pending}
        if kind == "agent_kill" and all(("agent", d) in busy for d in self.fabric.agents):
            return
        if kind == "drain" and self._drained is not None:
            return  # one block at a time; its undrain is pending
        self.report.injected[kind] += 1
        log.info("inject %s", kind)
        now = time.monotonic()
        hold = self.rng.uniform(2.0, 6.0)
        fabric = self.fabric
        if kind == "ocs_power":
            busy = {p[1] for p in self._pending}
            free = [o for o in sorted(fabric.ocs) if ("ocs", o) not in busy] or sorted(fabric.ocs)
            ocs = self.rng.choice(free)
            fabric.fail_ocs(ocs)
            self._optical(now + hold)
            self._pending.append((now + hold, ("ocs", ocs)))
        elif kind == "agent_kill":
            busy = {p[1] for p in self._pending}
            device = self.rng.choice([d for d in sorted(fabric.agents) if ("agent", d) not in busy])
            fabric.kill_agent(device)
            self._pending.append((now + hold, ("agent", device)))
        elif kind == "fibre_cut":
            block = self.rng.choice(fabric.fabric.blocks)
            port = self.rng.randrange(block.uplinks)
            fabric.fail_link(block.name, port)
            self._optical(now + hold)
            self._pending.append((now + hold, ("fibre", (block.name, port))))
        elif kind == "daemon_kill":
            self._kill_daemon()
            time.sleep(0.5)
            self._start_daemon()
            self._wait_healthy(60)
            self._recovery_check()
        elif kind == "demand_shift":
            kind_of = self.rng.choice(["gravity", "hotspot", "ring", "uniform"])
            matrix = generate_matrix(fabric.fabric, kind_of, seed=self.rng.randrange(1000),
                                     load=self.rng.uniform(0.2, 0.45))
            self._matrix = matrix
            self._apply_demand()
        elif kind == "drain":
            if self._drain_or_undrain():
                self._pending.append((now + 2 * hold, ("undrain", self._drained)))
            else:
                self.report.injected[kind] -= 1  # refused, not acknowledged: nothing injected
        elif kind == "burst":
            self._burst()
        elif kind == "toe":
            with self._client() as client, contextlib.suppress(Exception):  # refused while one runs
                client.trigger_toe()
        if kind in ("demand_shift", "burst", "daemon_kill", "toe"):
            self.report.survived[kind] += 1

    def _optical(self, until: float) -> None:
        self._optical_until = max(self._optical_until, until + self.s.grace)

    def _undo_due(self, now: float) -> None:
        for when, (what, target) in list(self._pending):
            if when > now:
                continue
            self._pending.remove((when, (what, target)))
            if what == "ocs":
                self.fabric.restore_ocs(target)
                self._optical(now)
                self.report.survived["ocs_power"] += 1
            elif what == "agent":
                self.fabric.restart_agent(target)
                self.report.survived["agent_kill"] += 1
            elif what == "fibre":
                self.fabric.restore_link(*target)
                self._optical(now)
                self.report.survived["fibre_cut"] += 1
            elif what == "undrain":
                if self._drain_or_undrain():
                    self.report.survived["drain"] += 1
                else:  # refused (e.g. the daemon is starting): try again shortly
                    self._pending.append((now + 1.0, ("undrain", target)))

    # -- operator actions --------------------------------------------------------------------

    def _drain_or_undrain(self) -> bool:
        """Drain a random block, or undrain the drained one; True when acknowledged."""
        with self._client() as client:
            try:
                if self._drained is None:
                    block = self.rng.choice(self.fabric.fabric.block_names)
                    client.set_maintenance(MaintenanceKind.BLOCK, block, True)
                    self._drained = block
                else:
                    client.set_maintenance(MaintenanceKind.BLOCK, self._drained, False)
                    self._drained = None
            except ControllerClientError as exc:
                log.info("drain not acknowledged (%s)", exc)  # refused: nothing is expected of it
                return False
            except Exception as exc:  # an ApiError refusal is fine too: it was not acknowledged
                log.info("drain refused: %s", exc)
                return False
        if self._drained is not None:  # its hosts are evacuated: its traffic stops with the drain
            self._block_out = self._drained
            self._apply_demand()
        self._expected_maintenance = {f"block:{self._drained}"} if self._drained else set()
        self._maintenance_due.append((time.monotonic() + self.s.grace, set(self._expected_maintenance)))
        return True

    def _burst(self) -> None:
        with self._client() as client:
            for _ in range(20):
                paused = self.rng.random() < 0.5
                try:
                    client.pause_toe() if paused else client.resume_toe()
                    self._expected_paused = paused
                except Exception as exc:  # not acknowledged: nothing expected
                    log.info("burst call refused: %s", exc)
                time.sleep(0.05)

    # -- invariants ---------------------------------------------------------------------------

    def _apply_demand(self) -> None:
        """The current matrix, without the traffic of a block drained for maintenance."""
        matrix = self._matrix
        if self._block_out is not None and matrix is not None:
            i = matrix.blocks.index(self._block_out)
            gbps = matrix.gbps.copy()
            gbps[i, :] = 0.0
            gbps[:, i] = 0.0
            matrix = TrafficMatrix(matrix.blocks, gbps)
        self.fabric.set_demand(matrix)

    def _baseline(self) -> None:
        stats = self.fabric.stats()
        self._blackholed = stats.blackholed_bytes
        self._by_reason = dict(stats.blackholed_by_reason)

    def _check(self, now: float) -> None:
        stats = self.fabric.stats()
        grew = stats.blackholed_bytes - self._blackholed
        reasons = {k: v - self._by_reason.get(k, 0.0) for k, v in stats.blackholed_by_reason.items()}
        self._baseline()
        if grew > 0:
            if now <= self._optical_until:
                self.report.blackholed_in_faults += grew
            else:
                self.report.blackholed_outside += grew
                why = ", ".join(f"{k} {v:.2e}" for k, v in sorted(reasons.items()) if v > 0)
                self._violation(f"{grew:.3e} bytes blackholed with no optical fault in force ({why})")
        if self.proc is not None and self.proc.poll() is not None:
            self._violation(f"the daemon exited by itself with {self.proc.returncode}")
            self._start_daemon()
        for due, expected in list(self._maintenance_due):
            if now < due:
                continue
            self._maintenance_due.remove((due, expected))
            try:
                shown = set(self._status().maintenance)
            except ControllerClientError as exc:
                self._violation(f"status unreachable to check an acknowledged drain: {exc}")
                continue
            if expected != self._expected_maintenance:
                continue  # a later request superseded it
            if shown == expected == set() and self._block_out is not None:
                self._block_out = None  # back in service: its traffic returns
                self._apply_demand()
            if shown != expected:
                self._violation(f"acknowledged maintenance {sorted(expected)} not in force: {sorted(shown)}")
        with Journal(self.work / "journal.db", check=False) as journal:
            intent = journal.in_flight_intent()
        if intent is not None and time.time() - intent.created > self.s.stuck_after:
            self._violation(f"reconfiguration {intent.id} in flight for {time.time() - intent.created:.0f} s")

    def _recovery_check(self) -> None:
        """After a restart: once settled, the journal's circuits are the devices'."""
        deadline = time.monotonic() + self.s.stuck_after
        while time.monotonic() < deadline:
            self._undo_due(time.monotonic())
            unpowered = any(not d.powered for d in self.fabric.ocs.values())
            if unpowered or any(p[1][0] == "ocs" for p in self._pending):
                time.sleep(0.5)  # an OCS without power: its circuits are missing on purpose
                continue
            with Journal(self.work / "journal.db", check=False) as journal:
                if journal.in_flight_intent() is not None:
                    time.sleep(0.5)
                    continue
                record = journal.current_topology()
            journaled = frozenset(record.circuits) if record is not None else frozenset()
            if journaled == self._device_circuits():
                return
            time.sleep(0.5)
        self._violation("after a restart the journal's circuits never matched the devices'")

    def _settle(self) -> None:
        """End: undo every fault, let the daemon settle, check what was acknowledged."""
        for when, item in list(self._pending):
            self._pending.remove((when, item))
            self._pending.append((0.0, item))
        self._undo_due(time.monotonic())
        quiet = time.monotonic() + self.s.grace
        while time.monotonic() < quiet:
            self._check(time.monotonic())
            time.sleep(0.2)
        self._recovery_check()
        self._check(time.monotonic())
        status = self._status()
        if self._expected_paused is not None and status.toe_paused != self._expected_paused:
            self._violation(f"the last acknowledged pause/resume ({self._expected_paused}) is not in force")
        if set(status.maintenance) != self._expected_maintenance:
            self._violation(f"maintenance at the end {status.maintenance} != acknowledged "
                            f"{sorted(self._expected_maintenance)}")
        text = self.log_path.read_text(errors="replace")
        if "Traceback" in text:
            self._violation(f"{text.count('Traceback')} tracebacks in the daemon log")

    def _violation(self, what: str) -> None:
        log.error("VIOLATION: %s", what)
        self.report.violations.append(f"t+{time.monotonic() - self._started:.0f} s: {what}")

    # -- the daemon ---------------------------------------------------------------------------

    def _write_config(self) -> None:
        te = self.s.te_interval
        data = {
            "fabric": str(Path(self.s.fabric).resolve()),
            "devices": str(self.fabric.devices_file),
            "store": str(self.work / "journal.db"),
            "intervals": {"te_interval": te, "prediction_window": 120, "toe_check_interval": 5,
                          "stale_after": 10},
            "thresholds": {"reconfig_gain": 0.05, "min_reconfig_interval": 20},
            "timeouts": {"drain": 20, "verify_drain": 20, "apply_ocs": 20, "qualify": 20, "undrain": 20,
                         "toe_solve": 10},
            "listen": {"northbound": self.address, "metrics": "127.0.0.1:0"},
        }
        self.config_path.write_text(yaml.safe_dump(data))

    def _start_daemon(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "controller.cli", "run", "--config", str(self.config_path)],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )
        self.report.daemon_starts += 1

    def _kill_daemon(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def _stop_daemon(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._kill_daemon()

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self._status().phase.value != "starting":
                    return
            except ControllerClientError:
                pass
            time.sleep(0.2)
        self._violation(f"the daemon did not come up within {timeout:g} s")

    def _wait_te(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(ControllerClientError):
                if self._status().te_runs > 0:
                    time.sleep(2 * self.s.te_interval)
                    return
            time.sleep(0.2)
        self._violation(f"no TE within {timeout:g} s of the start")

    def _client(self) -> ControllerClient:
        return ControllerClient(self.address, deadline_s=5.0)

    def _status(self):
        with self._client() as client:
            return client.status()

    def _device_circuits(self) -> frozenset[Circuit]:
        return frozenset(Circuit(n, c.a, c.b) for n, d in self.fabric.ocs.items() for c in d.established())

    def _read_journal(self) -> None:
        with Journal(self.work / "journal.db", check=False) as journal:
            for intent in journal.reconfigurations(10_000):
                self.report.reconfigurations[intent.state.value] += 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def soak(settings: SoakSettings) -> SoakReport:
    with tempfile.TemporaryDirectory(prefix="heliostat-soak-") as tmp:
        report = Soak(settings, Path(tmp)).run()
        if report.violations:
            keep = Path(tempfile.mkdtemp(prefix="heliostat-soak-failed-"))
            log.error("daemon log kept in %s", keep)
            (keep / "daemon.log").write_bytes((Path(tmp) / "daemon.log").read_bytes())
    return report


def report_markdown(report: SoakReport, machine: str) -> str:
    s = report.settings
    lines = [
        "## Soak: faults and operator actions on a running daemon",
        "",
        f"`python -m benchmarks.soak --minutes {s.minutes:g} --seed {s.seed}` on {machine}.",
        f"Fabric {Path(s.fabric).name}; emulated clock {s.speed:g}x real time; te_interval "
        f"{s.te_interval:g} s; one event every {s.every:g} s. {report.wall_s / 60:.1f} min real, "
        f"{report.emulated_s / 3600:.1f} h emulated; {report.daemon_starts} daemon starts, "
        f"{report.te_runs} TE runs since the last start; reconfigurations: "
        + (", ".join(f"{k} {v}" for k, v in sorted(report.reconfigurations.items())) or "none") + ".",
        "",
        "| event | injected | survived |",
        "| --- | --- | --- |",
        *(f"| {k} | {report.injected[k]} | {report.survived[k]} |" for k in KINDS),
        "",
        f"Blackholed during optical faults (expected until TE reroutes): "
        f"{report.blackholed_in_faults:.3e} bytes; outside them: {report.blackholed_outside:.3e} bytes.",
        "",
        f"Invariant violations: {len(report.violations)}" + ("" if report.ok else ":"),
        *(f"- {v}" for v in report.violations[:50]),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from benchmarks.machine import machine_summary

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fabric", type=Path, default=SoakSettings.fabric)
    p.add_argument("--minutes", type=float, default=SoakSettings.minutes)
    p.add_argument("--seed", type=int, default=SoakSettings.seed)
    p.add_argument("--speed", type=float, default=SoakSettings.speed)
    p.add_argument("--every", type=float, default=SoakSettings.every)
    p.add_argument("--no-results", action="store_true", help="do not write RESULTS_soak.md")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    settings = SoakSettings(fabric=args.fabric, minutes=args.minutes, seed=args.seed, speed=args.speed,
                            every=args.every)
    report = soak(settings)
    text = report_markdown(report, machine_summary())
    print(text)
    if not args.no_results:
        (HERE / "RESULTS_soak.md").write_text(text, encoding="utf-8")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
