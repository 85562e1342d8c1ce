"""The status page's facts: the fabric, the devices' health, the reconfiguration in flight."""

from __future__ import annotations

from pathlib import Path

from controller.reconfig.journal import IntentState, Journal
from controller.ui.facts import devices_json, fabric_json, reconfiguration_json, stage_progress
from optimizer.fabric import Fabric
from optimizer.topology import Circuit
from tests.support.plans import small_plan, stage


def test_fabric_lists_blocks_ocses_by_domain_and_the_spine(hybrid8: Fabric) -> None:
    data = fabric_json(hybrid8)
    assert data["name"] == hybrid8.name
    assert [b["name"] for b in data["blocks"]] == list(hybrid8.block_names)
    assert sorted(o for d in data["domains"] for o in d["ocs"]) == sorted(o.name for o in hybrid8.ocs)
    assert [d["domain"] for d in data["domains"]] == list(hybrid8.domains)
    assert [s["name"] for s in data["spine"]] == [s.name for s in hybrid8.spine]
    assert data["capacity_gbps"] == sum(b.uplinks * b.speed_gbps for b in hybrid8.blocks)


def test_devices_are_up_unreachable_unpowered_or_unknown(fabric4: Fabric) -> None:
    before = devices_json(fabric4, [], {}, {})
    assert {d["state"] for d in before} == {"unknown"}
    board = {
        "unreachable": ("b2",),
        "ocs_down": ("ocs2",),
        "maintenance": ("block:b3",),
        "circuits_installed": 16,
    }
    devices = {d["name"]: d for d in devices_json(fabric4, ["s1"], board, {"b1": 5.0, "b2": 3.0})}
    assert devices["b1"]["state"] == "up" and devices["b1"]["last_seen"] == 5.0
    assert devices["b2"]["state"] == "unreachable" and devices["b2"]["last_seen"] == 3.0
    assert devices["ocs2"]["state"] == "unpowered"
    assert devices["b3"]["maintenance"] and not devices["b1"]["maintenance"]
    assert devices["s1"]["kind"] == "spine" and devices["ocs1"]["last_seen"] is None
    assert len(devices) == len(fabric4.blocks) + len(fabric4.ocs) + 1


def test_progress_counts_whole_stages_and_the_steps_done() -> None:
    assert stage_progress(None, 3, 0) is None
    assert stage_progress(0, 2, 0) == 0.0
    assert stage_progress(0, 2, 5) == 0.5
    assert stage_progress(1, 2, 2) == 0.7
    assert stage_progress(1, 2, 99) == 1.0


def test_the_reconfiguration_in_flight_from_the_journal(tmp_path: Path) -> None:
    c1, c2, c3 = Circuit("ocs1", 0, 4), Circuit("ocs1", 1, 5), Circuit("ocs2", 0, 4)
    plan = small_plan(stages=[stage(0, remove=[c1, c2], add=[c3], mlu_after=0.5), stage(1, domain=1)])
    with Journal(tmp_path / "j.db") as journal:
        intent = journal.begin_intent(plan, "operator")
        for name in ("drain", "verify_drain", "apply_ocs", "qualify", "undrain"):
            journal.complete_step(journal.begin_step(intent.id, 0, name).id)
        journal.complete_step(journal.begin_step(intent.id, 1, "drain").id)
        journal.begin_step(intent.id, 1, "verify_drain")
        board = {"stage": 1, "stages_total": 2, "step": "verify_drain"}
        data = reconfiguration_json(journal.intent(intent.id), journal.steps(intent.id), board)
        assert data["id"] == intent.id and data["state"] == IntentState.IN_PROGRESS.value
        assert data["trigger"] == "operator"
        assert (data["stage"], data["stages_total"], data["step"]) == (1, 2, "verify_drain")
        assert data["progress"] == 0.6  # one stage of two, and one step of five of the second
        assert data["stages"][0] == {"index": 0, "domain": 0, "remove": 2, "add": 1,
                                     "mlu_start": None, "mlu_drained": None, "mlu_after": 0.5}
        assert [(s["stage"], s["step"], s["state"]) for s in data["journal"][-2:]] == [
            (1, "drain", "done"), (1, "verify_drain", "intent")]
