"""Where a plan's time goes: the seconds between the steps the planner reports.

The planner reports its steps on the progress logger (:mod:`optimizer.progress`: "ToE LP",
"mapping", "staging", "safe sequence", ...). :class:`PhaseClock` listens there while a plan
runs and adds up the wall-clock seconds from each report of a step to the next report of any
step; the time before the first report (the job's pre-check, today's TE) is ``start``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from optimizer.progress import PROGRESS_LOGGER

#: The step before the planner's first progress report.
FIRST_STEP = "start"


class PhaseClock(logging.Handler):
    """Seconds per reported step, in the order the steps first came."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        super().__init__(logging.INFO)
        self.clock = clock
        self.seconds: dict[str, float] = {}
        self._step = FIRST_STEP
        self._since = clock()

    def emit(self, record: logging.LogRecord) -> None:
        step = str(record.args[0]) if isinstance(record.args, tuple) and record.args else record.getMessage()
        self._switch(step)

    def _switch(self, step: str) -> None:
        now = self.clock()
        self.seconds[self._step] = self.seconds.get(self._step, 0.0) + now - self._since
        self._step, self._since = step, now

    def words(self) -> str:
        """``step s, step s, ...`` (steps under 0.05 s left out)."""
        return ", ".join(f"{step} {s:.1f}" for step, s in self.seconds.items() if s >= 0.05)


@contextmanager
def phase_clock(clock: Callable[[], float] = time.perf_counter) -> Iterator[PhaseClock]:
    """A :class:`PhaseClock` (on ``clock``) on the progress logger for the ``with`` block."""
    logger = logging.getLogger(PROGRESS_LOGGER)
    phases = PhaseClock(clock)
    level = logger.level
    logger.addHandler(phases)
    logger.setLevel(logging.INFO)
    try:
        yield phases
    finally:
        phases._switch(FIRST_STEP)  # closes the last step
        logger.removeHandler(phases)
        logger.setLevel(level)
