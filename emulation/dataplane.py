"""The flow-level data plane: pure numpy, no devices, no I/O.

Given the fabric's wiring, the OCS state (circuits, switching, fibre cuts), the state of
the static spine links, the block switches' forwarding state (WCMP split per destination,
installed trunk members, drains) and a traffic matrix, :func:`compute_step` returns every
directed link's load, what was dropped (load above capacity), what was blackholed (handed
to a port with no circuit, a switching circuit, a cut fibre, a peer that is not the
expected one, or to a next hop with no usable port) and byte counts per port, for ``dt``
seconds.

Model:
- Nodes are the blocks, then the spine switches. A block's ports are its OCS uplinks
  (0 .. uplinks-1), then its spine links (grouped by spine, in fabric order).
- A "link" is the trunk of parallel links from one node to another. Traffic for next hop
  k is spread equally over the block's active members of trunk k (installed for k, not
  drained). A member that is not a live link to k blackholes its share.
- Paths have at most two hops: direct; through one transit block (which always sends
  direct: the transit table's loop-freedom rule); or through a spine switch, which sends
  to the destination over its active members toward it (ECMP): the ports installed for
  that block and not drained, from the spine device's state (:class:`ForwardingTables`
  ``spine_*``; without it, every cabled spine port is a member, as a static spine). A
  member whose link is down blackholes its share; a destination with no member left
  blackholes everything (``drained`` when its members are all drained).
- A spine switch's ports are numbered as :mod:`optimizer.spine` says (in block order).
- Drops: a link whose offered load L exceeds its capacity C drops the fraction 1 - C/L of
  everything crossing it (proportional sharing). Second-hop load is what survives the
  first hop, and a block trunk carries both kinds, so the drop ratios are iterated to
  their fixed point; carried load never exceeds capacity (to 1e-12). Every byte offered
  ends up exactly once as delivered, dropped or blackholed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from optimizer.fabric import Fabric

BYTES_PER_GBIT = 1e9 / 8
_MAX_ITERATIONS = 100
_TOLERANCE = 1e-13


class PortFault(enum.IntEnum):
    """Why a block port has no live link (UP when it has one)."""

    UP = 0
    NO_CIRCUIT = 1  # not cabled, no cross-connect, or the OCS has no power
    SWITCHING = 2  # its cross-connect is still switching
    LINK_DOWN = 3  # a fibre at either end is cut, or the spine link is down
    MISDIRECTED = 4  # live, but to another node than the trunk it is installed in


BLACKHOLE_REASONS = ("no_circuit", "switching", "link_down", "misdirected", "drained", "no_route")


@dataclass(frozen=True)
class FabricIndex:
    """Static numbering of the fabric: nodes, block ports and OCS ports as flat arrays."""

    blocks: tuple[str, ...]
    spines: tuple[str, ...]
    node_speed_gbps: np.ndarray  # [N] blocks then spines
    uplinks: np.ndarray  # [B] OCS-facing ports per block
    port_offset: np.ndarray  # [B+1]: block b's ports are port_offset[b]..port_offset[b+1]-1
    port_block: np.ndarray  # [P] block index of each global block port
    ocs_names: tuple[str, ...]
    ocs_offset: np.ndarray  # [O+1]
    wire_to_block: np.ndarray  # [Q] global block port cabled to each global OCS port, or -1
    wire_to_ocs: np.ndarray  # [P] global OCS port cabled to each block port, or -1
    spine_peer: np.ndarray  # [P] node index of the spine a port is linked to, or -1
    spine_peer_port: np.ndarray  # [P] port number on that spine switch, or -1
    spine_port_offset: np.ndarray  # [S+1]: spine x's ports are spine_port_offset[x]..[x+1]-1
    spine_port_block_port: np.ndarray  # [SP] global block port at the far end of each spine port
    spine_port_spine: np.ndarray  # [SP] spine index (0-based among spines) of each spine port

    @property
    def nodes(self) -> tuple[str, ...]:
        return self.blocks + self.spines

    @property
    def n_blocks(self) -> int:
        return len(self.blocks)

    @property
    def n_nodes(self) -> int:
        return len(self.blocks) + len(self.spines)

    @property
    def n_ports(self) -> int:
        return int(self.port_offset[-1])

    @property
    def n_ocs_ports(self) -> int:
        return int(self.ocs_offset[-1])

    @property
    def n_spine_ports(self) -> int:
        return int(self.spine_port_offset[-1])

    def spine_ports_of(self, spine: int) -> int:
        """Ports of spine switch ``spine`` (0-based among the spines)."""
        return int(self.spine_port_offset[spine + 1] - self.spine_port_offset[spine])

    def block_port(self, block: int, port: int) -> int:
        return int(self.port_offset[block] + port)

    def ocs_port(self, ocs: int, port: int) -> int:
        return int(self.ocs_offset[ocs] + port)

    def ports_of(self, block: int) -> int:
        return int(self.port_offset[block + 1] - self.port_offset[block])

    @classmethod
    def from_fabric(cls, fabric: Fabric) -> FabricIndex:
        blocks = fabric.block_names
        n = len(blocks)
        uplinks = np.array([b.uplinks for b in fabric.blocks], dtype=np.int64)
        spine_links = np.array(
            [[s.links_to(b) for s in fabric.spine] for b in blocks], dtype=np.int64
        ).reshape(n, len(fabric.spine))
        ports = uplinks + spine_links.sum(axis=1)
        port_offset = np.concatenate([[0], np.cumsum(ports)])
        port_block = np.repeat(np.arange(n), ports)
        radix = np.array([o.ports for o in fabric.ocs], dtype=np.int64)
        ocs_offset = np.concatenate([[0], np.cumsum(radix)])
        wire_to_block = np.full(int(ocs_offset[-1]), -1, dtype=np.int64)
        wire_to_ocs = np.full(int(port_offset[-1]), -1, dtype=np.int64)
        for w in fabric.wiring:
            q = int(ocs_offset[fabric.ocs_index(w.ocs)] + w.port)
            g = int(port_offset[fabric.block_index(w.block)] + w.block_port)
            wire_to_block[q] = g
            wire_to_ocs[g] = q
        spine_peer = np.full(int(port_offset[-1]), -1, dtype=np.int64)
        spine_peer_port = np.full(int(port_offset[-1]), -1, dtype=np.int64)
        next_spine_port = [0] * len(fabric.spine)
        for b in range(n):
            g = int(port_offset[b] + uplinks[b])
            for x in range(len(fabric.spine)):
                for _ in range(int(spine_links[b, x])):
                    spine_peer[g] = n + x
                    spine_peer_port[g] = next_spine_port[x]
                    next_spine_port[x] += 1
                    g += 1
        per_spine = np.array(next_spine_port, dtype=np.int64)
        spine_port_offset = np.concatenate([[0], np.cumsum(per_spine)]).astype(np.int64)
        to_spine = np.flatnonzero(spine_peer >= 0)
        spine_of_port = spine_peer[to_spine] - n
        global_spine_port = spine_port_offset[spine_of_port] + spine_peer_port[to_spine]
        spine_port_block_port = np.full(int(spine_port_offset[-1]), -1, dtype=np.int64)
        spine_port_block_port[global_spine_port] = to_spine
        spine_port_spine = np.repeat(np.arange(len(fabric.spine)), per_spine).astype(np.int64)
        speeds = [b.speed_gbps for b in fabric.blocks] + [s.speed_gbps for s in fabric.spine]
        return cls(
            blocks=blocks,
            spines=tuple(s.name for s in fabric.spine),
            node_speed_gbps=np.array(speeds, dtype=np.float64),
            uplinks=uplinks,
            port_offset=port_offset,
            port_block=port_block,
            ocs_names=tuple(o.name for o in fabric.ocs),
            ocs_offset=ocs_offset,
            wire_to_block=wire_to_block,
            wire_to_ocs=wire_to_ocs,
            spine_peer=spine_peer,
            spine_peer_port=spine_peer_port,
            spine_port_offset=spine_port_offset,
            spine_port_block_port=spine_port_block_port,
            spine_port_spine=spine_port_spine,
        )


@dataclass(frozen=True)
class OpticalState:
    """All OCS ports at one instant, numbered globally."""

    peer: np.ndarray  # [Q] global OCS port at the other end of the cross-connect, or -1
    switching: np.ndarray  # [Q] bool
    fibre_ok: np.ndarray  # [Q] bool


@dataclass(frozen=True)
class LinkView:
    """Per block port: the node and block port at the far end of its live link (or -1),
    and why it is not live. Spine links have a peer node but no peer block port."""

    peer_node: np.ndarray  # [P]
    peer_port: np.ndarray  # [P] global block port, or -1
    fault: np.ndarray  # [P] PortFault values


def link_view(
    index: FabricIndex, optical: OpticalState, spine_link_ok: np.ndarray | None = None
) -> LinkView:
    """Live links now; ``spine_link_ok`` [P] says which spine links are up (default all)."""
    q = index.wire_to_ocs
    wired = q >= 0
    qs = np.where(wired, q, 0)
    far_q = np.where(wired, optical.peer[qs], -1)
    has_circuit = far_q >= 0
    far_qs = np.where(has_circuit, far_q, 0)
    far_port = np.where(has_circuit, index.wire_to_block[far_qs], -1)
    has_circuit &= far_port >= 0
    switching = has_circuit & optical.switching[qs]
    fibre_ok = optical.fibre_ok[qs] & optical.fibre_ok[far_qs]
    fault = np.full(index.n_ports, PortFault.NO_CIRCUIT, dtype=np.int8)
    fault[has_circuit & ~fibre_ok] = PortFault.LINK_DOWN
    fault[has_circuit & switching] = PortFault.SWITCHING
    up = has_circuit & ~switching & fibre_ok
    fault[up] = PortFault.UP
    peer_port = np.where(up, far_port, -1)
    peer_node = np.where(up, index.port_block[np.maximum(far_port, 0)], -1)
    spine = index.spine_peer >= 0
    spine_up = spine if spine_link_ok is None else spine & spine_link_ok
    fault[spine] = PortFault.LINK_DOWN
    fault[spine_up] = PortFault.UP
    peer_node = np.where(spine_up, index.spine_peer, peer_node)
    return LinkView(peer_node, peer_port, fault)


@dataclass(frozen=True)
class ForwardingTables:
    """All block switches' forwarding state."""

    source: np.ndarray  # [B, B, N]: (source block, destination, next node) split fractions
    installed: np.ndarray  # [P]: trunk (node index) each port is installed in, or -1
    drained: np.ndarray  # [P] bool
    # The spine switches' state per spine port (None: a static spine, every cabled port a
    # member toward its block and none drained).
    spine_installed: np.ndarray | None = None  # [SP]: destination block each port serves, or -1
    spine_drained: np.ndarray | None = None  # [SP] bool


@dataclass(frozen=True)
class StepResult:
    """What ``dt`` seconds of traffic did. Link matrices are [from node, to node]."""

    dt: float
    offered_bytes: float
    delivered_bytes: float
    dropped_bytes: float
    blackholed_bytes: float
    blackholed_by_reason: dict[str, float]
    link_offered_gbps: np.ndarray  # [N, N] load offered to each trunk's live links
    link_capacity_gbps: np.ndarray  # [N, N]
    link_dropped_bytes: np.ndarray  # [N, N]
    link_blackholed_bytes: np.ndarray  # [N, N]
    link_carried_bytes: np.ndarray  # [N, N]
    port_tx_bytes: np.ndarray  # [P]
    port_rx_bytes: np.ndarray  # [P]
    port_tx_drop_bytes: np.ndarray  # [P]
    egress_bytes: np.ndarray  # [B, B] host-originated bytes per (source, destination)
    no_route_bytes: np.ndarray  # [B]
    spine_port_tx_bytes: np.ndarray  # [SP]
    spine_port_rx_bytes: np.ndarray  # [SP]
    spine_port_tx_drop_bytes: np.ndarray  # [SP]
    spine_egress_bytes: np.ndarray  # [S, B] bytes each spine was handed toward each block
    spine_no_route_bytes: np.ndarray  # [S]

    @property
    def link_utilization(self) -> np.ndarray:
        cap = self.link_capacity_gbps
        return np.where(cap > 0, self.link_offered_gbps / np.where(cap > 0, cap, 1), 0.0)

    @property
    def mlu(self) -> float:
        util = self.link_utilization
        return float(util.max()) if util.size else 0.0


def _drop_ratio(load: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    return np.where(load > capacity, 1.0 - capacity / np.where(load > 0, load, 1), 0.0)


def compute_step(
    index: FabricIndex,
    links: LinkView,
    tables: ForwardingTables,
    demand_gbps: np.ndarray,
    dt: float,
) -> StepResult:
    """Move ``dt`` seconds of ``demand_gbps`` [B, B] through the fabric."""
    n, m = index.n_blocks, index.n_nodes
    demand = np.array(demand_gbps, dtype=np.float64)
    np.fill_diagonal(demand, 0.0)
    offered = demand * (dt * BYTES_PER_GBIT)  # bytes per (s, d)
    rate = 1.0 / (dt * BYTES_PER_GBIT)

    # Trunk membership: active = installed for k and not drained; good = also live to k.
    s_of = index.port_block
    inst = tables.installed
    active = (inst >= 0) & ~tables.drained
    trunk = s_of * m + np.where(inst >= 0, inst, 0)
    good = active & (links.peer_node == inst)
    fault = links.fault.astype(np.int64)
    fault = np.where(active & (fault == PortFault.UP) & ~good, PortFault.MISDIRECTED, fault)
    n_active = np.bincount(trunk[active], minlength=n * m).reshape(n, m).astype(np.float64)
    n_good = np.bincount(trunk[good], minlength=n * m).reshape(n, m).astype(np.float64)
    n_installed = np.bincount(trunk[inst >= 0], minlength=n * m).reshape(n, m)
    safe_active = np.where(n_active > 0, n_active, 1.0)
    live = np.where(n_active > 0, n_good / safe_active, 0.0)  # share not blackholed
    speed = np.minimum(index.node_speed_gbps[:, None], index.node_speed_gbps[None, :])
    capacity = n_good * speed[:n]  # [B, N]

    # First hop: flow (s, d) to next node k. Transit blocks and spines forward to d.
    first = offered[:, :, None] * tables.source  # [s, d, k] bytes
    transit = first[:, :, :n].copy()
    transit[:, np.arange(n), np.arange(n)] = 0.0  # k == d is direct, not transit
    into_first = first.sum(axis=1)  # [B, N] handed to trunk (s, k)
    transit_live = transit * live[:, None, :n]

    def second_hop(ratio: np.ndarray) -> np.ndarray:
        """[B, N] bytes entering trunk (k, d) as transit, given first-hop drop ratios."""
        arriving = (transit_live * (1.0 - ratio[:, :n])[:, None, :]).sum(axis=0).T
        return np.pad(arriving, ((0, 0), (0, m - n)))

    # A block trunk carries first- and second-hop traffic: iterate to the fixed point.
    drop_ratio = np.zeros((n, m))
    for _ in range(_MAX_ITERATIONS):
        load = (into_first + second_hop(drop_ratio)) * live * rate
        updated = _drop_ratio(load, capacity)
        converged = np.abs(updated - drop_ratio).max(initial=0.0) < _TOLERANCE
        drop_ratio = updated
        if converged:
            break
    into_second = second_hop(drop_ratio)
    into = into_first + into_second  # [B, N] bytes handed to each trunk
    on_links = into * live
    dropped = on_links * drop_ratio
    carried = on_links - dropped
    blackholed = into - on_links
    carried_ratio = np.where(into > 0, carried / np.where(into > 0, into, 1), 0.0)
    # Delivered at d by block trunks: direct first-hop traffic and all second-hop traffic.
    first_direct = np.diagonal(first[:, :, :n], axis1=1, axis2=2)  # [s, d]
    delivered = float(((first_direct + into_second[:, :n]) * carried_ratio[:, :n]).sum())

    # Spines: what crossed (s, spine x) for d leaves x over its active members toward d.
    spine_in = np.einsum("sdx,sx->xd", first[:, :, n:], carried_ratio[:, n:])  # [S, B]
    sp = _spine_members(index, links, tables)
    spine_cap = sp.n_good * speed[n:, :n]
    spine_live = np.where(sp.n_active > 0, sp.n_good / np.where(sp.n_active > 0, sp.n_active, 1.0), 0.0)
    spine_on_links = spine_in * spine_live
    spine_load = spine_on_links * rate
    spine_has_link = spine_cap > 0
    spine_ratio = _drop_ratio(spine_load, spine_cap)
    spine_dropped = spine_on_links * spine_ratio
    spine_blackholed = spine_in - spine_on_links
    spine_carried = spine_on_links - spine_dropped
    delivered += float(spine_carried.sum())

    # Blackhole reasons: empty trunks are "drained" (members exist, all drained) or
    # "no_route"; otherwise split each trunk's blackholed bytes over its bad members.
    by_reason = dict.fromkeys(BLACKHOLE_REASONS, 0.0)
    empty = n_active == 0
    had_members = n_installed > 0
    by_reason["drained"] = float(into[empty & had_members].sum())
    by_reason["no_route"] = float(into[empty & ~had_members].sum())
    spine_empty = sp.n_active == 0
    spine_had = sp.n_installed > 0
    by_reason["drained"] += float(spine_in[spine_empty & spine_had].sum())
    by_reason["no_route"] += float(spine_in[spine_empty & ~spine_had].sum())
    spine_share = np.zeros(index.n_spine_ports)
    spine_trunk = sp.spine * n + np.maximum(sp.installed, 0)
    spine_share[sp.active] = (spine_in / np.where(sp.n_active > 0, sp.n_active, 1.0)).ravel()[
        spine_trunk[sp.active]
    ]
    spine_bad = sp.active & ~sp.good
    by_reason["link_down"] += float(spine_share[spine_bad & ~sp.up].sum())
    by_reason["misdirected"] += float(spine_share[spine_bad & sp.up].sum())
    share = np.zeros(index.n_ports)
    share[active] = (into / safe_active).ravel()[trunk[active]]
    bad = active & ~good
    for reason, code in (
        ("no_circuit", PortFault.NO_CIRCUIT),
        ("switching", PortFault.SWITCHING),
        ("link_down", PortFault.LINK_DOWN),
        ("misdirected", PortFault.MISDIRECTED),
    ):
        by_reason[reason] += float(share[bad & (fault == code)].sum())

    # Per-port counters: block ports send their share; the far end receives it.
    ratio_port = drop_ratio.ravel()[trunk]
    tx = np.where(good, share * (1.0 - ratio_port), 0.0)
    tx_drop = np.where(good, share * ratio_port, 0.0) + np.where(bad, share, 0.0)
    rx = np.zeros(index.n_ports)
    to_block = good & (links.peer_port >= 0)
    rx[links.peer_port[to_block]] += tx[to_block]
    # Block -> spine: the spine port at the far end receives what the block port sent.
    spine_rx = np.zeros(index.n_spine_ports)
    to_spine = good & (index.spine_peer >= 0)
    far = index.spine_port_offset[index.spine_peer[to_spine] - n] + index.spine_peer_port[to_spine]
    np.add.at(spine_rx, far, tx[to_spine])
    # Spine -> block: each good member sends its share of what the trunk carries.
    spine_port_ratio = spine_ratio.ravel()[spine_trunk]
    spine_tx = np.where(sp.good, spine_share * (1.0 - spine_port_ratio), 0.0)
    spine_tx_drop = np.where(sp.good, spine_share * spine_port_ratio, 0.0) + np.where(
        spine_bad, spine_share, 0.0
    )
    np.add.at(rx, index.spine_port_block_port[sp.good], spine_tx[sp.good])
    no_route = np.where(empty, into, 0.0).sum(axis=1)

    def square(block_rows: np.ndarray, spine_rows: np.ndarray) -> np.ndarray:
        return np.vstack([block_rows, np.pad(spine_rows, ((0, 0), (0, m - n)))])

    return StepResult(
        dt=dt,
        offered_bytes=float(offered.sum()),
        delivered_bytes=delivered,
        dropped_bytes=float(dropped.sum() + spine_dropped.sum()),
        blackholed_bytes=float(blackholed.sum() + spine_blackholed.sum()),
        blackholed_by_reason=by_reason,
        link_offered_gbps=square(on_links * rate, spine_load * spine_has_link),
        link_capacity_gbps=square(capacity, spine_cap),
        link_dropped_bytes=square(dropped, spine_dropped),
        link_blackholed_bytes=square(blackholed, spine_blackholed),
        link_carried_bytes=square(carried, spine_carried),
        port_tx_bytes=tx,
        port_rx_bytes=rx,
        port_tx_drop_bytes=tx_drop,
        egress_bytes=offered,
        no_route_bytes=no_route,
        spine_port_tx_bytes=spine_tx,
        spine_port_rx_bytes=spine_rx,
        spine_port_tx_drop_bytes=spine_tx_drop,
        spine_egress_bytes=spine_in,
        spine_no_route_bytes=np.where(spine_empty, spine_in, 0.0).sum(axis=1),
    )


@dataclass(frozen=True)
class _SpineMembers:
    """Per spine port: its spine, the block it serves, whether it is active, up and good; and
    per (spine, destination block) the counts of active, good and installed members."""

    spine: np.ndarray  # [SP]
    installed: np.ndarray  # [SP] block index or -1
    active: np.ndarray  # [SP] installed and not drained
    up: np.ndarray  # [SP] the link is up
    good: np.ndarray  # [SP] active, up and leading to the block it is installed for
    n_active: np.ndarray  # [S, B]
    n_good: np.ndarray  # [S, B]
    n_installed: np.ndarray  # [S, B]


def _spine_members(index: FabricIndex, links: LinkView, tables: ForwardingTables) -> _SpineMembers:
    n, s = index.n_blocks, len(index.spines)
    block_port = index.spine_port_block_port
    cabled_to = index.port_block[block_port]
    up = links.fault[block_port] == PortFault.UP
    installed = cabled_to if tables.spine_installed is None else np.asarray(tables.spine_installed)
    drained = np.zeros(index.n_spine_ports, dtype=bool)
    if tables.spine_drained is not None:
        drained = np.asarray(tables.spine_drained)
    active = (installed >= 0) & ~drained
    good = active & up & (cabled_to == installed)
    trunk = index.spine_port_spine * n + np.maximum(installed, 0)

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(trunk[mask], minlength=s * n).reshape(s, n).astype(np.float64)

    return _SpineMembers(
        index.spine_port_spine, installed, active, up, good, count(active), count(good), count(installed >= 0)
    )
