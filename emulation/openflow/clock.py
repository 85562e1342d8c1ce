"""Wall-clock time for devices written against the emulation clock interface."""

from __future__ import annotations

import time

from emulation.clock import EmulatedClock


class WallClock(EmulatedClock):
    """``now()`` is Unix time; ``advance`` is meaningless for real devices and refused."""

    def now(self) -> float:
        return time.time()

    def advance(self, seconds: float) -> float:
        raise NotImplementedError("a wall clock cannot be advanced")
