"""Faults HA replicas must survive, with real processes: ``heliostat run`` replicas elected on
real etcd members, the emulated fabric in this process (real gRPC). Issue 14's list:

1. the leader SIGKILLed mid-stage: a standby leads within lease_ttl + a cycle and finishes
   the stage from the shared journal; devices equal the journal, nothing applied twice,
   nothing blackholed;
2. the leader SIGSTOPped past its lease, then SIGCONTed: it acts on nothing, steps down;
3. etcd: one of three members killed, no interruption; two, the leader stops acting, and
   acting resumes with quorum;
4. a replica of the same name, or of another fabric under the prefix: refused at start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from controller.reconfig.journal import IntentState, StepState
from optimizer.topology import Circuit
from optimizer.traffic import hotspot_matrix, uniform_matrix
from tests.support.cli_helpers import run_cli
from tests.support.daemon_support import (
    CONFIGS,
    running_fabric,
    start_daemon_process,
    stop_process,
    wait_for,
)
from tests.support.etcd_cluster import etcd_binary, etcd_cluster
from tests.support.ha_support import replica_config, replica_role, shared_journal

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        etcd_binary() is None, reason="etcd is not installed (.ci/install-etcd.sh installs it)"
    ),
]

FABRIC_FILE = CONFIGS / "fabric-8.yaml"
TTL = 2
TE_INTERVAL = 0.5


def log_tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def applies(stages, ocs: str) -> int:  # type: ignore[no-untyped-def]
    """How many of ``stages`` switch circuits on ``ocs`` (one apply, one generation, each)."""
    return sum(any(c.ocs == ocs for c in (*s.add, *s.remove)) for s in stages)


def device_circuits(fabric) -> frozenset[Circuit]:  # type: ignore[no-untyped-def]
    return frozenset(Circuit(n, c.a, c.b) for n, d in fabric.ocs.items() for c in d.established())


@pytest.mark.parametrize(("point", "protocols"), [
    ("drain", "native"), ("apply_ocs:after", "native"), ("undrain", "native"),
])
def test_the_leader_killed_mid_stage_is_replaced_and_the_stage_finished(
    tmp_path: Path, point: str, protocols: str
) -> None:
    step, _, when = point.partition(":")
    logs = {name: tmp_path / f"{name}.log" for name in "ab"}
    with etcd_cluster(tmp_path, 3) as etcd, \
            running_fabric(FABRIC_FILE, tmp_path, protocols=protocols) as fabric:
        fabric.set_demand(hotspot_matrix(fabric.fabric, seed=1, load=0.4))
        configs = {
            name: replica_config(tmp_path, FABRIC_FILE, fabric.devices_file, name, etcd.endpoints, TTL,
                                 toe_check_interval=1.0, te_interval=TE_INTERVAL)
            for name in "ab"
        }
        initial = {name: d.generation for name, d in fabric.ocs.items()}
        a = start_daemon_process(configs["a"][0], logs["a"], "--pause-at", point)
        b = None
        try:
            wait_for(lambda: replica_role(configs["a"][1])[0] == "leader", 60, what="a to lead")
            b = start_daemon_process(configs["b"][0], logs["b"])
            wait_for(lambda: replica_role(configs["b"][1])[:2] == ("standby", "a"), 60, what="b standby")
            journal = shared_journal(etcd.endpoints)

            def paused():  # type: ignore[no-untyped-def]
                journal.reload()
                point = journal.recovery_point()
                last = point.last_step if point else None
                at_step = last is not None and last.name == step and last.state is StepState.INTENT
                return at_step and point

            recovery = wait_for(paused, 90, what=f"a paused at {point}")
            stage = recovery.last_step.stage
            plan = recovery.intent.plan
            touched = {c.ocs for c in (*plan.stages[stage].add, *plan.stages[stage].remove)}
            if when == "after" or step == "undrain":  # the OCSes have applied; the journal may not say so
                wait_for(lambda: all(fabric.ocs[o].generation > initial[o] for o in touched), 30,
                         what="the apply")
            paused_generations = {o: fabric.ocs[o].generation for o in touched}
            epoch_a = replica_role(configs["a"][1])[2]
            kill(a)
            killed = time.monotonic()
            wait_for(lambda: replica_role(configs["b"][1])[0] == "leader", 3 * TTL + 5, what="b to lead")
            failover = time.monotonic() - killed
            intent = wait_for(
                lambda: (journal.reload() or True) and (i := journal.intent(recovery.intent.id)) and
                not i.in_progress and i, 90, what="b to finish the stage",
            )
            role, leader, epoch_b = replica_role(configs["b"][1])
            status = run_cli("ctl", "--address", configs["b"][1], "status", timeout=60)
        finally:
            kill(a)
            if b is not None:
                assert stop_process(b) == 0, log_tail(logs["b"])
        assert failover <= TTL + TE_INTERVAL + 2.0, failover  # lease_ttl + one cycle (+ polling slack)
        assert (role, leader) == ("leader", "b") and epoch_b > epoch_a  # type: ignore[operator]
        assert intent.state is IntentState.DONE, (intent.reason, log_tail(logs["b"]))
        journal.reload()
        record = journal.current_topology()
        assert record is not None and device_circuits(fabric) == frozenset(record.circuits)
        for ocs in touched:  # nothing applied twice: one generation per stage touching the OCS
            assert fabric.ocs[ocs].generation == initial[ocs] + applies(plan.stages, ocs), ocs
            if step != "drain":  # applied by the killed leader, not again by the new one
                later = applies(plan.stages[stage + 1:], ocs)
                assert fabric.ocs[ocs].generation == paused_generations[ocs] + later, ocs
        assert fabric.stats().blackholed_bytes == 0
        assert f"leader (epoch {epoch_b})" in status.stdout, status.stdout + status.stderr


def test_a_leader_paused_past_its_lease_wakes_up_as_a_standby(tmp_path: Path) -> None:
    logs = {name: tmp_path / f"{name}.log" for name in "ab"}
    with etcd_cluster(tmp_path, 1) as etcd, running_fabric(FABRIC_FILE, tmp_path) as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, 0.3))
        configs = {
            name: replica_config(tmp_path, FABRIC_FILE, fabric.devices_file, name, etcd.endpoints, TTL,
                                 te_interval=TE_INTERVAL)
            for name in "ab"
        }
        a = start_daemon_process(configs["a"][0], logs["a"])
        b = None
        try:
            wait_for(lambda: replica_role(configs["a"][1])[0] == "leader", 60, what="a to lead")
            b = start_daemon_process(configs["b"][0], logs["b"])
            wait_for(lambda: replica_role(configs["b"][1])[:2] == ("standby", "a"), 60, what="b standby")
            os.killpg(a.pid, signal.SIGSTOP)
            wait_for(lambda: replica_role(configs["b"][1])[0] == "leader", 3 * TTL + 5, what="b to lead")
            epoch_b = replica_role(configs["b"][1])[2]
            os.killpg(a.pid, signal.SIGCONT)
            acting_after_wake = replica_role(configs["a"][1])[0]  # its own clock: the lease ran out
            seen = wait_for(lambda: (r := replica_role(configs["a"][1]))[1] == "b" and r, 15,
                            what="a to see b lead")
        finally:
            if a.poll() is None:
                os.killpg(a.pid, signal.SIGCONT)
            assert stop_process(a) == 0, log_tail(logs["a"])
            if b is not None:
                assert stop_process(b) == 0, log_tail(logs["b"])
        assert acting_after_wake == "standby"
        assert seen == ("standby", "b", epoch_b)
        text = logs["a"].read_text()
        assert "stepping down" in text, log_tail(logs["a"])
        assert fabric.stats().blackholed_bytes == 0


def test_etcd_losing_one_member_is_no_interruption_and_losing_quorum_stops_the_leader(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    with etcd_cluster(tmp_path, 3) as etcd, running_fabric(FABRIC_FILE, tmp_path) as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, 0.3))
        # lease_ttl 3: the window a leader acts in (2.4 s) holds an etcd leader election (the
        # members' election timeout is 0.5 s) and a failed keep-alive or two
        config, address = replica_config(tmp_path, FABRIC_FILE, fabric.devices_file, "a", etcd.endpoints, 3,
                                         te_interval=TE_INTERVAL)
        a = start_daemon_process(config, log)
        try:
            wait_for(lambda: replica_role(address)[0] == "leader", 60, what="a to lead")
            epoch = replica_role(address)[2]
            etcd.kill(etcd.members[0])  # the member every client talks to first
            roles = []
            deadline = time.monotonic() + 3 * TTL
            while time.monotonic() < deadline:
                roles.append(replica_role(address)[::2])
                time.sleep(0.2)
            assert set(roles) == {("leader", epoch)}, roles  # no interruption, same epoch
            etcd.kill(etcd.members[1])  # quorum lost
            wait_for(lambda: replica_role(address)[0] == "standby", 3 * TTL, what="a to stop acting")
            assert fabric.stats().blackholed_bytes == 0  # fail static: the fabric forwards on
            etcd.restart(etcd.members[1])
            wait_for(lambda: replica_role(address)[0] == "leader", 30, what="a to lead again with quorum")
        finally:
            assert stop_process(a) == 0, log_tail(log)
        assert fabric.stats().blackholed_bytes == 0


def test_a_second_replica_of_the_same_name_or_another_fabric_is_refused(tmp_path: Path) -> None:
    with etcd_cluster(tmp_path, 1) as etcd, running_fabric(FABRIC_FILE, tmp_path) as fabric:
        config, address = replica_config(tmp_path, FABRIC_FILE, fabric.devices_file, "a", etcd.endpoints, TTL)
        a = start_daemon_process(config, tmp_path / "a.log")
        try:
            wait_for(lambda: replica_role(address)[0] == "leader", 60, what="a to lead")
            (tmp_path / "twin").mkdir()
            twin, _ = replica_config(tmp_path / "twin", FABRIC_FILE, fabric.devices_file, "a",
                                     etcd.endpoints, TTL)
            other, _ = replica_config(tmp_path, CONFIGS / "fabric-4.yaml", fabric.devices_file, "c",
                                      etcd.endpoints, TTL)
            results = {}
            for what, path in (("twin", twin), ("other", other)):
                run = start_daemon_process(path, tmp_path / f"{what}.log")
                results[what] = (run.wait(timeout=60), (tmp_path / f"{what}.log").read_text())
            assert replica_role(address)[0] == "leader"  # the refused replicas took nothing
        finally:
            assert stop_process(a) == 0
    code, text = results["twin"]
    assert code == 2 and "ha.name 'a': a replica of that name is already running" in text, text
    code, text = results["other"]
    assert code == 2 and "belongs to fabric 'demo-8'" in text and "'demo-4'" in text, text
