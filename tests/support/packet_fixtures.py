"""Shared helpers of the packet-level (Mininet + Open vSwitch + os-ken) tests.

Each test module starts its own fabric from configs/fabric-4.yaml (a few seconds) and
configures it through the southbound drivers, as the controller will: the uniform mesh on
the OCSes, then simple WCMP groups. Teardown stops exactly what the fabric started.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from controller.northbound.client import ControllerClient
from emulation.mininet.bootstrap import bootstrap
from emulation.mininet.fabric import PacketFabric, missing_requirements
from optimizer.topology import Circuit
from southbound.errors import SouthboundError
from southbound.grpc_native.ocs_client import OcsClient
from southbound.grpc_native.switch_client import SwitchClient
from tests.support import ROOT

REPO = ROOT
FABRIC_4 = REPO / "configs" / "fabric-4.yaml"
TRAFFIC = [sys.executable, str(REPO / "emulation" / "mininet" / "traffic.py")]

_MISSING = missing_requirements()
requires_packet_fabric = pytest.mark.skipif(
    _MISSING is not None, reason=f"packet-level fabric unavailable: {_MISSING}")


#: A running packet fabric and the circuits it was bootstrapped with.
Running = tuple[PacketFabric, tuple[Circuit, ...]]


@contextmanager
def running_fabric(workdir: Path, **kwargs: object) -> Iterator[Running]:
    fabric = PacketFabric.from_config(FABRIC_4, workdir, **kwargs)  # type: ignore[arg-type]
    with fabric:
        circuits = bootstrap(fabric.driver, fabric.fabric)
        yield fabric, circuits


def ping_failures(fabric: PacketFabric, count: int = 1) -> list[tuple[str, str]]:
    """(source, destination) host pairs whose ping failed; all pairs, in parallel per source."""
    hosts = sorted(fabric.host_pids)
    script = "; ".join(
        f"ping -n -q -c {count} -i 0.2 -W 2 {fabric.plan.hosts[dst]['ip']} >/dev/null 2>&1 "
        f"|| echo {dst}" for dst in hosts)
    procs = {src: fabric.host_popen(src, ["sh", "-c", script], stdout=subprocess.PIPE)
             for src in hosts}
    failures = []
    for src, proc in procs.items():
        out, _ = proc.communicate(timeout=120)
        failures += [(src, dst) for dst in out.split() if dst != src]
    return failures


class Streams:
    """A steady UDP stream from the first host of every block to the first host of every
    other block; loss() is sent - received per (source block, destination block)."""

    def __init__(self, fabric: PacketFabric, rate_pps: float, duration_s: float) -> None:
        self.fabric = fabric
        self.first = {b: fabric.hosts_of(b)[0] for b in fabric.fabric.block_names}
        self.block_of_ip = {fabric.plan.hosts[h]["ip"]: b for b, h in self.first.items()}
        self.receivers: dict[str, subprocess.Popen[str]] = {}
        self.senders: dict[str, subprocess.Popen[str]] = {}
        try:
            self._start(rate_pps, duration_s)
        except BaseException:
            self.stop()
            raise

    def _start(self, rate_pps: float, duration_s: float) -> None:
        fabric = self.fabric
        for block, host in self.first.items():
            proc = fabric.host_popen(host, [*TRAFFIC, "recv", "--duration", str(duration_s + 30)],
                                     stdout=subprocess.PIPE)
            self.receivers[block] = proc
            proc.stdout.readline()  # {"listening": ...}: bound before the senders start
        for block, host in self.first.items():
            dsts = [a for b, h in self.first.items() if b != block
                    for a in ("--dst", fabric.plan.hosts[h]["ip"])]
            self.senders[block] = fabric.host_popen(
                host, [*TRAFFIC, "stream", *dsts, "--rate", str(rate_pps),
                       "--duration", str(duration_s)], stdout=subprocess.PIPE)

    def loss(self, settle_s: float = 1.0) -> dict[tuple[str, str], tuple[int, int]]:
        """(source, destination) -> (sent, lost); waits for the senders to finish."""
        sent: dict[tuple[str, str], int] = {}
        for block, proc in self.senders.items():
            out, _ = proc.communicate(timeout=120)
            for ip, n in json.loads(out)["sent"].items():
                sent[(block, self.block_of_ip[ip])] = n
        time.sleep(settle_s)
        received: dict[tuple[str, str], int] = {}
        for block, proc in self.receivers.items():
            proc.terminate()
            out, _ = proc.communicate(timeout=30)
            for ip, n in json.loads(out.splitlines()[-1])["received"].items():
                received[(self.block_of_ip[ip], block)] = n
        return {pair: (n, n - received.get(pair, 0)) for pair, n in sent.items()}

    def stop(self) -> None:
        for proc in [*self.senders.values(), *self.receivers.values()]:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


def send_flows(fabric: PacketFabric, src: str, dst: str, flows: int, src_port_base: int,
               rate_pps: float = 3000.0) -> int:
    """Send one packet on each of ``flows`` UDP flows; returns packets sent."""
    result = fabric.host_run(
        src, [*TRAFFIC, "send", "--dst", fabric.host_ip(dst), "--flows", str(flows),
              "--packets", "1", "--rate", str(rate_pps), "--src-port-base", str(src_port_base)],
        timeout_s=120)
    assert result.returncode == 0, result.stderr
    return int(json.loads(result.stdout)["sent"])


class Controlled:
    """A packet fabric configured and driven by ``heliostat run`` (a real process), and a
    northbound client to it. Tests read the devices and talk to the controller; they never
    configure the devices themselves."""

    def __init__(self, fabric: PacketFabric, api: ControllerClient, daemon: subprocess.Popen,
                 log: Path, journal: Path) -> None:
        self.fabric = fabric
        self.api = api
        self.daemon = daemon
        self.log = log
        self.journal = journal

    def switch(self, name: str) -> SwitchClient:
        client = self.fabric.driver(name)
        assert isinstance(client, SwitchClient)
        return client

    def group(self, src: str, dst: str) -> dict[str, int]:
        return dict(self.switch(src).groups().source.get(dst, {}))

    def circuits(self) -> frozenset[Circuit]:
        out: set[Circuit] = set()
        for ocs in self.fabric.fabric.ocs:
            client = self.fabric.driver(ocs.name)
            assert isinstance(client, OcsClient)
            table = client.cross_connects()
            out |= {Circuit(ocs.name, c.a, c.b) for c in table.cross_connects - table.switching}
        return frozenset(out)

    def log_tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


@contextmanager
def controlled_fabric(workdir: Path, fabric_file: Path = FABRIC_4, te: dict[str, object] | None = None,
                      protocols: str = "standard", **config: object) -> Iterator[Controlled]:
    """``fabric_file`` as a packet fabric, configured from scratch by ``heliostat run`` (mesh,
    then TE groups: every block has a group toward every other block); ``te`` is the
    controller config's te: section. Stops the daemon (exit 0 expected) and the fabric."""
    from optimizer.topology import uniform_mesh
    from tests.support.daemon_support import controller_config, free_port, start_daemon_process, stop_process

    log = workdir / "daemon.log"
    c: Controlled | None = None
    with PacketFabric.from_config(fabric_file, workdir / "fabric", protocols=protocols) as fabric:
        address = f"127.0.0.1:{free_port()}"
        settings = {"te_interval": 1.0, "toe_check_interval": 3600.0, **config}
        path = controller_config(workdir, fabric_file, fabric.devices_file, northbound=address,
                                 **settings)  # type: ignore[arg-type]
        if te:
            data = yaml.safe_load(path.read_text())
            data["te"] = dict(te)
            path.write_text(yaml.safe_dump(data))
        daemon = start_daemon_process(path, log)
        try:
            with ControllerClient(address) as api:
                c = Controlled(fabric, api, daemon, log, workdir / "journal.db")
                mesh = frozenset(uniform_mesh(fabric.fabric))
                blocks = fabric.fabric.block_names

                def configured() -> bool:
                    assert daemon.poll() is None, f"the daemon exited early:\n{c.log_tail()}"
                    try:
                        return c.circuits() == mesh and all(
                            set(c.switch(b).groups().source) == set(blocks) - {b} for b in blocks
                        )
                    except SouthboundError:
                        return False

                deadline = time.monotonic() + 60
                while not configured():
                    assert time.monotonic() < deadline, f"not configured in 60 s:\n{c.log_tail()}"
                    time.sleep(0.5)
                c.api.pause_toe()  # ToE runs when a test asks for it
                yield c
        finally:
            code = stop_process(c.daemon if c is not None else daemon)  # a test may restart it
            assert code == 0, log.read_text(errors="replace")[-3000:]
