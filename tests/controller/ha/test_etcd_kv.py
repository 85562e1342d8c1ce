"""The etcd edge against 3 real members: a killed member is skipped, quorum loss is a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.ha import etcd_kv as kv
from controller.ha.etcd_kv import EtcdError, EtcdKV, prefix_end
from tests.support.etcd_cluster import etcd_cluster


def test_prefix_end() -> None:
    assert prefix_end(b"/a/") == b"/a0"
    assert prefix_end(b"a\xff") == b"b"
    assert prefix_end(b"\xff\xff") == b"\0"


def test_a_killed_member_is_skipped_and_quorum_loss_is_named(tmp_path: Path) -> None:
    verbs: list[str] = []
    with etcd_cluster(tmp_path, 3) as etcd:
        client = EtcdKV(etcd.endpoints, timeout_s=1.0, observe=lambda verb, _: verbs.append(verb))
        try:
            lease = client.grant(5)
            first = client.put(b"/k", b"1", lease)
            etcd.kill(etcd.members[0])  # the endpoint the client talks to first
            assert client.keepalive(lease) > 0
            result = client.txn([kv.value_is(b"/k", b"1")], [kv.put(b"/k", b"2", lease)], [kv.get(b"/k")])
            assert result.succeeded and result.revision > first
            got = client.get(b"/k")
            assert got is not None and (got.value, got.lease) == (b"2", lease)
            assert [k.key for k in client.get_prefix(b"/")] == [b"/k"]
            etcd.kill(etcd.members[1])  # one member of three left: no quorum
            with pytest.raises(EtcdError):  # no endpoint answers in time (or "no leader")
                client.put(b"/k", b"3")
            etcd.restart(etcd.members[1])
            etcd.wait_healthy()
            assert client.put(b"/k", b"4") > result.revision
        finally:
            client.close()
    assert {"lease_grant", "put", "lease_keepalive", "txn", "range"} <= set(verbs)
