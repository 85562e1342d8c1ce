"""``heliostat demo --ha``: the demo's demand shift with three replicas, and the leader killed.

Three etcd members and three ``heliostat run`` replicas (real processes, ``ha:`` configs
written to the run directory) control the emulated 8-block fabric of ``heliostat demo``. The
demand shifts to the hotspot pattern; once the leader has journaled a step of the
reconfiguration, it is SIGKILLed. The demo prints how long until another replica led
(``failover: N.N s``), which one, how the reconfiguration ended (finished or rolled back
from the shared journal) and the bytes blackholed meanwhile. Exit status 1 if no replica
took over, the reconfiguration did not end cleanly, or traffic was blackholed.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from controller.commands.emulator import EmulatedFabric, run_fabric
from controller.config import load_controller_config
from controller.ha.etcd_journal import EtcdJournal
from controller.ha.etcd_kv import EtcdKV
from controller.ha.local_etcd import free_ports, local_etcd
from controller.northbound import ControllerClient, ControllerClientError
from controller.reconfig.journal import IntentRecord
from optimizer.traffic import hotspot_matrix, uniform_matrix

REPLICAS = ("replica-a", "replica-b", "replica-c")
LEASE_TTL = 2
PREFIX = "/heliostat/demo-ha"


class Replicas:
    """The replica processes, their configs and northbound addresses."""

    def __init__(
        self, run_dir: Path, config_file: Path, endpoints: list[str], devices: Path | None = None,
        prefix: str = PREFIX,
    ) -> None:
        self.run_dir = run_dir
        self.addresses: dict[str, str] = {}
        self.configs: dict[str, Path] = {}
        self.procs: dict[str, subprocess.Popen] = {}
        base = yaml.safe_load(Path(config_file).read_text())
        fabric = load_controller_config(config_file).fabric
        for name, port in zip(REPLICAS, free_ports(len(REPLICAS)), strict=True):
            self.addresses[name] = f"127.0.0.1:{port}"
            data = {
                **base,
                "fabric": str(fabric),
                "devices": str(devices or run_dir / "devices.yaml"),
                "store": str(run_dir / name / "journal.db"),  # unused: the journal is in etcd
                "listen": {"northbound": self.addresses[name], "metrics": "127.0.0.1:0"},
                "ha": {"etcd": endpoints, "name": name, "lease_ttl": LEASE_TTL, "prefix": prefix},
            }
            self.configs[name] = run_dir / f"{name}.yaml"
            self.configs[name].write_text(yaml.safe_dump(data))

    def start(self, name: str) -> None:
        log = open(self.run_dir / f"{name}.log", "ab")  # noqa: SIM115 - the child keeps it
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "run", "--config", str(self.configs[name])],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        log.close()

    def status(self, name: str) -> dict[str, Any]:
        """The replica's status details (role, leader, epoch, ...), {} while it does not answer."""
        try:
            with ControllerClient(self.addresses[name], deadline_s=1.0) as client:
                status = client.status()
        except ControllerClientError:
            return {}
        return {**status.details, "te_runs": status.te_runs, "phase": status.phase.value}

    def leader(self, among: tuple[str, ...] = REPLICAS) -> str | None:
        return next((n for n in among if self.status(n).get("role") == "leader"), None)

    def kill(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for name, proc in self.procs.items():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill(name)


def _until(condition: Callable[[], Any], timeout: float, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def run_ha_demo(args: argparse.Namespace) -> int:
    if args.verbose == 0:  # the progress lines say what matters (the replicas log to run_dir)
        logging.getLogger().setLevel(logging.ERROR)
    started = time.monotonic()

    def say(text: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {text}", flush=True)

    run_dir = Path(tempfile.mkdtemp(prefix="heliostat-demo-ha-"))
    fabric = EmulatedFabric.from_config(
        load_controller_config(args.config).fabric, tick_s=0.25, devices_file=run_dir / "devices.yaml"
    )
    stop_clock = threading.Event()
    with local_etcd(run_dir, 3) as etcd, fabric:
        say(f"etcd: 3 members on {', '.join(etcd.endpoints)}; emulated fabric {fabric.fabric.name}; "
            f"run dir {run_dir}")
        clock = threading.Thread(target=run_fabric, args=(fabric, stop_clock),
                                 kwargs={"speed": args.speed, "duration_s": 0.0}, daemon=True)
        clock.start()
        fabric.set_demand(uniform_matrix(fabric.fabric, load=0.5))
        replicas = Replicas(run_dir, Path(args.config), etcd.endpoints)
        kv = EtcdKV(etcd.endpoints)
        try:
            return _script(args, say, fabric, replicas, EtcdJournal(kv, PREFIX))
        finally:
            replicas.stop_all()
            kv.close()
            stop_clock.set()
            clock.join(timeout=5)


def _script(
    args: argparse.Namespace, say: Callable[[str], None], fabric: EmulatedFabric, replicas: Replicas,
    journal: EtcdJournal,
) -> int:
    first = REPLICAS[0]
    replicas.start(first)
    if not _until(lambda: replicas.status(first).get("role") == "leader", 60):
        say(f"{first} did not lead in time (see {replicas.run_dir}/{first}.log)")
        return 1
    for name in REPLICAS[1:]:
        replicas.start(name)
    if not _until(lambda: all(replicas.status(n).get("leader") == first for n in REPLICAS[1:]), 60):
        say("the standbys did not join in time")
        return 1
    epoch = replicas.status(first).get("epoch")
    say(f"{first} leads (epoch {epoch}); {', '.join(REPLICAS[1:])} are standbys")
    if not _until(lambda: replicas.status(first).get("te_runs", 0) >= 1, 60):
        say("the leader ran no TE in time")
        return 1
    hotspot = hotspot_matrix(fabric.fabric, seed=args.seed, load=args.load)
    fabric.set_demand(hotspot)
    say(f"demand shift: hotspot (seed {args.seed}), {hotspot.total():.0f} Gbit/s")

    def mid_stage() -> IntentRecord | None:
        journal.reload()
        point = journal.recovery_point()
        return point.intent if point is not None and point.steps else None

    intent = _until(mid_stage, args.timeout)
    if intent is None:
        say("no reconfiguration started in time")
        return 1
    before = fabric.stats()
    step = journal.recovery_point()
    last = step.last_step if step is not None else None
    where = f"stage {last.stage + 1}, step {last.name}" if last is not None else "its first step"
    say(f"reconfiguration {intent.id} in flight ({where}): SIGKILL the leader {first}")
    replicas.kill(first)
    killed = time.monotonic()
    survivors = REPLICAS[1:]
    leader = _until(lambda: replicas.leader(survivors), 3 * LEASE_TTL + 10, interval=0.02)
    failover = time.monotonic() - killed
    if leader is None:
        say("no replica took over")
        return 1
    new_epoch = replicas.status(leader).get("epoch")
    say(f"{leader} leads (epoch {new_epoch}) {failover:.1f} s after the kill; it resumes from the journal")

    def ended() -> IntentRecord | None:
        journal.reload()
        record = journal.intent(intent.id)
        return None if record.in_progress else record

    outcome = _until(ended, args.timeout, interval=0.2)
    after = fabric.stats()
    lost = after.blackholed_bytes - before.blackholed_bytes
    ok = outcome is not None and outcome.state.value in ("done", "rolled_back") and lost == 0
    print()
    print("summary")
    print(f"  failover: {failover:.1f} s (lease_ttl {LEASE_TTL} s)")
    print(f"  new leader: {leader} (epoch {new_epoch}, was {first} with epoch {epoch})")
    state = outcome.state.value if outcome is not None else "still in progress"
    reason = f" ({outcome.reason})" if outcome is not None and outcome.reason else ""
    print(f"  reconfiguration {intent.id}: {state}{reason}")
    print(f"  traffic lost during the change (blackholed): {lost:.0f} bytes")
    print(f"  outcome: {'OK' if ok else 'FAILED'}")
    sys.stdout.flush()
    return 0 if ok else 1
