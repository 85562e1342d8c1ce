"""A block switch realised by an OpenFlow 1.3 bridge.

Pipeline (one bridge per block)::

  table 0 (classify)  LLDP probes -> controller; from a host port -> table 1;
                      from an uplink -> table 2; anything else dropped
  table 1 (source)    a local host's address -> its port;
                      10.<d>.0.0/16 -> select group SOURCE_GROUP_BASE + d
  table 2 (transit)   a local host's address -> its port;
                      10.<d>.0.0/16 -> select group TRANSIT_GROUP_BASE + d (direct only)
  table 3 (no route)  10.<d>.0.0/16 -> drop, counted: where a destination goes while its
                      group has no bucket (every member drained or gone)

The per-destination flows keep their match (their byte counts are the per-destination
egress counters); what changes are the groups' buckets (pipeline.plan_groups), and the
flow's action between its group and table 3 when the group empties or fills.

The device semantics (validation, generations, replays, drains, the "installed peer" rule)
are the switch model's, held as ``model`` (an emulated :class:`BlockSwitch`, or a
:class:`SpineDevice` for a spine switch, :mod:`emulation.openflow.spine`): this class is the
model's :class:`~emulation.switch_device.Realiser`, programming the bridge before a change
commits, and reads the counters from the bridge.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from emulation.counters import PORT_COUNTERS
from emulation.errors import ApplyAborted
from emulation.openflow.channel import Channel, SwitchRejected, SwitchUnreachable
from emulation.openflow.clock import WallClock
from emulation.openflow.groups15 import GroupModSocket
from emulation.openflow.pipeline import (
    SOURCE_GROUP_BASE,
    TRANSIT_GROUP_BASE,
    Bucket,
    GroupPlan,
    MonotonicCounter,
    group_id,
    plan_groups,
)
from emulation.openflow.probes import ProbeNeighbours, parse_probe, probe_frame
from emulation.openflow.spec import BlockSpec, block_prefix, uplink_index, uplink_ofport
from emulation.openflow.state_flows import BridgeState, read_state, state_flow_mods
from emulation.switch_device import BlockSwitch, PortRow, SwitchTables, Table

log = logging.getLogger(__name__)

TABLE_CLASSIFY, TABLE_SOURCE, TABLE_TRANSIT, TABLE_NO_ROUTE = 0, 1, 2, 3
PRIORITY_PROBE, PRIORITY_LOCAL, PRIORITY_ROUTE, PRIORITY_MISS = 300, 200, 100, 0
COOKIE_ROUTE = 0x524F555400000000  # "ROUT": low bits are the group id
COOKIE_NO_ROUTE = 0x4E4F525400000000  # "NORT": low bits are the group id
COOKIE_MASK_KIND = 0xFFFFFFFF00000000
ETH_LLDP, ETH_IPV4 = 0x88CC, 0x0800
#: OVS extension: add a group, or modify it if it exists (OFPGC_ADD_OR_MOD).
GROUP_ADD_OR_MOD = 0x8000


def block_switch(
    spec: BlockSpec,
    blocks: tuple[str, ...],
    neighbours: ProbeNeighbours,
    *,
    bucket_scheme: str = "replicated",
    max_group_entries: int = 128,
    table_capacity: int = 4096,
    spines: tuple[str, ...] = (),
    probe_interval_s: float = 0.5,
) -> OpenFlowBlockSwitch:
    """A block switch: the emulated BlockSwitch model (on the wall clock, its peers from the
    neighbour probes) realised by the block's bridge."""
    model = BlockSwitch(spec.name, spec.name, blocks, spec.uplinks, spec.speed_gbps, WallClock(), neighbours,
                        max_group_entries=max_group_entries, table_capacity=table_capacity, spines=spines)
    return OpenFlowBlockSwitch(spec, model, neighbours, bucket_scheme=bucket_scheme,
                               probe_interval_s=probe_interval_s)


class OpenFlowBlockSwitch:
    """A switch model realised by an OpenFlow bridge; serves the packet-switch service as the
    model does (its attributes and verbs are the model's, its counters the bridge's)."""

    def __init__(
        self,
        spec: BlockSpec,
        model: BlockSwitch,
        neighbours: ProbeNeighbours,
        *,
        bucket_scheme: str = "replicated",
        probe_interval_s: float = 0.5,
    ) -> None:
        if model.realiser is not None:
            raise ValueError(f"{model.name}: the switch model is realised elsewhere already")
        self.spec = spec
        self.model = model
        model.realiser = self
        self.neighbours = neighbours
        self.bucket_scheme = bucket_scheme
        spine = model.role == "spine"
        #: the table and group base whose per-destination flows count the egress bytes
        self.egress_table = TABLE_TRANSIT if spine else TABLE_SOURCE
        self.egress_group_base = TRANSIT_GROUP_BASE if spine else SOURCE_GROUP_BASE
        self.channel: Channel | None = None
        self._programmed: dict[int, tuple[Bucket, ...]] = {}
        self._counters = MonotonicCounter()
        self._last_counters: dict[str, object] | None = None
        self._stats_lock = threading.Lock()
        self.groups15 = GroupModSocket(spec.bridge) if spec.bridge else None
        # A change that installs peers waits until the neighbours were probed once after the
        # bridge attached: an agent that just restarted has heard nobody yet, and would
        # install no member at all.
        self._neighbours_known_at = 0.0
        self._probe_settle_s = 2.0 * probe_interval_s

    # -- the model's face -----------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.model.name

    @property
    def block(self) -> str:
        return self.model.block

    @property
    def role(self) -> str:
        return self.model.role

    @property
    def blocks(self) -> tuple[str, ...]:
        return self.model.blocks

    @property
    def nodes(self) -> tuple[str, ...]:
        return self.model.nodes

    @property
    def num_ports(self) -> int:
        return self.model.num_ports

    @property
    def speed_gbps(self) -> float:
        return self.model.speed_gbps

    @property
    def max_group_entries(self) -> int:
        return self.model.max_group_entries

    @property
    def table_capacity(self) -> int:
        return self.model.table_capacity

    @property
    def generation(self) -> int:
        return self.model.generation

    def ports(self) -> list[PortRow]:
        return self.model.ports()

    def groups(self) -> tuple[int, Table, Table, int]:
        return self.model.groups()

    # -- connection ---------------------------------------------------------------------
    def attach(self, channel: Channel) -> None:
        """A (re)connected bridge. A fresh agent adopts the groups the bridge holds (a
        restarted agent must not change forwarding: fail static); otherwise the bridge is
        made to hold this agent's state."""
        with self.model._lock:
            self.channel = channel
            self._neighbours_known_at = time.monotonic() + self._probe_settle_s
            held = self._read_groups(channel)
            fresh_agent = self.generation == 1 and not self._programmed
            if fresh_agent and held:
                state = read_state(channel)
                log.info("%s: adopting %d groups from the bridge (generation %s, %d drained ports)",
                         self.name, len(held), state.generation, sum(state.drained.values()))
                self._adopt(held, state)
                plan = GroupPlan(held)
            else:
                plan = self._plan()
                self._send_groups(channel, plan.groups)
            channel.transact(self._base_flows(channel, plan.groups))
            self._programmed = dict(plan.groups)
            self._record_state()

    def _adopt(self, held: Mapping[int, tuple[Bucket, ...]], state: BridgeState | None = None) -> None:
        """Rebuild the state behind groups found on the bridge: a transit group only holds
        direct uplinks, so it tells each uplink's installed peer; a source group's buckets,
        summed per next hop and reduced, give its weights (exact for the weighted scheme,
        rounded to the hash slots for the replicated one). The state flows, when the bridge
        has them (:mod:`emulation.openflow.state_flows`), give back the generation, the
        drained ports and every port's installed peer (spine and drained ports too)."""
        num_ports, nodes = self.num_ports, self.nodes
        installed = np.full(num_ports, -1, dtype=np.int64)
        for d in range(len(self.blocks)):
            for port, _ in held.get(group_id("transit", d), ()):
                if 0 <= port < num_ports:
                    installed[port] = d
        drained = np.zeros(num_ports, dtype=bool)
        generation = None
        if state is not None:
            for port, node in state.installed.items():
                if 0 <= port < num_ports and node < len(nodes):
                    installed[port] = node
            for port, flag in state.drained.items():
                if 0 <= port < num_ports:
                    drained[port] = flag
            generation = state.generation
        source: dict[str, dict[str, int]] = {}
        for d, dest in enumerate(self.blocks):
            weights: dict[str, int] = {}
            for port, weight in held.get(group_id("source", d), ()):
                if 0 <= port < num_ports and installed[port] >= 0:
                    via = nodes[int(installed[port])]
                    weights[via] = weights.get(via, 0) + weight
            if weights and set(weights) != {dest}:  # direct only is the default
                divisor = math.gcd(*weights.values())
                source[dest] = {via: w // divisor for via, w in weights.items()}
        self.model.adopt(SwitchTables(source, {}, installed, drained), generation)
        self._programmed = dict(held)

    def detach(self, channel: Channel) -> None:
        with self.model._lock:
            if self.channel is channel:
                self.channel = None

    def _read_groups(self, channel: Channel) -> dict[int, tuple[Bucket, ...]]:
        held: dict[int, tuple[Bucket, ...]] = {}
        for desc in channel.multipart(channel.parser.OFPGroupDescStatsRequest(channel.datapath, 0)):
            buckets = []
            for b in desc.buckets:
                ports = [a.port for a in b.actions if hasattr(a, "port")]
                if ports:
                    buckets.append((uplink_index(ports[0]), int(b.weight)))
            held[int(desc.group_id)] = tuple(buckets)
        return held

    # -- changing: the model decides, the bridge is programmed before it commits ------------
    def set_groups(
        self,
        request_id: str,
        expected_generation: int,
        source: Mapping[str, Mapping[str, int]],
        transit: Mapping[str, Mapping[str, int]],
        *,
        replace: bool,
        delete_source: Iterable[str] = (),
        delete_transit: Iterable[str] = (),
    ) -> tuple[int, bool, int]:
        self._await_neighbours()
        return self.model.set_groups(request_id, expected_generation, source, transit, replace=replace,
                                     delete_source=delete_source, delete_transit=delete_transit)

    def drain(self, ports: Iterable[int]) -> list[int]:
        return self.model.drain(ports)

    def undrain(self, ports: Iterable[int]) -> list[int]:
        self._await_neighbours()
        return self.model.undrain(ports)

    def realise(self, tables: SwitchTables) -> None:
        """Program the bridge for ``tables`` (Realiser; ApplyAborted leaves it as it was)."""
        self._push(plan_groups(self.block, self.blocks, self.nodes, tables.source, tables.transit,
                               tables.installed, tables.drained, self.bucket_scheme))

    def committed(self, replayed: bool) -> None:
        """After a change (or a replay): bring the bridge in line if the peers moved since,
        and record the new state on it."""
        self._resync()
        if not replayed:
            self._record_state()

    def _await_neighbours(self) -> None:
        wait = self._neighbours_known_at - time.monotonic()
        if wait > 0:
            time.sleep(wait)

    def _record_state(self) -> None:
        """Write the generation, installed peers and drains on the bridge (see
        :mod:`emulation.openflow.state_flows`); a failure is logged: the bridge then holds
        an older record until the next change."""
        channel = self.channel
        if channel is None:
            return
        tables = self.model.tables()
        try:
            channel.transact(state_flow_mods(channel, self.generation, tables.installed, tables.drained,
                                             uplink_ofport))
        except (SwitchUnreachable, SwitchRejected) as exc:
            log.warning("%s: recording the state on the bridge failed: %s", self.name, exc)

    def _resync(self) -> None:
        """After a commit: make the bridge match the committed state if it drifted. The
        change is already made, so a failure here is logged, not raised; the bridge is
        brought in line again when it reconnects."""
        try:
            self._push(self._plan())
        except ApplyAborted as exc:
            log.warning("%s: bridge not in line with the committed groups: %s", self.name, exc)

    def _plan(self) -> GroupPlan:
        t = self.model.tables()
        return plan_groups(self.block, self.blocks, self.nodes, t.source, t.transit, t.installed, t.drained,
                           self.bucket_scheme)

    def _push(self, plan: GroupPlan) -> None:
        """Make the bridge's groups those of ``plan``; on failure restore the old ones and
        raise ApplyAborted (the device state is then unchanged)."""
        changed = {g: b for g, b in plan.groups.items() if self._programmed.get(g) != b}
        if not changed:
            return
        channel = self.channel
        if channel is None:
            raise ApplyAborted(f"{self.name}: the block bridge is not connected; nothing changed",
                               self.generation)
        emptied = {g: False for g, b in changed.items() if not b and self._programmed.get(g)}
        filled = {g: True for g, b in changed.items() if b and not self._programmed.get(g)}
        try:
            if emptied:  # flows leave the groups that empty before they do
                channel.transact(self._route_flows(channel, emptied))
            self._send_groups(channel, changed)
            if filled:  # and use the groups that fill once they have buckets
                channel.transact(self._route_flows(channel, filled))
        except (SwitchUnreachable, SwitchRejected) as exc:
            try:
                self._send_groups(channel, {g: self._programmed.get(g, ()) for g in changed})
                channel.transact(self._route_flows(
                    channel, {g: bool(self._programmed.get(g)) for g in (*emptied, *filled)}))
            except (SwitchUnreachable, SwitchRejected) as again:
                log.error("%s: restoring the groups failed too: %s", self.name, again)
            raise ApplyAborted(f"{self.name}: programming the bridge failed ({exc}); nothing "
                               "changed", self.generation) from exc
        self._programmed.update(changed)

    def _send_groups(self, channel: Channel, groups: Mapping[int, tuple[Bucket, ...]]) -> None:
        """Add or modify select groups: as OpenFlow 1.5 with the dp_hash selection method
        when the bridge's management socket is there, else as OpenFlow 1.3."""
        if self.groups15 is not None and GroupModSocket.available(self.groups15.bridge):
            self.groups15.set_groups(dict(groups))
        else:
            channel.transact([self._group_mod(channel, g, b, GROUP_ADD_OR_MOD)
                              for g, b in sorted(groups.items())])

    # -- OpenFlow messages --------------------------------------------------------------
    @staticmethod
    def _group_mod(channel: Channel, gid: int, buckets: Iterable[Bucket], command: int) -> Any:
        p, ofp, dp = channel.parser, channel.ofp, channel.datapath
        ofbuckets = [
            p.OFPBucket(weight=weight, watch_port=uplink_ofport(port), watch_group=ofp.OFPG_ANY,
                        actions=[p.OFPActionOutput(uplink_ofport(port), 0)])
            for port, weight in buckets
        ]
        return p.OFPGroupMod(dp, command, ofp.OFPGT_SELECT, gid, ofbuckets)

    def _route_flows(self, channel: Channel, routable: Mapping[int, bool],
                     add: bool = False) -> list[Any]:
        """The per-destination flow of each group id: to the group while it has buckets,
        else to the no-route table. Modified in place, so its counters carry on."""
        p, ofp, dp = channel.parser, channel.ofp, channel.datapath
        mods = []
        for gid, has_buckets in sorted(routable.items()):
            table = TABLE_SOURCE if gid < TRANSIT_GROUP_BASE else TABLE_TRANSIT
            d = gid - (SOURCE_GROUP_BASE if table == TABLE_SOURCE else TRANSIT_GROUP_BASE)
            instructions = ([p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [p.OFPActionGroup(gid)])]
                            if has_buckets else [p.OFPInstructionGotoTable(TABLE_NO_ROUTE)])
            mods.append(p.OFPFlowMod(
                dp, cookie=COOKIE_ROUTE | gid, table_id=table,
                command=ofp.OFPFC_ADD if add else ofp.OFPFC_MODIFY_STRICT, priority=PRIORITY_ROUTE,
                match=p.OFPMatch(eth_type=ETH_IPV4, ipv4_dst=block_prefix(d)),
                instructions=instructions))
        return mods

    def _base_flows(self, channel: Channel, groups: Mapping[int, tuple[Bucket, ...]]) -> list[Any]:
        p, ofp, dp = channel.parser, channel.ofp, channel.datapath

        def flow(table: int, priority: int, match: Any, instructions: list[Any],
                 cookie: int = 0) -> Any:
            return p.OFPFlowMod(dp, cookie=cookie, table_id=table, command=ofp.OFPFC_ADD,
                                priority=priority, match=match, instructions=instructions)

        def apply(*actions: Any) -> list[Any]:
            return [p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, list(actions))]

        flows = [
            flow(TABLE_CLASSIFY, PRIORITY_PROBE, p.OFPMatch(eth_type=ETH_LLDP),
                 apply(p.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER))),
            flow(TABLE_CLASSIFY, PRIORITY_MISS, p.OFPMatch(), []),
        ]
        for host in self.spec.hosts:
            flows.append(flow(TABLE_CLASSIFY, PRIORITY_ROUTE, p.OFPMatch(in_port=host.ofport),
                              [p.OFPInstructionGotoTable(TABLE_SOURCE)]))
        for port in range(self.num_ports):
            flows.append(flow(TABLE_CLASSIFY, PRIORITY_ROUTE,
                              p.OFPMatch(in_port=uplink_ofport(port)),
                              [p.OFPInstructionGotoTable(TABLE_TRANSIT)]))
        for table, name in ((TABLE_SOURCE, "source"), (TABLE_TRANSIT, "transit")):
            flows.append(flow(table, PRIORITY_MISS, p.OFPMatch(), []))
            for host in self.spec.hosts:
                flows.append(flow(table, PRIORITY_LOCAL,
                                  p.OFPMatch(eth_type=ETH_IPV4, ipv4_dst=host.ip),
                                  apply(p.OFPActionOutput(host.ofport, 0))))
            routable = {group_id(name, d): bool(groups.get(group_id(name, d)))
                        for d, dest in enumerate(self.blocks) if dest != self.block}
            flows += self._route_flows(channel, routable, add=True)
        flows.append(flow(TABLE_NO_ROUTE, PRIORITY_MISS, p.OFPMatch(), []))
        for d, dest in enumerate(self.blocks):
            if dest != self.block:
                flows.append(flow(TABLE_NO_ROUTE, PRIORITY_ROUTE,
                                  p.OFPMatch(eth_type=ETH_IPV4, ipv4_dst=block_prefix(d)), [],
                                  cookie=COOKIE_NO_ROUTE | d))
        return flows

    # -- probes -------------------------------------------------------------------------
    def probe_messages(self) -> list[Any]:
        channel = self.channel
        if channel is None:
            return []
        p, ofp, dp = channel.parser, channel.ofp, channel.datapath
        messages = []
        for port in range(self.num_ports):
            mac = f"02:1d:{(channel.dpid >> 8) & 0xFF:02x}:{channel.dpid & 0xFF:02x}:" \
                  f"{(port >> 8) & 0xFF:02x}:{port & 0xFF:02x}"
            messages.append(p.OFPPacketOut(
                dp, buffer_id=ofp.OFP_NO_BUFFER, in_port=ofp.OFPP_CONTROLLER,
                actions=[p.OFPActionOutput(uplink_ofport(port), 0)],
                data=probe_frame(self.block, port, mac)))
        return messages

    def on_packet_in(self, in_port: int, data: bytes) -> None:
        heard = parse_probe(data)
        port = uplink_index(in_port)
        if heard is not None and 0 <= port < self.num_ports:
            self.neighbours.heard(self.block, port, heard[0], heard[1])

    def port_changed(self, ofport: int, state: int) -> None:
        port = uplink_index(ofport)
        if 0 <= port < self.num_ports and state & 1:  # OFPPS_LINK_DOWN
            self.neighbours.link_down(self.block, port)

    # -- counters -----------------------------------------------------------------------
    def counters(self) -> dict[str, object]:
        """Monotonic counters read from the bridge (port, flow and group stats); the last
        reading when the bridge cannot be reached."""
        channel = self.channel
        with self._stats_lock:
            if channel is not None:
                try:
                    self._last_counters = self._read_counters(channel)
                except (SwitchUnreachable, SwitchRejected) as exc:
                    log.warning("%s: counters unavailable: %s", self.name, exc)
            if self._last_counters is None:
                zeros = np.zeros(self.num_ports, dtype=np.uint64)
                self._last_counters = {f: zeros for f in PORT_COUNTERS} | {
                    "time_s": time.time(),
                    "egress": {b: 0 for b in self.blocks if b != self.block},
                    "no_route_drops": 0,
                }
            return dict(self._last_counters)

    def _read_counters(self, channel: Channel) -> dict[str, object]:
        p, ofp, dp = channel.parser, channel.ofp, channel.datapath
        ports = channel.multipart(p.OFPPortStatsRequest(dp, 0, ofp.OFPP_ANY))
        flows = channel.multipart(p.OFPFlowStatsRequest(
            dp, table_id=self.egress_table, cookie=COOKIE_ROUTE, cookie_mask=COOKIE_MASK_KIND))
        dropped = channel.multipart(p.OFPFlowStatsRequest(
            dp, table_id=TABLE_NO_ROUTE, cookie=COOKIE_NO_ROUTE, cookie_mask=COOKIE_MASK_KIND))
        now = time.time()
        c = self._counters
        columns = {f: np.zeros(self.num_ports, dtype=np.uint64) for f in PORT_COUNTERS}
        for stat in ports:
            port = uplink_index(stat.port_no)
            if not 0 <= port < self.num_ports:
                continue
            raw = {"tx_bytes": stat.tx_bytes, "rx_bytes": stat.rx_bytes,
                   "tx_packets": stat.tx_packets, "rx_packets": stat.rx_packets,
                   "tx_drops": stat.tx_dropped, "rx_drops": stat.rx_dropped}
            for f, v in raw.items():
                columns[f][port] = c.update(("port", port, f), int(v))
            # OpenFlow counts dropped packets, not bytes: estimate with the mean size.
            for way in ("tx", "rx"):
                packets = int(columns[f"{way}_packets"][port])
                mean = int(columns[f"{way}_bytes"][port]) // packets if packets else 0
                columns[f"{way}_drop_bytes"][port] = int(columns[f"{way}_drops"][port]) * mean
        egress = {b: c.value(("dest", b)) for b in self.blocks if b != self.block}
        for stat in flows:
            d = (stat.cookie & 0xFFFFFFFF) - self.egress_group_base
            if 0 <= d < len(self.blocks) and self.blocks[d] != self.block:
                egress[self.blocks[d]] = c.update(("dest", self.blocks[d]), int(stat.byte_count))
        for stat in dropped:
            c.update(("no_route", stat.cookie & 0xFFFFFFFF), int(stat.byte_count))
        no_route = sum(c.value(("no_route", d)) for d in range(len(self.blocks)))
        return columns | {"time_s": now, "egress": egress, "no_route_drops": no_route}

