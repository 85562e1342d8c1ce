"""``heliostat replay --jobs``: the daemon's own loop over a schedule of jobs, three ways.

A schedule (:mod:`optimizer.jobs.schedule`) becomes a series (:func:`schedule_series`): from
each job's start to its end its blocks send its iteration's *average* (what the counters
measure over a TE interval), on top of any background. The replay engine
(:class:`~controller.replay.engine.ReplayEngine`: the unchanged daemon on in-memory devices,
its estimator, TE, ToE policy, staging and executor) then runs it under three policies:

- ``mesh``: the uniform mesh, TE only (ToE paused);
- ``reactive``: ToE plans on the measured traffic only, every ``toe_check_interval``: a job's
  topology comes once its traffic has been measured;
- ``job-aware``: the same daemon, with every job of the schedule announced to its job book
  (:class:`~controller.daemon.jobs.JobBook`, as ``ctl job add`` does) before the replay
  starts: ToE plans for a job ``job_lead_time`` ahead of its start, for its average traffic
  (what the daemon's book plans for), each stage's drain checked on the traffic flowing while
  it may run (the book's :meth:`~controller.daemon.jobs.JobBook.stage_traffic`: before the job
  starts without it; :mod:`optimizer.staging.traffic`), as the executor then checks it;
- ``job-aware-bursts``: the same, the book planning for each job's bursts (per pair, the peak
  of its iteration's phases: :attr:`JobBook.bursts <controller.daemon.jobs.JobBook.bursts>`).

What each policy's routing did to the jobs' bursts is judged afterwards
(:mod:`controller.replay.job_time`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import numpy as np

from controller.config import ControllerConfig
from controller.daemon import Daemon
from controller.replay.engine import Progress, ReplayEngine, ReplayResult
from controller.replay.series import Series
from optimizer.fabric import Fabric
from optimizer.jobs.schedule import Schedule

log = logging.getLogger(__name__)


class Policy(StrEnum):
    MESH = "mesh"
    REACTIVE = "reactive"
    JOB_AWARE = "job-aware"
    JOB_AWARE_BURSTS = "job-aware-bursts"


def schedule_series(schedule: Schedule, fabric: Fabric, step: float) -> Series:
    """Snapshots at every arrival and departure and every ``step`` seconds between, each the
    traffic offered from then on; the last one's end is the schedule's end."""
    if not step > 0:
        raise ValueError(f"the step must be > 0, got {step:g}")
    blocks = fabric.block_names
    grid = set(np.arange(0.0, schedule.end, step).round(6).tolist())
    times = sorted(t for t in grid | set(schedule.events()) if t < schedule.end)
    if len(times) < 2:
        times = [0.0, schedule.end / 2]
    # the last snapshot lasts as long as the one before it: end the grid on the schedule's end
    if times[-1] + (times[-1] - times[-2]) < schedule.end - 1e-6:
        times.append(times[-1] + (schedule.end - times[-1]) / 2)
    gbps = np.array([schedule.offered(t, blocks) for t in times])
    return Series(blocks, np.array(times), gbps, schedule.source)


class JobReplay(ReplayEngine):
    """The replay engine for one policy: with ``announce``, the schedule's jobs are announced
    to the daemon's job book first (planning for their bursts with ``bursts``). Every ToE
    planning the daemon does is timed (wall clock): :attr:`plan_seconds`."""

    def __init__(
        self,
        fabric_path: Path,
        fabric: Fabric,
        series: Series,
        config: ControllerConfig,
        schedule: Schedule,
        *,
        toe: bool,
        announce: bool = False,
        bursts: bool = False,
        progress: Progress | None = None,
    ) -> None:
        super().__init__(fabric_path, fabric, series, config, toe=toe, progress=progress)
        self.schedule = schedule
        self.announce = announce
        self.bursts = bursts
        self.plan_seconds: list[PlanTime] = []

    def _drive(self, daemon: Daemon) -> None:
        now = self.devices.now()
        daemon.jobs.bursts = self.bursts
        if self.announce:
            for job in self.schedule.jobs:
                daemon.jobs.add(job.text, job.start, job.end, now, source=job.spec.source)
        if daemon.term is not None:
            reconfiguration = daemon.term.reconfiguration
            plan = reconfiguration.plan_toe

            def timed(trigger: str, at: float) -> None:
                started = time.perf_counter()
                try:
                    plan(trigger, at)
                finally:
                    self.plan_seconds.append(PlanTime(trigger, at, time.perf_counter() - started))

            reconfiguration.plan_toe = timed  # type: ignore[method-assign,assignment]  # timing only
        super()._drive(daemon)


@dataclass(frozen=True)
class PlanTime:
    trigger: str  # "job", "auto", ...
    at: float  # simulated time
    seconds: float  # wall clock the daemon's ToE planning took


@dataclass(frozen=True)
class PolicyRun:
    policy: Policy
    result: ReplayResult
    lead_time: float  # how far ahead of a start the policy may know of the job (0: it measures)
    plan_seconds: tuple[PlanTime, ...] = ()


def run_policy(
    policy: Policy,
    fabric_path: Path,
    fabric: Fabric,
    schedule: Schedule,
    config: ControllerConfig,
    progress: Progress | None = None,
) -> PolicyRun:
    series = schedule_series(schedule, fabric, config.intervals.te_interval * 10)
    log.info("replay --jobs: %s over %d snapshots", policy.value, len(series))
    aware = policy in (Policy.JOB_AWARE, Policy.JOB_AWARE_BURSTS)
    engine = JobReplay(
        fabric_path,
        fabric,
        series,
        config,
        schedule,
        toe=policy is not Policy.MESH,
        announce=aware,
        bursts=policy is Policy.JOB_AWARE_BURSTS,
        progress=progress,
    )
    lead = config.intervals.job_lead_time if aware else 0.0
    result = engine.run()
    return PolicyRun(policy, result, lead, tuple(engine.plan_seconds))
