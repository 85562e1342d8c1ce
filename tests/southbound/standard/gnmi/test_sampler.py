"""The sampler's bounds, with a scripted stream in place of a target: a reader never waits
past the deadline, and a stream gone silent is reported unavailable, not served stale."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from typing import Any

import pytest

from southbound.errors import DeviceUnavailable
from southbound.standard.gnmi import paths, values
from southbound.standard.gnmi.sampler import Sampler, subscribe_request
from southbound.standard.pb import gnmi_pb2


class ScriptedStream:
    """What ``stub.Subscribe`` returns: responses put by the test, until cancelled."""

    def __init__(self) -> None:
        self.responses: queue.Queue[gnmi_pb2.SubscribeResponse | None] = queue.Queue()
        self.first: gnmi_pb2.SubscribeRequest | None = None
        self.cancelled = False

    def open(self, requests: Iterator[gnmi_pb2.SubscribeRequest]) -> Any:
        self.first = next(requests)
        return self

    def __iter__(self) -> Iterator[gnmi_pb2.SubscribeResponse]:
        while (response := self.responses.get()) is not None:
            yield response

    def cancel(self) -> None:
        self.cancelled = True
        self.responses.put(None)


def _octets(value: int, stamp: int) -> gnmi_pb2.SubscribeResponse:
    update = gnmi_pb2.Update(path=paths.counter("Ethernet0", "in-octets"),
                             val=values.encode(value, gnmi_pb2.PROTO))
    return gnmi_pb2.SubscribeResponse(update=gnmi_pb2.Notification(timestamp=stamp, update=[update]))


def _sampler(stream: ScriptedStream, deadline_s: float = 0.3) -> Sampler:
    request = subscribe_request([paths.counter("*", "in-octets")], 0.05)
    return Sampler("sw", stream.open, request, interval_s=0.05, deadline_s=deadline_s)


def test_the_request_is_a_stream_of_samples_at_the_interval() -> None:
    request = subscribe_request([paths.counter("*", "in-octets")], 0.25, gnmi_pb2.PROTO)
    assert request.subscribe.mode == gnmi_pb2.SubscriptionList.STREAM
    assert request.subscribe.encoding == gnmi_pb2.PROTO
    (sub,) = request.subscribe.subscription
    assert (sub.mode, sub.sample_interval) == (gnmi_pb2.SAMPLE, 250_000_000)


def test_no_sync_within_the_deadline_is_unavailable() -> None:
    stream = ScriptedStream()
    sampler = _sampler(stream)
    try:
        started = time.monotonic()
        with pytest.raises(DeviceUnavailable, match="no full gNMI sample"):
            sampler.latest()
        assert 0.25 <= time.monotonic() - started < 2.0
    finally:
        sampler.close()
    assert stream.cancelled


def test_latest_values_then_silence_is_unavailable() -> None:
    stream = ScriptedStream()
    sampler = _sampler(stream)
    try:
        stream.responses.put(_octets(10, 1_000))
        stream.responses.put(gnmi_pb2.SubscribeResponse(sync_response=True))
        stream.responses.put(_octets(25, 2_000))
        deadline = time.monotonic() + 5
        while sampler.latest().leaves.get(("Ethernet0", "in-octets")) != (2_000, 25):
            assert time.monotonic() < deadline
        assert stream.first is not None and stream.first.HasField("subscribe")
        time.sleep(sampler.stale_after_s + 0.1)
        with pytest.raises(DeviceUnavailable, match="sent nothing"):
            sampler.latest()
    finally:
        sampler.close()
        sampler.close()
    with pytest.raises(DeviceUnavailable, match="closed"):
        sampler.latest()
