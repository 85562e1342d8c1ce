"""<edit-config> and <get> that the server must refuse, each with its RFC 6241 error-tag and
the device left unchanged (raw XML on the wire)."""

from __future__ import annotations

import pytest

from southbound.standard.netconf.encoding import BASE_NS, NS, q
from tests.southbound.standard.netconf.raw import RawNetconf
from tests.support.netconf_support import served_netconf_ocs

NC = f'xmlns:nc="{BASE_NS}"'


def _edit(config: str, target: str = "<running/>", options: str = "") -> str:
    return (f"<edit-config><target>{target}</target>{options}"
            f'<config><cross-connects xmlns="{NS}" {NC}>{config}</cross-connects></config></edit-config>')


@pytest.mark.parametrize(
    ("body", "tag", "words"),
    [
        (_edit("<pair><egress>8</egress></pair>"), "missing-element", "ingress"),
        (_edit("<pair><ingress>0</ingress></pair>"), "missing-element", "egress"),
        (_edit("<pair><ingress>0</ingress><egress>70000</egress></pair>"), "invalid-value", "egress"),
        (_edit("<pair><ingress>zero</ingress><egress>8</egress></pair>"), "invalid-value", "ingress"),
        (_edit("<pair><ingress>0</ingress><ingress>1</ingress><egress>8</egress></pair>"), "bad-element",
         "twice"),
        (_edit("<pair><ingress>0</ingress><egress>99</egress></pair>"), "invalid-value", "unknown port 99"),
        (_edit("<pair><ingress>0</ingress><egress>8</egress><colour>red</colour></pair>"), "unknown-element",
         "colour"),
        (_edit("<pair><ingress>0</ingress><egress>8</egress></pair>", target="<candidate/>"), "invalid-value",
         "running"),
        (_edit("<pair><ingress>0</ingress><egress>8</egress></pair>",
               options="<default-operation>replace</default-operation>"), "operation-not-supported",
         "replace"),
        (_edit("<pair><ingress>0</ingress><egress>8</egress></pair>",
               options="<test-option>test-only</test-option>"), "operation-not-supported", "all or nothing"),
        (f'<edit-config><target><running/></target><config><cross-connects xmlns="{NS}" {NC} '
         'nc:operation="create"/></config></edit-config>', "operation-not-supported", "whole"),
        (f'<edit-config><target><running/></target><config><fence xmlns="{NS}"><epoch>-1</epoch></fence>'
         "</config></edit-config>", "invalid-value", "epoch"),
        ('<get><filter type="xpath" select="/hos:ports"/></get>', "operation-not-supported", "subtree"),
        ("<get-config><source><startup/></source></get-config>", "invalid-value", "running"),
    ],
)
def test_refused_requests_name_the_problem_and_change_nothing(body: str, tag: str, words: str) -> None:
    with served_netconf_ocs() as (device, server, _, _):
        raw = RawNetconf(server)
        try:
            reply = raw.rpc(body, message_id="v")
        finally:
            raw.close()
        generation, items = device.cross_connects()
    error = reply.find(q("rpc-error", BASE_NS))
    assert error is not None and reply.get("message-id") == "v"
    assert error.findtext(q("error-tag", BASE_NS)) == tag
    assert words in (error.findtext(q("error-message", BASE_NS)) or "")
    assert generation == 1 and items == []


def test_delete_of_the_whole_container_clears_every_pair() -> None:
    with served_netconf_ocs() as (device, server, _, _):
        raw = RawNetconf(server)
        try:
            raw.rpc(_edit("<pair><ingress>0</ingress><egress>8</egress></pair>"
                          "<pair><ingress>1</ingress><egress>9</egress></pair>"))
            assert len(device.cross_connects()[1]) == 2
            reply = raw.rpc(f'<edit-config><target><running/></target><config><cross-connects xmlns="{NS}" '
                            f'{NC} nc:operation="delete"/></config></edit-config>')
        finally:
            raw.close()
        assert reply.find(q("ok", BASE_NS)) is not None
        assert device.cross_connects()[1] == []
