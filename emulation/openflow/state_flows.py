"""Device state kept on the bridge itself, so that a restarted agent recovers it.

A bridge keeps its flows and groups when the agent dies (fail_mode secure), but the groups
alone do not tell everything the device served: the generation (what compare-and-set
requests are checked against), which ports are drained (a drained port is simply absent
from the groups) and the peer each port was installed for (a block's ports toward a spine
switch are in no transit group). So every change also writes *state flows* in a table no
packet ever reaches (nothing jumps to it):

- one generation flow: cookie ``COOKIE_GENERATION | generation``;
- for a packet switch, one flow per port matching ``in_port``: cookie ``COOKIE_PORT`` with
  the installed node index + 1 (0: none) in bits 16-30 and the drain flag in bit 31.

A fresh agent reads them back when the bridge attaches (:func:`read_state`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from emulation.openflow.channel import Channel

TABLE_STATE = 9  # past every table of the block and OCS pipelines; nothing goes there
COOKIE_GENERATION = 0x47454E0000000000  # "GEN"
COOKIE_PORT = 0x504F525400000000  # "PORT"
COOKIE_KIND = 0xFFFFFFFF00000000
PRIORITY_STATE = 1
_DRAINED = 1 << 31
_INSTALLED_SHIFT = 16
_INSTALLED_MASK = 0x7FFF


@dataclass(frozen=True)
class BridgeState:
    generation: int | None  # None: never written
    installed: dict[int, int]  # port -> node index, or -1
    drained: dict[int, bool]  # port -> drained


def state_flow_mods(
    channel: Channel,
    generation: int,
    installed: np.ndarray | None = None,
    drained: np.ndarray | None = None,
    ofport: Any = None,
) -> list[Any]:
    """Flow mods that record ``generation`` and, for a packet switch, each port's installed
    peer and drain state (``ofport(port)`` is the port's OpenFlow number). An add replaces
    the flow of the same match, so the record is always the latest."""
    p, ofp, dp = channel.parser, channel.ofp, channel.datapath

    def record(cookie: int, match: Any) -> Any:
        return p.OFPFlowMod(dp, cookie=cookie, table_id=TABLE_STATE, command=ofp.OFPFC_ADD,
                            priority=PRIORITY_STATE, match=match, instructions=[])

    mods = [record(COOKIE_GENERATION | (generation & 0xFFFFFFFF), p.OFPMatch(eth_type=0x88B5))]
    if installed is not None and drained is not None:
        for port in range(len(installed)):
            bits = ((int(installed[port]) + 1) & _INSTALLED_MASK) << _INSTALLED_SHIFT
            if drained[port]:
                bits |= _DRAINED
            mods.append(record(COOKIE_PORT | bits | (port & 0xFFFF), p.OFPMatch(in_port=ofport(port))))
    return mods


def read_state(channel: Channel) -> BridgeState:
    """What the state flows on the bridge say (empty when there are none)."""
    p = channel.parser
    request = p.OFPFlowStatsRequest(channel.datapath, table_id=TABLE_STATE)
    generation: int | None = None
    installed: dict[int, int] = {}
    drained: dict[int, bool] = {}
    for stat in channel.multipart(request):
        kind, low = stat.cookie & COOKIE_KIND, stat.cookie & 0xFFFFFFFF
        if kind == COOKIE_GENERATION:
            generation = int(low)
        elif kind == COOKIE_PORT:
            port = low & 0xFFFF
            installed[port] = ((low >> _INSTALLED_SHIFT) & _INSTALLED_MASK) - 1
            drained[port] = bool(low & _DRAINED)
    return BridgeState(generation, installed, drained)
