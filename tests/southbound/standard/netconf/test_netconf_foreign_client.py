"""A foreign client on the emulated server: plain ncclient (the issue's named client), with the
XML written here, edits and reads cross-connects; the device's own state is the judge.

The reverse (our driver against a NETCONF server of another package) has no server to run:
the ``netconf`` package's server needs paramiko.dsskey, which paramiko 4 removed (we have 5),
and ncclient has no server (southbound/standard/netconf/README.md)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from ncclient import manager
from ncclient.operations.rpc import RPCError

from emulation.ocs_device import OcsDevice
from southbound.standard.netconf.encoding import NS
from southbound.types import CrossConnect as XC
from tests.support.netconf_support import PASSWORD, USERNAME, served_netconf_ocs
from tests.support.southbound_fixtures import wait_for


def _config(pairs: str, fence: str = "") -> str:
    return (f'<config xmlns="urn:ietf:params:xml:ns:netconf:base:1.0" '
            f'xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0">'
            f'{fence}<cross-connects xmlns="{NS}">{pairs}</cross-connects></config>')


def _pair(ingress: int, egress: int | None, operation: str = "") -> str:
    op = f' nc:operation="{operation}"' if operation else ""
    out = f"<egress>{egress}</egress>" if egress is not None else ""
    return f"<pair{op}><ingress>{ingress}</ingress>{out}</pair>"


def _circuits(device: OcsDevice) -> set[XC]:
    return {c for c, _ in device.cross_connects()[1]}


@contextmanager
def _ncclient() -> Iterator[tuple[OcsDevice, Any]]:
    with served_netconf_ocs(switching_time_s=0.0) as (device, server, _, _):
        host, port = server.address.rsplit(":", 1)
        m = manager.connect(host=host, port=int(port), username=USERNAME, password=PASSWORD,
                            hostkey_verify=False, look_for_keys=False, allow_agent=False, timeout=10)
        try:
            yield device, m
        finally:
            m.close_session()


def test_ncclient_merges_removes_and_replaces_pairs_with_default_operations() -> None:
    with _ncclient() as (device, m):
        assert any("heliostat-optical-switch" in c for c in m.server_capabilities)
        m.edit_config(target="running", config=_config(_pair(0, 8) + _pair(9, 1)))  # default merge
        assert _circuits(device) == {XC(0, 8), XC(1, 9)} and device.generation == 2
        m.edit_config(target="running", config=_config(_pair(0, 8)))  # merge of a present pair
        m.edit_config(target="running", config=_config(_pair(1, None, "remove") + _pair(5, None, "remove")))
        assert _circuits(device) == {XC(0, 8)}
        m.edit_config(target="running", config=_config(_pair(0, 12, "replace")))
        assert _circuits(device) == {XC(0, 12)}
        running = m.get_config(source="running").data_ele
        pairs = running.findall(f".//{{{NS}}}pair")
        assert [(p.findtext(f"{{{NS}}}ingress"), p.findtext(f"{{{NS}}}egress")) for p in pairs] == \
            [("0", "12")]
        assert running.find(f".//{{{NS}}}status") is None  # state is not configuration
        state = m.get(filter=("subtree", f'<ports xmlns="{NS}"><port><port-id>12</port-id></port></ports>'))
        assert state.data_ele.findtext(f".//{{{NS}}}connected-port") == "0"


def test_ncclient_create_of_a_present_pair_and_delete_of_an_absent_one_are_refused() -> None:
    with _ncclient() as (device, m):
        m.edit_config(target="running", config=_config(_pair(2, 10, "create")))
        with pytest.raises(RPCError) as exists:
            m.edit_config(target="running", config=_config(_pair(2, 10, "create") + _pair(3, 11, "create")))
        with pytest.raises(RPCError) as missing:
            m.edit_config(target="running", config=_config(_pair(4, 12, "delete")))
        assert _circuits(device) == {XC(2, 10)} and device.generation == 2
    assert exists.value.tag == "data-exists" and "2-10" in exists.value.message
    assert missing.value.tag == "data-missing" and "4-12" in missing.value.message


def test_ncclient_fence_refuses_a_stale_generation_with_its_error_info() -> None:
    fence = f'<fence xmlns="{NS}"><epoch>3</epoch><expected-generation>7</expected-generation></fence>'
    with _ncclient() as (device, m):
        with pytest.raises(RPCError) as stale:
            m.edit_config(target="running", config=_config(_pair(0, 8, "create"), fence))
        assert _circuits(device) == set()
    assert stale.value.tag == "operation-failed" and stale.value.app_tag == "generation-mismatch"
    assert "<hos:current-generation>1</hos:current-generation>" in stale.value.info


def test_ncclient_receives_circuit_notifications() -> None:
    with served_netconf_ocs(switching_time_s=0.0) as (device, server, client, _):
        host, port = server.address.rsplit(":", 1)
        m = manager.connect(host=host, port=int(port), username=USERNAME, password=PASSWORD,
                            hostkey_verify=False, look_for_keys=False, allow_agent=False, timeout=10)
        try:
            m.create_subscription()
            client.apply(expected_generation=1, add=[XC(0, 8)])
            first = m.take_notification(timeout=5)
            extra = m.take_notification(timeout=0.3)
        finally:
            m.close_session()
        wait_for(lambda: not device._subscribers, what="the subscription to end")
    assert first is not None and extra is None  # one circuit, one event
    body = first.notification_ele[1]
    assert body.tag == f"{{{NS}}}cross-connect-change"
    assert [body.findtext(f"{{{NS}}}{leaf}") for leaf in ("kind", "ingress", "egress", "generation")] == \
        ["circuit-up", "0", "8", "2"]
