"""The emulated NETCONF server on the wire: hello and framing (RFC 6242), rpc-error for broken
messages (RFC 6241), login, lock, kill-session, not serving, restart with the state kept."""

from __future__ import annotations

import paramiko
import pytest

from emulation.standard.netconf.session import CAPABILITIES
from southbound.errors import DeviceError, DeviceUnavailable, ErrorCode
from southbound.options import CallOptions, RetryPolicy
from southbound.standard.netconf import YANG_MODULE
from southbound.standard.netconf.driver import NetconfOcs
from southbound.standard.netconf.encoding import BASE_NS, NS, q
from southbound.types import CrossConnect as XC
from tests.southbound.standard.netconf.raw import HELLO_1_0, RawNetconf, hello_with
from tests.support.netconf_support import netconf_device, served_netconf_ocs

GET_PAIRS = f'<get><filter type="subtree"><cross-connects xmlns="{NS}"/></filter></get>'


def _error_tag(reply: object) -> str:
    tag = reply.find(f"{q('rpc-error', BASE_NS)}/{q('error-tag', BASE_NS)}")  # type: ignore[attr-defined]
    return "" if tag is None else tag.text


@pytest.mark.parametrize("hello", [HELLO_1_0, None], ids=["base-1.0-end-of-message", "base-1.1-chunked"])
def test_hello_advertises_the_module_and_both_framings_work(hello: str | None) -> None:
    with served_netconf_ocs() as (_, server, client, _):
        client.apply(expected_generation=1, add=[XC(0, 8)])
        raw = RawNetconf(server, hello) if hello else RawNetconf(server)
        try:
            offered = {c.text for c in raw.server_hello.iter(q("capability", BASE_NS))}
            session_id = raw.server_hello.findtext(q("session-id", BASE_NS))
            reply = raw.rpc(GET_PAIRS, message_id="m-42")
        finally:
            raw.close()
    assert offered == set(CAPABILITIES)
    assert any(f"module={YANG_MODULE}" in c for c in offered)
    assert session_id is not None and int(session_id) > 0
    assert reply.get("message-id") == "m-42"
    pairs = reply.findall(f".//{q('pair')}")
    assert [(p.findtext(q("ingress")), p.findtext(q("egress"))) for p in pairs] == [("0", "8")]
    assert raw.framer.chunked is (hello is None)


def test_malformed_xml_gets_a_malformed_message_error_and_the_session_goes_on() -> None:
    with served_netconf_ocs() as (_, server, _, _):
        raw = RawNetconf(server)
        try:
            raw.send(f'<rpc xmlns="{BASE_NS}" message-id="1"><get></rpc>')
            broken = raw.receive()
            raw.send(f'<rpc xmlns="{BASE_NS}"><get/></rpc>')
            no_id = raw.receive()
            unknown = raw.rpc("<commit/>", message_id="3")
            bad_op = raw.rpc(
                f'<edit-config><target><running/></target><config><cross-connects xmlns="{NS}">'
                f'<pair xmlns:nc="{BASE_NS}" nc:operation="frobnicate"><ingress>0</ingress>'
                "<egress>8</egress></pair></cross-connects></config></edit-config>", message_id="4")
            foreign = raw.rpc(
                '<edit-config><target><running/></target><config><interfaces '
                'xmlns="urn:ietf:params:xml:ns:yang:ietf-interfaces"/></config></edit-config>', "5")
            fine = raw.rpc(GET_PAIRS, message_id="6")
        finally:
            raw.close()
    assert _error_tag(broken) == "malformed-message"
    assert _error_tag(no_id) == "missing-attribute"
    assert no_id.findtext(f".//{q('bad-attribute', BASE_NS)}") == "message-id"
    assert _error_tag(unknown) == "operation-not-supported" and unknown.get("message-id") == "3"
    assert _error_tag(bad_op) == "bad-attribute"
    assert _error_tag(foreign) == "unknown-namespace"
    assert fine.get("message-id") == "6" and fine.find(q("data", BASE_NS)) is not None


def test_bad_login_is_refused() -> None:
    with served_netconf_ocs() as (_, server, _, _):
        with pytest.raises(paramiko.AuthenticationException):
            RawNetconf(server, password="wrong")
        client = NetconfOcs(netconf_device(server, password="wrong"))
        with pytest.raises(DeviceError) as refused:
            client.device_info()
        client.close()
    assert refused.value.code is ErrorCode.DENIED


def test_lock_keeps_other_sessions_from_editing_and_ends_with_the_session() -> None:
    lock = "<lock><target><running/></target></lock>"
    with served_netconf_ocs() as (device, server, client, _):
        holder = RawNetconf(server)
        other = RawNetconf(server)
        try:
            assert holder.rpc(lock).find(q("ok", BASE_NS)) is not None
            assert _error_tag(other.rpc(lock)) == "lock-denied"
            with pytest.raises(Exception, match="locked by session"):
                client.apply(expected_generation=1, add=[XC(0, 8)])
            assert device.generation == 1
            killer_id = other.server_hello.findtext(q("session-id", BASE_NS))
            holder_id = holder.server_hello.findtext(q("session-id", BASE_NS))
            itself = other.rpc(f"<kill-session><session-id>{killer_id}</session-id></kill-session>")
            assert _error_tag(itself) == "invalid-value"
            killed = other.rpc(f"<kill-session><session-id>{holder_id}</session-id></kill-session>")
            assert killed.find(q("ok", BASE_NS)) is not None
            result = client.apply(expected_generation=1, add=[XC(0, 8)])
        finally:
            holder.close()
            other.close()
    assert result.generation == 2


def test_not_serving_is_unavailable_and_serving_again_answers() -> None:
    with served_netconf_ocs() as (_, server, client, _):
        server.set_serving(False)
        with pytest.raises(DeviceUnavailable):
            client.cross_connects()
        server.set_serving(True)
        assert client.cross_connects().generation == 1


def test_restart_mid_session_raises_unavailable_then_reconnects_with_state_kept() -> None:
    with served_netconf_ocs() as (device, server, _, _):
        options = CallOptions(deadline_s=2.0, retry=RetryPolicy(max_attempts=2, initial_backoff_s=0.01))
        client = NetconfOcs(netconf_device(server, options=options))
        try:
            first = client.apply(expected_generation=1, add=[XC(0, 8)], request_id="before")
            port = server.port
            server.stop()
            with pytest.raises(DeviceUnavailable):
                client.cross_connects()
            server.start()
            assert server.port == port
            table = client.cross_connects()  # a new session on the restarted server
            again = client.apply(expected_generation=1, add=[XC(0, 8)], request_id="before")
        finally:
            client.close()
    assert table.cross_connects == {XC(0, 8)} and table.generation == first.generation == 2
    assert again.replayed and again.generation == 2 == device.generation


def test_connections_past_the_cap_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from emulation.standard.netconf import server as server_module

    monkeypatch.setattr(server_module, "MAX_CONNECTIONS", 1)
    with served_netconf_ocs() as (_, server, _, _):
        first = RawNetconf(server)
        try:
            with pytest.raises((paramiko.SSHException, EOFError, OSError)):
                RawNetconf(server)
            assert first.rpc(GET_PAIRS).find(q("data", BASE_NS)) is not None
        finally:
            first.close()


@pytest.mark.parametrize("hello", [
    HELLO_1_0.replace("</hello>", "<session-id>4</session-id></hello>"),  # only the server names it
    hello_with("urn:ietf:params:netconf:base:9.9"),  # no base capability in common
    "<hello>not netconf",
], ids=["session-id", "no-base", "malformed"])
def test_a_bad_client_hello_ends_the_session(hello: str) -> None:
    with served_netconf_ocs() as (_, server, client, _):
        raw = RawNetconf(server, hello)
        try:
            with pytest.raises((EOFError, OSError)):
                raw.rpc(GET_PAIRS)
        finally:
            raw.close()
        assert client.cross_connects().generation == 1  # the server goes on serving others
