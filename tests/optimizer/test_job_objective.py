"""The jobs' communication time as a topology's objective (optimizer/jobs/objective.py), on
cases worked by hand: three blocks of 8 x 100G, a ring all-reduce over b1 and b2 that sends
1.5 GB each way (tests/optimizer/test_jobs.py's job)."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.fabric import Block, Ocs, build_fabric
from optimizer.jobs import job_traffic, parse_job
from optimizer.jobs.objective import CommGain, JobsJudge, judged
from optimizer.topology import Topology
from optimizer.traffic import TrafficMatrix

FABRIC = build_fabric(
    "three", [Block("b1", 8, 100.0), Block("b2", 8, 100.0), Block("b3", 8, 100.0)], [Ocs("o1", 24)]
)
JOB = {
    "name": "j",
    "model": {"parameters": 0.5e9, "bytes_per_parameter": 2},
    "parallelism": {"data": 4},
    "placement": {"accelerators_per_block": 2, "blocks": ["b1", "b2"]},
    "collective": "ring",
    "iteration_seconds": 1.0,
}
TRAFFIC = job_traffic(parse_job(JOB, "<test>", FABRIC), FABRIC)
DIRECT = Topology(FABRIC.block_names, np.array([[0, 8, 0], [8, 0, 0], [0, 0, 0]]))
THROUGH_B3 = Topology(FABRIC.block_names, np.array([[0, 0, 4], [0, 0, 4], [4, 4, 0]]))


def routed(extra_b1_b2: float = 0.0) -> TrafficMatrix:
    gbps = TRAFFIC.mean().gbps.copy()
    gbps[0, 1] += extra_b1_b2
    return TrafficMatrix(FABRIC.block_names, gbps)


def test_a_burst_on_eight_direct_circuits_takes_its_bytes_at_800_gbit_s() -> None:
    judge = JobsJudge(FABRIC, (TRAFFIC,))
    assert judge.seconds(DIRECT, routed()) == {"j": pytest.approx(1.5 * 8 / 800)}  # 15 ms


def test_through_a_third_block_the_burst_has_four_circuits_a_hop_and_takes_twice_as_long() -> None:
    judge = JobsJudge(FABRIC, (TRAFFIC,))
    assert judge.seconds(THROUGH_B3, routed()) == {"j": pytest.approx(1.5 * 8 / 400)}  # 30 ms
    gain = judge.gain(THROUGH_B3, DIRECT, routed())
    assert (gain.before, gain.after) == (pytest.approx(0.030), pytest.approx(0.015))
    assert gain.gain == pytest.approx(0.5) and "30.0 -> 15.0 ms" in gain.words()


def test_traffic_beyond_the_jobs_loads_the_links_first() -> None:
    # 400 Gbit/s more from b1 to b2 than the job's average: the burst has 400 of the 800 left
    judge = JobsJudge(FABRIC, (TRAFFIC,))
    assert judge.seconds(DIRECT, routed(400.0))["j"] == pytest.approx(1.5 * 8 / 400)


def test_a_topology_without_a_route_for_the_job_is_infinitely_slow() -> None:
    cut = Topology(FABRIC.block_names, np.array([[0, 0, 8], [0, 0, 0], [8, 0, 0]]))
    judge = JobsJudge(FABRIC, (TRAFFIC,))
    assert judge.seconds(cut, routed()) == {"j": np.inf}


def test_other_traffic_over_a_link_s_capacity_makes_the_jobs_infinitely_slow() -> None:
    # 450 Gbit/s besides the job's average from b1 to b2: over the 400 Gbit/s a hop through b3
    # has, within the 800 of the direct circuits. The daemon's job-aware ToE judges a topology
    # the measured traffic overloads: an infinite time, not a crash
    judge = JobsJudge(FABRIC, (TRAFFIC,))
    assert judge.seconds(THROUGH_B3, routed(450.0)) == {"j": np.inf}
    assert judge.seconds(DIRECT, routed(450.0))["j"] == pytest.approx(1.5 * 8 / 350, rel=0.05)
    assert judge.gain(THROUGH_B3, DIRECT, routed(450.0)).gain == pytest.approx(1.0)
    assert np.isnan(judge.gain(THROUGH_B3, THROUGH_B3, routed(450.0)).gain)  # never "worth planning"


def test_no_job_or_a_spine_is_not_judged() -> None:
    assert judged(FABRIC, []) is None and judged(FABRIC, [TRAFFIC]) is not None
    with pytest.raises(ValueError, match="no job"):
        JobsJudge(FABRIC, ())
    assert CommGain(0.0, 0.0).gain == 0.0 and CommGain(0.2, 0.3).gain == pytest.approx(-0.5)
