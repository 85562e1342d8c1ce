"""Training jobs as the fabric sees them (issue 31, item 1): every formula checked on small cases
worked by hand, the job file's named errors, and the CLI's matrices and series."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from controller.replay.series import load_series
from optimizer.errors import ConfigError
from optimizer.fabric import Block, Ocs, build_fabric
from optimizer.jobs import Collective, job_traffic, jobs_series, line_rate_comm_seconds, load_job, parse_job
from optimizer.jobs.collectives import all_to_all, hierarchical_all_reduce, ring_all_reduce, tree_all_reduce
from tests.support import CONFIGS, shipped_fabric
from tests.support.cli_helpers import run_cli

B = 1.0e9  # a gradient buffer of 1 GB
FABRIC = build_fabric(
    "two", [Block("b1", 8, 100.0), Block("b2", 8, 100.0), Block("b3", 8, 100.0)], [Ocs("o1", 24)]
)


def job(**changes: object) -> dict:
    """Four ranks, two on each of b1 and b2: data 4, the rest 1; 1 GB of gradients per rank."""
    data = {
        "name": "j",
        "model": {"parameters": B / 2, "bytes_per_parameter": 2},
        "parallelism": {"data": 4},
        "placement": {"accelerators_per_block": 2, "blocks": ["b1", "b2"]},
        "collective": "ring",
        "iteration_seconds": 1.0,
    }
    for key, value in changes.items():
        data[key] = value
    return data


def fabric_bytes(data: dict) -> dict[tuple[str, str], float]:
    traffic = job_traffic(parse_job(data, "<test>", FABRIC), FABRIC)
    total = traffic.iteration_bytes()
    names = FABRIC.block_names
    return {(names[i], names[j]): float(total[i, j]) for i, j in zip(*np.nonzero(total), strict=True)}


# -- the formulas ---------------------------------------------------------------------------


def test_ring_all_reduce_sends_2_n_minus_1_over_n_of_the_buffer_to_the_successor() -> None:
    assert ring_all_reduce([10, 11, 12, 13], B) == [
        (10, 11, 1.5 * B),
        (11, 12, 1.5 * B),
        (12, 13, 1.5 * B),
        (13, 10, 1.5 * B),
    ]
    assert ring_all_reduce([5], B) == []
    assert ring_all_reduce([0, 1], B) == [(0, 1, B), (1, 0, B)]  # 2 (2 - 1) / 2 = 1


def test_tree_all_reduce_reduces_up_and_broadcasts_down_a_binary_tree() -> None:
    # parent(1) = parent(2) = 0, parent(3) = 1
    assert sorted(tree_all_reduce([0, 1, 2, 3], B)) == sorted(
        [(1, 0, B), (0, 1, B), (2, 0, B), (0, 2, B), (3, 1, B), (1, 3, B)]
    )


def test_hierarchical_all_reduce_rings_the_same_member_of_every_block() -> None:
    block = {0: "x", 1: "x", 2: "y", 3: "y"}.__getitem__
    # k = 2 blocks of m = 2: two rings over B / 2, each sends 2 (2 - 1) / 2 x B / 2 = B / 2
    assert sorted(hierarchical_all_reduce([0, 1, 2, 3], B, block)) == sorted(
        [(0, 2, B / 2), (2, 0, B / 2), (1, 3, B / 2), (3, 1, B / 2)]
    )


def test_all_to_all_sends_one_nth_to_every_other_member() -> None:
    sent = all_to_all([0, 1, 2, 3], 4 * B)
    assert len(sent) == 12 and all(v == B for _, _, v in sent)


# -- a job on the fabric --------------------------------------------------------------------


def test_a_ring_over_two_blocks_crosses_the_fabric_twice() -> None:
    # ranks 0, 1 on b1 and 2, 3 on b2: 1 -> 2 and 3 -> 0 cross, 1.5 GB each
    assert fabric_bytes(job()) == {("b1", "b2"): 1.5 * B, ("b2", "b1"): 1.5 * B}


def test_a_hierarchical_all_reduce_crosses_with_less_than_the_ring() -> None:
    assert fabric_bytes(job(collective="hierarchical")) == {("b1", "b2"): B, ("b2", "b1"): B}


def test_a_tree_sends_twice_the_buffer_each_way() -> None:
    # reduce: 2 -> 0 and 3 -> 1 cross; broadcast: 0 -> 2 and 1 -> 3
    assert fabric_bytes(job(collective="tree")) == {("b1", "b2"): 2 * B, ("b2", "b1"): 2 * B}


def test_pipeline_stages_on_two_blocks_send_activations_and_gradients() -> None:
    data = job(
        parallelism={"data": 1, "tensor": 2, "pipeline": 2},
        pipeline={"microbatches": 8, "activation_bytes": 1e8},
    )
    # ranks (tensor fastest): stage 0 = ranks 0, 1 on b1, stage 1 = ranks 2, 3 on b2; data 1: no all-reduce
    assert fabric_bytes(data) == {("b1", "b2"): 2 * 8 * 1e8, ("b2", "b1"): 2 * 8 * 1e8}


def test_expert_all_to_all_across_blocks() -> None:
    data = job(parallelism={"data": 4, "expert": 4}, experts={"all_to_all_bytes": 4 * B})
    crossing = fabric_bytes(data)
    # all-to-all: b1's two ranks each send B to each of b2's two: 4 B; plus the ring's 1.5 B
    assert crossing == {("b1", "b2"): 4 * B + 1.5 * B, ("b2", "b1"): 4 * B + 1.5 * B}


def test_the_phases_and_their_rates() -> None:
    data = job(parallelism={"data": 4, "expert": 4}, experts={"all_to_all_bytes": 4 * B})
    traffic = job_traffic(parse_job(data, "<test>", FABRIC), FABRIC)
    compute, reduce = traffic.phases
    assert compute.name == "compute" and compute.seconds == 1.0
    assert compute.gbps()[0, 1] == pytest.approx(4 * B * 8 / 1e9)  # 32 Gbit/s over the second
    # the all-reduce burst: b1 sends 1.5 GB over its 8 x 100G = 100 GB/s: 15 ms
    assert reduce.name == "all-reduce" and reduce.seconds == pytest.approx(1.5 * B / 100e9)
    assert traffic.period == pytest.approx(1.015)
    assert traffic.peak().gbps[0, 1] == pytest.approx(800.0)  # the burst fills b1's uplinks
    assert traffic.mean().gbps[0, 1] == pytest.approx(5.5 * B * 8 / 1e9 / 1.015)


def test_the_line_rate_floor_is_the_burst_and_what_outlasts_the_compute() -> None:
    # the all-to-all job above: 4 GB b1 -> b2 in a 1 s compute needs 4e9 / 100e9 = 40 ms at the
    # line rate (hidden), the all-reduce 15 ms: the floor is the burst alone
    hidden = job(parallelism={"data": 4, "expert": 4}, experts={"all_to_all_bytes": 4 * B})
    traffic = job_traffic(parse_job(hidden, "<test>", FABRIC), FABRIC)
    assert line_rate_comm_seconds(traffic, FABRIC) == pytest.approx(0.015)
    # 200 GB of all-to-all in 1 s: 2 s at 100 GB/s, 1 s of it exposed, plus the 15 ms burst
    exposed = job(parallelism={"data": 4, "expert": 4}, experts={"all_to_all_bytes": 200 * B})
    traffic = job_traffic(parse_job(exposed, "<test>", FABRIC), FABRIC)
    assert line_rate_comm_seconds(traffic, FABRIC) == pytest.approx(1.0 + 0.015)


def test_the_series_plays_every_phase_of_every_iteration() -> None:
    traffic = [job_traffic(parse_job(job(), "<test>", FABRIC), FABRIC)]
    times, gbps = jobs_series(traffic, iterations=2)
    burst = 1.5 * B / 100e9
    assert times == pytest.approx([0, 1, 1 + burst, 2 + burst, 2 + 2 * burst])
    assert gbps[0, 0, 1] == 0 and gbps[1, 0, 1] == pytest.approx(800.0) and gbps[2, 0, 1] == 0
    assert gbps[-1].sum() == 0  # idle once the jobs ended


# -- the job file ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "key", "problem"),
    [
        ({"parallelism": {"data": 3}}, "parallelism", "= 3, but the placement holds 2 x 2 blocks = 4"),
        ({"parallelism": {"data": 1, "tensor": 4}}, "parallelism.tensor", "does not divide"),
        ({"parallelism": {"data": 4, "expert": 3}}, "parallelism.expert", "does not divide the data"),
        ({"parallelism": {"data": 2, "pipeline": 2}}, "pipeline", "needs the pipeline section"),
        (
            {"placement": {"accelerators_per_block": 2, "blocks": ["b1", "b9"]}},
            "placement.blocks[1]",
            "no block 'b9'",
        ),
        (
            {"placement": {"accelerators_per_block": 2, "blocks": ["b1", "b1"]}},
            "placement.blocks[1]",
            "twice",
        ),
        ({"model": {"parameters": 1e20}}, "model.parameters", "must be <="),
        ({"model": {"parameters": -5}}, "model.parameters", "must be > 0"),
        ({"collective": "butterfly"}, "collective", "expected one of ring, tree, hierarchical"),
        ({"iteration_seconds": "soon"}, "iteration_seconds", "expected a number"),
        ({"gpus": 8}, "gpus", "unknown key"),
    ],
)
def test_a_bad_job_file_is_refused_naming_the_key(changes: dict, key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_job(job(**changes), "jobs/j.yaml", FABRIC)
    assert caught.value.key == key and problem in str(caught.value)


def test_hierarchical_needs_the_same_share_of_the_group_in_every_block() -> None:
    even = job(
        parallelism={"data": 6},
        placement={"accelerators_per_block": 2, "blocks": ["b1", "b2", "b3"]},
        collective="hierarchical",
    )
    assert parse_job(even, "<t>", FABRIC).collective is Collective.HIERARCHICAL  # 2 + 2 + 2
    # data 3 x pipeline 2 on blocks of 2: stage 0's group is ranks 0, 1 (b1) and 2 (b2)
    uneven = {
        **even,
        "parallelism": {"data": 3, "pipeline": 2},
        "pipeline": {"microbatches": 1, "activation_bytes": 1e6},
    }
    with pytest.raises(ConfigError, match="hierarchical needs each block"):
        parse_job(uneven, "<t>", FABRIC)
    assert fabric_bytes({**uneven, "collective": "ring"})  # a ring takes the same placement


def test_sizes_written_as_yaml_1_1_strings_are_numbers(tmp_path: Path) -> None:
    path = tmp_path / "j.yaml"
    path.write_text(
        "name: j\nmodel: {parameters: 5e8}\nparallelism: {data: 4}\n"
        "placement: {accelerators_per_block: 2, blocks: [b1, b2]}\niteration_seconds: 1\n"
    )
    assert load_job(path, FABRIC).parameters == 5e8


# -- heliostat demand generate --job --------------------------------------------------------


def test_the_shipped_jobs_load_and_the_cli_writes_their_matrix_and_series(tmp_path: Path) -> None:
    fabric = shipped_fabric("fabric-8")
    jobs = sorted((CONFIGS / "jobs").glob("*.yaml"))
    assert len(jobs) >= 2
    for path in jobs:
        load_job(path, fabric)
    args = ["demand", "generate", "--fabric", str(CONFIGS / "fabric-8.yaml")]
    for path in jobs:
        args += ["--job", str(path)]
    mean = json.loads(run_cli(*args, "--format", "json", check=True).stdout)
    peak = json.loads(run_cli(*args, "--peak", "--format", "json", check=True).stdout)
    expected = sum(job_traffic(load_job(p, fabric), fabric).mean().total() for p in jobs)
    total = sum(v for row in mean.values() for v in row.values())
    assert total == pytest.approx(expected, rel=1e-4)
    assert sum(v for row in peak.values() for v in row.values()) > total
    out = tmp_path / "jobs.csv"
    run_cli(*args, "--series", "3", "--out", str(out), check=True)
    series = load_series(out, fabric)
    assert len(series) > 6 and series.gbps[-1].sum() == 0
    bad = run_cli(*args[:4], "--series", "2")
    assert bad.returncode == 2 and "--series: needs --job" in bad.stderr


# -- sharing the fabric: max-min fair rates and completion times ------------------------------


def test_two_transfers_on_one_link_get_half_each_and_the_rest_is_freed_when_one_ends() -> None:
    from optimizer.jobs import completion_times, max_min_rates

    usage = np.array([[1.0], [1.0]])
    assert max_min_rates(usage, np.array([100.0])) == pytest.approx([50.0, 50.0])
    # 1 GB and 2 GB: both at 50 Gbit/s until the first is done at 8/50 s, then the second alone
    # at 100 for its last GB: 8/100 s more
    assert completion_times(usage, np.array([100.0]), np.array([1.0, 2.0])) == pytest.approx([0.16, 0.24])


def test_progressive_filling_gives_what_a_bottleneck_leaves_to_the_others() -> None:
    from optimizer.jobs import max_min_rates

    # A on link 0 (100); B on links 0 and 1 (30): B is held to 30 by link 1, A takes the 70 left
    usage = np.array([[1.0, 0.0], [1.0, 1.0]])
    assert max_min_rates(usage, np.array([100.0, 30.0])) == pytest.approx([70.0, 30.0])


def test_a_split_transfer_is_held_by_the_share_on_its_busiest_path() -> None:
    from optimizer.jobs.completion import link_usage, max_min_rates

    nodes = ["a", "b", "c"]
    capacity = np.array([[0, 100.0, 40.0], [100.0, 0, 100.0], [40.0, 100.0, 0]])
    tables = {"a": {"c": {"c": 1, "b": 1}}}  # half direct (40G), half through b
    usage, links = link_usage(nodes, tables, capacity, [(0, 2)])
    # r / 2 <= 40 on a -> c: 80 Gbit/s, though the path through b could take 100 more
    assert max_min_rates(usage, links) == pytest.approx([80.0])


def test_a_job_s_iteration_time_grows_when_another_job_shares_its_links() -> None:
    from optimizer.jobs import job_iteration_seconds

    alone = [job_traffic(parse_job(job(), "<t>", FABRIC), FABRIC)]
    other = job(name="k", placement={"accelerators_per_block": 2, "blocks": ["b2", "b1"]})
    both = [*alone, job_traffic(parse_job(other, "<t>", FABRIC), FABRIC)]
    capacity = np.array([[0, 800.0, 0], [800.0, 0, 0], [0, 0, 0.0]])  # one 800G trunk each way
    solo = job_iteration_seconds(alone, FABRIC.block_names, {}, capacity)["j"]
    assert solo == pytest.approx(1.5 * 8 / 800)  # 1.5 GB each way at the full 800 Gbit/s
    shared = job_iteration_seconds(both, FABRIC.block_names, {}, capacity)
    assert shared["j"] == pytest.approx(2 * solo) and shared["k"] == pytest.approx(2 * solo)
