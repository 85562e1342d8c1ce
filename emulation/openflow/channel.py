"""A thread-safe request/response layer over one os-ken Datapath.

``transact`` sends a batch of modifications followed by a barrier and waits for the
barrier reply; errors the switch returns for any message of the batch are raised.
``multipart`` sends one stats request and collects every part of the reply.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 5.0


class SwitchUnreachable(RuntimeError):
    """The datapath is not connected, or did not answer in time."""


class SwitchRejected(RuntimeError):
    """The switch answered a message of a batch with an OpenFlow error."""

    def __init__(self, message: str, errors: Sequence[Any]) -> None:
        super().__init__(message)
        self.errors = list(errors)


class _Pending:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.parts: list[Any] = []


class Channel:
    def __init__(self, datapath: Any) -> None:
        self.datapath = datapath
        self.ofp = datapath.ofproto
        self.parser = datapath.ofproto_parser
        self._lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._errors: dict[int, Any] = {}
        self.closed = False

    @property
    def dpid(self) -> int:
        return int(self.datapath.id)

    def _send(self, msg: Any) -> int:
        with self._lock:
            if self.closed:
                raise SwitchUnreachable(f"datapath {self.dpid:#x} is not connected")
            xid = self.datapath.set_xid(msg)
            if not self.datapath.send_msg(msg):
                raise SwitchUnreachable(f"datapath {self.dpid:#x} is closing")
            return xid

    def send(self, msgs: Iterable[Any]) -> None:
        """Fire and forget (packet-outs)."""
        for msg in msgs:
            self._send(msg)

    def transact(self, msgs: Iterable[Any], timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        xids = [self._send(msg) for msg in msgs]
        barrier = self.parser.OFPBarrierRequest(self.datapath)
        pending = _Pending()
        with self._lock:
            if self.closed:
                raise SwitchUnreachable(f"datapath {self.dpid:#x} is not connected")
            xid = self.datapath.set_xid(barrier)
            self._pending[xid] = pending
            self.datapath.send_msg(barrier)
        try:
            if not pending.done.wait(timeout_s):
                raise SwitchUnreachable(f"datapath {self.dpid:#x}: no barrier reply in {timeout_s} s")
        finally:
            with self._lock:
                self._pending.pop(xid, None)
                errors = [self._errors.pop(x) for x in xids if x in self._errors]
        if self.closed and not pending.parts:
            raise SwitchUnreachable(f"datapath {self.dpid:#x} disconnected")
        if errors:
            first = errors[0]
            raise SwitchRejected(
                f"datapath {self.dpid:#x} refused {len(errors)} of {len(xids)} messages "
                f"(first: type {first.type} code {first.code})",
                errors,
            )

    def multipart(self, request: Any, timeout_s: float = DEFAULT_TIMEOUT_S) -> list[Any]:
        """Send a stats request; return the bodies of every reply part, concatenated."""
        pending = _Pending()
        with self._lock:
            if self.closed:
                raise SwitchUnreachable(f"datapath {self.dpid:#x} is not connected")
            xid = self.datapath.set_xid(request)
            self._pending[xid] = pending
            self.datapath.send_msg(request)
        try:
            if not pending.done.wait(timeout_s):
                raise SwitchUnreachable(f"datapath {self.dpid:#x}: no stats reply in {timeout_s} s")
        finally:
            with self._lock:
                self._pending.pop(xid, None)
                error = self._errors.pop(xid, None)
        if error is not None:
            raise SwitchRejected(f"datapath {self.dpid:#x} refused a stats request", [error])
        if self.closed and not pending.parts:
            raise SwitchUnreachable(f"datapath {self.dpid:#x} disconnected")
        return [item for part in pending.parts for item in part]

    # -- called from os-ken event handlers ----------------------------------------------
    def on_reply(self, msg: Any) -> None:
        """A barrier reply or one part of a multipart reply."""
        with self._lock:
            pending = self._pending.get(msg.xid)
        if pending is None:
            return
        body = getattr(msg, "body", None)
        pending.parts.append(body if isinstance(body, list) else [body] if body is not None else [])
        more = getattr(msg, "flags", 0) & self.ofp.OFPMPF_REPLY_MORE
        if not more:
            pending.done.set()

    def on_error(self, msg: Any) -> None:
        with self._lock:
            self._errors[msg.xid] = msg
            pending = self._pending.get(msg.xid)
        log.warning("datapath %#x: OpenFlow error type %s code %s for xid %s", self.dpid,
                    msg.type, msg.code, msg.xid)
        if pending is not None:  # an error answers a stats request
            pending.done.set()

    def close(self) -> None:
        with self._lock:
            self.closed = True
            pending = list(self._pending.values())
        for p in pending:
            p.done.set()
