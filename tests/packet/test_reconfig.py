"""Packet-level fabric, a topology change on one OCS while a steady UDP stream runs between
every ordered block pair, staged the way the controller's executor does it:
drain -> verify drained -> switch the OCS -> qualify (neighbours) -> fresh groups + undrain.

Block pairs not touched by the stage lose 0 packets; a touched pair loses no more than the
packets in flight during the OCS switch (with the drain, that is expected to be 0 too)."""

from __future__ import annotations

import logging
import math
import time

import pytest

from emulation.mininet.bootstrap import expected_peers, push_groups, simple_groups, wait_for_peers
from emulation.mininet.fabric import PacketFabric
from optimizer.topology import Circuit, Topology, check_circuits
from southbound.ocs_client import OcsClient
from southbound.switch_client import SwitchClient
from southbound.types import CrossConnect
from tests.support.packet_fixtures import (
    Running,
    Streams,
    ping_failures,
    requires_packet_fabric,
)

pytestmark = [pytest.mark.mininet, requires_packet_fabric]
log = logging.getLogger(__name__)

RATE_PPS = 50.0  # per ordered block pair
PROBE_PACKETS_PER_S = 2  # neighbour probes still leave drained ports



def swap_partners(net: PacketFabric, circuits: tuple[Circuit, ...], ocs: str) -> tuple[
        list[Circuit], list[Circuit]]:
    """Two circuits of ``ocs`` joining four different blocks (A-B, C-D), and the two that
    swap their south ends (A-D, C-B)."""
    on_ocs = [c for c in circuits if c.ocs == ocs]
    for i, first in enumerate(on_ocs):
        for second in on_ocs[i + 1:]:
            blocks = {*first.blocks(net.fabric), *second.blocks(net.fabric)}
            if len(blocks) == 4:
                new = [Circuit(ocs, first.a, second.b), Circuit(ocs, second.a, first.b)]
                check_circuits(net.fabric, new)
                return [first, second], new
    raise AssertionError(f"no two circuits of {ocs} join four blocks")


def pairs_of(net: PacketFabric, circuits: list[Circuit]) -> set[frozenset[str]]:
    return {frozenset(c.blocks(net.fabric)) for c in circuits}


def test_reconfiguration_loses_nothing_outside_the_switch(fabric: Running) -> None:
    net, circuits = fabric
    old, new = swap_partners(net, circuits, "ocs1")
    touched = pairs_of(net, old) | pairs_of(net, new)
    ends = [(w.block, w.block_port) for c in old for w in c.ends(net.fabric)]
    ocs = net.driver("ocs1")
    assert isinstance(ocs, OcsClient)

    def block(name: str) -> SwitchClient:
        client = net.driver(name)
        assert isinstance(client, SwitchClient)
        return client

    streams = Streams(net, RATE_PPS, duration_s=14.0)
    try:
        time.sleep(3.0)  # steady state first
        # 1. drain both ends of the circuits that go away
        for name, port in ends:
            assert port in block(name).drain([port])
        # 2. verify drained: nothing but probes leaves those ports
        before = {name: block(name).counters() for name in {n for n, _ in ends}}
        time.sleep(1.5)
        for name, port in ends:
            sent = block(name).counters().ports[port].tx_packets - before[name].ports[port].tx_packets
            assert sent <= 2 * PROBE_PACKETS_PER_S + 1, (name, port, sent)
        # 3. switch the OCS
        generation = ocs.cross_connects().generation
        started = time.monotonic()
        ocs.apply(expected_generation=generation,
                  remove=[CrossConnect(c.a, c.b) for c in old],
                  add=[CrossConnect(c.a, c.b) for c in new])
        switch_s = time.monotonic() - started
        # 4. qualify: the new circuits' ends hear the expected neighbours
        now_circuits = (*[c for c in circuits if c not in old], *new)
        wait_for_peers(net.driver, expected_peers(net.fabric, new))
        # 5. fresh groups for the new topology, then undrain
        push_groups(net.driver, simple_groups(Topology.from_circuits(net.fabric, now_circuits)))
        for name, port in ends:
            assert port not in block(name).undrain([port])
        loss = streams.loss()
    finally:
        streams.stop()

    # packets in flight while the OCS switches: the apply plus the mirrors moving
    in_flight = math.ceil(RATE_PPS * (switch_s + ocs.device_info().switching_time_s)) + 1
    log.info("OCS switch took %.3f s; loss per pair: %s", switch_s, loss)
    assert len(loss) == 12
    for (src, dst), (sent, lost) in loss.items():
        assert sent >= RATE_PPS * 10, (src, dst, sent)
        if frozenset((src, dst)) in touched:
            assert lost <= in_flight, (src, dst, sent, lost, in_flight)
        else:
            assert lost == 0, (src, dst, sent, lost)
    # the fabric forwards on the new topology: every host still reaches every other
    assert ping_failures(net) == []
    table = ocs.cross_connects()
    assert {CrossConnect(c.a, c.b) for c in new} <= table.cross_connects
    assert not {CrossConnect(c.a, c.b) for c in old} & table.cross_connects
