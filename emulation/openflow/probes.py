"""LLDP-like neighbour discovery: probe frames sent out of every uplink (packet-out) and
heard on the far block (packet-in), and the neighbour table they build."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
from os_ken.lib.packet import ethernet, lldp, packet

from emulation.switch_device import LinkState

PROBE_DST = lldp.LLDP_MAC_NEAREST_BRIDGE
PROBE_TTL_S = 2


def probe_frame(block: str, port: int, src_mac: str) -> bytes:
    """An LLDP frame naming this block (chassis id) and uplink index (port id)."""
    pkt = packet.Packet()
    pkt.add_protocol(ethernet.ethernet(dst=PROBE_DST, src=src_mac, ethertype=0x88CC))
    tlvs = (
        lldp.ChassisID(subtype=lldp.ChassisID.SUB_LOCALLY_ASSIGNED, chassis_id=block.encode()),
        lldp.PortID(subtype=lldp.PortID.SUB_LOCALLY_ASSIGNED, port_id=str(port).encode()),
        lldp.TTL(ttl=PROBE_TTL_S),
        lldp.End(),
    )
    pkt.add_protocol(lldp.lldp(tlvs))
    pkt.serialize()
    return bytes(pkt.data)


def parse_probe(data: bytes) -> tuple[str, int] | None:
    """(block, port) of a probe frame, or None when ``data`` is not one."""
    try:
        pkt = packet.Packet(data)
    except Exception:  # os-ken's parser raises assorted errors on junk
        return None
    found = pkt.get_protocol(lldp.lldp)
    if found is None or len(found.tlvs) < 2:
        return None
    chassis, port = found.tlvs[0], found.tlvs[1]
    if not isinstance(chassis, lldp.ChassisID) or not isinstance(port, lldp.PortID):
        return None
    try:
        return chassis.chassis_id.decode(), int(port.port_id.decode())
    except (UnicodeDecodeError, ValueError):
        return None


class ProbeNeighbours:
    """Who each block uplink last heard. A neighbour expires ``expiry_s`` after its last
    probe, or at once when the port's link goes down. Implements the emulated switch's
    LinkProvider, so BlockSwitch logic works unchanged on top of it."""

    def __init__(self, blocks: Sequence[str], uplinks: dict[str, int], expiry_s: float) -> None:
        self._blocks = list(blocks)
        self._index = {b: i for i, b in enumerate(self._blocks)}
        self._expiry_s = expiry_s
        self._lock = threading.Lock()
        self._peer_block = {b: np.full(n, -1, np.int64) for b, n in uplinks.items()}
        self._peer_port = {b: np.full(n, -1, np.int64) for b, n in uplinks.items()}
        self._heard_at = {b: np.zeros(n) for b, n in uplinks.items()}

    def heard(self, block: str, port: int, peer_block: str, peer_port: int,
              now: float | None = None) -> None:
        if block not in self._peer_block or peer_block not in self._index:
            return
        if not 0 <= port < len(self._peer_block[block]):
            return
        with self._lock:
            self._peer_block[block][port] = self._index[peer_block]
            self._peer_port[block][port] = peer_port
            self._heard_at[block][port] = time.monotonic() if now is None else now

    def link_down(self, block: str, port: int) -> None:
        if block in self._peer_block and 0 <= port < len(self._peer_block[block]):
            with self._lock:
                self._peer_block[block][port] = -1
                self._peer_port[block][port] = -1

    def link_state(self, block: str, now: float | None = None) -> LinkState:
        now = time.monotonic() if now is None else now
        with self._lock:
            fresh = (now - self._heard_at[block]) <= self._expiry_s
            peer_block = np.where(fresh, self._peer_block[block], -1)
            peer_port = np.where(fresh & (peer_block >= 0), self._peer_port[block], -1)
        return LinkState(peer_block.astype(np.int64), peer_port.astype(np.int64))
