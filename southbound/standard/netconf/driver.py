"""NetconfOcs: an optical circuit switch over NETCONF, with the native OcsClient's semantics.

An apply is ONE edit-config on the running datastore: the fence (epoch, expected generation,
request id) and a delete per removed pair, a create per added pair, all or nothing
(rollback-on-error). The edit's <ok/> carries no data, so the driver then reads the result
the device recorded for the request id (``fence-state/request``): its generation and whether
it was a replay. Events come on a second session subscribed with RFC 5277 create-subscription."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar
from xml.sax.saxutils import escape

from lxml import etree

from southbound.closing import ClosesOnExit
from southbound.devices import DeviceConfig
from southbound.errors import (
    ApplyFailed,
    DeviceError,
    DeviceUnavailable,
    ErrorCode,
    Fenced,
    InvalidRequest,
    SouthboundError,
    StaleGeneration,
    circuits_outcome,
)
from southbound.fencing import NO_ELECTION, EpochSource
from southbound.standard.netconf import encoding
from southbound.standard.netconf.encoding import NS
from southbound.standard.netconf.session import Manager, NetconfSession, netconf_endpoint
from southbound.types import ApplyResult, CrossConnect, CrossConnectTable, OcsEvent, OcsInfo, OcsPortStatus

log = logging.getLogger(__name__)

T = TypeVar("T")

_EVENT_POLL_S = 0.1


def _filter(*containers: str, ports: Iterable[int] = ()) -> list[str]:
    """A subtree filter selecting the module's top containers (and the given ports)."""
    parts = []
    for name in containers:
        if name == "ports" and ports:
            keys = "".join(f"<port><port-id>{int(p)}</port-id></port>" for p in ports)
            parts.append(f'<ports xmlns="{NS}">{keys}</ports>')
        else:
            parts.append(f'<{name} xmlns="{NS}"/>')
    return parts  # ncclient makes a list into one subtree <filter>


def _data(reply: object) -> etree._Element:
    data = getattr(reply, "data_ele", None)
    if data is None:
        raise encoding.XmlError("reply has no <data>")
    return data


class NetconfEventStream:
    """The device's notifications as OcsEvents until cancel(); a lost session raises
    DeviceUnavailable, the deadline DeviceUnavailable(DEADLINE), as the gRPC stream does."""

    def __init__(self, device: str, m: Manager, deadline_s: float) -> None:
        self._device = device
        self._manager = m
        self._ends = time.monotonic() + deadline_s
        self._cancelled = threading.Event()

    def __iter__(self) -> Iterator[OcsEvent]:
        while not self._cancelled.is_set():
            if time.monotonic() > self._ends:
                self.cancel()
                raise DeviceUnavailable(self._device, "event stream deadline passed", ErrorCode.DEADLINE)
            notification = self._manager.take_notification(block=True, timeout=_EVENT_POLL_S)
            if notification is None:
                if not self._manager.connected and not self._cancelled.is_set():
                    raise DeviceUnavailable(self._device, "NETCONF notification session lost",
                                            transport_code="transport")
                continue
            try:
                event = encoding.event_from_xml(notification.notification_ele)
            except encoding.XmlError as exc:
                log.warning("%s: notification skipped: %s", self._device, exc)
                continue
            if event is not None:
                yield event

    def cancel(self) -> None:
        if self._cancelled.is_set():
            return
        self._cancelled.set()
        try:
            self._manager._session.close()
        except Exception:  # a session already gone is as good as closed
            log.debug("%s: closing the notification session failed", self._device, exc_info=True)


class NetconfOcs(ClosesOnExit):
    """One OCS over NETCONF (its ``netconf`` endpoint and login in the devices file)."""

    def __init__(self, device: DeviceConfig) -> None:
        self.name = device.name
        self.endpoint = netconf_endpoint(device)
        self.address = self.endpoint.address
        self._session = NetconfSession(device.name, self.endpoint, device.options)
        #: the leadership epoch put on every edit (HA; 0 without an election)
        self.epoch: EpochSource = NO_ELECTION

    def _read(self, parse: Callable[[etree._Element], T], *containers: str, ports: Iterable[int] = (),
              deadline_s: float | None = None) -> T:
        """``parse`` of the <data> a <get> of ``containers`` answers (inside the call, so an
        unreadable reply is a DeviceError too)."""
        subtree = _filter(*containers, ports=ports)
        return self._session.call(lambda m: parse(_data(m.get(filter=subtree))), deadline_s)

    def device_info(self) -> OcsInfo:
        return self._read(lambda data: encoding.info_from_xml(data, encoding.generation_from_xml(data)),
                          "system-info", "fence-state")

    def cross_connects(self, deadline_s: float | None = None) -> CrossConnectTable:
        return self._read(lambda data: encoding.table_from_xml(data, encoding.generation_from_xml(data)),
                          "cross-connects", "fence-state", deadline_s=deadline_s)

    def apply(
        self,
        *,
        expected_generation: int,
        add: Iterable[CrossConnect] = (),
        remove: Iterable[CrossConnect] = (),
        request_id: str | None = None,
    ) -> ApplyResult:
        """Remove then add atomically in one edit-config; errors as OcsClient.apply."""
        add, remove = list(add), list(remove)
        request_id = request_id or uuid.uuid4().hex
        config = encoding.edit_config(add=add, remove=remove, epoch=self.epoch.current_epoch(),
                                      expected_generation=expected_generation, request_id=request_id)

        def edit(m: Manager) -> encoding.RequestResult:
            # all or nothing either way on our device; a server without the capability gets none
            option = "rollback-on-error" if ":rollback-on-error" in m.server_capabilities else None
            m.edit_config(config=config, target="running", error_option=option)
            data = _data(m.get(filter=[f'<fence-state xmlns="{NS}"><request><request-id>'
                                       f"{escape(request_id)}</request-id></request></fence-state>"]))
            result = encoding.request_result_from_xml(data, request_id)
            if result is None:
                raise DeviceError(self.name, f"the device kept no result of request {request_id}",
                                  ErrorCode.INTERNAL, "missing-result")
            return result

        try:
            result = self._session.call(edit)
        except Fenced as exc:
            self.epoch.refused(self.name, exc.highest_epoch)
            raise
        except (StaleGeneration, InvalidRequest):
            raise
        except SouthboundError as exc:
            outcome = circuits_outcome(self.cross_connects, expected_generation, add, remove)
            log.warning("%s: apply %s failed, device holds %s state", self.name, request_id, outcome.value)
            raise ApplyFailed(self.name, f"apply {request_id} failed: {exc.message}", outcome, exc) from exc
        return ApplyResult(result.generation, result.replayed, request_id)

    def port_status(self, ports: Iterable[int] = ()) -> list[OcsPortStatus]:
        wanted = list(ports)
        found = {p.port: p for p in self._read(encoding.ports_from_xml, "ports", ports=wanted)}
        if not wanted:
            return [found[p] for p in sorted(found)]
        missing = [p for p in wanted if p not in found]
        if missing:
            raise InvalidRequest(self.name, f"unknown port {missing[0]} (ports are 0..{len(found) - 1})"
                                 if not found else f"unknown port {missing[0]}", "unknown-port")
        return [found[p] for p in wanted]

    def events(self, deadline_s: float = 3600.0) -> NetconfEventStream:
        """Events from now on (a second session, subscribed before this returns)."""
        def subscribe() -> Manager:
            m = self._session.connect()
            try:
                m.create_subscription()
            except BaseException:
                m._session.close()
                raise
            return m

        return NetconfEventStream(self.name, self._session.retrying(subscribe), deadline_s)

    def close(self) -> None:
        self._session.close()
