"""Local etcd members on free loopback ports: what ``heliostat demo --ha``, the HA benchmark and
the HA tests run on (1 or 3 ``etcd`` processes; Debian's ``etcd-server`` has the binary).

Each member keeps its data under the given folder; :func:`local_etcd` tears the cluster down
(SIGKILL of the processes it started, by pid) on exit. Production replicas use an etcd the
operator runs; this is for trying HA on one machine.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from optimizer.errors import HeliostatError

ETCD_BINARY = "etcd"


def etcd_binary() -> str | None:
    return shutil.which(ETCD_BINARY)


class EtcdMissing(HeliostatError):
    """The ``etcd`` binary is not installed."""


MISSING = "etcd is not installed (Debian etcd-server; .ci/install-etcd.sh installs it)"


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (held open together so none repeats)."""
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


@dataclass
class EtcdMember:
    name: str
    client_port: int
    peer_port: int
    data_dir: Path
    log_path: Path
    process: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class EtcdCluster:
    """Members started by :func:`etcd_cluster`; ``kill``/``start`` one to test quorum."""

    binary: str
    members: list[EtcdMember]
    token: str
    _initial: str = field(init=False, default="")

    def __post_init__(self) -> None:
        self._initial = ",".join(f"{m.name}={m.peer_url}" for m in self.members)

    @property
    def endpoints(self) -> list[str]:
        return [m.endpoint for m in self.members]

    def start(self, member: EtcdMember, state: str = "new") -> None:
        member.data_dir.mkdir(parents=True, exist_ok=True)
        client = f"http://127.0.0.1:{member.client_port}"
        args = [
            self.binary,
            "--name", member.name,
            "--data-dir", str(member.data_dir),
            "--listen-client-urls", client,
            "--advertise-client-urls", client,
            "--listen-peer-urls", member.peer_url,
            "--initial-advertise-peer-urls", member.peer_url,
            "--initial-cluster", self._initial,
            "--initial-cluster-token", self.token,
            "--initial-cluster-state", state,
            "--heartbeat-interval", "50",
            "--election-timeout", "500",
            "--logger", "zap",
            "--log-outputs", str(member.log_path),
        ]
        member.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def kill(self, member: EtcdMember) -> None:
        """SIGKILL one member (its data dir stays: :meth:`start` brings it back)."""
        if member.process is not None and member.process.poll() is None:
            member.process.send_signal(signal.SIGKILL)
            member.process.wait(timeout=10)

    def restart(self, member: EtcdMember) -> None:
        self.start(member, state="existing")

    def healthy(self, member: EtcdMember) -> bool:
        try:
            with urllib.request.urlopen(f"http://{member.endpoint}/health", timeout=1.0) as reply:
                return b'"true"' in reply.read()
        except (OSError, urllib.error.URLError):
            return False

    def wait_healthy(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        running = [m for m in self.members if m.running]
        while time.monotonic() < deadline:
            if all(self.healthy(m) for m in running):
                return
            dead = [m.name for m in self.members if m.process is not None and m.process.poll() is not None]
            if dead and len(dead) == len(self.members):
                break
            time.sleep(0.1)
        logs = "\n".join(m.log_path.read_text()[-2000:] for m in self.members if m.log_path.exists())
        raise EtcdMissing(f"etcd cluster not healthy after {timeout:g} s:\n{logs}")

    def stop(self) -> None:
        for member in self.members:
            self.kill(member)


@contextmanager
def local_etcd(tmp: Path, size: int = 1) -> Iterator[EtcdCluster]:
    """``size`` (1 or 3) etcd members on free loopback ports, data under ``tmp``; torn down on exit."""
    binary = etcd_binary()
    if binary is None:
        raise EtcdMissing(MISSING)
    if size not in (1, 3):
        raise ValueError(f"local_etcd: size must be 1 or 3, not {size}")
    ports = free_ports(2 * size)
    members = [
        EtcdMember(
            f"m{i}", ports[2 * i], ports[2 * i + 1], tmp / f"etcd-m{i}", tmp / f"etcd-m{i}.log"
        )
        for i in range(size)
    ]
    cluster = EtcdCluster(binary, members, token=f"heliostat-test-{ports[0]}")
    try:
        for member in members:
            cluster.start(member)
        cluster.wait_healthy()
        yield cluster
    finally:
        cluster.stop()
