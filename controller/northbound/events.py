"""The controller's event stream (``WatchEvents``): what the daemon's loop emits, as typed
:class:`Event` messages, fanned out to the clients that watch.

The daemon calls its listener with ``(kind, details)`` for every TE run, ToE decision,
executor step, finished reconfiguration, device going down or coming back and a few fabric
events (``controller/daemon``); :class:`EventHub.publish` is such a listener. Each watcher
gets its own bounded queue: one that does not keep up loses events (the sequence numbers
show the gap) and never slows the loop. Issue 14's leader changes are published as
``("leader", {"leader": ..., "previous": ...})``.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from controller.northbound.convert import timestamp_to_pb
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2 as pb
from optimizer.errors import HeliostatError

#: Watchers served at once (each holds one of the API's worker threads while it streams).
MAX_WATCHERS = 4
#: Watchers one client may hold (its certificate name under mutual TLS, else its host), so that
#: one client cannot take every slot.
WATCHERS_PER_CLIENT = 2
#: The kinds a watcher may ask for (EVENT_KIND_UNSPECIFIED is no kind).
VALID_KINDS = frozenset(v for v in pb.EventKind.values() if v != pb.EVENT_KIND_UNSPECIFIED)
#: Events a watcher may fall behind by before it loses the oldest ones.
BACKLOG = 1000

#: EventKind of each daemon event; anything else is a FABRIC event.
KIND_OF = {
    "te": pb.EVENT_KIND_TE_RUN,
    "toe": pb.EVENT_KIND_TOE,
    "step": pb.EVENT_KIND_STEP,
    "stage": pb.EVENT_KIND_STEP,
    "rollback": pb.EVENT_KIND_STEP,
    "reconfiguration": pb.EVENT_KIND_RECONFIGURATION,
    "device_down": pb.EVENT_KIND_DEVICE,
    "device_up": pb.EVENT_KIND_DEVICE,
    "leader": pb.EVENT_KIND_LEADER,
    "leading": pb.EVENT_KIND_LEADER,  # issue 14: this replica became the leader
    "standby": pb.EVENT_KIND_LEADER,  # issue 14: this replica stepped down or waits
    "operator": pb.EVENT_KIND_OPERATOR,  # drain, pause, ToE, a plan reviewed or approved
}
#: ``heliostat ctl watch --kind`` names.
KIND_NAMES = {
    "te_run": pb.EVENT_KIND_TE_RUN,
    "toe": pb.EVENT_KIND_TOE,
    "step": pb.EVENT_KIND_STEP,
    "reconfiguration": pb.EVENT_KIND_RECONFIGURATION,
    "device": pb.EVENT_KIND_DEVICE,
    "leader": pb.EVENT_KIND_LEADER,
    "fabric": pb.EVENT_KIND_FABRIC,
    "operator": pb.EVENT_KIND_OPERATOR,
}


class WatchersExhausted(HeliostatError):
    """As many clients as the controller serves already watch its events."""


class UnknownEventKinds(HeliostatError):
    """A watcher asked for event kinds that do not exist."""


def check_kinds(kinds: Collection[int]) -> frozenset[int]:
    """The kinds as a set; UnknownEventKinds naming the first few that are not EventKinds."""
    unknown = sorted(set(kinds) - VALID_KINDS)
    if unknown:
        shown = ", ".join(str(k) for k in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        raise UnknownEventKinds(
            f"kinds: unknown event kind(s) {shown}; the kinds are "
            + ", ".join(f"{pb.EventKind.Name(k)} ({k})" for k in sorted(VALID_KINDS))
        )
    return frozenset(kinds)


def _num(details: Mapping[str, Any], key: str) -> float:
    value = details.get(key)
    return float(value) if isinstance(value, int | float) else 0.0


def event_message(kind: str, details: Mapping[str, Any]) -> pb.Event:
    """The typed message (without sequence and time) for one daemon event."""
    d = details
    event = pb.Event(kind=KIND_OF.get(kind, pb.EVENT_KIND_FABRIC))
    if kind == "te":
        event.te_run.CopyFrom(pb.TeRunEvent(
            reason=str(d.get("reason", "")), mlu=_num(d, "mlu"), mlu_quantized=_num(d, "mlu_quantized"),
            demand_gbps=_num(d, "demand_gbps"), circuits=int(_num(d, "circuits")), seconds=_num(d, "seconds"),
        ))
        event.message = (f"TE ({event.te_run.reason}): MLU {event.te_run.mlu:.3f}, "
                         f"{event.te_run.demand_gbps:.0f} Gbit/s over {event.te_run.circuits} circuits")
    elif kind == "toe":
        toe = pb.ToeEvent(trigger=str(d.get("trigger", "")), apply=bool(d.get("apply")),
                          reason=str(d.get("reason") or ""))
        for key, target in (("current_mlu", "current_mlu"), ("planned_mlu", "planned_mlu")):
            if isinstance(d.get(key), int | float):
                setattr(toe, target, float(d[key]))
        if isinstance(d.get("stages"), int):
            toe.stages = d["stages"]
        if isinstance(d.get("changed"), int):
            toe.circuits_changed = d["changed"]
        event.toe.CopyFrom(toe)
        event.message = f"ToE ({toe.trigger}): {'apply' if toe.apply else 'no change'}: {toe.reason}"
    elif kind in ("step", "stage", "rollback"):
        step = pb.StepEvent(reconfiguration_id=int(_num(d, "intent")), stage=int(_num(d, "stage")) + 1,
                            step=str(d.get("step", kind)), state=str(d.get("event", "")))
        event.step.CopyFrom(step)
        event.message = (f"reconfiguration {step.reconfiguration_id} stage {step.stage}: "
                         f"{step.step} {step.state}")
    elif kind == "reconfiguration":
        ended = pb.ReconfigurationEvent(
            reconfiguration_id=int(_num(d, "intent")), outcome=str(d.get("outcome"))
        )
        if d.get("reason"):
            ended.reason = str(d["reason"])
        event.reconfiguration.CopyFrom(ended)
        why = f": {ended.reason}" if ended.HasField("reason") else ""
        event.message = f"reconfiguration {ended.reconfiguration_id} {ended.outcome}{why}"
    elif kind in ("device_down", "device_up"):
        device = pb.DeviceEvent(device=str(d.get("device", "")), up=kind == "device_up",
                                error=str(d.get("error") or ""))
        event.device.CopyFrom(device)
        event.message = (f"{device.device} is back" if device.up
                         else f"{device.device} unreachable: {device.error}")
    elif kind == "leading":
        leader = pb.LeaderEvent(leader=str(d.get("replica") or ""))
        event.leader.CopyFrom(leader)
        event.message = f"replica {leader.leader} leads (epoch {d.get('epoch')})"
    elif kind == "standby":
        event.leader.CopyFrom(pb.LeaderEvent())
        event.message = f"standby: {d.get('reason') or 'another replica leads'}"
    elif kind == "leader":
        leader = pb.LeaderEvent(leader=str(d.get("leader") or ""), previous=str(d.get("previous") or ""))
        event.leader.CopyFrom(leader)
        event.message = f"leader {leader.leader or 'none'} (was {leader.previous or 'none'})"
    elif kind == "operator":
        event.operator.CopyFrom(pb.OperatorEvent(
            action=str(d.get("action", "")), target=str(d.get("target") or ""),
            result=str(d.get("result") or ""), forced=bool(d.get("forced")),
        ))
        what = f" {event.operator.target}" if event.operator.target else ""
        forced = " (forced)" if event.operator.forced else ""
        event.message = f"operator: {event.operator.action}{what}{forced}"
    else:
        fields = ", ".join(f"{k} {v}" for k, v in sorted(d.items()))
        event.message = f"{kind}: {fields}" if fields else kind
    return event


class Subscription:
    """One watcher's queue of events; :meth:`next` returns None on a timeout and raises
    StopIteration once the hub is closed."""

    _CLOSED = object()

    def __init__(self, hub: EventHub, kinds: frozenset[int], client: str = "") -> None:
        self._hub = hub
        self.kinds = kinds
        self.client = client
        self._queue: queue.Queue[object] = queue.Queue(maxsize=BACKLOG)

    def offer(self, event: pb.Event) -> None:
        if self.kinds and event.kind not in self.kinds:
            return
        # A watcher that is behind loses the event (the sequence shows the gap).
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(event)

    def end(self) -> None:
        while True:
            try:
                self._queue.put_nowait(self._CLOSED)
                return
            except queue.Full:  # make room for the end mark
                with contextlib.suppress(queue.Empty):
                    self._queue.get_nowait()

    def next(self, timeout_s: float) -> pb.Event | None:
        try:
            item = self._queue.get(timeout=timeout_s)
        except queue.Empty:
            return None
        if item is self._CLOSED:
            raise StopIteration
        return item  # type: ignore[return-value]

    def close(self) -> None:
        self._hub.unsubscribe(self)


class EventHub:
    """Fans the daemon's events out to watchers. Thread-safe; ``publish`` never blocks."""

    def __init__(
        self,
        max_watchers: int = MAX_WATCHERS,
        clock: Callable[[], float] = time.time,
        per_client: int = WATCHERS_PER_CLIENT,
    ) -> None:
        self.max_watchers = max_watchers
        self.per_client = per_client
        self._clock = clock
        self._lock = threading.Lock()
        self._watchers: list[Subscription] = []
        self._sequence = 0
        self._closed = False

    def publish(self, kind: str, details: Mapping[str, Any]) -> None:
        """The daemon's listener: ``Daemon(config, listener=hub.publish)``."""
        event = event_message(kind, details)
        with self._lock:
            self._sequence += 1
            event.sequence = self._sequence
            timestamp_to_pb(self._clock(), event.time)
            watchers = list(self._watchers)
        for watcher in watchers:
            watcher.offer(event)

    def subscribe(self, kinds: Collection[int] = (), client: str = "") -> Subscription:
        """A new watcher for ``client`` (who calls: see :func:`check_kinds` for ``kinds``)."""
        wanted = check_kinds(kinds)
        with self._lock:
            if self._closed:
                raise WatchersExhausted("the controller is stopping")
            if len(self._watchers) >= self.max_watchers:
                raise WatchersExhausted(f"{self.max_watchers} clients watch the events already; try later")
            if client and sum(w.client == client for w in self._watchers) >= self.per_client:
                raise WatchersExhausted(f"at most {self.per_client} event streams per client ({client})")
            subscription = Subscription(self, wanted, client)
            self._watchers.append(subscription)
            return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            if subscription in self._watchers:
                self._watchers.remove(subscription)

    @property
    def watchers(self) -> int:
        with self._lock:
            return len(self._watchers)

    def close(self) -> None:
        """End every watcher's stream (the controller is stopping); later subscribers are refused."""
        with self._lock:
            self._closed = True
            watchers = list(self._watchers)
        for watcher in watchers:
            watcher.end()
