"""How ``replay --jobs`` judges a policy's routing (controller/replay/job_time.py): a segment
whose routes use a drained trunk is a blackhole, communication time is weighted by the
iterations of each segment, and a job's topology is reached at the last circuit change."""

from __future__ import annotations

import numpy as np
import pytest

from controller.replay.engine import ReplayResult
from controller.replay.job_policies import Policy, PolicyRun
from controller.replay.job_time import judge
from controller.replay.routing import trunk_members
from controller.replay.series_fabric import RoutingState
from optimizer.jobs import job_traffic, parse_job
from optimizer.jobs.schedule import Schedule, ScheduledJob
from optimizer.topology import uniform_mesh
from tests.support import shipped_fabric

FABRIC = shipped_fabric("fabric-4")
MESH = frozenset(uniform_mesh(FABRIC))


def ring(name: str, blocks: list[str]) -> ScheduledJob:
    data = {
        "name": name,
        "model": {"parameters": 0.5e9},
        "parallelism": {"data": 4},
        "placement": {"accelerators_per_block": 2, "blocks": blocks},
        "iteration_seconds": 1.0,
    }
    spec = parse_job(data, f"<{name}>", FABRIC)
    return ScheduledJob(spec, "", 100.0, 900.0, job_traffic(spec, FABRIC))


def run(states: list[RoutingState], lead: float = 0.0) -> PolicyRun:
    return PolicyRun(Policy.JOB_AWARE, ReplayResult(FABRIC.name, [], {}, routing=states), lead)


def test_a_segment_routed_over_a_drained_trunk_is_a_blackhole_for_the_jobs_running() -> None:
    job = ring("j", ["b1", "b2"])
    schedule = Schedule((job,), 1000.0, 0.0)
    b1_to_b2 = trunk_members(FABRIC, MESH)[("b1", "b2")]
    drained = frozenset(("b1", p) for p in b1_to_b2)
    states = [
        RoutingState(0.0, {}, MESH, frozenset()),
        RoutingState(500.0, {}, MESH, drained),  # direct routes, and the b1 -> b2 trunk drained
        RoutingState(600.0, {}, MESH, frozenset()),
    ]
    got = judge(run(states), FABRIC, schedule)
    assert got.blackholed_segments == 1 and got.jobs[0].blackholed_segments == 1
    # the same drain with b1 -> b2 sent through b3 carries it
    around = {"b1": {"b2": {"b3": 1}}}
    states[1] = RoutingState(500.0, around, MESH, drained)
    assert judge(run(states), FABRIC, schedule).blackholed_segments == 0


def test_communication_time_is_the_iteration_weighted_mean_over_segments() -> None:
    job = ring("j", ["b1", "b2"])
    schedule = Schedule((job,), 1000.0, 0.0)
    direct = judge(run([RoutingState(0.0, {}, MESH, frozenset())]), FABRIC, schedule).jobs[0]
    spread = {"b1": {"b2": {"b2": 1, "b3": 1, "b4": 1}}, "b2": {"b1": {"b1": 1, "b3": 1, "b4": 1}}}
    wide = judge(run([RoutingState(0.0, spread, MESH, frozenset())]), FABRIC, schedule).jobs[0]
    assert wide.comm_seconds is not None and direct.comm_seconds is not None
    assert wide.comm_seconds < direct.comm_seconds  # three paths instead of one
    half = judge(
        run([RoutingState(0.0, {}, MESH, frozenset()), RoutingState(500.0, spread, MESH, frozenset())]),
        FABRIC,
        schedule,
    ).jobs[0]
    n_direct = 400.0 / (1.0 + direct.comm_seconds)  # 100 - 500 s
    n_wide = 400.0 / (1.0 + wide.comm_seconds)  # 500 - 900 s
    expected = (direct.comm_seconds * n_direct + wide.comm_seconds * n_wide) / (n_direct + n_wide)
    assert half.comm_seconds == pytest.approx(expected)
    assert half.iterations == pytest.approx(n_direct + n_wide)


def test_a_job_s_topology_is_reached_at_the_last_circuit_change_before_the_next_arrival() -> None:
    first, second = ring("a", ["b1", "b2"]), ring("b", ["b3", "b4"])
    second = ScheduledJob(second.spec, "", 700.0, 900.0, second.traffic)
    schedule = Schedule((first, second), 1000.0, 0.0)
    fewer = frozenset(list(MESH)[1:])
    states = [
        RoutingState(0.0, {}, MESH, frozenset()),
        RoutingState(40.0, {}, fewer, frozenset()),
        RoutingState(60.0, {}, MESH, frozenset()),  # the last change for a (known from 0 s)
        RoutingState(650.0, {}, fewer, frozenset()),  # for b, known from 700 - 300 = 400 s
    ]
    got = judge(run(states, lead=300.0), FABRIC, schedule)
    assert [j.reached for j in got.jobs] == [60.0 - 100.0, 650.0 - 700.0]
    reactive = judge(run(states, lead=0.0), FABRIC, schedule)  # b known only from 700 s
    assert [j.reached for j in reactive.jobs] == [650.0 - 100.0, None]
    assert np.isfinite([j.comm_seconds for j in got.jobs]).all()
