"""Jobs' communication time per iteration on a fabric's routing in force. Pure.

The routing in force is the circuits the OCSes hold, the group tables the blocks forward by
(``{block: {destination: {via: weight}}}``; a destination without a group goes direct) and the
ports drained. A directed trunk ``a -> b`` has the undrained ports of ``a`` with a circuit to
``b`` (:func:`trunk_members`), each at the link's speed, and a hybrid fabric's spine links as
cabled (:func:`trunk_capacity`).

:func:`comm_seconds` plays the jobs' iterations together on those trunks, phase by phase,
max-min fair (:func:`optimizer.jobs.player.play`, ``background`` trunk loads taken off first),
for :data:`PLAYED_ITERATIONS` iterations of the slowest (longer when none completes), and
gives each job's mean communication time per iteration; None when the routing sends some job's
traffic to a trunk without capacity (a blackhole).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from optimizer.fabric import Fabric
from optimizer.jobs.player import NoCapacity, play, played_jobs
from optimizer.jobs.traffic import JobTraffic
from optimizer.spine import spine_capacity_gbps
from optimizer.topology import Circuit

log = logging.getLogger(__name__)

#: Iterations of the slowest job played (at least: more when none completes in that time).
PLAYED_ITERATIONS = 4
#: The longest horizon (seconds) played before a job without a complete iteration is given it.
MAX_HORIZON_S = 1e4

Tables = Mapping[str, Mapping[str, Mapping[str, int]]]


def trunk_members(
    fabric: Fabric, circuits: Iterable[Circuit], drained: Iterable[tuple[str, int]] = ()
) -> dict[tuple[str, str], list[int]]:
    """(block, next hop) -> the block's undrained ports with a circuit to that next hop."""
    off = set(drained)
    members: dict[tuple[str, str], list[int]] = {}
    for c in circuits:
        pa, pb = c.ends(fabric)
        for end, there in ((pa, pb.block), (pb, pa.block)):
            if (end.block, end.block_port) not in off:
                members.setdefault((end.block, there), []).append(end.block_port)
    return members


def nodes_of(fabric: Fabric) -> tuple[str, ...]:
    """The trunks' nodes: the blocks, then any spine switches."""
    return fabric.block_names + tuple(s.name for s in fabric.spine)


def trunk_capacity(fabric: Fabric, members: Mapping[tuple[str, str], list[int]]) -> np.ndarray:
    """[m, m] Gbit/s of each directed trunk (:func:`nodes_of` order)."""
    nodes = nodes_of(fabric)
    index = {b: i for i, b in enumerate(nodes)}
    capacity = np.zeros((len(nodes), len(nodes)))
    for (a, b), ports in members.items():
        capacity[index[a], index[b]] = len(ports) * fabric.link_speed_gbps(a, b)
    for (a, b), gbps in spine_capacity_gbps(fabric.spine, fabric).items():
        capacity[index[a], index[b]] = gbps
    return capacity


def comm_seconds(
    fabric: Fabric,
    traffic: Sequence[JobTraffic],
    circuits: Iterable[Circuit],
    tables: Tables,
    drained: Iterable[tuple[str, int]] = (),
    background: np.ndarray | None = None,
) -> dict[str, float] | None:
    """Per job (by name), its mean communication time per iteration with the others on the
    routing (the module's docstring); ``background``: [m, m] Gbit/s already on each trunk.
    None: some job's traffic meets a trunk without capacity."""
    if not traffic:
        return {}
    capacity = trunk_capacity(fabric, trunk_members(fabric, circuits, drained))
    nodes = nodes_of(fabric)
    try:
        jobs, link_capacity = played_jobs(traffic, nodes, tables, capacity)
    except NoCapacity as exc:
        log.info("blackhole: %s", exc)
        return None
    links = None
    if background is not None:
        m = len(nodes)
        links = np.array([background[a, b] for a in range(m) for b in range(m)
                          if a != b and capacity[a, b] > 0])
    horizon = PLAYED_ITERATIONS * max(t.period for t in traffic) * 2
    try:
        got = play(jobs, link_capacity, horizon, links)
        while any(not got[t.job.name].comm_seconds for t in traffic) and horizon < MAX_HORIZON_S:
            horizon *= 4
            got = play(jobs, link_capacity, horizon, links)
    except NoCapacity as exc:
        log.info("blackhole: %s", exc)
        return None
    out = {}
    for t in traffic:
        mean = got[t.job.name].mean_comm_seconds
        out[t.job.name] = horizon if mean is None else mean  # none complete: at least the horizon
    return out
