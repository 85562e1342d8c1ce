"""The elector against real etcd members (tests/support/etcd_cluster.py): who leads, epochs,
refusals at start, take-over when a leader resigns or its lease runs out."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from controller.ha.config import HaConfig
from controller.ha.election import Role
from controller.ha.elector import Elector, ReplicaRefused
from tests.support.daemon_support import wait_for
from tests.support.etcd_cluster import EtcdCluster, etcd_cluster

TTL = 2


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[EtcdCluster]:
    with etcd_cluster(tmp_path, 1) as cluster:
        yield cluster


def config(cluster: EtcdCluster, name: str, prefix: str = "/heliostat/t") -> HaConfig:
    return HaConfig(tuple(cluster.endpoints), name, TTL, prefix)


def test_one_of_two_leads_and_a_resignation_hands_over_with_a_higher_epoch(etcd: EtcdCluster) -> None:
    seen: list[tuple[str, float]] = []
    with ExitStack() as stack:
        a = Elector(config(etcd, "a"), "fab", observe_latency=lambda verb, s: seen.append((verb, s)))
        a.start()
        stack.callback(a.stop)
        b = Elector(config(etcd, "b"), "fab")
        b.start()
        stack.callback(b.stop)
        assert (a.state.role, b.state.role) == (Role.LEADER, Role.STANDBY)
        assert a.acting() and not b.acting()
        assert b.state.leader == "a" and b.state.epoch == a.state.epoch == a.current_epoch() > 0
        first = a.state.epoch
        a.stop()
        wait_for(b.acting, timeout=3 * TTL, what="b to lead after a resigned")
        assert b.state.epoch > first and b.current_epoch() == b.state.epoch
        assert b.state.changes >= 2
    assert {"lease_grant", "lease_keepalive", "txn"} <= {verb for verb, _ in seen}
    assert all(0 <= s < 2.0 for _, s in seen)


def test_a_leader_whose_keepalives_stop_is_replaced_after_its_lease(etcd: EtcdCluster) -> None:
    a = Elector(config(etcd, "a"), "fab")
    a.start()
    b = Elector(config(etcd, "b"), "fab")
    b.start()
    try:
        assert a.acting()
        a._stop.set()  # the campaign thread ends: no more keep-alives (a paused process)
        a._thread.join()  # type: ignore[union-attr]
        wait_for(lambda: not a.acting(), timeout=TTL, what="a to stop acting on its own clock")
        wait_for(b.acting, timeout=3 * TTL, what="b to lead once a's lease expired")
        assert b.state.epoch > a.state.own_epoch
        a.refused("ocs1", b.state.epoch)  # a device tells the old leader
        assert a.state.role is Role.STANDBY and "fenced" in a.state.reason
    finally:
        b.stop()
        a.stop()


def test_a_second_replica_with_the_same_name_is_refused(etcd: EtcdCluster) -> None:
    a = Elector(config(etcd, "a"), "fab")
    a.start()
    try:
        twin = Elector(config(etcd, "a"), "fab")
        with pytest.raises(ReplicaRefused, match=r"ha\.name 'a': a replica of that name is already running"):
            twin.start()
        assert a.acting()  # the refused twin took nothing from the leader
    finally:
        a.stop()


def test_a_prefix_of_another_fabric_is_refused(etcd: EtcdCluster) -> None:
    a = Elector(config(etcd, "a"), "fabric-one")
    a.start()
    try:
        other = Elector(config(etcd, "b"), "fabric-two")
        with pytest.raises(ReplicaRefused, match=r"belongs to fabric 'fabric-one'.*'fabric-two'"):
            other.start()
        elsewhere = Elector(config(etcd, "b", prefix="/heliostat/two"), "fabric-two")
        elsewhere.start()  # its own prefix: it leads there
        assert elsewhere.acting()
        elsewhere.stop()
    finally:
        a.stop()


def test_no_etcd_is_refused_naming_the_endpoint(tmp_path: Path) -> None:
    from tests.support.etcd_cluster import free_ports

    port = free_ports(1)[0]
    elector = Elector(HaConfig((f"127.0.0.1:{port}",), "a", TTL, "/x"), "fab")
    with pytest.raises(ReplicaRefused, match=f"cannot join the election on etcd.*127.0.0.1:{port}"):
        elector.start()
