"""One gNMI ``Subscribe`` call on the emulated switch (gNMI 0.10.0, section 3.5).

- ONCE: every value, ``sync_response``, end of the call.
- POLL: every value and ``sync_response``, again at each ``Poll`` message.
- STREAM: every value, ``sync_response``, then SAMPLE subscriptions every ``sample_interval``
  (0: the target's default; below the target's minimum: INVALID_ARGUMENT) and ON_CHANGE ones
  when a value changes (a vanished LLDP neighbour is sent as a delete); TARGET_DEFINED samples
  counters and watches the rest for changes. ``suppress_redundant`` leaves out unchanged
  sampled values; ``heartbeat_interval`` is not implemented (ignored).

``updates_only`` leaves out the initial values (the first message is the ``sync_response``).
The call ends when the client cancels, the server stops (the agent is killed) or ``serving``
turns False (UNAVAILABLE).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import grpc

from emulation.admission.limits import check_count
from emulation.errors import MalformedRequest
from emulation.standard.gnmi.tree import Leaf
from southbound.standard.gnmi import paths
from southbound.standard.gnmi.values import Scalar
from southbound.standard.pb import gnmi_pb2

if TYPE_CHECKING:
    from emulation.standard.gnmi.servicer import GnmiTarget

Mode = gnmi_pb2.SubscriptionList


@dataclass
class SampleGroup:
    """Leaves sampled together every ``interval_s``."""

    interval_s: float
    leaves: list[Leaf]
    suppress: bool
    due: float = 0.0
    sent: dict[str, bytes] = field(default_factory=dict)


class Session:
    def __init__(self, target: GnmiTarget, requests: Iterator[Any], context: grpc.ServicerContext) -> None:
        self.target = target
        self.requests = requests
        self.context = context
        self.stop = threading.Event()
        context.add_callback(self.stop.set)

    def run(self) -> Iterator[gnmi_pb2.SubscribeResponse]:
        first = next(self.requests, None)
        if first is None or not first.HasField("subscribe"):
            raise MalformedRequest("the first SubscribeRequest must carry a SubscriptionList")
        spec = first.subscribe
        self.target.check_encoding(spec.encoding)
        check_count("subscriptions", len(spec.subscription), 4 * len(self.target.schema))
        self.encoding = spec.encoding
        prefix = spec.prefix if spec.HasField("prefix") else None
        chosen = [(s, self.target.select(paths.joined(prefix, s.path))) for s in spec.subscription]
        every = _unique(leaf for _, found in chosen for leaf in found)
        if spec.mode == Mode.ONCE:
            yield from self._initial(every, spec.updates_only)
            return
        if spec.mode == Mode.POLL:
            yield from self._initial(every, spec.updates_only)
            for request in self.requests:
                if not request.HasField("poll"):
                    raise MalformedRequest("a POLL subscription takes only Poll messages after the first")
                yield from self._initial(every, False)
            return
        yield from self._stream(chosen, every, spec.updates_only)

    def _initial(self, leaves: list[Leaf], updates_only: bool) -> Iterator[gnmi_pb2.SubscribeResponse]:
        if not updates_only:
            yield gnmi_pb2.SubscribeResponse(update=self.target.notification(leaves, self.target.view(),
                                                                              self.encoding))
        yield gnmi_pb2.SubscribeResponse(sync_response=True)

    def _stream(self, chosen: list[tuple[gnmi_pb2.Subscription, list[Leaf]]], every: list[Leaf],
                updates_only: bool) -> Iterator[gnmi_pb2.SubscribeResponse]:
        groups: dict[tuple[float, bool], SampleGroup] = {}
        watched: list[Leaf] = []
        for sub, leaves in chosen:
            for mode, part in _modes(sub, leaves):
                if mode == gnmi_pb2.ON_CHANGE:
                    watched.extend(part)
                    continue
                interval = self._interval(sub)
                group = groups.setdefault((interval, sub.suppress_redundant),
                                          SampleGroup(interval, [], sub.suppress_redundant))
                group.leaves.extend(part)
        watched = _unique(watched)
        view = self.target.view()
        last = {leaf.text: view.value(leaf, self.encoding) for leaf in watched}
        yield from self._initial(every, updates_only)
        start = time.monotonic()
        for group in groups.values():
            group.leaves = _unique(group.leaves)
            group.due = start + group.interval_s
        next_check = start + self.target.on_change_poll_s
        while self._active():
            now = time.monotonic()
            for group in groups.values():
                if now >= group.due:
                    note = self._sample(group)
                    group.due = max(group.due + group.interval_s, now)
                    if note.update:
                        yield gnmi_pb2.SubscribeResponse(update=note)
            if watched and now >= next_check:
                change = self._changes(watched, last)
                next_check = now + self.target.on_change_poll_s
                if change is not None:
                    yield gnmi_pb2.SubscribeResponse(update=change)
            wakes = [g.due for g in groups.values()] + ([next_check] if watched else [])
            wake = min(wakes, default=now + 1.0)
            self.stop.wait(max(0.0, min(wake - time.monotonic(), 0.5)))

    def _active(self) -> bool:
        if not self.target.serving():
            self.context.abort(grpc.StatusCode.UNAVAILABLE, f"{self.target.device.name} is not serving")
        return not self.stop.is_set() and self.context.is_active()

    def _interval(self, sub: gnmi_pb2.Subscription) -> float:
        if not sub.sample_interval:
            return self.target.sample_interval_s
        interval = sub.sample_interval / 1e9
        if interval < self.target.min_sample_interval_s:
            raise MalformedRequest(f"sample_interval {sub.sample_interval} ns is below this target's "
                                   f"minimum, {int(self.target.min_sample_interval_s * 1e9)} ns")
        return interval

    def _sample(self, group: SampleGroup) -> gnmi_pb2.Notification:
        note = self.target.notification(group.leaves, self.target.view(), self.encoding)
        if not group.suppress:
            return note
        kept = []
        for update in note.update:
            key = paths.text(update.path)
            value = update.val.SerializeToString()
            if group.sent.get(key) != value:
                group.sent[key] = value
                kept.append(update)
        del note.update[:]
        note.update.extend(kept)
        return note

    def _changes(self, watched: list[Leaf], last: dict[str, Scalar | None]) -> gnmi_pb2.Notification | None:
        view = self.target.view()
        changed: list[Leaf] = []
        gone: list[Leaf] = []
        for leaf in watched:
            value = view.value(leaf, self.encoding)
            if value == last.get(leaf.text):
                continue
            last[leaf.text] = value
            (gone if value is None else changed).append(leaf)
        if not changed and not gone:
            return None
        note = self.target.notification(changed, view, self.encoding)
        note.delete.extend(leaf.path for leaf in gone)
        return note


def _modes(sub: gnmi_pb2.Subscription, leaves: list[Leaf]) -> list[tuple[int, list[Leaf]]]:
    """The subscription's leaves by the mode they get (TARGET_DEFINED: counters SAMPLE)."""
    if sub.mode != gnmi_pb2.TARGET_DEFINED:
        return [(sub.mode, leaves)]
    return [(gnmi_pb2.SAMPLE, [leaf for leaf in leaves if leaf.kind == "counter"]),
            (gnmi_pb2.ON_CHANGE, [leaf for leaf in leaves if leaf.kind != "counter"])]


def _unique(leaves: Any) -> list[Leaf]:
    return list(dict.fromkeys(leaves))
