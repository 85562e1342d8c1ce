"""The demand the controller plans for once jobs are announced (issue 31, item 2): per pair
max(measured, running jobs) + due jobs, worked by hand on three blocks."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.fabric import Block, Ocs, build_fabric
from optimizer.jobs import job_traffic, parse_job
from optimizer.jobs.intents import AnnouncedJob, JobPhase, planned_jobs, planning_demand, stage_traffic
from optimizer.staging import StageTiming
from optimizer.traffic import TrafficMatrix

BLOCKS = ("b1", "b2", "b3")
LEAD = 900.0


def matrix(entries: dict[tuple[int, int], float]) -> TrafficMatrix:
    gbps = np.zeros((3, 3))
    for (i, j), value in entries.items():
        gbps[i, j] = value
    return TrafficMatrix(BLOCKS, gbps)


def cell(m: TrafficMatrix | None, i: int, j: int) -> float:
    assert m is not None
    return float(m.gbps[i, j])


MEASURED = matrix({(0, 1): 10.0, (1, 0): 10.0, (1, 2): 4.0})


def test_a_job_is_announced_then_due_then_running_then_ended() -> None:
    job = AnnouncedJob("j", matrix({(0, 1): 1.0}), start=1000.0, end=2000.0)
    assert job.phase(0.0, LEAD) is JobPhase.ANNOUNCED  # starts in 1000 s > 900 s
    assert job.phase(99.0, LEAD) is JobPhase.ANNOUNCED  # 1000 <= 99 + 900 = 999 is false
    assert job.phase(100.0, LEAD) is JobPhase.DUE  # 1000 <= 100 + 900: just within the lead time
    assert job.phase(1000.0, LEAD) is JobPhase.RUNNING
    assert job.phase(1999.0, LEAD) is JobPhase.RUNNING
    assert job.phase(2000.0, LEAD) is JobPhase.ENDED


def test_the_boundary_of_the_lead_time() -> None:
    job = AnnouncedJob("j", matrix({(0, 1): 1.0}), start=1000.0)
    assert job.phase(99.0, LEAD) is JobPhase.ANNOUNCED
    assert job.phase(100.0, LEAD) is JobPhase.DUE
    assert job.phase(10**9, LEAD) is JobPhase.RUNNING  # no end: it runs until removed


def test_a_job_that_ends_before_it_starts_is_refused() -> None:
    with pytest.raises(ValueError, match="ends"):
        AnnouncedJob("j", matrix({}), start=10.0, end=10.0)


def test_a_running_job_raises_a_pair_only_above_what_is_measured() -> None:
    # b1->b2: measured 10, job 6: the job is already in the measurement -> 10 (not 16)
    # b2->b3: measured 4, job 7 (it just started) -> 7; b3->b1: measured 0, job 2 -> 2
    job = AnnouncedJob("r", matrix({(0, 1): 6.0, (1, 2): 7.0, (2, 0): 2.0}), start=0.0)
    demand = planning_demand(MEASURED, [job], now=50.0, lead=LEAD)
    assert cell(demand, 0, 1) == 10.0
    assert cell(demand, 1, 2) == 7.0
    assert cell(demand, 2, 0) == 2.0
    assert cell(demand, 1, 0) == 10.0  # untouched


def test_two_running_jobs_are_summed_before_the_maximum() -> None:
    # b1->b2: jobs 6 + 5 = 11 > measured 10 -> 11
    a = AnnouncedJob("a", matrix({(0, 1): 6.0}), start=0.0)
    b = AnnouncedJob("b", matrix({(0, 1): 5.0}), start=10.0)
    assert cell(planning_demand(MEASURED, [a, b], now=50.0, lead=LEAD), 0, 1) == 11.0


def test_a_due_job_is_added_to_the_measurement() -> None:
    # starts at 500, now 0, lead 900: due. b1->b2: 10 + 3 = 13; b3->b2: 0 + 8 = 8
    job = AnnouncedJob("d", matrix({(0, 1): 3.0, (2, 1): 8.0}), start=500.0)
    demand = planning_demand(MEASURED, [job], now=0.0, lead=LEAD)
    assert cell(demand, 0, 1) == 13.0
    assert cell(demand, 2, 1) == 8.0
    assert cell(demand, 1, 2) == 4.0


def test_running_and_due_together() -> None:
    # b1->b2: max(10, running 12) + due 3 = 15
    running = AnnouncedJob("r", matrix({(0, 1): 12.0}), start=0.0)
    due = AnnouncedJob("d", matrix({(0, 1): 3.0}), start=800.0)
    assert cell(planning_demand(MEASURED, [running, due], now=100.0, lead=LEAD), 0, 1) == 15.0
    assert planned_jobs([running, due], 100.0, LEAD) == {"r", "d"}


def test_announced_and_ended_jobs_count_for_nothing() -> None:
    later = AnnouncedJob("later", matrix({(0, 1): 50.0}), start=5000.0)
    ended = AnnouncedJob("ended", matrix({(0, 1): 50.0}), start=0.0, end=40.0)
    demand = planning_demand(MEASURED, [later, ended], now=50.0, lead=LEAD)
    assert demand is not None
    np.testing.assert_array_equal(demand.gbps, MEASURED.gbps)
    assert planned_jobs([later, ended], 50.0, LEAD) == frozenset()


def test_without_a_measurement_the_jobs_alone_are_planned_for() -> None:
    due = AnnouncedJob("d", matrix({(0, 2): 9.0}), start=100.0)
    demand = planning_demand(None, [due], now=0.0, lead=LEAD)
    assert demand is not None and demand.blocks == BLOCKS
    assert cell(demand, 0, 2) == 9.0 and float(demand.gbps.sum()) == 9.0
    assert planning_demand(None, [], now=0.0, lead=LEAD) is None
    assert planning_demand(None, [due], now=-5000.0, lead=LEAD) is None  # not yet due


def test_a_zero_lead_time_plans_only_for_running_jobs() -> None:
    due = AnnouncedJob("d", matrix({(0, 1): 3.0}), start=1.0)
    assert cell(planning_demand(MEASURED, [due], now=0.0, lead=0.0), 0, 1) == 10.0
    with pytest.raises(ValueError, match="lead time"):
        planning_demand(MEASURED, [due], now=0.0, lead=-1.0)


def test_a_job_over_other_blocks_is_refused() -> None:
    other = AnnouncedJob("x", TrafficMatrix(("a", "b"), np.zeros((2, 2))), start=0.0)
    with pytest.raises(ValueError, match="other blocks"):
        planning_demand(MEASURED, [other], now=1.0, lead=LEAD)


def test_a_job_files_average_traffic_is_what_a_due_job_adds() -> None:
    """A ring of 4 ranks over b1, b2 (2 each), 1 GB gradients, 1 s compute: the ring crosses
    b1->b2 once and b2->b1 once with 1.5 GB each; the all-reduce burst at 8 x 100 Gbit/s
    lasts 1.5e9 * 8 / 800e9 = 0.015 s, so the average is 1.5 * 8 / 1.015 Gbit/s each way."""
    fabric = build_fabric("t", [Block(b, 8, 100.0) for b in BLOCKS], [Ocs("o1", 24)])
    spec = parse_job(
        {
            "name": "ring",
            "model": {"parameters": 5e8, "bytes_per_parameter": 2},
            "parallelism": {"data": 4},
            "placement": {"accelerators_per_block": 2, "blocks": ["b1", "b2"]},
            "iteration_seconds": 1.0,
        },
        "<test>",
        fabric,
    )
    traffic = job_traffic(spec, fabric).mean()
    job = AnnouncedJob("ring", traffic, start=60.0)
    demand = planning_demand(None, [job], now=0.0, lead=LEAD, blocks=fabric.block_names)
    expected = 1.5 * 8 / 1.015
    assert cell(demand, 0, 1) == pytest.approx(expected)
    assert cell(demand, 1, 0) == pytest.approx(expected)
    assert cell(demand, 0, 2) == 0.0


def test_the_stages_before_each_due_job_starts_are_checked_without_it() -> None:
    """Timing 60 s for the plan, 270 s a stage: a job due in 700 s can meet stage 2 on (ends by
    60 + 3 * 270 = 870), not stages 0 and 1 (by 600); one due in 400 s can meet stage 1."""
    running = AnnouncedJob("run", matrix({(0, 1): 12.0, (0, 2): 3.0}), start=0.0)
    first = AnnouncedJob("first", matrix({(1, 2): 5.0}), start=1400.0)
    second = AnnouncedJob("second", matrix({(0, 2): 7.0}), start=1700.0)
    later = AnnouncedJob("later", matrix({(2, 0): 100.0}), start=5000.0)  # announced, not due
    jobs = [second, later, running, first]
    traffic = stage_traffic(MEASURED, jobs, 1000.0, LEAD, StageTiming(60.0, 270.0))
    assert traffic is not None
    (until_first, (before_first,)), (until_second, (before_second,)) = traffic.windows
    assert (until_first, until_second) == (1, 2)
    # before the first due job: max(measured, running) per pair, no due job
    assert cell(before_first, 0, 1) == 12.0 and cell(before_first, 1, 0) == 10.0
    assert cell(before_first, 0, 2) == 3.0 and cell(before_first, 1, 2) == 4.0
    # before the second: the first too
    assert cell(before_second, 1, 2) == 4.0 + 5.0 and cell(before_second, 0, 2) == 3.0
    # the stages after both windows are checked on the planning demand, which has both
    planned = planning_demand(MEASURED, jobs, 1000.0, LEAD)
    assert cell(planned, 0, 2) == 3.0 + 7.0 and cell(planned, 1, 2) == 9.0
    assert cell(planned, 2, 0) == 0.0  # the job beyond the lead time counts nowhere
    assert stage_traffic(MEASURED, [running, later], 1000.0, LEAD, StageTiming(60.0, 270.0)) is None
