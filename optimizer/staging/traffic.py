"""The traffic each stage is checked against: the stage rule per matrix (issue 31). Pure.

A plan is made for its *planning demand*: with announced jobs, the traffic measured now plus
the traffic of the jobs due to start within the lead time
(:func:`optimizer.jobs.intents.planning_demand`). The target topology is chosen for that
demand, and every stage's MLU after it (the cut after the best step, the verdict) is judged on
it. But the stages run *before* a due job starts, when only today's traffic flows: a stage's
drain has to be safe for the traffic flowing while it is drained, not for traffic that will
only arrive later. Checking every drain on the planning demand refuses, on a fabric near the
stage limit once the due jobs are counted, every drain that raises the MLU at all, and the
executor, which checks each drain on the measured traffic, then disagrees with the planner.

:class:`StageTraffic` cuts the time after the plan into slots: ``windows[w] = (until, matrices)``
is the traffic flowing in slot ``w`` (before the ``w``-th due job starts), and stage ``k`` (0 is
the plan's first) certainly ends within slot ``w`` when ``k < until`` (the first such ``w``:
*its* window); after the last window's stages, a stage may run after every due job started,
when the plan's own matrices flow. A stage may also run sooner than that (stages usually take
less than their bound), so its drain is checked on the traffic of every slot from the first to
its own, each matrix group against its own limit (:mod:`optimizer.staging.checks`): the MLU
with the stage's circuits drained, worst over the group, at most ``max(threshold / margin, the
same where the stage starts)``. This per-matrix rule is needed: a drain that keeps a congested
fabric's MLU on the planning demand (0.96 -> 0.96, allowed) can still raise the MLU of the
traffic flowing now over the stage limit, which is what the executor refuses. A stage moved
earlier (merged stages) was checked on every slot it may now run in, and more.

When may a stage run (:class:`StageTiming`)? A plan made at ``now`` is applied once it is
made, at the latest ``plan_seconds`` later (its time limit), one stage after another, each
taking at most ``stage_seconds`` (the executor's step timeouts summed: a step that overruns
its timeout fails and the stage rolls back). So stage ``k`` has ended (its circuits undrained)
by ``now + plan_seconds + (k + 1) * stage_seconds``, and a job due at ``start`` cannot meet it
drained unless that is after ``start``: :meth:`StageTiming.stages_before` counts the stages
that certainly end before a start, and only those are checked without the job's traffic.
Every later stage counts it (the executor's own check of each drain on the traffic measured
when it runs stays as the safety net: a job that starts early, or traffic that rose, has the
drain refused and the stage rolled back). The bound is conservative: stages usually take
well under their timeouts, so some stages that will in fact run before the job starts are
still checked for its traffic.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

from optimizer.errors import InfeasibleError
from optimizer.traffic import TrafficMatrix


@dataclass(frozen=True)
class StageTiming:
    """The most a plan may take before its first stage (``plan_seconds``) and a stage may take
    (``stage_seconds``), in seconds."""

    plan_seconds: float
    stage_seconds: float

    def __post_init__(self) -> None:
        if not self.plan_seconds >= 0 or math.isinf(self.plan_seconds):
            raise InfeasibleError(f"plan_seconds must be a finite number >= 0, got {self.plan_seconds}")
        if not self.stage_seconds > 0 or math.isinf(self.stage_seconds):
            raise InfeasibleError(f"stage_seconds must be a finite number > 0, got {self.stage_seconds}")

    def stages_before(self, seconds: float) -> int:
        """How many stages of a plan made now certainly end within ``seconds`` from now."""
        return max(0, math.floor((seconds - self.plan_seconds) / self.stage_seconds + 1e-9))


@dataclass(frozen=True)
class StageTraffic:
    """Stage ``k`` is checked on the matrices of every window up to the first with ``k < until``
    (its own); the stages after the last window on every window's and the plan's matrices (see
    the module docstring)."""

    windows: tuple[tuple[int, tuple[TrafficMatrix, ...]], ...]

    def __post_init__(self) -> None:
        ends = [until for until, _ in self.windows]
        if any(b < a for a, b in itertools.pairwise(ends)) or any(e < 0 for e in ends):
            raise InfeasibleError(f"the stage windows must end at stage counts >= 0, in order, got {ends}")
        if any(not matrices for _, matrices in self.windows):
            raise InfeasibleError("every stage window needs at least one matrix")

    def window(self, k: int) -> int:
        """The index of stage ``k``'s window; ``len(windows)`` for the plan's own matrices."""
        return next((w for w, (until, _) in enumerate(self.windows) if k < until), len(self.windows))

    def after(self, stages: int) -> StageTraffic:
        """The same rule for a plan whose first stage comes after ``stages`` others."""
        return StageTraffic(tuple((max(until - stages, 0), m) for until, m in self.windows))

    def mapped(self, fn: Callable[[TrafficMatrix], TrafficMatrix]) -> StageTraffic:
        """Every window's matrices through ``fn`` (a planning view's demand under maintenance)."""
        return StageTraffic(tuple((until, tuple(fn(m) for m in ms)) for until, ms in self.windows))


#: The rule of a plan with no announced jobs: every stage on the plan's matrices.
SAME = StageTraffic(())
