"""EmulatedFabric: a whole fabric of emulated devices behind real gRPC servers, with the
flow-level data plane moving traffic between them on an emulated clock.

    with EmulatedFabric.from_config("configs/fabric-8.yaml") as fabric:
        fabric.set_demand(tm)
        fabric.step(10.0)                 # ten emulated seconds
        fabric.fail_link("b1", 3)         # cut the fibre of block b1's uplink 3
        fabric.fail_ocs("ocs2")           # power loss: its circuits are lost
        fabric.kill_agent("b4")           # b4's gRPC server dies; its state stays
        print(fabric.stats().mlu)

Device names are the fabric's block, OCS and spine switch names. ``devices_file`` (written on start)
lists every endpoint in the format of :mod:`southbound.devices`.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

import numpy as np

from emulation.agent import DeviceAgent
from emulation.clock import EmulatedClock
from emulation.counters import switch_counters
from emulation.dataplane import (
    BLACKHOLE_REASONS,
    FabricIndex,
    ForwardingTables,
    LinkView,
    OpticalState,
    StepResult,
    compute_step,
    link_view,
)
from emulation.ocs_device import DEFAULT_SWITCHING_TIME_S, OcsDevice
from emulation.spine_device import SpineDevice
from emulation.standard.netconf import NetconfServer
from emulation.standard.serving import (
    check_protocols,
    device_config,
    new_password,
    ocs_servers,
    packet_switch_agent,
)
from emulation.switch_device import (
    DEFAULT_MAX_GROUP_ENTRIES,
    DEFAULT_TABLE_CAPACITY,
    BlockSwitch,
    LinkState,
)
from optimizer.config import load_fabric
from optimizer.fabric import Fabric, OcsSides
from optimizer.topology import Circuit, uniform_mesh
from optimizer.traffic import TrafficMatrix
from southbound.devices import DeviceConfig, write_devices_file
from southbound.grpc_native.ocs_client import OcsClient
from southbound.grpc_native.switch_client import SwitchClient
from southbound.options import CallOptions
from southbound.standard.p4rt.prefixes import default_prefixes
from southbound.tls import ServerTlsConfig, TlsConfig
from southbound.types import SwitchCounters

log = logging.getLogger(__name__)

Demand = (
    TrafficMatrix
    | np.ndarray
    | Callable[[float], "TrafficMatrix | np.ndarray"]
    | Sequence[tuple[float, "TrafficMatrix | np.ndarray"]]
)


class FabricError(ValueError):
    """A request the emulated fabric cannot honour (unknown device or port, bad demand)."""


@dataclass(frozen=True)
class LinkStats:
    """One directed block-to-block link (the trunk of circuits from ``src`` to ``dst``)."""

    src: str
    dst: str
    offered_gbps: float  # in the last step
    capacity_gbps: float  # in the last step
    utilization: float  # in the last step
    carried_bytes: float  # cumulative
    dropped_bytes: float  # cumulative
    blackholed_bytes: float  # cumulative


@dataclass(frozen=True)
class FabricStats:
    time_s: float
    mlu: float  # maximum link utilisation in the last step
    peak_mlu: float  # highest step MLU since start
    offered_bytes: float
    delivered_bytes: float
    dropped_bytes: float
    blackholed_bytes: float
    blackholed_by_reason: dict[str, float]
    links: dict[tuple[str, str], LinkStats] = field(default_factory=dict)


class EmulatedFabric:
    """A fabric's OCSes and block switches, served over gRPC, with a flow-level data plane.
    A :class:`~emulation.backend.FabricBackend`."""

    def __init__(
        self,
        fabric: Fabric,
        *,
        circuits: Iterable[Circuit] | None = None,
        switching_time_s: float = DEFAULT_SWITCHING_TIME_S,
        max_group_entries: int = DEFAULT_MAX_GROUP_ENTRIES,
        table_capacity: int = DEFAULT_TABLE_CAPACITY,
        tick_s: float = 1.0,
        devices_file: str | Path | None = None,
        server_tls: ServerTlsConfig | None = None,
        client_tls: TlsConfig | None = None,
        clock: EmulatedClock | None = None,
        protocols: str = "native",
    ) -> None:
        if tick_s <= 0:
            raise FabricError("tick_s must be positive")
        self.fabric = fabric
        self.index = FabricIndex.from_fabric(fabric)
        self.clock = clock or EmulatedClock()
        self.tick_s = tick_s
        self._server_tls = server_tls
        self._client_tls = client_tls
        self._devices_path = Path(devices_file) if devices_file else None
        self._tmpdir: Path | None = None
        self._lock = threading.RLock()
        self._links: LinkView | None = None
        self._links_version = 0  # bumped on every optical change

        self.ocs: dict[str, OcsDevice] = {}
        for i, o in enumerate(fabric.ocs):
            device = OcsDevice(
                o.name,
                o.ports,
                self.clock,
                sides="any" if o.sides is OcsSides.ANY else "split",
                switching_time_s=switching_time_s,
                seed=i,
            )
            device.on_change(self._optics_changed)
            self.ocs[o.name] = device
        initial = tuple(uniform_mesh(fabric) if circuits is None else circuits)
        by_ocs: dict[str, list[tuple[int, int]]] = {}
        for c in initial:
            by_ocs.setdefault(c.ocs, []).append((c.a, c.b))
        for name, pairs in by_ocs.items():
            if name not in self.ocs:
                raise FabricError(f"initial circuit on unknown OCS {name!r}")
            self.ocs[name].preload(pairs)

        self._spine_link_ok = np.ones(self.index.n_ports, dtype=bool)
        self.switches: dict[str, BlockSwitch] = {
            b.name: BlockSwitch(
                b.name,
                b.name,
                fabric.block_names,
                self.index.ports_of(i),
                b.speed_gbps,
                self.clock,
                self,
                spines=self.index.spines,
                max_group_entries=max_group_entries,
                table_capacity=table_capacity,
            )
            for i, b in enumerate(fabric.blocks)
        }
        self.spines: dict[str, SpineDevice] = {
            s.name: SpineDevice(
                s.name,
                fabric.block_names,
                self.index.spine_ports_of(x),
                s.speed_gbps,
                self.clock,
                self,
                max_group_entries=max_group_entries,
                table_capacity=table_capacity,
            )
            for x, s in enumerate(fabric.spine)
        }
        for switch in [*self.switches.values(), *self.spines.values()]:
            switch.install_current_peers()

        # the device protocols (emulation.standard.serving): "native", or "standard" (P4Runtime
        # and gNMI beside the native service on every switch, NETCONF in front of every OCS)
        self.protocols = check_protocols(protocols)
        standard = self.protocols == "standard"
        #: every block's IPv4 prefix, which the P4Runtime switches route (standard protocols)
        self.prefixes: dict[str, str] = default_prefixes(fabric.block_names) if standard else {}
        password = new_password() if standard else ""
        optical = {n: ocs_servers(d, server_tls, protocols=self.protocols, password=password)
                   for n, d in self.ocs.items()}
        self.agents: dict[str, DeviceAgent] = {
            **{n: agent for n, (agent, _) in optical.items()},
            **{n: packet_switch_agent(d, server_tls, protocols=self.protocols, prefixes=self.prefixes)
               for n, d in [*self.switches.items(), *self.spines.items()]},
        }
        #: the OCSes' NETCONF servers (standard protocols)
        self.netconf: dict[str, NetconfServer] = {n: s for n, (_, s) in optical.items() if s is not None}
        self._demand: Demand | None = None
        self._schedule_times: list[float] = []
        n = self.index.n_nodes
        self._totals = dict.fromkeys(("offered", "delivered", "dropped", "blackholed"), 0.0)
        self._by_reason = dict.fromkeys(BLACKHOLE_REASONS, 0.0)
        self._link_carried = np.zeros((n, n))
        self._link_dropped = np.zeros((n, n))
        self._link_blackholed = np.zeros((n, n))
        self._last: StepResult | None = None
        self._peak_mlu = 0.0

    @classmethod
    def from_config(cls, path: str | Path, **kwargs: object) -> EmulatedFabric:
        """Build from a fabric YAML file (``configs/fabric-8.yaml``); kwargs as __init__."""
        return cls(load_fabric(path), **kwargs)  # type: ignore[arg-type]

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        """Start every agent and write the devices file."""
        for agent in self.agents.values():
            agent.start()
        for server in self.netconf.values():
            server.start()
        if self._devices_path is None:
            self._tmpdir = Path(tempfile.mkdtemp(prefix="heliostat-fabric-"))
            self._devices_path = self._tmpdir / "devices.yaml"
        write_devices_file(self._devices_path, self.device_configs())
        log.info("fabric %s: %d devices up, endpoints in %s", self.fabric.name,
                 len(self.agents), self._devices_path)

    def stop(self) -> None:
        for agent in self.agents.values():
            agent.stop(grace_s=0)
        for server in self.netconf.values():
            server.stop()
        for device in self.ocs.values():
            device.close()
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
            self._devices_path = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def devices_file(self) -> Path:
        if self._devices_path is None:
            raise FabricError("the devices file is written by start()")
        return self._devices_path

    def device_configs(self) -> dict[str, DeviceConfig]:
        return {
            name: device_config(agent, self._client_tls, netconf=self.netconf.get(name),
                                prefixes=self.prefixes)
            for name, agent in self.agents.items()
        }

    def ocs_client(self, name: str, options: CallOptions | None = None) -> OcsClient:
        agent = self._agent(name)
        return OcsClient(agent.address, name=name, tls=self._client_tls, options=options)

    def switch_client(self, name: str, options: CallOptions | None = None) -> SwitchClient:
        agent = self._agent(name)
        return SwitchClient(agent.address, name=name, tls=self._client_tls, options=options)

    # -- faults -------------------------------------------------------------------------
    def fail_link(self, device: str, port: int) -> None:
        """Cut the link of block ``device``'s port ``port``: the fibre to its OCS port for an
        uplink, or the static link for a spine port (ports after the uplinks); or the link
        at a spine switch's port."""
        self._set_link(device, port, False)

    def restore_link(self, device: str, port: int) -> None:
        self._set_link(device, port, True)

    def _set_link(self, block: str, port: int, ok: bool) -> None:
        if block in self.spines:  # a spine switch's port: the same link seen from its block
            x = self.index.spines.index(block)
            if not 0 <= port < self.index.spine_ports_of(x):
                raise FabricError(f"spine switch {block!r} has no port {port}")
            far = int(self.index.spine_port_block_port[self.index.spine_port_offset[x] + port])
            b = int(self.index.port_block[far])
            block, port = self.index.blocks[b], far - int(self.index.port_offset[b])
        if not self.fabric.has_block(block):
            raise FabricError(f"no block {block!r} in fabric {self.fabric.name!r}")
        b = self.fabric.block_index(block)
        if 0 <= port < self.index.ports_of(b) and port >= self.index.uplinks[b]:
            with self._lock:
                self._spine_link_ok[self.index.block_port(b, port)] = ok
                self._links = None
                self._links_version += 1
            return
        ocs, ocs_port = self._wired(block, port)
        self.ocs[ocs].set_fibre(ocs_port, ok)

    def fail_ocs(self, name: str) -> int:
        """Power loss: every circuit of OCS ``name`` is lost. Returns how many."""
        return self._ocs(name).lose_power()

    def restore_ocs(self, name: str) -> None:
        """Power back on, with no circuits."""
        self._ocs(name).restore_power()

    def kill_agent(self, device: str) -> None:
        """Stop the device's servers (gRPC, and NETCONF for an OCS under the standard
        protocols); the device keeps forwarding (fail static)."""
        self._agent(device).stop(grace_s=0)
        if device in self.netconf:
            self.netconf[device].stop()

    def restart_agent(self, device: str) -> str:
        """Start the device's servers again, on the same addresses; returns the gRPC one."""
        if device in self.netconf:
            self.netconf[device].start()
        return self._agent(device).start()

    def kill_agents(self) -> None:
        """Stop every device's servers; the devices keep forwarding (fail static)."""
        for name in self.agents:
            self.kill_agent(name)

    def restart_agents(self) -> None:
        """Start every device's servers again, on the same addresses."""
        for name in self.agents:
            self.restart_agent(name)

    def counters(self, device: str) -> SwitchCounters:
        """Block or spine switch ``device``'s counters, as its device API reports them."""
        model = self.switches.get(device) or self.spines.get(device)
        if model is None:
            raise FabricError(f"no block or spine switch {device!r} in fabric {self.fabric.name!r}")
        return switch_counters(model.counters())

    def move_agents(self) -> dict[str, str]:
        """Restart every agent on a new port and rewrite the devices file, as an emulator that
        came back elsewhere would; the devices keep their state. Returns the new addresses."""
        for agent in self.agents.values():
            agent.stop(grace_s=0)
            agent.port = 0
            agent.start()
        for server in self.netconf.values():
            server.stop()
            server.port = 0
            server.start()
        write_devices_file(self.devices_file, self.device_configs())
        return {name: agent.address for name, agent in self.agents.items()}

    # -- traffic ------------------------------------------------------------------------
    def set_demand(self, demand: Demand | None) -> None:
        """Traffic to offer from now on: a TrafficMatrix or [B, B] Gbit/s array, a function
        of emulated time returning one, or a schedule [(start time, matrix), ...]."""
        times: list[float] = []
        if isinstance(demand, Sequence) and not isinstance(demand, np.ndarray):
            times = sorted(float(t) for t, _ in demand)
            if not times:
                raise FabricError("a demand schedule needs at least one (time, matrix) entry")
            demand = sorted(demand, key=lambda item: item[0])
        with self._lock:
            self._demand = demand
            self._schedule_times = times
        self._demand_at(self.clock.now())  # validate now, not mid-step

    def _demand_at(self, now: float) -> np.ndarray:
        n = self.index.n_blocks
        demand = self._demand
        if demand is None:
            return np.zeros((n, n))
        if callable(demand) and not isinstance(demand, TrafficMatrix | np.ndarray):
            demand = demand(now)
        elif isinstance(demand, Sequence) and not isinstance(demand, np.ndarray):
            current = None
            for start, matrix in demand:
                if start <= now + 1e-12:
                    current = matrix
            if current is None:
                return np.zeros((n, n))
            demand = current
        return self._as_array(demand)

    def _as_array(self, demand: TrafficMatrix | np.ndarray) -> np.ndarray:
        n = self.index.n_blocks
        if isinstance(demand, TrafficMatrix):
            if set(demand.blocks) != set(self.index.blocks):
                raise FabricError("the traffic matrix's blocks are not the fabric's")
            order = [demand.blocks.index(b) for b in self.index.blocks]
            return np.asarray(demand.gbps)[np.ix_(order, order)]
        arr = np.asarray(demand, dtype=np.float64)
        if arr.shape != (n, n) or not np.isfinite(arr).all() or (arr < 0).any():
            raise FabricError(f"demand must be a finite non-negative {n}x{n} array")
        return arr

    def step(self, seconds: float) -> StepResult | None:
        """Advance emulated time by ``seconds``, moving traffic in sub-steps of at most
        ``tick_s`` that end where a circuit settles or the demand schedule changes.
        Returns the last sub-step's result."""
        if seconds < 0:
            raise FabricError("cannot step backwards")
        last = None
        remaining = float(seconds)
        while remaining > 1e-12:
            now = self.clock.now()
            dt = min(remaining, self.tick_s)
            boundary = self._next_boundary(now)
            if boundary is not None and boundary - now < dt:
                dt = max(boundary - now, 1e-9)
            last = self._move_traffic(now, dt)
            self.clock.advance(dt)
            remaining -= dt
        return last

    def _next_boundary(self, now: float) -> float | None:
        times = [t for d in self.ocs.values() if (t := d.next_ready_time(now)) is not None]
        times += [t for t in self._schedule_times if t > now + 1e-12]
        return min(times) if times else None

    def _move_traffic(self, now: float, dt: float) -> StepResult:
        links = self.links()
        tables = self._forwarding_tables()
        result = compute_step(self.index, links, tables, self._demand_at(now), dt)
        offsets = self.index.port_offset
        for b, switch in enumerate(self.switches.values()):
            lo, hi = offsets[b], offsets[b + 1]
            switch.add_traffic(
                result.port_tx_bytes[lo:hi],
                result.port_rx_bytes[lo:hi],
                result.port_tx_drop_bytes[lo:hi],
                result.egress_bytes[b],
                float(result.no_route_bytes[b]),
                as_of=now + dt,
            )
        spine_offsets = self.index.spine_port_offset
        for x, spine in enumerate(self.spines.values()):
            lo, hi = spine_offsets[x], spine_offsets[x + 1]
            spine.add_traffic(
                result.spine_port_tx_bytes[lo:hi],
                result.spine_port_rx_bytes[lo:hi],
                result.spine_port_tx_drop_bytes[lo:hi],
                result.spine_egress_bytes[x],
                float(result.spine_no_route_bytes[x]),
                as_of=now + dt,
            )
        with self._lock:
            self._totals["offered"] += result.offered_bytes
            self._totals["delivered"] += result.delivered_bytes
            self._totals["dropped"] += result.dropped_bytes
            self._totals["blackholed"] += result.blackholed_bytes
            for reason, value in result.blackholed_by_reason.items():
                self._by_reason[reason] += value
            self._link_carried += result.link_carried_bytes
            self._link_dropped += result.link_dropped_bytes
            self._link_blackholed += result.link_blackholed_bytes
            self._last = result
            if result.offered_bytes > 0:
                self._peak_mlu = max(self._peak_mlu, result.mlu)
        return result

    def stats(self) -> FabricStats:
        """MLU, drops and blackholed bytes, per link and in total (bytes are cumulative)."""
        with self._lock:
            last = self._last
            blocks = self.index.nodes
            links: dict[tuple[str, str], LinkStats] = {}
            util = last.link_utilization if last else None
            for s, src in enumerate(blocks):
                for d, dst in enumerate(blocks):
                    if s == d:
                        continue
                    capacity = float(last.link_capacity_gbps[s, d]) if last else 0.0
                    touched = self._link_carried[s, d] or self._link_blackholed[s, d]
                    if not capacity and not touched:
                        continue
                    links[(src, dst)] = LinkStats(
                        src=src,
                        dst=dst,
                        offered_gbps=float(last.link_offered_gbps[s, d]) if last else 0.0,
                        capacity_gbps=capacity,
                        utilization=float(util[s, d]) if util is not None else 0.0,
                        carried_bytes=float(self._link_carried[s, d]),
                        dropped_bytes=float(self._link_dropped[s, d]),
                        blackholed_bytes=float(self._link_blackholed[s, d]),
                    )
            return FabricStats(
                time_s=self.clock.now(),
                mlu=last.mlu if last else 0.0,
                peak_mlu=self._peak_mlu,
                offered_bytes=self._totals["offered"],
                delivered_bytes=self._totals["delivered"],
                dropped_bytes=self._totals["dropped"],
                blackholed_bytes=self._totals["blackholed"],
                blackholed_by_reason=dict(self._by_reason),
                links=links,
            )

    # -- state assembly -----------------------------------------------------------------
    def _optics_changed(self, device: OcsDevice) -> None:
        with self._lock:
            self._links = None
            self._links_version += 1

    def links(self) -> LinkView:
        """Live links of every block port now (cached until an OCS changes)."""
        with self._lock:
            if self._links is not None:
                return self._links
            version = self._links_version
        now = self.clock.now()
        peers, switching, fibre = [], [], []
        for i, name in enumerate(self.index.ocs_names):
            peer, sw, ok = self.ocs[name].optical_arrays(now)
            peers.append(np.where(peer >= 0, peer + self.index.ocs_offset[i], -1))
            switching.append(sw)
            fibre.append(ok)
        with self._lock:
            spine_ok = self._spine_link_ok.copy()
        view = link_view(
            self.index,
            OpticalState(np.concatenate(peers), np.concatenate(switching), np.concatenate(fibre)),
            spine_ok,
        )
        with self._lock:
            if self._links_version == version:  # no change while we read: cache it
                self._links = view
        return view

    def link_state(self, block: str) -> LinkState:
        """LinkProvider for the block and spine switches: peers as LLDP would report them."""
        view = self.links()
        if block in self.spines:
            return self._spine_link_state(view, block)
        b = self.fabric.block_index(block)
        lo, hi = self.index.port_offset[b], self.index.port_offset[b + 1]
        far = view.peer_port[lo:hi]
        node = view.peer_node[lo:hi]
        far_block = self.index.port_block[np.maximum(far, 0)]
        peer_port = np.where(far >= 0, far - self.index.port_offset[far_block], -1)
        peer_port = np.where(node >= self.index.n_blocks, self.index.spine_peer_port[lo:hi], peer_port)
        return LinkState(node.astype(np.int64), peer_port.astype(np.int64))

    def _spine_link_state(self, view: LinkView, spine: str) -> LinkState:
        x = self.index.spines.index(spine)
        lo, hi = self.index.spine_port_offset[x], self.index.spine_port_offset[x + 1]
        far = self.index.spine_port_block_port[lo:hi]
        up = view.fault[far] == 0  # PortFault.UP
        block = self.index.port_block[far]
        peer_node = np.where(up, block, -1)
        peer_port = np.where(up, far - self.index.port_offset[block], -1)
        return LinkState(peer_node.astype(np.int64), peer_port.astype(np.int64))

    def _forwarding_tables(self) -> ForwardingTables:
        states = [sw.forwarding_state() for sw in self.switches.values()]
        spines = [sw.forwarding_state() for sw in self.spines.values()]
        return ForwardingTables(
            source=np.stack([s.source for s in states]),
            installed=np.concatenate([s.installed for s in states]),
            drained=np.concatenate([s.drained for s in states]),
            spine_installed=np.concatenate([s.installed for s in spines]) if spines else None,
            spine_drained=np.concatenate([s.drained for s in spines]) if spines else None,
        )

    def _agent(self, name: str) -> DeviceAgent:
        try:
            return self.agents[name]
        except KeyError:
            raise FabricError(f"no device {name!r} in fabric {self.fabric.name!r}") from None

    def _ocs(self, name: str) -> OcsDevice:
        try:
            return self.ocs[name]
        except KeyError:
            raise FabricError(f"no OCS {name!r} in fabric {self.fabric.name!r}") from None

    def _wired(self, block: str, port: int) -> tuple[str, int]:
        if not self.fabric.has_block(block):
            raise FabricError(f"no block {block!r} in fabric {self.fabric.name!r}")
        for w in self.fabric.ports_of(block):
            if w.block_port == port:
                return w.ocs, w.port
        raise FabricError(f"block {block!r} has no wired uplink {port}")

