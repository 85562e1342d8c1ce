"""The whole slow loop: ToE, mapping, staging and final TE in one call."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from optimizer.config import generate_fabric
from optimizer.errors import InfeasibleError
from optimizer.mapping import map_topology
from optimizer.policy import ReconfigurePolicy
from optimizer.toe import ToeKnobs
from optimizer.toe.reconfigure import decide, plan_reconfiguration
from optimizer.topology import Topology, uniform_mesh
from optimizer.traffic import gravity_matrix
from tests.support.toe_support import wiring_problems


@pytest.fixture(scope="module")
def jupiter8():
    """Jupiter-shaped: 512 uplinks over 256 OCS of 136 ports in 4 domains, 8 blocks."""
    return generate_fabric(8, 512, 256, 136, 4)


@pytest.fixture(scope="module")
def first(jupiter8):
    return plan_reconfiguration(jupiter8, gravity_matrix(jupiter8, seed=1, skew=2.0))


def test_plan_is_valid_consistent_and_safely_staged(jupiter8, first):
    assert wiring_problems(jupiter8, first.mapping.circuits) == []
    assert np.array_equal(first.mapping.topology.counts, first.toe.topology.counts)
    assert first.staging.final_circuits == frozenset(first.mapping.circuits)
    for stage in first.staging.stages:
        assert stage.mlu_drained <= max(0.8, stage.mlu_start) + 1e-9
    assert first.routing.mlu == pytest.approx(first.staging.final_mlu, rel=1e-6)
    assert np.array_equal(first.routing.topology.counts, first.toe.topology.counts)
    data = first.to_json()
    assert data["bound"]["throughput_scale_relaxed"] == pytest.approx(
        first.toe.throughput_scale_relaxed, abs=1e-6
    )
    assert len(data["circuits"]) == len(first.mapping.circuits)
    assert data["changes"]["removed"] == first.mapping.removed


def test_replanning_from_the_plan_changes_nothing(jupiter8, first):
    again = plan_reconfiguration(jupiter8, gravity_matrix(jupiter8, seed=1, skew=2.0), first.mapping.circuits)
    assert again.mapping.removed == again.mapping.added == 0
    assert again.staging.stages == ()
    assert not decide(again, now=1e9, last_change_at=None).apply


def test_decide_weighs_the_plan_against_today(first):
    # from the mesh the gravity plan gains stretch, not MLU or throughput (both at the hose bound)
    decision = decide(first, now=1e9, last_change_at=None, policy=ReconfigurePolicy(min_gain=0.05))
    assert not decision.apply and "not over" in decision.reason
    assert decision.gain == pytest.approx(0.0, abs=1e-6)
    too_soon = decide(first, now=100.0, last_change_at=0.0)
    assert not too_soon.apply and "minimum interval" in too_soon.reason


def _wasteful_mapper(extra: int):
    """The real mapping, but reporting ``extra`` more removals (as a weaker mapping would)."""

    def mapper(fabric, target, current):
        result = map_topology(fabric, target, current)
        return dataclasses.replace(result, removed=result.removed + extra if result.removed else 0)

    return mapper


def test_change_limit_holds_for_the_circuits_the_mapping_really_removes(jupiter8):
    tm = gravity_matrix(jupiter8, seed=2, skew=2.0)
    limit_fraction = 0.05
    limit = int(limit_fraction * Topology.from_circuits(jupiter8, uniform_mesh(jupiter8)).total_circuits())
    plan = plan_reconfiguration(
        jupiter8, tm, knobs=ToeKnobs(max_change=limit_fraction), mapper=_wasteful_mapper(40)
    )
    assert plan.mapping.removed <= limit
    assert plan.toe.max_removed is not None and plan.toe.max_removed < limit  # it had to re-plan tighter


def test_an_unmeetable_change_limit_is_an_error(jupiter8):
    tm = gravity_matrix(jupiter8, seed=2, skew=2.0)

    def always_over(fabric, target, current):
        result = map_topology(fabric, target, current)
        return dataclasses.replace(result, removed=10_000)

    with pytest.raises(InfeasibleError, match="over the change limit"):
        plan_reconfiguration(jupiter8, tm, knobs=ToeKnobs(max_change=0.05), mapper=always_over)
