"""The typed plan (controller/reconfig/stage_plan.py): JSON only at the edges, with a schema
version, read back exactly, the journal's older plans included; bad JSON named by field."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from controller.decision import Settings
from controller.reconfig.stage_plan import PLAN_SCHEMA, Plan, PlanError
from controller.reconfig.toe_run import ToePlanner
from optimizer.topology import Circuit, uniform_mesh
from optimizer.traffic import hotspot_matrix
from tests.support import shipped_fabric

LEGACY_JOURNAL = Path(__file__).parent / "data" / "journal-b2f6973.db"
FABRIC = shipped_fabric("fabric-8")


def legacy_plan_json() -> dict[str, object]:
    """The plan main as of b2f6973 journaled (an untyped dict, no schema)."""
    with sqlite3.connect(LEGACY_JOURNAL) as conn:
        (text,) = conn.execute("SELECT plan FROM intents WHERE id = 1").fetchone()
    return json.loads(text)


def test_a_plan_from_the_planner_is_typed_and_reads_back_from_its_json() -> None:
    tm = hotspot_matrix(FABRIC, seed=1, load=0.6)
    mesh = uniform_mesh(FABRIC)
    proposal = ToePlanner(FABRIC, 0.8).propose("operator", tm, mesh, 0.0, None, Settings().policy)
    plan = proposal.plan
    assert plan.stages and all(isinstance(c, Circuit) for s in plan.stages for c in (*s.add, *s.remove))
    data = json.loads(json.dumps(plan.to_json()))
    assert data["schema"] == PLAN_SCHEMA
    assert Plan.from_json(data) == plan
    assert plan.circuits_added == sum(len(s.add) for s in plan.stages)


def test_a_plan_journaled_before_the_schema_reads_back_field_for_field() -> None:
    old = legacy_plan_json()
    assert "schema" not in old and old["stages"]
    plan = Plan.from_json(old)
    assert plan.stage(0).add[0] == Circuit(*old["stages"][0]["add"][0])  # type: ignore[index]
    assert plan.solver is not None and plan.solver.status == old["solver"]["status"]  # type: ignore[index]
    # the same JSON out, with the version added: the journal's and the API's plans did not change
    assert plan.to_json() == {"schema": PLAN_SCHEMA, **old}


def test_a_plan_from_a_newer_controller_or_with_a_bad_field_is_refused_by_name() -> None:
    old = legacy_plan_json()
    with pytest.raises(PlanError, match=r"plan\.schema: .* schema 1 to 1, got 99"):
        Plan.from_json({**old, "schema": 99})
    stages = json.loads(json.dumps(old["stages"]))
    stages[1]["add"][0] = ["ocs1", "x", 3]
    with pytest.raises(PlanError, match=r"plan\.stages\[1\]\.add\[0\]\[1\]: expected an integer"):
        Plan.from_json({**old, "stages": stages})
    with pytest.raises(PlanError, match=r"plan\.circuits_added: required key is missing"):
        Plan.from_json({k: v for k, v in old.items() if k != "circuits_added"})
    with pytest.raises(PlanError, match="has 2 stages, not a stage 2"):
        Plan.from_json(old).stage(2)
