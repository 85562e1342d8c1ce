"""An OCS realised by an OpenFlow 1.3 bridge.

A cross-connect a-b is the flow pair ``in_port=a -> output:b`` and ``in_port=b ->
output:a`` in table 0; the table-miss entry drops, so nothing else is forwarded. Switching
is: delete the old pairs, add the new ones, barrier. With a switching time (the mirrors
moving), the new pairs are added only once it has passed: until then the circuits are
SWITCHING, dark and carry nothing, then they come up with a circuit_up event, as on the
emulated OCS. Light levels are those of the
emulated OCS (fixed per-port losses), with the fibre "lit" when the OpenFlow port's link is
up (port description and port-status events).

Validation, generations, compare-and-set, request-id replays and events are the emulated
OcsDevice's, held as ``model``: this class is the model's
:class:`~emulation.ocs_device.CircuitRealiser`, programming the bridge before a change
commits and lighting new circuits once their mirrors have moved.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterable
from typing import Any

from emulation.errors import ApplyAborted
from emulation.ocs_device import OcsDevice
from emulation.openflow.channel import Channel, SwitchRejected, SwitchUnreachable
from emulation.openflow.clock import WallClock
from emulation.openflow.spec import OcsSpec, ocs_ofport, ocs_port_index
from emulation.openflow.state_flows import read_state, state_flow_mods
from southbound.types import CrossConnect, OcsEvent

log = logging.getLogger(__name__)

CROSS_CONNECT_PRIORITY = 100
COOKIE_OCS = 0x4F43530000000000  # "OCS"


#: a settle timer fires this much after the switching time, so the circuit is surely due
SETTLE_MARGIN_S = 0.002


class OpenFlowOcs:
    """An OCS model realised by an OpenFlow bridge; serves the OCS service as the model does."""

    def __init__(self, spec: OcsSpec, clock: WallClock | None = None,
                 switching_time_s: float = 0.0) -> None:
        if switching_time_s < 0:
            raise ValueError("the switching time cannot be negative")
        # Dark until the switch tells us its ports are up.
        self.model = OcsDevice(spec.name, spec.ports, clock or WallClock(), sides=spec.sides,
                               switching_time_s=switching_time_s, fibres_lit=False, realiser=self)
        self.spec = spec
        self.channel: Channel | None = None

    # -- the model's face -----------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.model.name

    @property
    def radix(self) -> int:
        return self.model.radix

    @property
    def sides(self) -> str:
        return self.model.sides

    @property
    def generation(self) -> int:
        return self.model.generation

    @property
    def switching_time_s(self) -> float:
        return self.model.switching_time_s

    @property
    def powered(self) -> bool:
        return self.model.powered

    def cross_connects(self) -> tuple[int, list[tuple[CrossConnect, bool]]]:
        return self.model.cross_connects()

    def port_status(self, ports: Iterable[int] = ()) -> list[dict[str, object]]:
        return self.model.port_status(ports)

    def apply(
        self,
        request_id: str,
        expected_generation: int,
        remove: Iterable[tuple[int, int]],
        add: Iterable[tuple[int, int]],
    ) -> tuple[int, bool]:
        return self.model.apply(request_id, expected_generation, remove, add)

    def subscribe(self) -> queue.SimpleQueue[OcsEvent]:
        return self.model.subscribe()

    def unsubscribe(self, q: queue.SimpleQueue[OcsEvent]) -> None:
        self.model.unsubscribe(q)

    # -- connection ---------------------------------------------------------------------
    def attach(self, channel: Channel) -> None:
        """A (re)connected bridge: adopt the circuits it holds when this agent has none
        (a restarted agent must not cut live circuits), else make it hold ours."""
        with self.model._lock:
            self.channel = channel
            held = self._read_cross_connects(channel)
            items = self.cross_connects()[1]
            ours = {c for c, _ in items}
            settled = {c for c, switching in items if not switching}  # the rest: _settle
            if not ours and held:
                recorded = read_state(channel).generation
                log.info("%s: adopting %d cross-connects from the bridge (generation %s)", self.name,
                         len(held), recorded)
                self.model.adopt(held, recorded)
            else:
                self._program(remove=held - ours, add=settled - held, rollback=False)
            self._record_generation()
        self.refresh_ports()

    def _record_generation(self) -> None:
        """Write the generation on the bridge, for an agent that restarts (see
        :mod:`emulation.openflow.state_flows`)."""
        channel = self.channel
        if channel is None:
            return
        try:
            channel.transact(state_flow_mods(channel, self.generation))
        except (SwitchUnreachable, SwitchRejected) as exc:
            log.warning("%s: recording the generation on the bridge failed: %s", self.name, exc)

    def detach(self, channel: Channel) -> None:
        with self.model._lock:
            if self.channel is channel:
                self.channel = None

    def _read_cross_connects(self, channel: Channel) -> set[CrossConnect]:
        p = channel.parser
        request = p.OFPFlowStatsRequest(channel.datapath, table_id=0, cookie=COOKIE_OCS,
                                        cookie_mask=0xFFFFFFFFFFFFFFFF)
        out: dict[int, int] = {}
        for stat in channel.multipart(request):
            in_port = stat.match.get("in_port")
            outputs = [a.port for i in stat.instructions for a in getattr(i, "actions", [])
                       if hasattr(a, "port")]
            if in_port is not None and len(outputs) == 1:
                out[ocs_port_index(in_port)] = ocs_port_index(outputs[0])
        return {CrossConnect(a, b) for a, b in out.items() if out.get(b) == a and a != b}

    def refresh_ports(self) -> None:
        channel = self.channel
        if channel is None:
            return
        try:
            ports = channel.multipart(channel.parser.OFPPortDescStatsRequest(channel.datapath, 0))
        except (SwitchUnreachable, SwitchRejected) as exc:
            log.warning("%s: cannot read ports: %s", self.name, exc)
            return
        for port in ports:
            self.port_changed(port.port_no, port.state)

    def port_changed(self, ofport: int, state: int) -> None:
        index = ocs_port_index(ofport)
        if 0 <= index < self.radix:
            link_down = bool(state & 1)  # OFPPS_LINK_DOWN
            if self.model.fibre_ok(index) == link_down:
                self.model.set_fibre(index, not link_down)

    # -- changing: the model decides, the bridge is programmed before it commits ------------
    def realise(self, remove: set[CrossConnect], add: set[CrossConnect]) -> None:
        """Take ``remove``'s flow pairs off the bridge and put ``add``'s on (CircuitRealiser;
        ApplyAborted after restoring the old flows)."""
        self._program(remove=remove, add=add)

    def committed(self, added: set[CrossConnect]) -> None:
        """Record the new generation; light ``added`` once the mirrors have moved."""
        self._record_generation()
        if self.switching_time_s and added:
            timer = threading.Timer(self.switching_time_s + SETTLE_MARGIN_S, self._settle, args=(added,))
            timer.daemon = True
            timer.start()

    def _settle(self, connects: set[CrossConnect]) -> None:
        """The mirrors of ``connects`` have moved: install their flows (those still wanted
        and due) and announce them. A bridge error takes the circuits down instead."""
        model = self.model
        with model._lock:
            now = model.clock.now()
            due = model.settled(connects, now)
            if due:
                try:
                    self._program(remove=set(), add=due, rollback=False)
                except ApplyAborted as exc:
                    log.error("%s: circuits %s did not come up: %s", self.name, sorted(due), exc)
                    model.drop(due, reason="the bridge refused the flows")
            model.tick(now)
            self._record_generation()

    def _program(self, *, remove: set[CrossConnect], add: set[CrossConnect],
                 rollback: bool = True) -> None:
        channel = self.channel
        if channel is None:
            raise ApplyAborted(f"{self.name}: the OCS bridge is not connected; nothing changed",
                               self.generation)
        try:
            channel.transact([*self._flow_mods(channel, remove, delete=True),
                              *self._flow_mods(channel, add, delete=False)])
        except (SwitchUnreachable, SwitchRejected) as exc:
            if rollback:
                self._restore(channel, remove, add)
            raise ApplyAborted(f"{self.name}: programming the bridge failed ({exc}); rolled "
                               f"back to generation {self.generation}", self.generation) from exc

    def _restore(self, channel: Channel, removed: set[CrossConnect], added: set[CrossConnect]) -> None:
        try:
            channel.transact([*self._flow_mods(channel, added, delete=True),
                              *self._flow_mods(channel, removed, delete=False)])
        except (SwitchUnreachable, SwitchRejected) as exc:
            log.error("%s: rollback failed too: %s", self.name, exc)

    @staticmethod
    def _flow_mods(channel: Channel, connects: Iterable[CrossConnect], *, delete: bool) -> list[Any]:
        p, ofp, dp = channel.parser, channel.ofp, channel.datapath
        mods = []
        for c in sorted(connects):
            for src, dst in ((c.a, c.b), (c.b, c.a)):
                match = p.OFPMatch(in_port=ocs_ofport(src))
                if delete:
                    mods.append(p.OFPFlowMod(dp, cookie=COOKIE_OCS, table_id=0,
                                             command=ofp.OFPFC_DELETE_STRICT,
                                             priority=CROSS_CONNECT_PRIORITY,
                                             out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                                             match=match))
                else:
                    actions = [p.OFPActionOutput(ocs_ofport(dst), 0)]
                    mods.append(p.OFPFlowMod(
                        dp, cookie=COOKIE_OCS, table_id=0, command=ofp.OFPFC_ADD,
                        priority=CROSS_CONNECT_PRIORITY, match=match,
                        instructions=[p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]))
        return mods


def ocs_base_flows(channel: Channel) -> list[Any]:
    """Table-miss drop (an explicit entry with no instructions)."""
    p, ofp, dp = channel.parser, channel.ofp, channel.datapath
    return [p.OFPFlowMod(dp, table_id=0, command=ofp.OFPFC_ADD, priority=0, match=p.OFPMatch(),
                         instructions=[])]
