"""What the controller plans for once schedulers announce jobs: measured traffic and the jobs'. Pure.

An *announced job* (:class:`AnnouncedJob`) is a job's traffic (Gbit/s per block pair, its
iteration's average: :meth:`optimizer.jobs.JobTraffic.mean`) with the time it starts and,
optionally, the time it ends. At time ``now``, with a lead time ``lead``, a job is

- **running** when ``start <= now`` and it has not ended (``now < end``, or no end);
- **due** when it starts within the lead time: ``now < start <= now + lead``;
- **announced** when it starts later than that, and **ended** once ``end <= now``.

The demand planned for (:func:`planning_demand`) is, per block pair,

    max(measured, sum of the running jobs' traffic) + sum of the due jobs' traffic

A running job is already in the measured traffic (its blocks send it), so it only raises a
pair the measurements have not caught up with (a job that just started, or whose bursts the
average hides): the maximum, not the sum. A due job sends nothing yet: its traffic is added,
so that the topology is ready before it starts. Announced and ended jobs count for nothing.
Times are whatever clock the caller uses (Unix seconds in the daemon); nothing here reads one.

The topology is planned for that demand, but its stages run before the due jobs start: what
each stage's drain is checked against is :func:`stage_traffic` (the rule in
:mod:`optimizer.staging.traffic`): before the first due job starts, the same formula without
the due jobs; then with each due job that may have started, in the order they start.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from optimizer.staging import StageTiming, StageTraffic
from optimizer.traffic import TrafficMatrix

#: The lead time the controller config uses when it does not name one (``intervals.job_lead_time``).
DEFAULT_LEAD_TIME_S = 900.0


class JobPhase(StrEnum):
    ANNOUNCED = "announced"  # starts after the lead time
    DUE = "due"  # starts within the lead time: planned for already
    RUNNING = "running"
    ENDED = "ended"


@dataclass(frozen=True)
class AnnouncedJob:
    name: str
    traffic: TrafficMatrix  # Gbit/s between blocks while it runs
    start: float
    end: float | None = None  # None: until it is removed

    def __post_init__(self) -> None:
        if self.end is not None and self.end <= self.start:
            raise ValueError(f"job {self.name!r}: it ends ({self.end:g}) before it starts ({self.start:g})")

    def phase(self, now: float, lead: float) -> JobPhase:
        if self.end is not None and self.end <= now:
            return JobPhase.ENDED
        if self.start <= now:
            return JobPhase.RUNNING
        if self.start <= now + lead:
            return JobPhase.DUE
        return JobPhase.ANNOUNCED


def planned_jobs(jobs: Iterable[AnnouncedJob], now: float, lead: float) -> frozenset[str]:
    """The names of the jobs the demand counts at ``now``: running or due."""
    return frozenset(j.name for j in jobs if j.phase(now, lead) in (JobPhase.RUNNING, JobPhase.DUE))


def planning_demand(
    measured: TrafficMatrix | None,
    jobs: Sequence[AnnouncedJob],
    now: float,
    lead: float,
    blocks: Sequence[str] | None = None,
) -> TrafficMatrix | None:
    """The matrix to plan for at ``now`` (the module's formula). ``blocks`` orders the matrix
    when nothing was measured (default: the first job's); None when there is neither a
    measurement nor a running or due job. Every matrix must be over the same blocks."""
    if lead < 0:
        raise ValueError(f"the lead time must be >= 0, got {lead:g}")
    counted = [(j, j.phase(now, lead)) for j in jobs]
    counted = [(j, p) for j, p in counted if p in (JobPhase.RUNNING, JobPhase.DUE)]
    if measured is None and not counted:
        return None
    order = tuple(measured.blocks if measured is not None else blocks or counted[0][0].traffic.blocks)
    n = len(order)
    running = np.zeros((n, n))
    due = np.zeros((n, n))
    for job, phase in counted:
        if tuple(job.traffic.blocks) != order:
            raise ValueError(f"job {job.name!r}: its matrix is over other blocks than the measured one")
        if phase is JobPhase.RUNNING:
            running += job.traffic.gbps
        else:
            due += job.traffic.gbps
    base = np.zeros((n, n)) if measured is None else np.asarray(measured.gbps, dtype=np.float64)
    return TrafficMatrix(order, np.maximum(base, running) + due)


def stage_traffic(
    measured: TrafficMatrix | None,
    jobs: Sequence[AnnouncedJob],
    now: float,
    lead: float,
    timing: StageTiming,
    blocks: Sequence[str] | None = None,
) -> StageTraffic | None:
    """What each stage of a plan made at ``now`` for :func:`planning_demand` is checked against:
    one window per due job, in the order they start, holding the demand without it and the due
    jobs after it, for the stages that certainly end before it starts
    (:meth:`~optimizer.staging.StageTiming.stages_before`); the stages after the last window on
    the planning demand too. None when no job is due (every stage on the planning demand)."""
    due = sorted((j for j in jobs if j.phase(now, lead) is JobPhase.DUE), key=lambda j: (j.start, j.name))
    if not due:
        return None
    order = tuple(measured.blocks if measured is not None else blocks or due[0].traffic.blocks)
    running = [j for j in jobs if j.phase(now, lead) is JobPhase.RUNNING]
    windows = []
    for k, job in enumerate(due):
        # the running jobs as the planning demand counts them, and the jobs due before this one
        before = planning_demand(measured, running, now, lead, order)
        gbps = np.zeros((len(order), len(order))) if before is None else np.asarray(before.gbps)
        gbps = gbps + sum((j.traffic.gbps for j in due[:k]), np.zeros_like(gbps))
        windows.append((timing.stages_before(job.start - now), (TrafficMatrix(order, gbps),)))
    return StageTraffic(tuple(windows))
