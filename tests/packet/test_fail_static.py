"""Packet-level fabric, fail static: with the OpenFlow agent SIGKILLed the bridges keep
forwarding exactly as configured (fail_mode secure); a restarted agent adopts what the
bridges hold instead of resetting it, and serves the devices again."""

from __future__ import annotations

import os
import subprocess
import time
from collections import Counter

import pytest

from emulation.mininet.bootstrap import simple_groups
from emulation.mininet.fabric import PacketFabric
from emulation.openflow.pipeline import HASH_SLOTS
from optimizer.topology import Topology
from southbound.devices import load_devices_file
from southbound.errors import SouthboundError
from southbound.ocs_client import OcsClient
from southbound.registry import default_registry
from southbound.types import CrossConnect
from tests.support.packet_fixtures import (
    Running,
    Streams,
    ping_failures,
    requires_packet_fabric,
)

pytestmark = [pytest.mark.mininet, requires_packet_fabric]

VOLATILE = {"duration", "n_packets", "n_bytes", "idle_age", "hard_age"}


def dump(bridge: str, what: str) -> str:
    # OpenFlow 1.5 where the bridge speaks it: group dumps then show the selection method
    return subprocess.run(["ovs-ofctl", "-O", "OpenFlow13,OpenFlow15", what, bridge], capture_output=True,
                          text=True, check=True).stdout


def forwarding_state(net: PacketFabric) -> dict[str, tuple[list[str], str]]:
    """Per bridge: flow entries (without counters) and group descriptions."""
    state = {}
    for bridge in net.bridges:
        flows = sorted(
            " ".join(f for f in line.split(", ") if f.split("=")[0].strip() not in VOLATILE)
            for line in dump(bridge, "dump-flows").splitlines()[1:])
        state[bridge] = (flows, dump(bridge, "dump-groups"))
    return state


def test_forwarding_survives_the_agent_and_a_restart_adopts_it(fabric: Running) -> None:
    net, circuits = fabric
    configured = forwarding_state(net)
    pid = net.agent_pid
    assert pid is not None
    streams = Streams(net, rate_pps=50.0, duration_s=12.0)
    try:
        time.sleep(1.0)
        net.kill_agent()
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        with pytest.raises(SouthboundError):
            net.client("ocs1").device_info()  # nobody serves the device any more
        assert ping_failures(net) == []
        assert forwarding_state(net) == configured
        time.sleep(2.0)
        # a new agent: the bridges reconnect and it adopts their circuits and groups
        net.start_agent()
        net.wait_attached(30.0)
        loss = streams.loss()
    finally:
        streams.stop()
    assert all(sent >= 500 and lost == 0 for sent, lost in loss.values()), loss
    assert forwarding_state(net) == configured
    # the restarted agent serves where the devices file (written before the kill) says
    devices = load_devices_file(net.devices_file)
    with default_registry().create(devices["ocs1"]) as ocs:
        assert isinstance(ocs, OcsClient)
        held = ocs.cross_connects().cross_connects
    assert held == {CrossConnect(c.a, c.b) for c in circuits if c.ocs == "ocs1"}
    assert ping_failures(net) == []
    # ... and rebuilds the groups behind what it adopted (rounded to the hash slots)
    mesh = simple_groups(Topology.from_circuits(net.fabric, circuits))
    for name, table in mesh.items():
        with default_registry().create(devices[name]) as switch:
            adopted = switch.groups().source
            ports_to = Counter(p.peer_block for p in switch.ports() if p.peer_block)
        for dest, weights in table.items():
            assert set(adopted[dest]) == set(weights), (name, dest)
            total, adopted_total = sum(weights.values()), sum(adopted[dest].values())
            for via, weight in weights.items():
                # each of the hop's ports got its share of HASH_SLOTS to within one slot
                bound = ports_to[via] / HASH_SLOTS
                assert abs(adopted[dest][via] / adopted_total - weight / total) <= bound, (name, dest)
    # the adopted state is a working base: a drain and an undrain keep every path
    with default_registry().create(devices["b1"]) as b1:
        port = next(p.port for p in b1.ports() if p.peer_block == "b2")
        assert b1.drain([port]) == frozenset({port})
        assert ping_failures(net) == []
        assert b1.undrain([port]) == frozenset()
    assert ping_failures(net) == []


def test_a_restarted_agent_recovers_drains_and_generations(fabric: Running) -> None:
    """The generation of every device and each port's drain come back from the state the
    agent recorded on the bridges (state flows); before, generations restarted from 1 and
    drained ports came back undrained."""
    net, _ = fabric
    devices = load_devices_file(net.devices_file)
    with default_registry().create(devices["b1"]) as b1, default_registry().create(devices["ocs1"]) as ocs:
        to_b3 = sorted(p.port for p in b1.ports() if p.peer_block == "b3")
        b1.drain(to_b3[:1])
        groups = b1.groups()
        b1.set_groups(expected_generation=groups.generation, source=groups.source, transit=groups.transit)
        drained = sorted(p.port for p in b1.ports() if p.drained)
        before = (b1.groups(), drained, ocs.cross_connects().generation)
    assert before[0].generation >= 3 and before[1] == to_b3[:1]
    net.kill_agent()
    net.start_agent()
    net.wait_attached(30.0)
    with default_registry().create(devices["b1"]) as b1, default_registry().create(devices["ocs1"]) as ocs:
        groups = b1.groups()
        assert groups.generation == before[0].generation
        assert sorted(p.port for p in b1.ports() if p.drained) == before[1]
        assert ocs.cross_connects().generation == before[2]
        assert set(groups.source) == set(before[0].source)
        # compare-and-set goes on from the recovered generation; the drain stays until undrained
        done = b1.set_groups(expected_generation=before[0].generation, source=groups.source)
        assert done.generation == before[0].generation + 1
        assert b1.undrain(to_b3[:1]) == frozenset()
    assert ping_failures(net) == []
