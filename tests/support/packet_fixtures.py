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

from emulation.mininet.bootstrap import bootstrap
from emulation.mininet.fabric import PacketFabric, missing_requirements
from optimizer.topology import Circuit
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
