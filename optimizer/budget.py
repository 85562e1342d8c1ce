"""A solver's time budget, measured on an injectable clock.

The pure core reads no clock of its own accord; a budget is the one exception, and its clock
is a parameter (default :func:`time.monotonic`) so that tests drive it by hand instead of
waiting. Solvers that take their own time limit (HiGHS's ``time_limit``) are given
:meth:`TimeBudget.remaining` before every run, so the budget holds across many runs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from optimizer.errors import ConfigError

Clock = Callable[[], float]


class TimeBudget:
    """``seconds`` of solver time from the moment the budget is made."""

    def __init__(self, seconds: float, clock: Clock = time.monotonic, source: str = "<toe>") -> None:
        check_time_limit(seconds, source, "time_limit")
        self.seconds = float(seconds)
        self.clock = clock
        self.started = clock()
        #: the whole job's seconds (the plan's time limit) when this is a portion of it
        self.whole = self.seconds

    def elapsed(self) -> float:
        return self.clock() - self.started

    def remaining(self) -> float:
        """Seconds left (zero or negative once the budget is spent)."""
        return self.seconds - self.elapsed()

    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def share(self, fraction: float) -> TimeBudget:
        """The first ``fraction`` of this budget: same start and clock, that share of the seconds
        (a step of a larger job that must leave time for the steps after it)."""
        part = TimeBudget(max(self.seconds * fraction, 1e-9), self.clock)
        part.started = self.started
        return part

    def portion(self, fraction: float) -> TimeBudget:
        """The next ``fraction`` of the time left, counted from now (a step that may be
        followed by others: it ends early enough to leave them the rest). ``whole`` stays the
        whole budget's seconds, for messages."""
        part = TimeBudget(max(self.elapsed() + max(self.remaining(), 0.0) * fraction, 1e-9), self.clock)
        part.started = self.started
        part.whole = self.whole
        return part

    def describe(self) -> str:
        """``the plan's time limit (60 s)``, or for a portion ``its share (31 s) of the plan's
        time limit (60 s)``."""
        if self.whole == self.seconds:
            return f"the plan's time limit ({self.seconds:g} s)"
        return f"its share ({self.seconds:.3g} s) of the plan's time limit ({self.whole:g} s)"


def check_time_limit(seconds: float, source: str, key: str) -> float:
    """A time limit must be a finite number of seconds > 0."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise ConfigError(source, key, f"must be a number of seconds, got {seconds!r}")
    if not 0.0 < seconds < math.inf:  # also rejects NaN
        raise ConfigError(source, key, f"must be a finite number of seconds > 0, got {seconds}")
    return float(seconds)
