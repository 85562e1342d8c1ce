"""The announced jobs' communication time as what a topology is judged by (issue 31 item 4). Pure.

The MLU of the jobs' average matrix misses what their iterations are made of: bursts at the
line rate of a job's blocks, all-reduces that end with their slowest flow, a transit hop that
costs a busy block twice. A topology is judged for the jobs here by playing their iterations
on it (:func:`optimizer.jobs.player.play`: phase by phase, bursts and all, max-min fair, every
job in step from time 0, the worst case) over the routes TE gives it for the demand planned for
(``routed``); the part of that demand that is not the jobs' average (the measured traffic
beyond it, the background) loads the links first.

:meth:`JobsJudge.seconds` is each job's communication time per iteration (seconds; the
iteration's length less its compute); :meth:`JobsJudge.gain` compares two topologies by the
jobs' mean. Fabrics with a spine are not judged (the spine's share of the routes is not played).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optimizer.errors import InfeasibleError
from optimizer.fabric import Fabric
from optimizer.jobs.completion import link_usage
from optimizer.jobs.player import NoCapacity, play, played_jobs
from optimizer.jobs.traffic import JobTraffic
from optimizer.te import TeSolver
from optimizer.topology import Topology
from optimizer.traffic import TrafficMatrix

#: Iterations of the slowest job each topology is played for.
ITERATIONS = 4


@dataclass(frozen=True)
class CommGain:
    """The jobs' mean communication time per iteration (seconds) on two topologies."""

    before: float
    after: float

    @property
    def gain(self) -> float:
        """How much ``after`` lowers ``before``, as a fraction of it (negative: it raises it)."""
        if self.before <= 0.0:
            return 0.0 if self.after <= 0.0 else -np.inf
        return 1.0 - self.after / self.before

    def words(self) -> str:
        return (f"the jobs' communication time {self.before * 1000:.1f} -> {self.after * 1000:.1f} ms "
                f"per iteration ({self.gain:.1%})")


@dataclass(frozen=True)
class JobsJudge:
    fabric: Fabric
    jobs: tuple[JobTraffic, ...]

    def __post_init__(self) -> None:
        if not self.jobs:
            raise ValueError("no job to judge a topology by")
        if self.fabric.has_spine:
            raise ValueError(f"fabric {self.fabric.name!r} has a spine: the jobs' time is not played on it")

    def seconds(self, topology: Topology, routed: TrafficMatrix) -> dict[str, float]:
        """Each job's communication time per iteration on ``topology``, routed by TE for
        ``routed`` (inf for every job when a route has no capacity, a blackhole, or when the
        traffic other than the jobs' alone overloads a link)."""
        blocks = self.fabric.block_names
        if tuple(routed.blocks) != tuple(blocks):
            raise ValueError("the routed matrix is over other blocks than the fabric")
        try:
            tables = TeSolver(self.fabric).solve(topology, routed).weights_by_source()
        except InfeasibleError:  # a pair of the demand without any path
            return {j.job.name: np.inf for j in self.jobs}
        speed = np.array([[self.fabric.link_speed_gbps(a, c) for c in blocks] for a in blocks])
        capacity = np.asarray(topology.counts) * speed
        try:
            played, links = played_jobs(self.jobs, blocks, tables, capacity)
        except NoCapacity:
            return {j.job.name: np.inf for j in self.jobs}
        others = np.asarray(routed.gbps, dtype=np.float64) - sum(j.mean().gbps for j in self.jobs)
        pairs = [(int(i), int(k)) for i, k in zip(*np.nonzero(others > 1e-9), strict=True)]
        load = np.zeros(len(links))
        if pairs:
            try:
                usage, _ = link_usage(blocks, tables, capacity, pairs)
            except ValueError:
                return {j.job.name: np.inf for j in self.jobs}
            load = usage.T @ np.array([others[p] for p in pairs])
        horizon = ITERATIONS * 2 * max(j.period for j in self.jobs)
        try:
            got = play(played, links, horizon, load)
        except NoCapacity:  # the other traffic alone overloads a link: the jobs never get through
            return {j.job.name: np.inf for j in self.jobs}
        return {j.job.name: got[j.job.name].mean_comm_seconds or 0.0 for j in self.jobs}

    def mean_seconds(self, topology: Topology, routed: TrafficMatrix) -> float:
        return float(np.mean(list(self.seconds(topology, routed).values())))

    def gain(self, today: Topology, planned: Topology, routed: TrafficMatrix) -> CommGain:
        return CommGain(self.mean_seconds(today, routed), self.mean_seconds(planned, routed))


def judged(fabric: Fabric, jobs: Sequence[JobTraffic]) -> JobsJudge | None:
    """The judge for ``jobs`` on ``fabric``; None when there is no job or the fabric has a spine."""
    if not jobs or fabric.has_spine:
        return None
    return JobsJudge(fabric, tuple(jobs))
