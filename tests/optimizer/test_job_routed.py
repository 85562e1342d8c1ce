"""Jobs' communication time per iteration on a routing in force (optimizer/jobs/routed.py):
trunks from circuits and drains, on a three-block case worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.fabric import Block, Ocs, Side, build_fabric
from optimizer.jobs import job_traffic, parse_job
from optimizer.jobs.routed import comm_seconds, trunk_capacity, trunk_members
from optimizer.topology import Circuit

FABRIC = build_fabric("three", [Block(f"b{i}", 8, 100.0) for i in (1, 2, 3)], [Ocs("o1", 24)])


def ports(block: str, side: Side) -> list[int]:
    wired = [FABRIC.wired_port("o1", p) for p in range(24)]
    return [w.port for w in wired if w is not None and w.block == block and w.side is side]


def trunk(a: str, b: str) -> frozenset[Circuit]:
    """Every uplink of ``a`` to one of ``b`` (each side of ``a`` to the other of ``b``)."""
    pairs = [*zip(ports(a, Side.NORTH), ports(b, Side.SOUTH), strict=True),
             *zip(ports(a, Side.SOUTH), ports(b, Side.NORTH), strict=True)]
    return frozenset(Circuit("o1", x, y) for x, y in pairs)


RING = {
    "name": "j",
    "model": {"parameters": 0.5e9, "bytes_per_parameter": 2},  # 1 GB of gradients per rank
    "parallelism": {"data": 4},
    "placement": {"accelerators_per_block": 2, "blocks": ["b1", "b2"]},
    "collective": "ring",
    "iteration_seconds": 1.0,
}
TRAFFIC = [job_traffic(parse_job(RING, "<t>", FABRIC), FABRIC)]
ALONE = 1.5 * 8 / 800  # 1.5 GB each way over one trunk of 8 x 100G


def test_eight_circuits_make_one_800g_trunk_each_way() -> None:
    members = trunk_members(FABRIC, trunk("b1", "b2"))
    assert sorted(members[("b1", "b2")]) == list(range(8)) and len(members[("b2", "b1")]) == 8
    capacity = trunk_capacity(FABRIC, members)
    assert capacity[0, 1] == capacity[1, 0] == 800.0 and capacity[0, 2] == 0.0
    assert comm_seconds(FABRIC, TRAFFIC, trunk("b1", "b2"), {}) == {"j": pytest.approx(ALONE)}


def test_drained_ports_and_background_traffic_slow_the_job() -> None:
    half = [("b1", p) for p in range(4)]
    # b1 sends over 4 members (400G): its 1.5 GB take twice as long; b2's way is untouched
    assert comm_seconds(FABRIC, TRAFFIC, trunk("b1", "b2"), {}, half) == {"j": pytest.approx(2 * ALONE)}
    background = np.zeros((3, 3))
    background[0, 1] = 600.0  # 200G left from b1 to b2
    slowed = comm_seconds(FABRIC, TRAFFIC, trunk("b1", "b2"), {}, (), background)
    assert slowed == {"j": pytest.approx(4 * ALONE)}


def test_a_route_over_a_trunk_without_circuits_gives_none() -> None:
    assert comm_seconds(FABRIC, TRAFFIC, trunk("b1", "b3"), {}) is None
    # through b3 when only b1-b3 exists: b3 -> b2 has no circuit either
    assert comm_seconds(FABRIC, TRAFFIC, trunk("b1", "b3"), {"b1": {"b2": {"b3": 1}}}) is None
    assert comm_seconds(FABRIC, [], trunk("b1", "b3"), {}) == {}
