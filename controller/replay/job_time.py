"""What a policy's routing did to the jobs: communication time per iteration, when each job's
topology was reached, and blackholes (``heliostat replay --jobs``).

The replay's routing history (every change of groups, circuits and drains, with its time)
cuts the schedule into segments with one routing and one set of running jobs. On each, the
running jobs' iterations are played phase by phase, bursts and all, max-min fair
(:func:`optimizer.jobs.player.play`, the background's routed load taken off the links first);
a job's communication time per iteration over the schedule is the mean over its iterations
(each segment weighs as many iterations as fit in it). A route over a trunk without a live
member (a stage that drained what the groups still use) is a **blackhole**: the segment and
the jobs it hit are counted.

A job's topology is **reached** at the last circuit change the policy made between the time
it could know of the job (its start less the lead time for the job-aware policy, its start
otherwise) and the next such time of another job's arrival or departure; it is given relative
to the job's start (negative: ready before the job sends). None: the policy changed no
circuit for it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from controller.replay.job_policies import PlanTime, PolicyRun
from controller.replay.routing import routed_loads, trunk_members
from controller.replay.series_fabric import RoutingState
from optimizer.fabric import Fabric
from optimizer.jobs.routed import comm_seconds
from optimizer.jobs.schedule import Schedule, ScheduledJob

log = logging.getLogger(__name__)



@dataclass
class JobOutcome:
    name: str
    start: float
    end: float
    comm_seconds: float | None = None  # mean per iteration over the schedule
    iterations: float = 0.0
    reached: float | None = None  # seconds from the start (negative: before)
    blackholed_segments: int = 0


@dataclass
class PolicyOutcome:
    policy: str
    jobs: list[JobOutcome]
    reconfigurations: int
    circuits_changed: int
    blackholed_bytes: float  # what the replay's devices counted (the average traffic)
    stages_kept: int
    stages: int
    blackholed_segments: int = 0
    segments: int = 0
    plan_seconds: list[PlanTime] = field(default_factory=list)  # the daemon's ToE plans, timed
    rolled_back: int = 0  # reconfigurations that ended rolled back (a stage refused or failed)

    def slowest_plan(self, trigger: str) -> float | None:
        """Wall-clock seconds of the slowest ToE planning on ``trigger`` ("job": an arrival)."""
        times = [p.seconds for p in self.plan_seconds if p.trigger == trigger]
        return max(times) if times else None

    @property
    def mean_comm_seconds(self) -> float | None:
        values = [j.comm_seconds for j in self.jobs if j.comm_seconds is not None]
        return float(np.mean(values)) if values else None


def judge(run: PolicyRun, fabric: Fabric, schedule: Schedule) -> PolicyOutcome:
    result = run.result
    history = result.routing
    times = np.array([s.time for s in history])
    cuts = sorted({*schedule.events(), *(float(t) for t in times if 0 <= t < schedule.end)})
    sums = {j.name: [0.0, 0.0, 0] for j in schedule.jobs}  # comm x iterations, iterations, holes
    cache: dict[tuple[int, frozenset[str]], dict[str, float] | None] = {}
    holes = segments = 0
    for t0, t1 in pairwise(cuts):
        running = schedule.running(t0)
        if not running or t1 <= t0:
            continue
        segments += 1
        k = max(int(np.searchsorted(times, t0, side="right")) - 1, 0)
        key = (k, frozenset(j.name for j in running))
        if key not in cache:
            cache[key] = _play(fabric, history[k], running, schedule)
        played = cache[key]
        if played is None:
            holes += 1
            for j in running:
                sums[j.name][2] += 1
            continue
        for j in running:
            comm = played[j.name]
            iterations = (t1 - t0) / (j.spec.iteration_seconds + comm)
            sums[j.name][0] += comm * iterations
            sums[j.name][1] += iterations
    outcomes = []
    for j in schedule.jobs:
        total, iterations, hit = sums[j.name]
        outcomes.append(
            JobOutcome(
                j.name,
                j.start,
                j.end,
                total / iterations if iterations > 0 else None,
                iterations,
                _reached(j, schedule, history, run.lead_time),
                int(hit),
            )
        )
    kept = sum(1 for c in result.stage_checks if c.kept)
    return PolicyOutcome(
        run.policy.value,
        outcomes,
        result.reconfigurations,
        result.circuits_changed,
        result.blackholed_bytes,
        kept,
        len(result.stage_checks),
        holes,
        segments,
        list(run.plan_seconds),
        result.reconfigurations_rolled_back,
    )


def _play(
    fabric: Fabric, state: RoutingState, running: Sequence[ScheduledJob], schedule: Schedule
) -> dict[str, float] | None:
    """Per running job, its communication time per iteration under ``state``; None when the
    routing sends some job's traffic (or the background) to a trunk without a live member."""
    background = None
    if schedule.background_gbps > 0:
        members = trunk_members(fabric, state.circuits, state.drained)
        loads = routed_loads(fabric, state.tables, schedule.background(fabric.block_names).gbps, members)
        if loads.blackholed_gbps() > 0:
            log.info("t=%.0f: the background is blackholed", state.time)
            return None
        background = loads.load
    got = comm_seconds(fabric, [j.traffic for j in running], state.circuits, state.tables, state.drained,
                       background)
    if got is None:
        log.info("t=%.0f: blackhole", state.time)
    return got


def _known_at(job: ScheduledJob, lead: float) -> float:
    return max(job.start - lead, 0.0)


def _reached(
    job: ScheduledJob, schedule: Schedule, history: Sequence[RoutingState], lead: float
) -> float | None:
    begin = _known_at(job, lead)
    later = [_known_at(o, lead) for o in schedule.jobs if o is not job] + [o.end for o in schedule.jobs]
    stop = min([t for t in later if t > begin] + [schedule.end])
    last = None
    for before, after in pairwise(history):
        if begin <= after.time < stop and after.circuits != before.circuits:
            last = after.time
    return None if last is None else last - job.start
