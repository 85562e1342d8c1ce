"""One NETCONF session on an SSH channel: the hello exchange, then <rpc>s answered in order
(message-id and every other attribute echoed) and RFC 5277 notifications interleaved."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from lxml import etree

from emulation.standard.netconf import replies
from emulation.standard.netconf.edit import parse_config
from emulation.standard.netconf.framing import Channel, Framer, FramingError
from emulation.standard.netconf.replies import RpcFailure
from southbound.standard.netconf import YANG_MODULE, YANG_REVISION, encoding, rpc_errors
from southbound.standard.netconf.encoding import BASE_NS, NOTIFICATION_NS, NS, XmlError, q
from southbound.types import OcsEvent

if TYPE_CHECKING:
    from emulation.standard.netconf.server import NetconfServer

log = logging.getLogger(__name__)

BASE_1_0 = "urn:ietf:params:netconf:base:1.0"
BASE_1_1 = "urn:ietf:params:netconf:base:1.1"
CAPABILITIES = (
    BASE_1_0, BASE_1_1,
    "urn:ietf:params:netconf:capability:writable-running:1.0",
    "urn:ietf:params:netconf:capability:rollback-on-error:1.0",
    "urn:ietf:params:netconf:capability:notification:1.0",
    "urn:ietf:params:netconf:capability:interleave:1.0",
    f"{NS}?module={YANG_MODULE}&revision={YANG_REVISION}",
)
_EVENT_POLL_S = 0.1


def _hello(session_id: int) -> bytes:
    hello = etree.Element(q("hello", BASE_NS), nsmap={None: BASE_NS})
    capabilities = etree.SubElement(hello, q("capabilities", BASE_NS))
    for capability in CAPABILITIES:
        etree.SubElement(capabilities, q("capability", BASE_NS)).text = capability
    etree.SubElement(hello, q("session-id", BASE_NS)).text = str(session_id)
    return etree.tostring(hello, xml_declaration=True, encoding="UTF-8")


def _one(rpc: etree._Element, name: str, ns: str = BASE_NS) -> etree._Element | None:
    return rpc.find(q(name, ns))


class Session:
    """Serves one client until it closes, is killed or the server stops."""

    def __init__(self, server: NetconfServer, channel: Channel, session_id: int) -> None:
        self.server = server
        self.session_id = session_id
        self._framer = Framer(channel)
        self._write_lock = threading.Lock()
        self._closed = threading.Event()
        self._subscribed = False
        self._subscription: queue.SimpleQueue[OcsEvent] | None = None
        self._handlers: dict[tuple[str, str], Callable[[etree._Element, dict[str, str]], etree._Element]] = {
            (BASE_NS, "get"): self._get, (BASE_NS, "get-config"): self._get_config,
            (BASE_NS, "edit-config"): self._edit_config, (BASE_NS, "lock"): self._lock,
            (BASE_NS, "unlock"): self._unlock, (BASE_NS, "close-session"): self._close_session,
            (BASE_NS, "kill-session"): self._kill_session,
            (NOTIFICATION_NS, "create-subscription"): self._create_subscription,
        }

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def close(self) -> None:
        self._closed.set()

    def _write(self, element: etree._Element) -> None:
        with self._write_lock:
            self._framer.write(etree.tostring(element, xml_declaration=True, encoding="UTF-8"))

    def run(self) -> None:
        try:
            with self._write_lock:
                self._framer.write(_hello(self.session_id))
            if not self._client_hello(self._framer.read()):
                return
            while not self.closed:
                self._answer(self._framer.read())
        except (EOFError, OSError, FramingError) as exc:
            log.debug("session %d ends: %s", self.session_id, exc)
        finally:
            self._closed.set()

    def _client_hello(self, message: bytes) -> bool:
        try:
            hello = encoding.parse_xml(message)
        except XmlError:
            log.info("session %d: malformed hello, closing", self.session_id)
            return False
        offered = {(c.text or "").strip() for c in hello.iter(q("capability", BASE_NS))}
        if hello.tag != q("hello", BASE_NS) or not offered & {BASE_1_0, BASE_1_1}:
            log.info("session %d: no NETCONF base capability in the hello, closing", self.session_id)
            return False
        if hello.find(q("session-id", BASE_NS)) is not None:
            log.info("session %d: a client hello with a session-id, closing (RFC 6241 8.1)", self.session_id)
            return False
        self._framer.chunked = BASE_1_1 in offered
        return True

    def _answer(self, message: bytes) -> None:
        try:
            rpc = encoding.parse_xml(message)
        except XmlError as exc:
            self._write(replies.error({}, RpcFailure("malformed-message", str(exc), error_type="rpc")))
            return
        attributes = {k: v for k, v in rpc.attrib.items() if isinstance(k, str)}
        try:
            if rpc.tag != q("rpc", BASE_NS):
                raise RpcFailure("unknown-element", f"expected <rpc>, got <{etree.QName(rpc).localname}>",
                                 error_type="rpc", info={"bad-element": etree.QName(rpc).localname})
            if "message-id" not in attributes:
                raise RpcFailure("missing-attribute", "<rpc> has no message-id", error_type="rpc",
                                 info={"bad-attribute": "message-id", "bad-element": "rpc"})
            operations = [child for child in rpc if isinstance(child.tag, str)]
            if len(operations) != 1:
                raise RpcFailure("malformed-message", "an <rpc> holds exactly one operation",
                                 error_type="rpc")
            operation = operations[0]
            name = etree.QName(operation)
            handler = self._handlers.get((name.namespace or "", name.localname))
            if handler is None:
                raise RpcFailure("operation-not-supported", f"operation <{name.localname}> is not supported",
                                 error_type="protocol", info={"bad-element": name.localname})
            if not self.server.serving and name.localname != "close-session":
                raise RpcFailure("resource-denied", f"{self.server.device_name} is not serving",
                                 app_tag=rpc_errors.NOT_SERVING)
            reply = handler(operation, attributes)
        except RpcFailure as failure:
            reply = replies.error(attributes, failure)
        self._write(reply)
        events, self._subscription = self._subscription, None
        if events is not None:
            threading.Thread(target=self._notify, args=(events,), daemon=True,
                             name=f"netconf-notify-{self.session_id}").start()

    # -- operations -------------------------------------------------------------------------------
    def _filter(self, operation: etree._Element) -> etree._Element | None:
        selection = _one(operation, "filter")
        if selection is None:
            return None
        if selection.get("type", "subtree") != "subtree":
            raise RpcFailure("operation-not-supported", "only subtree filters are supported (no :xpath)",
                             error_type="protocol", info={"bad-attribute": "type", "bad-element": "filter"})
        return selection

    def _get(self, operation: etree._Element, attributes: dict[str, str]) -> etree._Element:
        reply, data = replies.data(attributes)
        self.server.datastore.fill(data, self._filter(operation), config_only=False)
        return reply

    def _datastore(self, operation: etree._Element, role: str) -> None:
        where = _one(operation, role)
        names = [] if where is None else [etree.QName(c).localname for c in where if isinstance(c.tag, str)]
        if names != ["running"]:
            raise RpcFailure("invalid-value" if names else "missing-element",
                             f"<{role}> must be <running/> (no :candidate or :startup), got {names}",
                             error_type="protocol", info={"bad-element": role})

    def _get_config(self, operation: etree._Element, attributes: dict[str, str]) -> etree._Element:
        self._datastore(operation, "source")
        reply, data = replies.data(attributes)
        self.server.datastore.fill(data, self._filter(operation), config_only=True)
        return reply

    def _edit_config(self, operation: etree._Element, attributes: dict[str, str]) -> etree._Element:
        self._datastore(operation, "target")
        options = {n: (e.text or "").strip() for n in ("default-operation", "test-option", "error-option")
                   if (e := _one(operation, n)) is not None}
        default = options.get("default-operation", "merge")
        if default not in ("merge", "none"):
            raise RpcFailure("operation-not-supported",
                             f"default-operation {default[:20]!r} is not supported",
                             error_type="protocol", info={"bad-element": "default-operation"})
        if options.get("test-option", "test-then-set") != "test-then-set" or \
                options.get("error-option", "rollback-on-error") == "continue-on-error":
            raise RpcFailure("operation-not-supported", "edits are all or nothing: test-option "
                             "test-then-set, error-option rollback-on-error (or stop-on-error)",
                             error_type="protocol")
        config = _one(operation, "config")
        if config is None:
            raise RpcFailure("missing-element", "edit-config needs <config> (no :url)", error_type="protocol",
                             info={"bad-element": "config"})
        holder = self.server.lock_holder()
        if holder not in (None, self.session_id):
            raise RpcFailure("in-use", f"the running datastore is locked by session {holder}",
                             info={"session-id": holder})
        edit = parse_config(config, default, self.server.device_radix)
        self.server.datastore.edit(edit)
        return replies.ok(attributes)

    def _lock(self, operation: etree._Element, attributes: dict[str, str]) -> etree._Element:
        self._datastore(operation, "target")
        holder = self.server.take_lock(self.session_id)
        if holder != self.session_id:
            raise RpcFailure("lock-denied", f"the running datastore is locked by session {holder}",
                             error_type="protocol", info={"session-id": holder})
        return replies.ok(attributes)

    def _unlock(self, operation: etree._Element, attributes: dict[str, str]) -> etree._Element:
        self._datastore(operation, "target")
        if not self.server.release_lock(self.session_id):
            raise RpcFailure("operation-failed", "this session holds no lock on running",
                             error_type="protocol")
        return replies.ok(attributes)

    def _close_session(self, operation: etree._Element, attributes: dict[str, str]) -> etree._Element:
        self._closed.set()
        return replies.ok(attributes)

    def _kill_session(self, operation: etree._Element, attributes: dict[str, str]) -> etree._Element:
        target = _one(operation, "session-id")
        text = "" if target is None else (target.text or "").strip()
        if not text.isdigit() or int(text) == self.session_id or not self.server.kill(int(text)):
            raise RpcFailure("invalid-value", f"no other session {text[:20]!r} to kill",
                             error_type="protocol", info={"bad-element": "session-id"})
        return replies.ok(attributes)

    def _create_subscription(self, operation: etree._Element, attributes: dict[str, str]) -> etree._Element:
        stream = _one(operation, "stream", NOTIFICATION_NS)
        if stream is not None and (stream.text or "").strip() != "NETCONF":
            raise RpcFailure("invalid-value", "the only stream is NETCONF", error_type="protocol")
        if any(_one(operation, n, NOTIFICATION_NS) is not None for n in ("startTime", "stopTime", "filter")):
            raise RpcFailure("operation-not-supported", "no replay (startTime, stopTime) or filter",
                             error_type="protocol")
        if self._subscribed:
            raise RpcFailure("operation-failed", "this session is subscribed already", error_type="protocol")
        self._subscribed = True
        # subscribed before the <ok/> (no later event is missed), sent after it
        self._subscription = self.server.device.subscribe()
        return replies.ok(attributes)

    def _notify(self, events: queue.SimpleQueue[OcsEvent]) -> None:
        try:
            while not self.closed:
                try:
                    event = events.get(timeout=_EVENT_POLL_S)
                except queue.Empty:
                    continue
                self._write(encoding.event_to_xml(event, datetime.now(UTC).isoformat()))
        except (OSError, EOFError) as exc:
            log.debug("session %d: notification not sent: %s", self.session_id, exc)
        finally:
            self.server.device.unsubscribe(events)
