"""The phase player (issue 31 item 3): jobs' iterations played phase by phase, max-min fair,
on small cases worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.fabric import Block, Ocs, build_fabric
from optimizer.jobs import job_traffic, parse_job
from optimizer.jobs.player import NoCapacity, PlayedJob, PlayedPhase, play, played_jobs

ONE_LINK = np.array([[1.0]])  # a flow on the one link


def reduce_job(name: str, gbit: float, usage: np.ndarray = ONE_LINK, compute: float = 1.0) -> PlayedJob:
    """A job whose compute moves nothing for ``compute`` s, then all-reduces ``gbit`` per flow."""
    flows = usage.shape[0]
    return PlayedJob(
        name,
        (
            PlayedPhase("compute", usage, np.zeros(flows), compute, capped=True),
            PlayedPhase("all-reduce", usage, np.full(flows, gbit)),
        ),
    )


def test_a_flow_alone_gets_the_whole_link() -> None:
    got = play([reduce_job("a", 10.0)], np.array([10.0]), horizon=6.0)["a"]
    # each iteration: 1 s compute, then 10 Gbit at 10 Gbit/s: 2 s; three in 6 s
    assert got.iterations == 3
    assert got.comm_seconds == pytest.approx([1.0, 1.0, 1.0])


def test_two_flows_on_one_link_get_half_each() -> None:
    got = play([reduce_job("a", 10.0), reduce_job("b", 10.0)], np.array([10.0]), horizon=6.0)
    # in step: both all-reduce at once at 5 Gbit/s each, 2 s; iterations of 3 s
    assert got["a"].comm_seconds == pytest.approx([2.0, 2.0])
    assert got["b"].comm_seconds == pytest.approx([2.0, 2.0])


def test_the_rest_of_a_link_goes_to_the_flow_left_when_the_other_ends() -> None:
    got = play([reduce_job("a", 10.0), reduce_job("b", 20.0)], np.array([10.0]), horizon=4.0)
    # 5 + 5 for 2 s: a is done (10 Gbit); b has 10 left, alone at 10 Gbit/s: 1 s more
    assert got["a"].comm_seconds[0] == pytest.approx(2.0)
    assert got["b"].comm_seconds[0] == pytest.approx(3.0)


def test_a_phase_ends_when_its_last_flow_ends() -> None:
    two_links = np.eye(2)  # flow 0 on link 0, flow 1 on link 1
    got = play([reduce_job("a", 10.0, two_links)], np.array([10.0, 5.0]), horizon=3.0)["a"]
    assert got.comm_seconds[0] == pytest.approx(2.0)  # 10 Gbit on the 5 Gbit/s link


def test_background_traffic_takes_its_share_of_the_link_first() -> None:
    got = play([reduce_job("a", 10.0)], np.array([10.0]), horizon=3.0, background=np.array([5.0]))["a"]
    assert got.comm_seconds[0] == pytest.approx(2.0)
    with pytest.raises(NoCapacity, match="background"):
        play([reduce_job("a", 10.0)], np.array([10.0]), horizon=3.0, background=np.array([11.0]))


def test_compute_transfers_are_spread_over_the_compute_and_only_their_excess_is_exposed() -> None:
    def pipeline(gbit: float) -> PlayedJob:
        return PlayedJob("p", (PlayedPhase("compute", ONE_LINK, np.array([gbit]), 2.0, capped=True),))

    hidden = play([pipeline(10.0)], np.array([10.0]), horizon=2.0)["p"]
    assert hidden.comm_seconds == pytest.approx([0.0])  # 5 Gbit/s for the 2 s of compute
    exposed = play([pipeline(30.0)], np.array([10.0]), horizon=3.0)["p"]
    assert exposed.comm_seconds == pytest.approx([1.0])  # 3 s at the link rate: 1 s after the compute


def test_a_capped_flow_leaves_the_rest_to_an_uncapped_one() -> None:
    spread = PlayedJob("p", (PlayedPhase("compute", ONE_LINK, np.array([4.0]), 2.0, capped=True),))
    burst = PlayedJob("r", (PlayedPhase("all-reduce", ONE_LINK, np.array([16.0])),))
    got = play([spread, burst], np.array([10.0]), horizon=2.0)
    # p is held at 2 Gbit/s by its cap, r takes the other 8: 16 Gbit in 2 s
    assert got["r"].comm_seconds[0] == pytest.approx(2.0)
    assert got["p"].comm_seconds[0] == pytest.approx(0.0)


FABRIC = build_fabric("three", [Block(f"b{i}", 8, 100.0) for i in (1, 2, 3)], [Ocs("o1", 24)])


def ring(name: str, blocks: list[str]) -> dict:
    return {
        "name": name,
        "model": {"parameters": 0.5e9, "bytes_per_parameter": 2},  # 1 GB of gradients per rank
        "parallelism": {"data": 4},
        "placement": {"accelerators_per_block": 2, "blocks": blocks},
        "collective": "ring",
        "iteration_seconds": 1.0,
    }


def test_jobs_on_a_fabric_share_its_trunks_and_a_transit_route_adds_a_path() -> None:
    traffic = [job_traffic(parse_job(ring("j", ["b1", "b2"]), "<t>", FABRIC), FABRIC)]
    direct = np.array([[0, 800.0, 800.0], [800.0, 0, 800.0], [800.0, 800.0, 0]])
    jobs, links = played_jobs(traffic, FABRIC.block_names, {}, direct)
    alone = play(jobs, links, horizon=1.2)["j"].comm_seconds[0]
    assert alone == pytest.approx(1.5 * 8 / 800)  # 1.5 GB each way over one 800G trunk
    split = {"b1": {"b2": {"b2": 1, "b3": 1}}, "b2": {"b1": {"b1": 1, "b3": 1}}}
    jobs, links = played_jobs(traffic, FABRIC.block_names, split, direct)
    assert play(jobs, links, horizon=1.2)["j"].comm_seconds[0] == pytest.approx(alone / 2)
    other = job_traffic(parse_job(ring("k", ["b2", "b1"]), "<t>", FABRIC), FABRIC)
    jobs, links = played_jobs([*traffic, other], FABRIC.block_names, {}, direct)
    shared = play(jobs, links, horizon=1.2)
    assert shared["j"].comm_seconds[0] == pytest.approx(2 * alone)


def test_a_route_over_a_link_without_capacity_is_a_blackhole() -> None:
    traffic = [job_traffic(parse_job(ring("j", ["b1", "b2"]), "<t>", FABRIC), FABRIC)]
    no_direct = np.array([[0, 0.0, 800.0], [0.0, 0, 800.0], [800.0, 800.0, 0]])
    with pytest.raises(NoCapacity, match="b1 -> b2"):
        played_jobs(traffic, FABRIC.block_names, {}, no_direct)
