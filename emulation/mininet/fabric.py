"""The packet-level fabric: the OpenFlow agent process plus a Mininet network built by the
system Python, with a devices file the controller reads.

    with PacketFabric.from_config("configs/fabric-4.yaml", workdir) as fabric:
        fabric.devices_file   # point `heliostat run` (or the drivers) at this
        fabric.host_run("h1x1", ["ping", "-c1", fabric.host_ip("h2x1")])

Two processes are started and recorded by PID: the agent (this venv's Python, os-ken and
gRPC) and the builder (``/usr/bin/python3 netbuilder.py``, Mininet). Teardown asks the
builder to stop its network (Mininet removes its own bridges, links and host shells), then
removes whatever of the recorded bridges, interfaces and host processes is still there,
and ends the agent. Nothing is ever cleaned up by name pattern.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

import paramiko

from emulation.mininet.plan import NetPlan, plan_network
from emulation.openflow.spec import NETCONF_PASSWORD_ENV, uplink_ofport
from emulation.standard.serving import NetconfLogin, check_protocols, device_entry, new_password
from optimizer.config import load_fabric
from optimizer.fabric import Fabric
from southbound.devices import DeviceConfig, write_devices_file
from southbound.grpc_native.ocs_client import OcsClient
from southbound.grpc_native.switch_client import SwitchClient
from southbound.standard.p4rt.prefixes import default_prefixes
from southbound.tls import ServerTlsConfig, TlsConfig
from southbound.types import SwitchCounters

log = logging.getLogger(__name__)

SYSTEM_PYTHON = "/usr/bin/python3"
BUILDER = Path(__file__).with_name("netbuilder.py")
REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 90.0
DEFAULT_SWITCHING_TIME_S = 0.050  # as the flow-level emulated OCS
STOP_TIMEOUT_S = 60.0


class PacketFabricError(RuntimeError):
    """The packet-level fabric could not be started (the message says why)."""


class PacketFabricUnavailable(PacketFabricError):
    """This machine cannot run the packet-level fabric (not root, no OVS or Mininet)."""


def missing_requirements(system_python: str = SYSTEM_PYTHON) -> str | None:
    """Why the packet fabric cannot run here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, veth pairs, Open vSwitch)"
    for tool in ("ovs-vsctl", "ovs-ofctl", "nsenter", "ethtool", "ping"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt install openvswitch-switch mininet iputils-ping ethtool)"
    probe = subprocess.run(["ovs-vsctl", "-t", "2", "show"], capture_output=True, text=True)
    if probe.returncode != 0:
        return ("Open vSwitch is not running (start it: /usr/share/openvswitch/scripts/ovs-ctl "
                "start --system-id=random)")
    imports = subprocess.run([system_python, "-c", "import mininet.net"], capture_output=True)
    if imports.returncode != 0:
        return f"{system_python} cannot import mininet (apt install mininet)"
    return None


def free_tcp_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class PacketFabric:
    """A :class:`~emulation.backend.FabricBackend` of real packets (see the module's text)."""

    def __init__(
        self,
        fabric: Fabric,
        workdir: str | Path,
        *,
        hosts_per_block: int = 2,
        bucket_scheme: str = "replicated",
        probe_interval_s: float = 0.5,
        ocs_switching_time_s: float = DEFAULT_SWITCHING_TIME_S,
        system_python: str = SYSTEM_PYTHON,
        tag: str | None = None,
        server_tls: ServerTlsConfig | None = None,
        client_tls: TlsConfig | None = None,
        protocols: str = "standard",
    ) -> None:
        """``server_tls``: the agent serves the devices' gRPC over (mutual) TLS;
        ``client_tls``: what the devices file tells clients to dial them with; ``protocols``:
        "standard" (P4Runtime and gNMI on every switch, NETCONF on every OCS, beside the native
        service; the devices file routes the controller to them) or "native"."""
        self.fabric = fabric
        self.workdir = Path(workdir)
        self.system_python = system_python
        self.tag = tag or _unused_tag()
        if _tag_in_use(self.tag):
            # Mininet deletes an existing bridge of the same name before creating its own
            raise PacketFabricError(f"tag {self.tag!r} is in use by existing bridges or interfaces")
        self.plan: NetPlan = plan_network(fabric, self.tag, free_tcp_port(), hosts_per_block,
                                          bucket_scheme, probe_interval_s, ocs_switching_time_s)
        agent = dataclasses.replace(self.plan.agent, protocols=check_protocols(protocols))
        if server_tls is not None:
            agent = dataclasses.replace(agent, tls=server_tls)
        self.plan = dataclasses.replace(self.plan, agent=agent)
        self.prefixes = default_prefixes(fabric.block_names) if protocols == "standard" else {}
        self._netconf_password = new_password() if protocols == "standard" else ""
        self._client_tls = client_tls
        self.devices: dict[str, DeviceConfig] = {}
        self.host_pids: dict[str, int] = {}
        self.bridges: list[str] = []
        self.interfaces: list[str] = []
        self._agent: subprocess.Popen[bytes] | None = None
        self._builder: subprocess.Popen[str] | None = None
        self._logs: list[IO[Any]] = []
        self._drivers: dict[str, OcsClient | SwitchClient] = {}

    @classmethod
    def from_config(cls, path: str | Path, workdir: str | Path, **kwargs: Any) -> PacketFabric:
        return cls(load_fabric(path), workdir, **kwargs)

    # -- paths --------------------------------------------------------------------------
    @property
    def devices_file(self) -> Path:
        return self.workdir / "devices.yaml"

    @property
    def agent_pid(self) -> int | None:
        return self._agent.pid if self._agent is not None else None

    # -- life cycle ---------------------------------------------------------------------
    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        problem = missing_requirements(self.system_python)
        if problem:
            raise PacketFabricUnavailable(problem)
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self.start_agent(timeout_s)
            self._start_network(timeout_s)
            self.wait_attached(timeout_s)
        except BaseException:
            self.stop()
            raise
        write_devices_file(self.devices_file, self.devices)
        log.info("packet fabric %s up: %d switches, %d hosts; devices in %s", self.tag,
                 len(self.bridges), len(self.host_pids), self.devices_file)

    def start_agent(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Start (or restart) the OpenFlow agent and wait for its gRPC endpoints."""
        spec_path = self.workdir / "agent-spec.json"
        ready_path = self.workdir / "agent-ready.json"
        spec = self.plan.agent.to_json()
        # a restarted agent listens where the devices file says
        spec["grpc_ports"] = {n: int(d.address.rsplit(":", 1)[1]) for n, d in self.devices.items()}
        netconf = {n: d.endpoint("netconf") for n, d in self.devices.items()}
        spec["netconf_ports"] = {n: int(e.address.rsplit(":", 1)[1]) for n, e in netconf.items() if e}
        if self._netconf_password:  # the OCSes' SSH identity, the same for every agent started
            key_file = self.workdir / "netconf-host-key"
            if not key_file.exists():
                key_file.touch(mode=0o600)
                paramiko.ECDSAKey.generate().write_private_key_file(str(key_file))
            spec["netconf_host_key_file"] = str(key_file)
        spec_path.write_text(json.dumps(spec, indent=1))
        ready_path.unlink(missing_ok=True)
        log_file = open(self.workdir / "agent.log", "ab")  # noqa: SIM115 (closed in stop)
        self._logs.append(log_file)
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), **{NETCONF_PASSWORD_ENV: self._netconf_password})
        self._agent = subprocess.Popen(
            [sys.executable, "-m", "emulation.openflow.agent", "--spec", str(spec_path),
             "--ready", str(ready_path), "--exit-with-parent"],
            cwd=REPO_ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while not ready_path.exists():
            if self._agent.poll() is not None:
                raise PacketFabricError(f"the OpenFlow agent exited ({self._agent.returncode}); "
                                        f"see {self.workdir / 'agent.log'}")
            if time.monotonic() > deadline:
                raise PacketFabricError("the OpenFlow agent did not come up in time")
            time.sleep(0.05)
        ready = json.loads(ready_path.read_text())
        protocols = self.plan.agent.protocols
        self.devices = {
            name: device_entry(
                name, d["kind"], d["address"], self._client_tls, protocols=protocols, prefixes=self.prefixes,
                netconf=NetconfLogin(d["netconf"], self._netconf_password, d.get("netconf_host_key"))
                if "netconf" in d else None)
            for name, d in sorted(ready["devices"].items())
        }

    def _start_network(self, timeout_s: float) -> None:
        log_file = open(self.workdir / "builder.log", "a")  # noqa: SIM115 (closed in stop)
        self._logs.append(log_file)
        self.bridges = sorted(self.plan.switches)  # recorded before anything exists
        self._builder = subprocess.Popen(
            [self.system_python, str(BUILDER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=log_file, text=True, cwd="/")
        if self._builder.stdin is None or self._builder.stdout is None:
            raise PacketFabricError("the Mininet builder has no pipes")
        self._builder.stdin.write(json.dumps(self.plan.builder_json()) + "\n")
        self._builder.stdin.flush()
        line = _read_line(self._builder.stdout, timeout_s)
        if not line:
            raise PacketFabricError(f"the Mininet builder said nothing; see {self.workdir / 'builder.log'}")
        report = json.loads(line)
        if not report.get("ok"):
            raise PacketFabricError(f"the Mininet builder failed: {report.get('error')}")
        self.host_pids = {name: int(h["pid"]) for name, h in report["hosts"].items()}
        self.interfaces = list(report["interfaces"])

    def wait_attached(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Wait until every device's health check says its bridge is attached."""
        deadline = time.monotonic() + timeout_s
        waiting = set(self.devices)
        while waiting:
            for name in sorted(waiting):
                with self.client(name) as client:
                    if client.is_serving(deadline_s=1.0):
                        waiting.discard(name)
            if waiting and time.monotonic() > deadline:
                raise PacketFabricError(f"bridges not attached to the agent: {sorted(waiting)}")
            if waiting:
                time.sleep(0.1)

    def client(self, device: str) -> OcsClient | SwitchClient:
        d = self.devices[device]
        cls = OcsClient if d.kind == "ocs" else SwitchClient
        return cls(d.address, name=d.name, tls=d.tls, options=d.options)

    def driver(self, device: str) -> OcsClient | SwitchClient:
        """A cached driver for ``device`` (closed by stop())."""
        if device not in self._drivers:
            self._drivers[device] = self.client(device)
        return self._drivers[device]

    def kill_agent(self) -> None:
        """SIGKILL the agent (the bridges keep forwarding: fail_mode secure)."""
        if self._agent is not None and self._agent.poll() is None:
            self._agent.kill()
            self._agent.wait(10)

    # -- the FabricBackend verbs ----------------------------------------------------------
    def kill_agents(self) -> None:
        """One agent serves every device: SIGKILL it (forwarding goes on)."""
        self.kill_agent()

    def restart_agents(self) -> None:
        """Start the agent again; it listens where the devices file says."""
        self.start_agent()

    def fail_link(self, device: str, port: int) -> None:
        """Take block or spine switch ``device``'s port ``port`` down (``ip link set down``:
        its far end loses carrier too, as at a fibre cut)."""
        self._set_link(device, port, "down")

    def restore_link(self, device: str, port: int) -> None:
        self._set_link(device, port, "up")

    def _set_link(self, device: str, port: int, state: str) -> None:
        interface = self.interface_of(device, port)
        done = subprocess.run(["ip", "link", "set", "dev", interface, state], capture_output=True, text=True)
        if done.returncode != 0:
            raise PacketFabricError(f"ip link set dev {interface} {state}: {done.stderr.strip()}")

    def interface_of(self, device: str, port: int) -> str:
        """The bridge interface of block or spine switch ``device``'s fabric port ``port``."""
        try:
            bridge = self.plan.switch_of(device)
        except KeyError:
            raise PacketFabricError(f"no device {device!r} in fabric {self.fabric.name!r}") from None
        if self.plan.switches[bridge]["kind"] == "ocs":
            raise PacketFabricError(f"{device} is an OCS: cut the link at its block's port")
        interface = f"{bridge}-eth{uplink_ofport(port)}"
        if interface not in self.interfaces:
            raise PacketFabricError(f"{device} has no fabric port {port} (or the network is not up)")
        return interface

    def counters(self, device: str) -> SwitchCounters:
        """Block or spine switch ``device``'s counters, read through its device API."""
        if device not in self.devices:
            raise PacketFabricError(f"no device {device!r} is up in fabric {self.fabric.name!r}")
        driver = self.driver(device)
        if not isinstance(driver, SwitchClient):
            raise PacketFabricError(f"{device} is an OCS: it has no counters")
        return driver.counters()

    def stop(self) -> None:
        for driver in self._drivers.values():
            driver.close()
        self._drivers.clear()
        try:
            self._stop_network()
        finally:
            self._stop_agent()
            for f in self._logs:
                f.close()
            self._logs.clear()

    def _stop_agent(self) -> None:
        agent, self._agent = self._agent, None
        if agent is None or agent.poll() is not None:
            return
        agent.send_signal(signal.SIGTERM)
        try:
            agent.wait(10)
        except subprocess.TimeoutExpired:
            agent.kill()
            agent.wait(10)

    def _stop_network(self) -> None:
        builder, self._builder = self._builder, None
        if builder is not None:
            try:
                if builder.poll() is None and builder.stdin is not None:
                    builder.stdin.write("stop\n")
                    builder.stdin.close()
                builder.wait(STOP_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired) as exc:
                log.warning("the Mininet builder did not stop cleanly (%s); killing it", exc)
                builder.kill()
                builder.wait(10)
        self._remove_leftovers()

    def _remove_leftovers(self) -> None:
        """Remove what this fabric created and is still there (by recorded name / PID)."""
        for name, pid in self.host_pids.items():
            if _pid_is_host_shell(pid, name):
                os.kill(pid, signal.SIGKILL)
        for bridge in self.bridges:
            if subprocess.run(["ovs-vsctl", "br-exists", bridge], capture_output=True).returncode == 0:
                log.warning("removing leftover bridge %s", bridge)
                subprocess.run(["ovs-vsctl", "--if-exists", "del-br", bridge], capture_output=True)
        for intf in [*self.interfaces, *self.bridges]:
            if Path("/sys/class/net", intf).exists():
                subprocess.run(["ip", "link", "del", intf], capture_output=True)

    # -- hosts --------------------------------------------------------------------------
    def host_name(self, short: str) -> str:
        """'h1x2' -> the tagged Mininet name."""
        return short if short.startswith(self.tag) else self.tag + short

    def host_ip(self, host: str) -> str:
        return str(self.plan.hosts[self.host_name(host)]["ip"])

    def hosts_of(self, block: str) -> list[str]:
        return self.plan.hosts_of(block)

    def host_argv(self, host: str, argv: Sequence[str]) -> list[str]:
        pid = self.host_pids[self.host_name(host)]
        return ["nsenter", f"--net=/proc/{pid}/ns/net", "--", *argv]

    def host_run(self, host: str, argv: Sequence[str],
                 timeout_s: float = 30.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.host_argv(host, argv), capture_output=True, text=True,
                              timeout=timeout_s)

    def host_popen(self, host: str, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[str]:
        return subprocess.Popen(self.host_argv(host, argv), text=True, **kwargs)


def _tag_in_use(tag: str) -> bool:
    names = set(os.listdir("/sys/class/net"))
    if shutil.which("ovs-vsctl"):
        listed = subprocess.run(["ovs-vsctl", "-t", "2", "list-br"], capture_output=True, text=True)
        names.update(listed.stdout.split())
    return any(name.startswith(tag) for name in names)


def _unused_tag() -> str:
    for _ in range(100):
        tag = "p" + secrets.token_hex(2)[:3]
        if not _tag_in_use(tag):
            return tag
    raise PacketFabricError("no unused name tag found")


def _read_line(stream: IO[str], timeout_s: float) -> str:
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(stream, selectors.EVENT_READ)
        if not sel.select(timeout_s):
            return ""
    return stream.readline()


def _pid_is_host_shell(pid: int, host: str) -> bool:
    """True when ``pid`` is still the Mininet shell of ``host`` (bash ... mininet:<host>)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return f"mininet:{host}".encode() in cmdline.split(b"\0")
