"""The OpenFlow agent process: os-ken on one OpenFlow port for every bridge of the spec,
and one gRPC endpoint per device (the same servicers as the emulated devices, so the
southbound drivers control these bridges unchanged).

    python -m emulation.openflow.agent --spec spec.json --ready ready.json

``ready.json`` is written once every endpoint listens: ``{"devices": {name: {"kind": ...,
"address": "127.0.0.1:port"}}, "pid": ...}``. The agent runs until SIGTERM/SIGINT; the
bridges keep their flows when it stops (fail_mode secure).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

from emulation.agent import DeviceAgent
from emulation.openflow.app import FabricDevices, HeliostatOpenFlowApp
from emulation.openflow.block import OpenFlowBlockSwitch, block_switch
from emulation.openflow.ocs import OpenFlowOcs
from emulation.openflow.probes import ProbeNeighbours
from emulation.openflow.spec import NETCONF_PASSWORD_ENV, AgentSpec, load_spec
from emulation.openflow.spine import spine_switch
from emulation.standard.netconf import NetconfServer
from emulation.standard.serving import host_key_of, ocs_servers, packet_switch_agent
from southbound.standard.p4rt.prefixes import default_prefixes
from southbound.tls import ServerTlsConfig

log = logging.getLogger(__name__)

PROBE_EXPIRY_INTERVALS = 3.5
OF_LISTEN_TIMEOUT_S = 10.0


def build_devices(spec: AgentSpec) -> FabricDevices:
    # Node indices: the blocks, then the spine switches (a block's next hops); a spine's
    # neighbours are blocks, whose indices are the same.
    neighbours = ProbeNeighbours(spec.block_names + spec.spine_names,
                                 {b.name: b.uplinks for b in (*spec.blocks, *spec.spines)},
                                 expiry_s=PROBE_EXPIRY_INTERVALS * spec.probe_interval_s)
    devices: dict[int, OpenFlowOcs | OpenFlowBlockSwitch] = {}
    for b in spec.blocks:
        devices[b.dpid] = block_switch(
            b, spec.block_names, neighbours, bucket_scheme=spec.bucket_scheme,
            max_group_entries=spec.max_group_entries, table_capacity=spec.table_capacity,
            spines=spec.spine_names, probe_interval_s=spec.probe_interval_s)
    for s in spec.spines:
        devices[s.dpid] = spine_switch(
            s, spec.block_names, neighbours, bucket_scheme=spec.bucket_scheme,
            max_group_entries=spec.max_group_entries, table_capacity=spec.table_capacity,
            probe_interval_s=spec.probe_interval_s)
    for o in spec.ocs:
        devices[o.dpid] = OpenFlowOcs(o, switching_time_s=spec.ocs_switching_time_s)
    return FabricDevices(devices, spec.probe_interval_s)


@dataclass
class Servers:
    """Every device's servers: its gRPC agent and, for an OCS under the standard protocols,
    its NETCONF server."""

    agents: dict[str, DeviceAgent] = field(default_factory=dict)
    netconf: dict[str, NetconfServer] = field(default_factory=dict)

    def set_serving(self, name: str, serving: bool) -> None:
        self.agents[name].set_serving(serving)
        if name in self.netconf:
            self.netconf[name].set_serving(serving)

    def stop(self, grace_s: float) -> None:
        for agent in self.agents.values():
            agent.stop(grace_s)
        for server in self.netconf.values():
            server.stop()

    def ready(self) -> dict[str, dict[str, str]]:
        """What the ready file says of each device: its kind and addresses."""
        out = {}
        for name, agent in self.agents.items():
            entry = {"kind": agent.kind, "address": agent.address}
            if name in self.netconf:
                entry["netconf"] = self.netconf[name].address
                entry["netconf_host_key"] = host_key_of(self.netconf[name])
            out[name] = entry
        return out


def start_grpc(
    devices: FabricDevices,
    ports: dict[str, int] | None = None,
    tls: ServerTlsConfig | None = None,
    *,
    protocols: str = "native",
    prefixes: Mapping[str, str] | None = None,
    netconf_password: str = "",
    netconf_ports: Mapping[str, int] | None = None,
    netconf_host_key: paramiko.PKey | None = None,
) -> Servers:
    """One endpoint per device (on ``ports[name]`` when given, else a free port), over TLS
    when ``tls`` is given, serving the native service and, with ``standard``, P4Runtime and
    gNMI (switches) and NETCONF on a port of its own (OCSes); health says NOT_SERVING (and
    NETCONF refuses) until the device's bridge is attached."""
    servers = Servers()
    for device in devices.by_dpid.values():
        netconf = None
        if isinstance(device, OpenFlowOcs):
            agent, netconf = ocs_servers(device, tls, protocols=protocols, password=netconf_password,
                                         host_key=netconf_host_key)
        else:
            agent = packet_switch_agent(device, tls, protocols=protocols, prefixes=prefixes or {})
        agent.port = (ports or {}).get(device.name, 0)
        agent.set_serving(False)
        agent.start()
        servers.agents[device.name] = agent
        if netconf is not None:
            netconf.port = (netconf_ports or {}).get(device.name, 0)
            netconf.set_serving(False)
            netconf.start()
            servers.netconf[device.name] = netconf
    devices.listeners.append(servers.set_serving)
    return servers


def start_os_ken(spec: AgentSpec, devices: FabricDevices) -> list[object]:
    """Start os-ken (as AppManager.run_apps does, but passing our devices to the app)."""
    from os_ken import cfg
    from os_ken.base.app_manager import AppManager

    cfg.CONF(args=["--ofp-tcp-listen-port", str(spec.of_port),
                   "--ofp-listen-host", spec.of_host], project="os_ken")
    manager = AppManager.get_instance()
    manager.load_apps([HeliostatOpenFlowApp.__module__])
    contexts = manager.create_contexts()
    return manager.instantiate_apps(heliostat_devices=devices, **contexts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="heliostat-openflow-agent", description=__doc__)
    parser.add_argument("--spec", required=True, help="agent spec (JSON)")
    parser.add_argument("--ready", help="write the device endpoints here when listening")
    parser.add_argument("--exit-with-parent", action="store_true",
                        help="stop when the process that started the agent goes away")
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    spec = load_spec(args.spec)
    devices = build_devices(spec)
    parent = os.getppid()
    servers = start_grpc(
        devices, dict(spec.grpc_ports), spec.tls, protocols=spec.protocols,
        prefixes=default_prefixes(spec.block_names),
        netconf_password=os.environ.get(NETCONF_PASSWORD_ENV, ""),
        netconf_ports=dict(spec.netconf_ports),
        netconf_host_key=paramiko.ECDSAKey.from_private_key_file(spec.netconf_host_key_file)
        if spec.netconf_host_key_file else None,
    )
    start_os_ken(spec, devices)
    if not _listening(spec.of_host, spec.of_port, OF_LISTEN_TIMEOUT_S):
        log.error("os-ken is not listening on %s:%d (port taken?)", spec.of_host, spec.of_port)
        servers.stop(0)
        return 1
    if args.ready:
        ready = {"pid": _pid(), "devices": servers.ready()}
        tmp = Path(args.ready + ".tmp")
        tmp.write_text(json.dumps(ready, indent=1))
        tmp.replace(args.ready)
    log.info("agent serving %d devices (%s protocols), OpenFlow on %s:%d", len(servers.agents),
             spec.protocols, spec.of_host, spec.of_port)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(1.0):
        if args.exit_with_parent and os.getppid() != parent:
            log.warning("the parent process %d is gone; stopping", parent)
            break
    servers.stop(0.5)
    log.info("agent stopped")
    return 0


def _listening(host: str, port: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def _pid() -> int:
    return os.getpid()


if __name__ == "__main__":
    code = main()
    # os-ken's server and datapath threads are not daemons and have no stop: end here.
    logging.shutdown()
    sys.stdout.flush()
    os._exit(code)
