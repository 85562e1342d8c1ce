"""A drain that leaves some demand without a path (TE raises InfeasibleError: "no direct,
one-transit or spine path") is an unsafe stage, not the end of the plan (issue 31: on the hot-16
job mix, after a job-shaped topology every later plan failed this way, whole-domain drains first,
and the daemon kept its topology for the rest of the replay). Staging, the safe-sequence search
and the merge count it as an infinite MLU and try smaller steps."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.errors import InfeasibleError
from optimizer.staging import StagingBlocked, stage_changes
from optimizer.toe.merge import merge_stages
from optimizer.toe.sequence import sequence_steps
from tests.support.toe_support import staged_change

STRANDS = 8  # a topology missing more circuits than this (of the mesh's) strands demand


def _stranding(full: int):  # type: ignore[no-untyped-def]
    """A stand-in TE: MLU 0.5 and 0.01 more per circuit missing (of the mesh's ``full``); with
    more than ``STRANDS`` missing some demand has no path, and it raises as TE does (a whole
    domain's drain of this change misses more)."""

    def evaluate(fabric, topology, tm) -> float:  # type: ignore[no-untyped-def]
        missing = full - int(np.triu(np.asarray(topology.counts), 1).sum())
        if missing > STRANDS:
            raise InfeasibleError("no direct, one-transit or spine path for the demand b1->b2")
        return 0.5 + 0.01 * missing

    return evaluate


def test_a_drain_that_strands_demand_is_split_not_the_end_of_the_plan(fabric8) -> None:
    current, target, tm = staged_change(fabric8)
    evaluate = _stranding(len(current))
    plan = stage_changes(fabric8, current, target, tm, evaluate, threshold=0.8)
    assert plan.complete and set(plan.final_circuits) == set(target)
    assert all(0 < len(s.remove) <= STRANDS for s in plan.stages if s.remove)
    assert all(s.mlu_drained <= 0.8 for s in plan.stages)


def test_when_every_drain_strands_demand_staging_is_blocked_and_says_so(fabric8) -> None:
    current, target, tm = staged_change(fabric8)
    full = len(current)

    def always(fabric, topology, tm):  # type: ignore[no-untyped-def]
        if int(np.triu(np.asarray(topology.counts), 1).sum()) < full:
            raise InfeasibleError("no direct, one-transit or spine path for the demand b1->b2")
        return 0.5

    with pytest.raises(StagingBlocked, match="would leave some demand without a path"):
        stage_changes(fabric8, current, target, tm, always, threshold=0.8)


def test_todays_circuits_stranding_demand_is_still_an_error(fabric8) -> None:
    current, target, tm = staged_change(fabric8)

    def never(fabric, topology, tm):  # type: ignore[no-untyped-def]
        raise InfeasibleError("no direct, one-transit or spine path for the demand b1->b2")

    with pytest.raises(InfeasibleError, match="no direct, one-transit or spine path"):
        stage_changes(fabric8, current, target, tm, never, threshold=0.8)


def test_a_merge_whose_drain_strands_demand_is_not_made(fabric8) -> None:
    current, target, tm = staged_change(fabric8)
    evaluate = _stranding(len(current))
    plan = stage_changes(fabric8, current, target, tm, evaluate, threshold=0.8)
    assert len(plan.stages) >= 2
    merged = merge_stages(fabric8, current, plan, [tm], evaluate)
    assert all(len(s.remove) <= STRANDS for s in merged.stages)
    assert merged.final_circuits == plan.final_circuits
    assert len(merged.stages) <= len(plan.stages)


def test_the_safe_sequence_search_skips_swaps_that_strand_demand(fabric8) -> None:
    """Every swap's drain strands demand: no safe sequence (None), where the search used to
    give the whole plan up with TE's error."""
    current, _, tm = staged_change(fabric8)
    full = len(current)
    checked: list[int] = []

    def swaps_strand(fabric, topology, tm):  # type: ignore[no-untyped-def]
        missing = full - int(np.triu(np.asarray(topology.counts), 1).sum())
        checked.append(missing)
        if missing > 0:
            raise InfeasibleError("no direct, one-transit or spine path for the demand b1->b2")
        return 0.9

    assert sequence_steps(fabric8, current, [tm], swaps_strand, 0.8, max_checks=20) is None
    assert any(m > 0 for m in checked)  # drains were checked, and refused
