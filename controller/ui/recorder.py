"""What the daemon did lately, kept in memory for the status page: events, MLU and demand
over time, and when each device last answered.

Everything is bounded (the last :data:`MAX_EVENTS` events, :data:`MAX_SAMPLES` samples), so a
daemon that runs for months holds the same few hundred kilobytes. The daemon writes from its
loop, the API reads from its threads: every method takes the one lock. No I/O here; times are
given by the caller.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from controller.device_view import PollResult
from controller.ui.load_history import LoadHistory

#: Events kept (newest win).
MAX_EVENTS = 200
#: Samples of MLU and demand kept: an hour at the default 30 s ``te_interval`` is 120.
MAX_SAMPLES = 720
#: An event equal to one of this many latest ones is counted there (``repeated``) and moved
#: to the front instead of being added: a device that stays down does not push out the rest.
REPEAT_WINDOW = 10

#: Events that mean something went wrong, whatever their details say.
_WARNING_KINDS = frozenset({"recovering", "unexplained_drains", "devices_moved", "rollback"})


def event_level(kind: str, details: Mapping[str, Any]) -> str:
    """``error``, ``warning`` or ``info``: how the page colours an event."""
    if kind == "log":
        return str(details.get("level", "warning")).lower()
    if kind == "reconfiguration" and details.get("outcome") != "done":
        return "error"
    if kind == "step" and details.get("event") == "failed":
        return "error"
    if kind == "toe" and str(details.get("reason", "")).startswith("failed"):
        return "error"
    if kind == "operator" and details.get("forced"):
        return "warning"  # a drain forced past the MLU check
    if kind in _WARNING_KINDS:
        return "warning"
    return "info"


def _plain(value: Any) -> Any:
    """A JSON-friendly copy: numbers, strings, lists and dicts; anything else as text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):  # numpy's float64 too
        return float(value) if math.isfinite(value) else None
    if hasattr(value, "item") and not hasattr(value, "__len__"):  # numpy scalars
        return _plain(value.item())
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return [_plain(v) for v in items]
    return str(value)


class Recorder:
    """The daemon's recent past. ``event`` and ``polled`` write; the rest read copies."""

    def __init__(self, max_events: int = MAX_EVENTS, max_samples: int = MAX_SAMPLES) -> None:
        self._lock = threading.Lock()
        self._events: deque[dict[str, Any]] = deque(maxlen=max_events)
        self._samples: deque[dict[str, Any]] = deque(maxlen=max_samples)
        self._last_seen: dict[str, float] = {}
        self._sequence = 0
        #: per block pair and device, load and capacity over the last polls (the drill-downs)
        self.loads = LoadHistory()

    # -- writing (the daemon's loop) -------------------------------------------------------

    def event(self, time: float, kind: str, details: Mapping[str, Any]) -> None:
        entry = {"time": time, "kind": kind, "level": event_level(kind, details), "details": _plain(details),
                 "repeated": 1}
        with self._lock:
            self._sequence += 1
            entry["seq"] = self._sequence
            key = (kind, entry["details"])
            recent = list(self._events)[-REPEAT_WINDOW:]
            same = next((e for e in reversed(recent) if (e["kind"], e["details"]) == key), None)
            if same is not None:
                self._events.remove(same)
                entry["repeated"] = same["repeated"] + 1
            self._events.append(entry)

    def polled(
        self, time: float, poll: PollResult, board: Mapping[str, Any], demand_gbps: float | None
    ) -> None:
        """One poll: the devices that answered were seen now; MLU and demand are sampled."""
        answered = set(poll.ocs) | set(poll.counters) | set(poll.ports)
        answered |= set(poll.spine_counters) | set(poll.spine_ports)
        answered -= poll.unreachable
        sample = {
            "time": time,
            "mlu": board.get("mlu"),
            "mlu_quantized": board.get("mlu_quantized"),
            "measured_mlu": board.get("measured_mlu"),
            "predicted_mlu": board.get("predicted_mlu"),
            "demand_gbps": demand_gbps,
            "circuits_up": board.get("circuits_up"),
        }
        with self._lock:
            for name in answered:
                self._last_seen[name] = time
            self._samples.append(_plain(sample))

    def seed_demand(self, history: Iterable[tuple[float, float]]) -> None:
        """Demand totals from the journal's matrix history (a restarted daemon's past), older
        than anything sampled since; MLU unknown for them."""
        with self._lock:
            first = self._samples[0]["time"] if self._samples else math.inf
            older = [
                {"time": t, "mlu": None, "mlu_quantized": None, "measured_mlu": None, "predicted_mlu": None,
                 "demand_gbps": _plain(float(gbps)), "circuits_up": None}
                for t, gbps in history
                if t < first
            ]
            room = (self._samples.maxlen or len(older)) - len(self._samples)
            self._samples.extendleft(reversed(older[-room:] if room > 0 else []))

    def log_handler(self, level: int = logging.WARNING) -> logging.Handler:
        """A logging handler that records WARNING and worse as ``log`` events."""
        return _EventLogHandler(self, level)

    # -- reading (the API's threads) -------------------------------------------------------

    def events(self, limit: int) -> list[dict[str, Any]]:
        """The latest ``limit`` events, newest first."""
        with self._lock:
            recent = list(self._events)[-limit:] if limit > 0 else []
        return [dict(e) for e in reversed(recent)]

    def samples(self, limit: int) -> list[dict[str, Any]]:
        """The latest ``limit`` samples, oldest first."""
        with self._lock:
            return [dict(s) for s in list(self._samples)[-limit:]] if limit > 0 else []

    def last_seen(self) -> dict[str, float]:
        with self._lock:
            return dict(self._last_seen)


class _EventLogHandler(logging.Handler):
    def __init__(self, recorder: Recorder, level: int) -> None:
        super().__init__(level)
        self.recorder = recorder

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not break the caller
            message = str(record.msg)
        details = {"level": record.levelname.lower(), "logger": record.name, "message": message}
        self.recorder.event(record.created, "log", details)
