"""benchmarks/jobs/phases.py: the seconds between the planner's progress reports, per step."""

from __future__ import annotations

import pytest

from benchmarks.jobs.phases import FIRST_STEP, phase_clock
from optimizer import progress


def test_seconds_go_to_the_step_reported_last() -> None:
    now = [100.0]
    with phase_clock(lambda: now[0]) as clock:
        now[0] += 1.0
        progress.report("ToE LP", "round 1")
        now[0] += 2.0
        progress.report("ToE LP", "round 2")  # the same step goes on
        now[0] += 3.0
        progress.report("mapping")
        now[0] += 0.5
        progress.report("ToE LP", "a re-plan")  # back to a step seen before: added to it
        now[0] += 0.01
    assert clock.seconds == pytest.approx({FIRST_STEP: 1.0, "ToE LP": 5.01, "mapping": 0.5})
    assert clock.words() == f"{FIRST_STEP} 1.0, ToE LP 5.0, mapping 0.5"
    now[0] += 9.0
    progress.report("staging")  # after the block: not counted
    assert "staging" not in clock.seconds
