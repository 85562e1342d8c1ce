"""Two daemons of one fabric in this process, elected on a real etcd member: only the leader
acts, a standby refuses requests naming the leader and takes over when the leader resigns,
and the devices refuse the old leader's writes (its epoch is below the new leader's)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from prometheus_client import generate_latest

from controller.config import load_controller_config
from controller.daemon import Daemon
from controller.daemon.leadership import NotLeading
from controller.decision import ToeTrigger
from controller.ha.election import Role
from controller.northbound.api import ApiError, ApiErrorCode
from controller.northbound.daemon_api import DaemonApi
from optimizer.topology import Circuit
from optimizer.traffic import uniform_matrix
from southbound.errors import Fenced
from tests.support.daemon_support import CONFIGS, controller_config, free_port, running_fabric, wait_for
from tests.support.etcd_cluster import etcd_cluster

FABRIC_FILE = CONFIGS / "fabric-4.yaml"
TTL = 2


class FixedEpoch:
    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def current_epoch(self) -> int:
        return self.epoch

    def refused(self, device: str, highest_epoch: int) -> None:
        return None


def replica_config(tmp: Path, devices: Path, name: str, endpoints: list[str]) -> Path:
    folder = tmp / name
    folder.mkdir()
    path = controller_config(folder, FABRIC_FILE, devices)
    data = yaml.safe_load(path.read_text())
    data["ha"] = {"etcd": endpoints, "name": name, "lease_ttl": TTL, "prefix": "/heliostat/test"}
    data["listen"]["northbound"] = f"127.0.0.1:{free_port()}"  # published in the leader key
    path.write_text(yaml.safe_dump(data))
    return path


def test_only_the_leader_acts_and_the_old_leader_is_fenced(tmp_path: Path) -> None:
    events: dict[str, list[str]] = {"a": [], "b": []}
    with etcd_cluster(tmp_path, 1) as etcd, running_fabric(FABRIC_FILE, tmp_path) as fabric:
        a = Daemon(load_controller_config(replica_config(tmp_path, fabric.devices_file, "a", etcd.endpoints)),
                   listener=lambda kind, _: events["a"].append(kind))
        b = Daemon(load_controller_config(replica_config(tmp_path, fabric.devices_file, "b", etcd.endpoints)),
                   listener=lambda kind, _: events["b"].append(kind))
        try:
            a.start()
            b.start()
            assert a.acting() and not b.acting()
            assert a.journal is not None and b.journal is None  # a standby journals nothing
            first_epoch = a.elector.state.own_epoch  # type: ignore[union-attr]
            assert a.metrics.leader._value.get() == 1 and b.metrics.leader._value.get() == 0
            # TE pushes groups to every block, with the leader's epoch
            fabric.set_demand(uniform_matrix(fabric.fabric, 0.3))
            wait_for(lambda: a.cycle() is not None and a.te_runs > 0, 30, what="the leader's first TE")
            for block in fabric.fabric.block_names:  # every block has seen the leader's epoch
                with fabric.switch_client(block) as client:
                    client.epoch = FixedEpoch(first_epoch - 1)
                    with pytest.raises(Fenced):
                        client.drain([0])
            assert b.cycle() == []
            snapshot = b.board.snapshot()
            assert (snapshot["role"], snapshot["leader"], snapshot["epoch"]) == ("standby", "a", first_epoch)
            with pytest.raises(NotLeading, match="replica b is a standby: the leader is a"):
                b.submit(ToeTrigger())
            with pytest.raises(ApiError) as refused_api:  # what the northbound answers
                DaemonApi(b).pause_toe()
            assert refused_api.value.code is ApiErrorCode.FAILED_PRECONDITION
            assert "the leader is a at 127.0.0.1:" in refused_api.value.message
            with pytest.raises(ApiError, match=r"the leader is a at .*a standby holds no journal"):
                DaemonApi(b).history()
            assert DaemonApi(b).topology()["circuits"]  # from its read-only polls
            details = DaemonApi(b).status().details
            assert (details["role"], details["leader"], details["epoch"]) == ("standby", "a", first_epoch)
            exposed = generate_latest(a.metrics.registry).decode()
            assert "heliostat_leader 1.0" in exposed and "heliostat_leader_changes_total" in exposed
            assert 'heliostat_etcd_request_seconds_count{verb="lease_keepalive"}' in exposed

            a.elector.stop()  # type: ignore[union-attr]  # a resigns: its lease is revoked
            wait_for(b.acting, 3 * TTL, what="b to lead")
            b.cycle()
            assert "leading" in events["b"] and b.journal is not None
            # the shared journal: b read what a journaled (its matrix history, an intent a began
            # is finished by b's start-up, as after a restart) and the devices equal it
            assert b.journal.in_flight_intent() is None
            b_topology = b.journal.current_topology()
            assert b_topology is not None
            held = {Circuit(n, c.a, c.b) for n, d in fabric.ocs.items() for c, _ in d.cross_connects()[1]}
            assert held == set(b_topology.circuits)
            assert b.journal.matrix_history() and b.shared.recent  # b's prediction starts warm
            second_epoch = b.elector.state.own_epoch  # type: ignore[union-attr]
            assert second_epoch > first_epoch
            block = fabric.fabric.block_names[0]
            b.drivers.drain({block: [0]})  # type: ignore[union-attr]  # the new leader raises the bar
            b.drivers.undrain({block: [0]})  # type: ignore[union-attr]
            with pytest.raises(Fenced) as refused:
                a.drivers.switches[block].drain([1])  # type: ignore[union-attr]
            assert refused.value.highest_epoch == second_epoch
            assert a.elector.state.role is Role.STANDBY  # type: ignore[union-attr]
            assert not any(p["drained"] for p in fabric.switches[block].ports())
            assert a.cycle() == [] and a.journal is None and "standby" in events["a"]
            assert b.metrics.leader_changes._value.get() >= 2
        finally:
            b.close()
            a.close()
