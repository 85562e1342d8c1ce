"""The SQLite journal: schema and WAL, round trips, crash safety across processes, named errors."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from controller.ha.etcd_journal import EtcdJournal
from controller.ha.etcd_kv import EtcdKV
from controller.reconfig.journal import (
    IntentState,
    Journal,
    JournalError,
    StepName,
    StepState,
)
from controller.reconfig.journal_schema import LATEST_VERSION
from optimizer.topology import Circuit, Topology, uniform_mesh
from optimizer.traffic import TrafficMatrix, gravity_matrix
from tests.support import ROOT, shipped_fabric
from tests.support.etcd_cluster import etcd_cluster
from tests.support.plans import small_plan, stage

FABRIC = shipped_fabric("fabric-4")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdKV]:
    """One real etcd member for the module's etcd journals (each test gets its own prefix)."""
    with etcd_cluster(tmp_path_factory.mktemp("etcd"), 1) as cluster:
        client = EtcdKV(cluster.endpoints)
        yield client
        client.close()


@pytest.fixture(params=["sqlite", "etcd"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Journal]:
    """The same tests against both backends: SQLite (one controller) and etcd (HA replicas,
    controller/ha/etcd_journal.py; skipped where etcd is not installed)."""
    if request.param == "sqlite":
        with Journal(tmp_path / "j.db", clock=FakeClock()) as j:
            yield j
        return
    client = request.getfixturevalue("etcd")
    with EtcdJournal(client, f"/test/{request.node.name}", clock=FakeClock()) as j:
        yield j  # type: ignore[misc]
        again = EtcdJournal(client, f"/test/{request.node.name}")  # what a new leader reads
        assert again.reconfigurations(1000) == j.reconfigurations(1000)
        assert again.recovery_point() == j.recovery_point()
        assert again.generations() == j.generations()
        assert [t for t, _ in again.matrix_history()] == [t for t, _ in j.matrix_history()]


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# -- schema ------------------------------------------------------------------------------------


def test_a_new_file_is_migrated_to_the_latest_schema_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "dir" / "j.db"
    with Journal(path) as j:
        assert j.schema_version == LATEST_VERSION
        assert j.journal_mode() == "wal"
        j.put_state("k", 1)
        assert Path(str(path) + "-wal").exists()
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert {"intents", "steps", "device_generations", "topology", "matrix_history", "state"} <= tables
    with Journal(path) as again:  # reopening does not migrate twice
        assert again.schema_version == LATEST_VERSION and again.get_state("k") == 1


def test_an_existing_empty_database_is_migrated_from_version_0(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE unrelated (x INTEGER)")
    conn.commit()
    conn.close()
    with Journal(path) as j:
        assert j.schema_version == LATEST_VERSION and j.journal_mode() == "wal"
        assert j.begin_intent(small_plan(1)).id == 1


def test_a_journal_from_a_newer_controller_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    Journal(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version = ?", (LATEST_VERSION + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(JournalError, match="newer") as info:
        Journal(path)
    assert str(path) in str(info.value)


def test_a_garbage_file_is_a_journal_error_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not an SQLite database at all\n" * 200)
    with pytest.raises(JournalError) as info:
        Journal(path)
    assert str(path) in str(info.value) and "corrupt" in str(info.value)


def test_a_damaged_database_is_a_journal_error_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "damaged.db"
    with Journal(path) as j:
        for t in range(50):
            j.append_matrix(float(t), gravity_matrix(FABRIC, seed=t))
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(path.read_bytes())
    page = 4096
    for offset in range(page, min(len(data), 6 * page)):  # scribble over the pages after the header
        data[offset] = 0xA5
    path.write_bytes(bytes(data))
    with pytest.raises(JournalError) as info, Journal(path) as j:
        j.matrix_history()
    assert str(path) in str(info.value)


def test_a_directory_is_not_a_journal(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="directory") as info:
        Journal(tmp_path)
    assert str(tmp_path) in str(info.value)


# -- intents and steps -------------------------------------------------------------------------


def test_intent_and_steps_round_trip(journal: Journal) -> None:
    plan = small_plan(stages=[stage(0, add=[Circuit("ocs1", 0, 40)])], planned_mlu=0.42)
    intent = journal.begin_intent(plan, trigger="operator")
    assert intent.in_progress and intent.plan == plan and intent.trigger == "operator"
    payloads = {}
    for name in StepName:
        payloads[name] = {"step": name.value, "ports": [1, 2]}
        step = journal.begin_step(intent.id, 0, name, payloads[name])
        assert step.state is StepState.INTENT and step.finished is None
        done = journal.complete_step(step.id, result={"ok": True})
        assert done.completed and done.result == {"ok": True} and done.finished is not None
    steps = journal.steps(intent.id)
    assert [s.name for s in steps] == [n.value for n in StepName]
    assert [s.payload for s in steps] == list(payloads.values())
    finished = journal.finish_intent(intent.id, IntentState.DONE)
    assert finished.state is IntentState.DONE and finished.finished is not None
    assert journal.in_flight_intent() is None and journal.recovery_point() is None


def test_only_one_intent_and_one_open_step_at_a_time(journal: Journal) -> None:
    first = journal.begin_intent(small_plan(1))
    with pytest.raises(JournalError, match="still in progress"):
        journal.begin_intent(small_plan(2))
    journal.begin_step(first.id, 0, StepName.DRAIN)
    with pytest.raises(JournalError, match="not finished"):
        journal.begin_step(first.id, 0, StepName.VERIFY_DRAIN)


def test_step_state_transitions_are_checked(journal: Journal) -> None:
    intent = journal.begin_intent(small_plan())
    step = journal.begin_step(intent.id, 0, StepName.APPLY_OCS, {"circuits": 4})
    failed = journal.fail_step(step.id, "ocs2 unavailable")
    assert failed.state is StepState.FAILED and failed.error == "ocs2 unavailable"
    with pytest.raises(JournalError, match="cannot become done"):
        journal.complete_step(step.id)
    undone = journal.roll_back_step(step.id)
    assert undone.state is StepState.ROLLED_BACK and undone.error == "ocs2 unavailable"
    with pytest.raises(JournalError, match="no step"):
        journal.complete_step(9999)
    rolled = journal.finish_intent(intent.id, IntentState.ROLLED_BACK, reason="apply_ocs failed")
    assert rolled.reason == "apply_ocs failed"
    with pytest.raises(JournalError, match="already rolled_back"):
        journal.finish_intent(intent.id, IntentState.DONE)
    with pytest.raises(JournalError, match="no more steps"):
        journal.begin_step(intent.id, 1, StepName.DRAIN)


def test_recovery_point_names_the_last_step_and_whether_it_completed(journal: Journal) -> None:
    intent = journal.begin_intent(small_plan(stages=[stage(0), stage(1)]))
    s1 = journal.begin_step(intent.id, 0, StepName.DRAIN)
    point = journal.recovery_point()
    assert point is not None and point.interrupted_step == s1 and not point.last_step_completed
    journal.complete_step(s1.id)
    point = journal.recovery_point()
    assert point is not None and point.last_step_completed and point.interrupted_step is None
    assert point.last_step is not None and point.last_step.name == "drain"
    assert journal.last_step(intent.id) == point.last_step


def test_history_of_reconfigurations_is_newest_first(journal: Journal) -> None:
    ids = []
    for n in range(3):
        intent = journal.begin_intent(small_plan(n))
        journal.finish_intent(intent.id, IntentState.DONE if n != 1 else IntentState.CANCELLED)
        ids.append(intent.id)
    history = journal.reconfigurations()
    assert [r.id for r in history] == ids[::-1]
    assert [r.plan.reason for r in journal.reconfigurations(limit=1, offset=1)] == ["plan 1"]


def test_a_failed_group_of_writes_leaves_nothing(journal: Journal) -> None:
    with pytest.raises(RuntimeError), journal.transaction():
        intent = journal.begin_intent(small_plan())
        journal.begin_step(intent.id, 0, StepName.DRAIN)
        raise RuntimeError("crash between the writes")
    assert journal.in_flight_intent() is None and journal.reconfigurations() == []


def test_values_that_are_not_json_are_refused(journal: Journal) -> None:
    with pytest.raises(JournalError, match="not JSON"):
        journal.begin_intent(small_plan(current_mlu=float("nan")))
    with pytest.raises(JournalError, match="not JSON"):
        journal.put_state("x", float("nan"))


# -- crash safety across processes -------------------------------------------------------------


def test_an_interrupted_step_is_found_by_a_new_process(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    writer = run_python(
        f"""
        import os, signal
        from controller.reconfig.journal import Journal, StepName
        from tests.support.plans import small_plan, stage
        j = Journal({str(path)!r})
        intent = j.begin_intent(small_plan(stages=[stage(0, domain=1)]))
        step = j.begin_step(intent.id, 0, StepName.DRAIN, {{"links": ["b1-b2"]}})
        j.complete_step(step.id)
        j.begin_step(intent.id, 0, StepName.VERIFY_DRAIN, {{"ports": [3, 4]}})
        os.kill(os.getpid(), signal.SIGKILL)  # no close, no checkpoint
        """
    )
    assert writer.returncode == -9, writer.stderr
    reader = run_python(
        f"""
        import json
        from controller.reconfig.journal import Journal
        with Journal({str(path)!r}) as j:
            point = j.recovery_point()
            last = point.last_step
            plan = point.intent.plan.to_json()
            print(json.dumps({{"intent": point.intent.id, "plan": plan, "name": last.name,
                              "state": last.state.value, "payload": last.payload,
                              "completed": point.last_step_completed, "steps": len(point.steps)}}))
        """
    )
    assert reader.returncode == 0, reader.stderr
    seen = json.loads(reader.stdout)
    assert seen == {
        "intent": 1,
        "plan": small_plan(stages=[stage(0, domain=1)]).to_json(),
        "name": "verify_drain",
        "state": "intent",
        "payload": {"ports": [3, 4]},
        "completed": False,
        "steps": 2,
    }


def test_readers_see_committed_state_while_a_writer_holds_a_transaction(tmp_path: Path) -> None:
    path = tmp_path / "wal.db"
    with Journal(path) as writer, Journal(path) as reader:
        committed = writer.begin_intent(small_plan(1))
        with writer.transaction():
            writer.begin_step(committed.id, 0, StepName.DRAIN)
            assert reader.steps(committed.id) == []  # not committed yet, and not blocked
            assert reader.in_flight_intent() == committed
        assert len(reader.steps(committed.id)) == 1


# -- generations, topology, matrices, state ----------------------------------------------------


def test_device_generations_are_monotonic_unless_forced(journal: Journal) -> None:
    journal.record_generation("b1", 3, "req-3")
    journal.record_generation("ocs1", 7)
    assert journal.generation("b1").generation == 3  # type: ignore[union-attr]
    with pytest.raises(JournalError, match="older"):
        journal.record_generation("b1", 2, "req-2")
    journal.record_generation("b1", 1, "reconcile", force=True)
    gens = journal.generations()
    assert {d: (g.generation, g.request_id) for d, g in gens.items()} == {
        "b1": (1, "reconcile"),
        "ocs1": (7, None),
    }
    assert journal.generation("nope") is None


def test_topology_and_circuits_round_trip(journal: Journal) -> None:
    assert journal.current_topology() is None
    circuits = uniform_mesh(FABRIC)
    topology = Topology.from_circuits(FABRIC, circuits)
    intent = journal.begin_intent(small_plan())
    journal.save_topology(topology, circuits, intent_id=intent.id)
    record = journal.current_topology()
    assert record is not None and record.intent_id == intent.id
    assert record.topology.blocks == topology.blocks
    assert np.array_equal(record.topology.counts, topology.counts)
    assert record.circuits == tuple(sorted(circuits))
    journal.save_topology(Topology.empty(FABRIC.block_names), [])
    emptied = journal.current_topology()
    assert emptied is not None and emptied.circuits == () and emptied.intent_id is None


def test_matrix_history_round_trips_exactly_and_is_pruned(journal: Journal) -> None:
    matrices = {float(t): gravity_matrix(FABRIC, seed=t) for t in range(0, 300, 30)}
    for t, tm in matrices.items():
        pruned = journal.append_matrix(t, tm, retention_s=100)
    assert pruned == 1  # the t=150 matrix fell out when t=270 arrived
    history = journal.matrix_history()
    assert [t for t, _ in history] == [180.0, 210.0, 240.0, 270.0]
    for t, tm in history:
        assert tm.blocks == matrices[t].blocks and np.array_equal(tm.gbps, matrices[t].gbps)
    assert [t for t, _ in journal.matrix_history(since=240)] == [240.0, 270.0]
    assert journal.prune_matrices(before=250) == 3


def test_named_state_and_matrix_state(journal: Journal) -> None:
    assert journal.get_state("paused", False) is False
    journal.put_state("paused", True)
    journal.put_state("last_plan", {"stages": []})
    assert journal.get_state("paused") is True and journal.get_state("last_plan") == {"stages": []}
    tm = TrafficMatrix(("a", "b"), np.array([[0.0, 1.5], [2.25, 0.0]]))
    journal.put_matrix_state("prediction", tm)
    back = journal.get_matrix_state("prediction")
    assert back is not None and np.array_equal(back.gbps, tm.gbps)
    journal.put_matrix_state("prediction", None)
    assert journal.get_matrix_state("prediction") is None
