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
  (what the daemon's book plans for);
- ``job-aware-bursts``: the same, the book planning for each job's bursts (per pair, the peak
  of its iteration's phases: :attr:`JobBook.bursts <controller.daemon.jobs.JobBook.bursts>`).

What each policy's routing did to the jobs' bursts is judged afterwards
(:mod:`controller.replay.job_time`).
"""

from __future__ import annotations

import logging
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


class JobAwareReplay(ReplayEngine):
    """The replay engine with the schedule's jobs announced to the daemon's job book first."""

    def __init__(
        self,
        fabric_path: Path,
        fabric: Fabric,
        series: Series,
        config: ControllerConfig,
        schedule: Schedule,
        *,
        bursts: bool = False,
        progress: Progress | None = None,
    ) -> None:
        super().__init__(fabric_path, fabric, series, config, toe=True, progress=progress)
        self.schedule = schedule
        self.bursts = bursts

    def _drive(self, daemon: Daemon) -> None:
        now = self.devices.now()
        daemon.jobs.bursts = self.bursts
        for job in self.schedule.jobs:
            daemon.jobs.add(job.text, job.start, job.end, now, source=job.spec.source)
        super()._drive(daemon)


@dataclass(frozen=True)
class PolicyRun:
    policy: Policy
    result: ReplayResult
    lead_time: float  # how far ahead of a start the policy may know of the job (0: it measures)


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
    engine: ReplayEngine
    aware = policy in (Policy.JOB_AWARE, Policy.JOB_AWARE_BURSTS)
    if aware:
        bursts = policy is Policy.JOB_AWARE_BURSTS
        engine = JobAwareReplay(
            fabric_path, fabric, series, config, schedule, bursts=bursts, progress=progress
        )
    else:
        engine = ReplayEngine(
            fabric_path, fabric, series, config, toe=policy is Policy.REACTIVE, progress=progress
        )
    lead = config.intervals.job_lead_time if aware else 0.0
    return PolicyRun(policy, engine.run(), lead)
