"""The emulation clock: time moves only when told to, so tests control it exactly."""

from __future__ import annotations

import threading
from collections.abc import Callable

TickListener = Callable[[float], None]


class ClockError(ValueError):
    """Time cannot go backwards."""


class EmulatedClock:
    """Seconds of emulated time. ``advance`` moves it forward and then tells every listener
    (devices use this to finish switching circuits and emit events)."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()
        self._listeners: list[TickListener] = []

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ClockError(f"cannot advance by {seconds} s")
        with self._lock:
            self._now += seconds
            now = self._now
            listeners = list(self._listeners)
        for listener in listeners:
            listener(now)
        return now

    def subscribe(self, listener: TickListener) -> Callable[[], None]:
        """Call ``listener(now)`` after every advance; returns a function that unsubscribes."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe
