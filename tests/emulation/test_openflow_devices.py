"""The OpenFlow devices compose their device models: the model (BlockSwitch, SpineDevice,
OcsDevice) decides, the bridge is programmed before a change commits, a bridge that refuses
leaves the model as it was. Run against a recording channel (os-ken's OpenFlow 1.3
messages, no switch)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from os_ken.ofproto import ofproto_v1_3, ofproto_v1_3_parser

from emulation.errors import ApplyAborted, MalformedRequest
from emulation.ocs_device import OcsDevice
from emulation.openflow.block import TABLE_SOURCE, TABLE_TRANSIT, OpenFlowBlockSwitch, block_switch
from emulation.openflow.channel import SwitchRejected
from emulation.openflow.ocs import OpenFlowOcs
from emulation.openflow.pipeline import group_id
from emulation.openflow.probes import ProbeNeighbours
from emulation.openflow.spec import BlockSpec, OcsSpec, ocs_ofport, uplink_ofport
from emulation.openflow.spine import spine_switch
from emulation.switch_device import BlockSwitch, StaticLinks
from southbound.types import CrossConnect

BLOCKS = ("a", "b", "c")
NODES = (*BLOCKS, "s1")


class _Datapath:
    id = 0x101
    ofproto = ofproto_v1_3
    ofproto_parser = ofproto_v1_3_parser


class _PortDesc:
    def __init__(self, port_no: int) -> None:
        self.port_no, self.state = port_no, 0


class RecordingChannel:
    """Takes every batch (or refuses the next ``refuse`` ones) and answers stats with nothing."""

    def __init__(self) -> None:
        self.datapath, self.ofp, self.parser = _Datapath(), ofproto_v1_3, ofproto_v1_3_parser
        self.dpid = 0x101
        self.batches: list[list[Any]] = []
        self.refuse = 0

    def transact(self, msgs: Any, timeout_s: float = 5.0) -> None:
        msgs = list(msgs)
        if self.refuse:
            self.refuse -= 1
            raise SwitchRejected("refused", [])
        self.batches.append(msgs)

    def send(self, msgs: Any) -> None:
        return None

    def multipart(self, request: Any, timeout_s: float = 5.0) -> list[Any]:
        if type(request).__name__ == "OFPPortDescStatsRequest":  # every port up
            return [_PortDesc(ocs_ofport(p)) for p in range(8)]
        return []

    def flows(self) -> set[tuple[int, int]]:
        """(in port, out port) of every cross-connect flow added and not deleted since."""
        held: set[tuple[int, int]] = set()
        for batch in self.batches:
            for m in batch:
                if isinstance(m, ofproto_v1_3_parser.OFPFlowMod) and m.table_id == 0 and m.priority == 100:
                    pair = m.match["in_port"]
                    if m.command == ofproto_v1_3.OFPFC_ADD:
                        out = m.instructions[0].actions[0].port
                        held.add((pair, out))
                    else:
                        held = {h for h in held if h[0] != pair}
        return held

    def group_mods(self) -> dict[int, list[tuple[int, int]]]:
        """group id -> [(uplink ofport, weight)] of the last mod of each group."""
        out = {}
        for batch in self.batches:
            for m in batch:
                if isinstance(m, ofproto_v1_3_parser.OFPGroupMod):
                    out[m.group_id] = [(b.actions[0].port, b.weight) for b in m.buckets]
        return out


def _neighbours(name: str) -> ProbeNeighbours:
    neighbours = ProbeNeighbours(NODES, {n: 6 for n in NODES}, expiry_s=1000.0)
    others = [n for n in NODES if n != name]
    for port in range(6):  # a: ports 0, 3 -> b; 1, 4 -> c; 2, 5 -> s1
        neighbours.heard(name, port, others[port % len(others)], port)
    return neighbours


def _attached(make: Any, name: str, **kwargs: Any) -> tuple[OpenFlowBlockSwitch, RecordingChannel]:
    switch = make(BlockSpec(name, 0x101, 6, 100.0), BLOCKS, _neighbours(name), bucket_scheme="weighted",
                  probe_interval_s=0.001, **kwargs)
    channel = RecordingChannel()
    switch.attach(channel)
    return switch, channel


def test_a_change_programs_the_bridge_then_commits_in_the_model() -> None:
    switch, channel = _attached(block_switch, "a", spines=("s1",))
    assert isinstance(switch.model, BlockSwitch) and switch.model.realiser is switch
    channel.batches.clear()
    generation, replayed, _ = switch.set_groups("r1", 1, {"c": {"b": 1, "c": 1}}, {}, replace=True)
    assert (generation, replayed) == (2, False) and switch.model.generation == 2
    # via b: ports 0 and 3; direct: ports 1 and 4, one share each
    buckets = channel.group_mods()[group_id("source", 2)]
    assert sorted(buckets) == sorted((uplink_ofport(p), 1) for p in (0, 3, 1, 4))
    assert switch.set_groups("r1", 1, {"c": {"b": 1, "c": 1}}, {}, replace=True)[1]  # a replay
    switch.drain([0])
    assert sorted(channel.group_mods()[group_id("source", 2)]) == sorted(
        (uplink_ofport(p), w) for p, w in ((3, 2), (1, 1), (4, 1)))


def test_a_bridge_that_refuses_leaves_the_model_unchanged() -> None:
    switch, channel = _attached(block_switch, "a", spines=("s1",))
    switch.set_groups("r0", 1, {}, {}, replace=True)  # the current peers become the members
    before = switch.groups()
    channel.refuse = 1
    with pytest.raises(ApplyAborted, match="programming the bridge failed"):
        switch.set_groups("r1", 2, {"c": {"b": 1}}, {}, replace=True)
    assert switch.groups() == before and switch.model.generation == 2
    channel.refuse = 1
    with pytest.raises(ApplyAborted):
        switch.drain([1])
    assert not switch.model.tables().drained.any()
    switch.detach(channel)
    with pytest.raises(ApplyAborted, match="not connected"):
        switch.set_groups("r2", 2, {"c": {"b": 1}}, {}, replace=True)
    assert switch.model.generation == 2


def test_a_spine_switch_is_the_spine_model_on_the_transit_table() -> None:
    switch, _ = _attached(spine_switch, "s1")
    assert switch.role == "spine" and switch.egress_table == TABLE_TRANSIT
    with pytest.raises(MalformedRequest, match="a spine switch originates no traffic"):
        switch.set_groups("r1", 1, {"b": {"b": 1}}, {}, replace=True)
    assert switch.set_groups("r2", 1, {}, {"b": {"b": 1}}, replace=True)[:2] == (2, False)
    block, _ = _attached(block_switch, "a", spines=("s1",))
    assert block.egress_table == TABLE_SOURCE


def test_a_model_is_realised_by_one_bridge_only() -> None:
    model = BlockSwitch("a", "a", BLOCKS, 6, 100.0, None, StaticLinks(BLOCKS, 6))  # type: ignore[arg-type]
    OpenFlowBlockSwitch(BlockSpec("a", 1, 6, 100.0), model, _neighbours("a"))
    with pytest.raises(ValueError, match="realised elsewhere already"):
        OpenFlowBlockSwitch(BlockSpec("a", 1, 6, 100.0), model, _neighbours("a"))


def _ocs(switching_time_s: float = 0.0) -> tuple[OpenFlowOcs, RecordingChannel]:
    ocs = OpenFlowOcs(OcsSpec("o1", 0x10000, 8, "split"), switching_time_s=switching_time_s)
    channel = RecordingChannel()
    ocs.attach(channel)
    return ocs, channel


def test_an_ocs_apply_programs_the_flow_pairs_then_commits_in_the_model() -> None:
    ocs, channel = _ocs()
    assert isinstance(ocs.model, OcsDevice) and ocs.model.realiser is ocs
    assert ocs.apply("r1", 1, [], [(0, 4)]) == (2, False)
    assert channel.flows() == {(ocs_ofport(0), ocs_ofport(4)), (ocs_ofport(4), ocs_ofport(0))}
    assert ocs.cross_connects()[1] == [(CrossConnect(0, 4), False)]
    channel.refuse = 1
    with pytest.raises(ApplyAborted, match="programming the bridge failed"):
        ocs.apply("r2", 2, [(0, 4)], [(0, 5)])
    assert ocs.generation == 2 and ocs.cross_connects()[1] == [(CrossConnect(0, 4), False)]
    assert channel.flows() == {(ocs_ofport(0), ocs_ofport(4)), (ocs_ofport(4), ocs_ofport(0))}  # restored


def test_an_ocs_lights_a_new_circuit_once_its_mirrors_have_moved() -> None:
    ocs, channel = _ocs(switching_time_s=0.05)
    events = ocs.subscribe()
    ocs.apply("r1", 1, [], [(1, 6)])
    assert channel.flows() == set() and ocs.cross_connects()[1] == [(CrossConnect(1, 6), True)]
    deadline = time.monotonic() + 5.0
    while not channel.flows() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert channel.flows() == {(ocs_ofport(1), ocs_ofport(6)), (ocs_ofport(6), ocs_ofport(1))}
    assert events.get(timeout=1.0).kind == "circuit_up"
