"""What only the etcd journal does: writes fenced by the leader's lease, bounded history.
(The journal's own rules run against both backends in tests/controller/reconfig/test_journal.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.ha import etcd_journal
from controller.ha import etcd_kv as kv
from controller.ha.etcd_journal import EtcdJournal, Guard
from controller.ha.etcd_kv import EtcdKV
from controller.reconfig.journal import IntentState, JournalError, StepName, StepState
from tests.support.etcd_cluster import etcd_cluster
from tests.support.plans import small_plan, stage

LEADER = b"/j/leader"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[EtcdKV]:
    with etcd_cluster(tmp_path, 1) as cluster:
        c = EtcdKV(cluster.endpoints)
        yield c
        c.close()


def lead(client: EtcdKV) -> Guard:
    lease = client.grant(5)
    assert client.txn([kv.absent(LEADER)], [kv.put(LEADER, b"a", lease)]).succeeded
    return Guard(LEADER, lease)


def test_a_leader_whose_lease_is_gone_writes_nothing(client: EtcdKV) -> None:
    guard = lead(client)
    old = EtcdJournal(client, "/j", guard)
    intent = old.begin_intent(small_plan(stages=[stage(0)]))
    step = old.begin_step(intent.id, 0, StepName.DRAIN)
    client.revoke(guard.lease)  # the lease is lost (the leader key goes with it)
    new_guard = lead(client)  # another replica leads
    with pytest.raises(JournalError, match=r"no longer leads.*nothing was written"):
        old.complete_step(step.id)
    assert old.step(step.id).state is StepState.INTENT  # memory as before the refused write
    new = EtcdJournal(client, "/j", new_guard)  # the new leader reads the interrupted step
    point = new.recovery_point()
    assert point is not None and point.interrupted_step == old.step(step.id)
    new.complete_step(step.id)
    new.finish_intent(intent.id, IntentState.DONE)
    assert EtcdJournal(client, "/j").in_flight_intent() is None


def test_finished_intents_are_bounded(client: EtcdKV, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(etcd_journal, "MAX_INTENTS", 3)
    journal = EtcdJournal(client, "/b", lead(client))
    for n in range(5):
        intent = journal.begin_intent(small_plan(n))
        journal.complete_step(journal.begin_step(intent.id, 0, StepName.DRAIN).id)
        journal.finish_intent(intent.id, IntentState.DONE)
    again = EtcdJournal(client, "/b")
    assert [r.plan.reason for r in again.reconfigurations()] == ["plan 4", "plan 3", "plan 2"]
    assert len(client.get_prefix(b"/b/journal/steps/")) == 3
    assert journal.reconfigurations() == again.reconfigurations()


def test_an_unreachable_etcd_is_a_journal_error_naming_it(client: EtcdKV) -> None:
    journal = EtcdJournal(client, "/u", lead(client))
    dead = EtcdKV(["127.0.0.1:9"], timeout_s=0.3)
    journal.client = dead
    with pytest.raises(JournalError, match=r"etcd:/u/journal: write failed: etcd: no endpoint answered"):
        journal.put_state("x", 1)
    assert journal.get_state("x") is None
