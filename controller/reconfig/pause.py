"""``heliostat run --pause-at STEP[:before|:after]``: stop the executor at one step until the
process is killed (the crash-recovery tests kill the daemon there and restart it).

The executor knows nothing of it: it calls a :data:`~controller.reconfig.executor.StepCheckpoint`
before and after each step, and :meth:`PausePoint.checkpoint` is one.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from controller.reconfig.executor import STEPS, ExecutorInterrupted, StepCheckpoint

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PausePoint:
    """Stop (until killed) before or after taking a step."""

    step: str
    when: str = "before"

    @classmethod
    def parse(cls, text: str) -> PausePoint:
        step, _, when = text.partition(":")
        when = when or "before"
        if step not in {s.value for s in STEPS} | {"rollback"} or when not in ("before", "after"):
            raise ValueError(
                f"pause point must be STEP[:before|:after] with STEP one of "
                f"{', '.join(s.value for s in STEPS)} or rollback; got {text!r}"
            )
        return cls(step, when)

    def checkpoint(self, stop: threading.Event) -> StepCheckpoint:
        """The executor's checkpoint that waits at this point until ``stop`` is set, then ends
        the stage there (the journal keeps the step as a crash would)."""

        def pause_here(step: str, when: str) -> None:
            if step == self.step and when == self.when:
                log.warning("executor paused %s %s (--pause-at); waiting to be killed", when, step)
                stop.wait()
                raise ExecutorInterrupted(f"stopped while paused {when} {step}")

        return pause_here
