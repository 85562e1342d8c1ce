"""A gNMI ``Subscribe`` in STREAM mode with SAMPLE subscriptions, read by a thread that keeps
the latest value of every leaf; :meth:`Sampler.latest` hands out the newest complete set.

The stream is opened on first use. Until the target's first ``sync_response`` a reader waits
(at most ``deadline_s``); once a stream breaks the sampler reports the device unavailable
at once (:class:`~southbound.errors.DeviceUnavailable`) and reconnects in the background,
with backoff, until a new stream has sent its first full set again. A stream that falls
silent for longer than ``stale_after_s`` is reported unavailable too: a reader never gets
numbers older than that, and never waits longer than its deadline.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from southbound.errors import DeviceUnavailable, SouthboundError
from southbound.grpc_native.status import map_rpc_error
from southbound.standard.gnmi import paths, values
from southbound.standard.pb import gnmi_pb2

log = logging.getLogger(__name__)

#: (interface name, leaf name) -> (timestamp ns, value)
Leaves = dict[tuple[str, str], tuple[int, int]]


@dataclass(frozen=True)
class Sample:
    """The latest value of every leaf the stream has sent, as of ``received_s`` (monotonic)."""

    leaves: Leaves
    received_s: float


def subscribe_request(
    subscriptions: Sequence[gnmi_pb2.Path],
    interval_s: float,
    encoding: gnmi_pb2.Encoding = gnmi_pb2.JSON_IETF,
) -> gnmi_pb2.SubscribeRequest:
    """A STREAM subscription sampling every path every ``interval_s``."""
    interval_ns = max(1, int(interval_s * 1e9))
    return gnmi_pb2.SubscribeRequest(subscribe=gnmi_pb2.SubscriptionList(
        mode=gnmi_pb2.SubscriptionList.STREAM,
        encoding=encoding,
        subscription=[gnmi_pb2.Subscription(path=p, mode=gnmi_pb2.SAMPLE, sample_interval=interval_ns)
                      for p in subscriptions],
    ))


class Sampler:
    """Keeps one Subscribe stream open to ``device`` (``open_stream(requests)`` starts the
    call, e.g. a gNMI stub's ``Subscribe``) and the latest sample of its leaves."""

    def __init__(
        self,
        device: str,
        open_stream: Callable[[Iterator[gnmi_pb2.SubscribeRequest]], Any],
        request: gnmi_pb2.SubscribeRequest,
        *,
        interval_s: float,
        deadline_s: float,
        max_backoff_s: float = 1.0,
        on_update: Callable[[int], None] | None = None,
    ) -> None:
        self.device = device
        self._open = open_stream
        self._request = request
        self.interval_s = interval_s
        self.deadline_s = deadline_s
        self.stale_after_s = max(3 * interval_s, deadline_s)
        self._max_backoff_s = max_backoff_s
        #: called in the reading thread after each notification is recorded, with its timestamp
        self._on_update = on_update
        self._cond = threading.Condition()
        self._leaves: Leaves = {}
        self._synced = False
        self._received_s = 0.0
        self._error: SouthboundError | None = None  # set while the stream is broken
        self._closed = threading.Event()
        self._call: Any = None
        self._thread: threading.Thread | None = None
        #: streams opened so far (reconnects are the rest)
        self.streams_opened = 0
        #: updates received, in all
        self.updates = 0

    def start(self) -> None:
        with self._cond:
            if self._thread is None and not self._closed.is_set():
                self._thread = threading.Thread(target=self._run, name=f"gnmi-sampler-{self.device}",
                                                daemon=True)
                self._thread.start()

    def latest(self) -> Sample:
        """The newest sample; DeviceUnavailable when the stream is broken, silent past
        ``stale_after_s`` or has sent no full set within the deadline."""
        self.start()
        with self._cond:
            if self._error is None and not self._synced:
                self._cond.wait_for(lambda: self._synced or self._error is not None or self._closed.is_set(),
                                    timeout=self.deadline_s)
            if self._closed.is_set():
                raise DeviceUnavailable(self.device, "the gNMI sampler is closed")
            if self._error is not None:
                raise DeviceUnavailable(self.device, f"gNMI stream down: {self._error.message}",
                                        self._error.code, self._error.transport_code)
            if not self._synced:
                raise DeviceUnavailable(self.device, f"no full gNMI sample within {self.deadline_s:g}s")
            age = time.monotonic() - self._received_s
            if age > self.stale_after_s:
                raise DeviceUnavailable(self.device, f"the gNMI stream sent nothing for {age:.1f}s")
            return Sample(dict(self._leaves), self._received_s)

    def snapshot(self) -> Leaves:
        """The leaves as they stand (no staleness check: for the reading thread's callback)."""
        with self._cond:
            return dict(self._leaves)

    def close(self) -> None:
        self._closed.set()
        with self._cond:
            call, thread = self._call, self._thread
            self._cond.notify_all()
        if call is not None:
            call.cancel()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)

    # -- the reading thread -------------------------------------------------------------
    def _run(self) -> None:
        failures = 0
        while not self._closed.is_set():
            ended = threading.Event()
            try:
                call = self._open(_requests(self._request, ended, self._closed))
                with self._cond:
                    self._call = call
                    self.streams_opened += 1
                if self._closed.is_set():
                    call.cancel()
                for response in call:
                    if self._take(response):
                        failures = 0
                error: SouthboundError = DeviceUnavailable(self.device, "the target ended the stream")
            except grpc.RpcError as exc:
                error = map_rpc_error(exc, self.device)
            finally:
                ended.set()
            if self._closed.is_set():
                return
            self._broken(error)
            failures += 1
            self._closed.wait(min(self._max_backoff_s, 0.05 * 2**min(failures, 6)))

    def _take(self, response: gnmi_pb2.SubscribeResponse) -> bool:
        """Record one response; True at a sync_response."""
        if response.sync_response:
            with self._cond:
                self._synced, self._error = True, None
                self._received_s = time.monotonic()
                self._cond.notify_all()
            return True
        if not response.HasField("update"):
            return False
        note = response.update
        fresh: Leaves = {}
        for update in note.update:
            path = paths.joined(note.prefix, update.path)
            name = paths.interface_name(path)
            if name is None:
                continue
            try:
                value = values.as_int(values.decode(update.val))
                fresh[(name, paths.leaf_name(path))] = (note.timestamp, value)
            except values.BadValue as exc:
                log.warning("%s: ignoring %s: %s", self.device, paths.text(path), exc)
        with self._cond:
            self._leaves.update(fresh)
            self.updates += len(note.update)
            self._received_s = time.monotonic()
        if self._on_update is not None and fresh:
            self._on_update(note.timestamp)
        return False

    def _broken(self, error: SouthboundError) -> None:
        with self._cond:
            if self._error is None:
                log.warning("%s: gNMI stream broken (%s); reconnecting", self.device, error.message)
            self._error, self._synced = error, False
            self._leaves.clear()
            self._call = None
            self._cond.notify_all()


def _requests(
    request: gnmi_pb2.SubscribeRequest, ended: threading.Event, closed: threading.Event
) -> Iterator[gnmi_pb2.SubscribeRequest]:
    """The subscription, then nothing until the call ends (the client half-closes only then:
    a target may take a half-close for the end of the subscription)."""
    yield request
    while not ended.wait(0.5) and not closed.is_set():
        pass
