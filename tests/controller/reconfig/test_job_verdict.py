"""A job's plan judged by the jobs' communication time (controller/reconfig/job_verdict.py), on
the hand-worked case of tests/optimizer/test_job_objective.py: the ring's burst takes 30 ms
through b3 and 15 ms over eight direct circuits."""

from __future__ import annotations

import pytest

from controller.reconfig.job_verdict import (
    MAX_PLAYED_BLOCKS,
    comm_verdict,
    judge_for,
    precheck,
    worth_planning,
)
from optimizer.config import generate_fabric
from optimizer.jobs.objective import JobsJudge
from optimizer.mapping import map_topology
from optimizer.policy import Decision, ReconfigurePolicy
from tests.optimizer.test_job_objective import DIRECT, FABRIC, THROUGH_B3, TRAFFIC, routed

JUDGE = JobsJudge(FABRIC, (TRAFFIC,))
POLICY = ReconfigurePolicy(min_gain=0.1, min_interval_s=600.0)
REFUSED = Decision(False, "predicted gain 2.0% (MLU) is not over the 10.0% threshold", 0.02)
TODAY = frozenset(map_topology(FABRIC, THROUGH_B3).circuits)
TARGET = frozenset(map_topology(FABRIC, DIRECT).circuits)


def test_a_plan_the_mlu_refuses_applies_when_the_jobs_time_halves() -> None:
    verdict = comm_verdict(REFUSED, JUDGE, FABRIC, (TODAY, TARGET), routed(), (0.5, 0.49, 0.8), POLICY)
    assert verdict.apply and verdict.gain == pytest.approx(0.5)
    assert verdict.reason.startswith("the jobs' communication time 30.0 -> 15.0 ms per iteration (50.0%)")


def test_not_when_it_raises_the_mlu_over_today_s_and_the_stage_limit() -> None:
    verdict = comm_verdict(REFUSED, JUDGE, FABRIC, (TODAY, TARGET), routed(), (0.5, 0.9, 0.8), POLICY)
    assert not verdict.apply and verdict.reason.startswith(REFUSED.reason)
    assert "30.0 -> 15.0 ms" in verdict.reason


def test_not_when_the_jobs_gain_less_than_the_policy_nor_when_nothing_changes() -> None:
    worse = comm_verdict(REFUSED, JUDGE, FABRIC, (TARGET, TODAY), routed(), (0.5, 0.49, 0.8), POLICY)
    assert not worse.apply and "(-100.0%)" in worse.reason
    same = comm_verdict(REFUSED, JUDGE, FABRIC, (TODAY, TODAY), routed(), (0.5, 0.5, 0.8), POLICY)
    assert same == REFUSED
    applied = Decision(True, "predicted MLU gain 20%", 0.2)  # the MLU's apply stands as it is
    assert comm_verdict(applied, JUDGE, FABRIC, (TODAY, TARGET), routed(), (0.5, 0.4, 0.8), POLICY) == applied


def test_the_precheck_plays_the_lp_s_topology_against_today_s() -> None:
    gain = precheck(JUDGE, FABRIC, routed(), TODAY, 30.0)
    assert gain.before == pytest.approx(0.030) and gain.after < gain.before  # direct circuits planned
    assert worth_planning(gain, POLICY)
    assert not worth_planning(precheck(JUDGE, FABRIC, routed(), TARGET, 30.0), POLICY)  # already there


def test_a_fabric_over_the_played_size_is_not_judged_by_the_jobs_time() -> None:
    assert judge_for(FABRIC, [TRAFFIC]) is not None and judge_for(FABRIC, []) is None
    big = generate_fabric(MAX_PLAYED_BLOCKS + 1, 4, 2, 4 * (MAX_PLAYED_BLOCKS + 1) // 2 + 2)
    assert big.n_blocks > MAX_PLAYED_BLOCKS and judge_for(big, [TRAFFIC]) is None
