"""The flow-level data plane: pure numpy, no devices, no I/O.

Given the fabric's wiring, the OCS state (circuits, switching, fibre cuts), the block
switches' forwarding state (WCMP split per destination, installed trunk members, drains)
and a traffic matrix, :func:`compute_step` returns every directed block-to-block link's
load, what was dropped (load above capacity), what was blackholed (handed to a port with
no circuit, a switching circuit, a cut fibre, a peer that is not the expected block, or to
a next hop with no usable port) and the byte counts per port, for ``dt`` seconds.

Model:
- A "link" is the trunk of parallel circuits from block s to block k. Traffic for next hop
  k is spread equally over s's active trunk members (installed for k, not drained). A
  member that is not a live circuit to k blackholes its share.
- Paths have at most two hops: source -> direct, or source -> transit -> destination;
  transit traffic always goes direct (the transit table's loop-freedom rule).
- Drops: a trunk whose offered load L exceeds its capacity C drops the fraction 1 - C/L of
  everything crossing it (proportional sharing). Second-hop load is what survives the
  first hop, and a trunk carries both kinds, so the drop ratios are iterated to their
  fixed point; carried load never exceeds capacity (to 1e-12). Every byte offered ends up
  exactly once as delivered, dropped or blackholed.
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
    LINK_DOWN = 3  # a fibre at either end is cut
    MISDIRECTED = 4  # live, but to another block than the trunk it is installed in


BLACKHOLE_REASONS = ("no_circuit", "switching", "link_down", "misdirected", "drained", "no_route")


@dataclass(frozen=True)
class FabricIndex:
    """Static numbering of the fabric: blocks, block ports and OCS ports as flat arrays."""

    blocks: tuple[str, ...]
    speed_gbps: np.ndarray  # [B]
    port_offset: np.ndarray  # [B+1]: block b's ports are port_offset[b]..port_offset[b+1]-1
    port_block: np.ndarray  # [P] block index of each global block port
    ocs_names: tuple[str, ...]
    ocs_offset: np.ndarray  # [O+1]
    wire_to_block: np.ndarray  # [Q] global block port cabled to each global OCS port, or -1
    wire_to_ocs: np.ndarray  # [P] global OCS port cabled to each block port, or -1

    @property
    def n_blocks(self) -> int:
        return len(self.blocks)

    @property
    def n_ports(self) -> int:
        return int(self.port_offset[-1])

    @property
    def n_ocs_ports(self) -> int:
        return int(self.ocs_offset[-1])

    def block_port(self, block: int, port: int) -> int:
        return int(self.port_offset[block] + port)

    def ocs_port(self, ocs: int, port: int) -> int:
        return int(self.ocs_offset[ocs] + port)

    @classmethod
    def from_fabric(cls, fabric: Fabric) -> FabricIndex:
        blocks = fabric.block_names
        uplinks = np.array([b.uplinks for b in fabric.blocks], dtype=np.int64)
        port_offset = np.concatenate([[0], np.cumsum(uplinks)])
        port_block = np.repeat(np.arange(len(blocks)), uplinks)
        radix = np.array([o.ports for o in fabric.ocs], dtype=np.int64)
        ocs_offset = np.concatenate([[0], np.cumsum(radix)])
        wire_to_block = np.full(int(ocs_offset[-1]), -1, dtype=np.int64)
        wire_to_ocs = np.full(int(port_offset[-1]), -1, dtype=np.int64)
        for w in fabric.wiring:
            q = int(ocs_offset[fabric.ocs_index(w.ocs)] + w.port)
            g = int(port_offset[fabric.block_index(w.block)] + w.block_port)
            wire_to_block[q] = g
            wire_to_ocs[g] = q
        return cls(
            blocks=blocks,
            speed_gbps=np.array([b.speed_gbps for b in fabric.blocks], dtype=np.float64),
            port_offset=port_offset,
            port_block=port_block,
            ocs_names=tuple(o.name for o in fabric.ocs),
            ocs_offset=ocs_offset,
            wire_to_block=wire_to_block,
            wire_to_ocs=wire_to_ocs,
        )


@dataclass(frozen=True)
class OpticalState:
    """All OCS ports at one instant, numbered globally."""

    peer: np.ndarray  # [Q] global OCS port at the other end of the cross-connect, or -1
    switching: np.ndarray  # [Q] bool
    fibre_ok: np.ndarray  # [Q] bool


@dataclass(frozen=True)
class LinkView:
    """Per block port: the live far-end block port (or -1) and why it is not live."""

    peer_port: np.ndarray  # [P]
    fault: np.ndarray  # [P] PortFault values


def link_view(index: FabricIndex, optical: OpticalState) -> LinkView:
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
    return LinkView(np.where(up, far_port, -1), fault)


@dataclass(frozen=True)
class ForwardingTables:
    """All block switches' forwarding state."""

    source: np.ndarray  # [B, B, B]: (source block, destination, next hop) split fractions
    installed: np.ndarray  # [P]: trunk (block index) each port is installed in, or -1
    drained: np.ndarray  # [P] bool


@dataclass(frozen=True)
class StepResult:
    """What ``dt`` seconds of traffic did. Matrices are [source block, next block]."""

    dt: float
    offered_bytes: float
    delivered_bytes: float
    dropped_bytes: float
    blackholed_bytes: float
    blackholed_by_reason: dict[str, float]
    link_offered_gbps: np.ndarray  # [B, B] load offered to each trunk's live links
    link_capacity_gbps: np.ndarray  # [B, B]
    link_dropped_bytes: np.ndarray  # [B, B]
    link_blackholed_bytes: np.ndarray  # [B, B]
    link_carried_bytes: np.ndarray  # [B, B]
    port_tx_bytes: np.ndarray  # [P]
    port_rx_bytes: np.ndarray  # [P]
    port_tx_drop_bytes: np.ndarray  # [P]
    egress_bytes: np.ndarray  # [B, B] host-originated bytes per (source, destination)
    no_route_bytes: np.ndarray  # [B]

    @property
    def link_utilization(self) -> np.ndarray:
        cap = self.link_capacity_gbps
        with np.errstate(divide="ignore", invalid="ignore"):
            util = np.where(cap > 0, self.link_offered_gbps / np.where(cap > 0, cap, 1), 0.0)
        return util

    @property
    def mlu(self) -> float:
        util = self.link_utilization
        return float(util.max()) if util.size else 0.0


def compute_step(
    index: FabricIndex,
    links: LinkView,
    tables: ForwardingTables,
    demand_gbps: np.ndarray,
    dt: float,
) -> StepResult:
    """Move ``dt`` seconds of ``demand_gbps`` [B, B] through the fabric."""
    n = index.n_blocks
    demand = np.array(demand_gbps, dtype=np.float64)
    np.fill_diagonal(demand, 0.0)
    offered = demand * (dt * BYTES_PER_GBIT)  # bytes per (s, d)

    # Trunk membership: active = installed for k and not drained.
    s_of = index.port_block
    inst = tables.installed
    active = (inst >= 0) & ~tables.drained
    trunk = s_of * n + np.where(inst >= 0, inst, 0)
    far_block = np.where(links.peer_port >= 0, s_of[np.maximum(links.peer_port, 0)], -1)
    good = active & (far_block == inst)
    fault = links.fault.astype(np.int64)
    fault = np.where(active & (fault == PortFault.UP) & ~good, PortFault.MISDIRECTED, fault)
    n_active = np.bincount(trunk[active], minlength=n * n).reshape(n, n).astype(np.float64)
    n_good = np.bincount(trunk[good], minlength=n * n).reshape(n, n).astype(np.float64)
    n_installed = np.bincount(trunk[inst >= 0], minlength=n * n).reshape(n, n)
    safe_active = np.where(n_active > 0, n_active, 1.0)
    live = np.where(n_active > 0, n_good / safe_active, 0.0)  # fraction not blackholed

    speed = np.minimum(index.speed_gbps[:, None], index.speed_gbps[None, :])
    capacity = n_good * speed

    # First hop: flow (s, d) via k. Second hop: the transit share arrives at k, goes to d.
    first = offered[:, :, None] * tables.source  # [s, d, k] bytes
    transit = first.copy()
    transit[:, np.arange(n), np.arange(n)] = 0.0  # k == d is direct, not transit
    into_first = first.sum(axis=1)  # [s, k] handed to trunk (s, k)
    transit_live = transit * live[:, None, :]  # [s, d, k] that got onto first-hop links
    rate = 1.0 / (dt * BYTES_PER_GBIT)

    def second_hop(ratio: np.ndarray) -> np.ndarray:
        """[k, d] bytes arriving at transit block k for d, given first-hop drop ratios."""
        return (transit_live * (1.0 - ratio)[:, None, :]).sum(axis=0).T

    def drop_ratio_for(load: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(load > capacity, 1.0 - capacity / np.where(load > 0, load, 1), 0.0)

    # Drop ratios and second-hop arrivals depend on each other (a trunk carries first- and
    # second-hop traffic): iterate to the fixed point.
    drop_ratio = np.zeros((n, n))
    for _ in range(_MAX_ITERATIONS):
        load = (into_first + second_hop(drop_ratio)) * live * rate
        updated = drop_ratio_for(load)
        converged = np.abs(updated - drop_ratio).max(initial=0.0) < _TOLERANCE
        drop_ratio = updated
        if converged:
            break
    into_second = second_hop(drop_ratio)
    link_offered = (into_first + into_second) * live * rate  # Gbps offered to live links
    into = into_first + into_second  # bytes handed to each trunk
    on_links = into * live
    dropped = on_links * drop_ratio
    carried = on_links - dropped
    blackholed = into - on_links
    # Bytes reaching their destination: what trunks (x, d) carried for destination d.
    # Trunk (s, k) carries first-hop traffic for destinations d (direct when k == d) and
    # second-hop traffic (always for d == k); only k == d traffic is delivered at k.
    first_direct = np.diagonal(first, axis1=1, axis2=2)  # [s, d] direct share
    carried_ratio = np.where(into > 0, carried / np.where(into > 0, into, 1), 0.0)
    delivered = float(((first_direct + into_second) * carried_ratio).sum())

    # Blackhole reasons: empty trunks are "drained" (members exist, all drained) or
    # "no_route"; otherwise split each trunk's blackholed bytes over its bad members.
    by_reason = dict.fromkeys(BLACKHOLE_REASONS, 0.0)
    empty = n_active == 0
    had_members = n_installed > 0
    by_reason["drained"] = float(into[empty & had_members].sum())
    by_reason["no_route"] = float(into[empty & ~had_members].sum())
    share = np.zeros(index.n_ports)
    share[active] = (into / safe_active).ravel()[trunk[active]]
    bad = active & ~good
    for reason, code in (
        ("no_circuit", PortFault.NO_CIRCUIT),
        ("switching", PortFault.SWITCHING),
        ("link_down", PortFault.LINK_DOWN),
        ("misdirected", PortFault.MISDIRECTED),
    ):
        by_reason[reason] = float(share[bad & (fault == code)].sum())

    # Per-port counters.
    ratio_port = drop_ratio.ravel()[trunk]
    tx = np.where(good, share * (1.0 - ratio_port), 0.0)
    tx_drop = np.where(good, share * ratio_port, 0.0) + np.where(bad, share, 0.0)
    rx = np.zeros(index.n_ports)
    rx[links.peer_port[good]] += tx[good]
    no_route = np.where(empty, into, 0.0).sum(axis=1)

    return StepResult(
        dt=dt,
        offered_bytes=float(offered.sum()),
        delivered_bytes=delivered,
        dropped_bytes=float(dropped.sum()),
        blackholed_bytes=float(blackholed.sum()),
        blackholed_by_reason=by_reason,
        link_offered_gbps=link_offered,
        link_capacity_gbps=capacity,
        link_dropped_bytes=dropped,
        link_blackholed_bytes=blackholed,
        link_carried_bytes=carried,
        port_tx_bytes=tx,
        port_rx_bytes=rx,
        port_tx_drop_bytes=tx_drop,
        egress_bytes=offered,
        no_route_bytes=no_route,
    )
