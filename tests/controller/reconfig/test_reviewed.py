"""Reviewed plans (ctl toe --apply): kept by id, refused when they no longer fit the fabric."""

from __future__ import annotations

import pytest

from controller.reconfig.reviewed import PlanNotFound, ReviewedPlans, apply_problem
from controller.reconfig.stage_plan import reconfiguration_plan
from optimizer.staging import stage_changes
from optimizer.te import min_mlu
from optimizer.topology import mesh_topology, uniform_mesh
from optimizer.traffic import gravity_matrix
from tests.support import shipped_fabric
from tests.support.plans import small_plan, stage
from tests.support.toe_support import swap_rewire

FABRIC = shipped_fabric("fabric-8")
MESH = frozenset(uniform_mesh(FABRIC))


def evaluate(fabric, topology, tm):  # type: ignore[no-untyped-def]
    return min_mlu(fabric, topology, tm, spine=())


def _reviewed(load: float):  # type: ignore[no-untyped-def]
    target = swap_rewire(FABRIC, sorted(MESH), swaps=8, seed=3)
    tm = gravity_matrix(FABRIC, seed=3, load=load, skew=1.0)
    staging = stage_changes(FABRIC, MESH, target, tm, evaluate, threshold=0.8)
    plan = reconfiguration_plan(FABRIC, "dry_run", staging, staging.start_mlu, staging.final_mlu, "test")
    store = ReviewedPlans(keep=2)
    return store, store.get(store.add(plan, MESH)), tm


def test_a_plan_that_still_fits_can_be_applied_and_ids_are_stable() -> None:
    store, reviewed, tm = _reviewed(0.3)
    assert apply_problem(FABRIC, reviewed, MESH, False, tm, 0.8, 1.0, evaluate) is None
    assert store.add(reviewed.plan, MESH) == reviewed.plan_id  # same plan, same start: same id


def test_reasons_for_refusing_a_reviewed_plan() -> None:
    _, reviewed, tm = _reviewed(0.3)
    moved = MESH - {min(MESH)}
    assert "in flight" in (apply_problem(FABRIC, reviewed, MESH, True, tm, 0.8, 1.0, evaluate) or "")
    why = apply_problem(FABRIC, reviewed, moved, False, tm, 0.8, 1.0, evaluate) or ""
    assert "0 circuits appeared and 1 went" in why and "today's circuits" in why
    # the traffic grew since the plan: its first stage would now drain over the stage limit
    hot = tm.scaled(0.79 / evaluate(FABRIC, mesh_topology(FABRIC), tm))
    why = apply_problem(FABRIC, reviewed, MESH, False, hot, 0.8, 1.0, evaluate) or ""
    assert "no longer safe" in why and "stage 1 of" in why and "stage limit 0.8" in why


def test_old_plans_are_forgotten() -> None:
    store, reviewed, _ = _reviewed(0.3)
    store.add(small_plan(stages=[stage(0, domain=1)]), frozenset())
    store.add(small_plan(stages=[stage(0, domain=2)]), frozenset())
    with pytest.raises(PlanNotFound, match="last 2 dry runs"):
        store.get(reviewed.plan_id)
