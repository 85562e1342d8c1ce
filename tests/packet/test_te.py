"""Packet-level fabric, a TE change made by the controller: ``heliostat run`` configures
fabric-4 and routes with TE hedged at S = 1 (each path of a pair in proportion to its
capacity). Over many UDP flows the split of b1's traffic to b3 across its next hops
(direct, via b2, via b4) is within 10% of the WCMP weights TE pushed, and it follows them
when TE changes them (b2 drained for maintenance: no transit through it)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from controller.northbound.api import MaintenanceKind
from tests.support.daemon_support import wait_for
from tests.support.packet_fixtures import Controlled, controlled_fabric, requires_packet_fabric, send_flows

pytestmark = [pytest.mark.mininet, requires_packet_fabric]

FLOWS = 6000
TOLERANCE = 0.10  # relative to each next hop's share of the weights


@pytest.fixture(scope="module")
def controlled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controlled]:
    with controlled_fabric(tmp_path_factory.mktemp("te"), te={"method": "min_mlu", "hedge": 1.0}) as c:
        yield c


def measured_split(c: Controlled, src_port_base: int) -> dict[str, float]:
    """Share of b1's uplink packets per neighbour block while FLOWS flows go b1 -> b3."""
    b1 = c.switch("b1")
    trunk = {p.port: p.peer_block for p in b1.ports()}
    before = b1.counters()
    sent = send_flows(c.fabric, c.fabric.hosts_of("b1")[0], c.fabric.hosts_of("b3")[0], FLOWS,
                      src_port_base, rate_pps=1500)
    time.sleep(1.5)
    after = b1.counters()
    per_hop: dict[str, int] = {}
    for port, counters in after.ports.items():
        hop = trunk[port]
        assert hop is not None
        per_hop[hop] = per_hop.get(hop, 0) + counters.tx_packets - before.ports[port].tx_packets
    total = sum(per_hop.values())
    # A loaded userspace datapath may drop a few packets on the host port; probes add a few.
    assert 0.9 * sent <= total <= sent * 1.05, (sent, per_hop)
    return {hop: n / total for hop, n in per_hop.items()}


def assert_split_meets(split: dict[str, float], weights: dict[str, int]) -> None:
    total = sum(weights.values())
    for hop in ("b2", "b3", "b4"):
        target = weights.get(hop, 0) / total
        if target:
            assert abs(split[hop] - target) <= TOLERANCE * target, (hop, split, weights)
        else:
            assert split[hop] < 0.01, (hop, split, weights)


def test_split_follows_the_weights_and_shifts_when_te_changes_them(controlled: Controlled) -> None:
    c = controlled
    weights = c.group("b1", "b3")
    assert set(weights) == {"b2", "b3", "b4"}  # direct and both transits, by capacity
    before = measured_split(c, src_port_base=20000)
    assert c.group("b1", "b3") == weights, "TE changed the weights while they were measured"
    assert_split_meets(before, weights)

    # The TE change: b2 goes into maintenance, so nothing may transit through it.
    c.api.set_maintenance(MaintenanceKind.BLOCK, "b2", True)
    wait_for(lambda: "b2" not in c.group("b1", "b3"), 30, interval=0.5, what="TE around b2")
    shifted = c.group("b1", "b3")
    assert set(shifted) == {"b3", "b4"}
    after = measured_split(c, src_port_base=20000)  # the same flows as before
    assert c.group("b1", "b3") == shifted, "TE changed the weights while they were measured"
    assert_split_meets(after, shifted)
    # the via-b2 share moves onto the other hops, as the weights say
    assert before["b2"] > 0.15 and after["b2"] < 0.01
    moved = after["b3"] - before["b3"] + after["b4"] - before["b4"]
    assert moved == pytest.approx(before["b2"], abs=0.05)
    c.api.set_maintenance(MaintenanceKind.BLOCK, "b2", False)
    wait_for(lambda: "b2" in c.group("b1", "b3"), 30, interval=0.5, what="b2 back in TE")
