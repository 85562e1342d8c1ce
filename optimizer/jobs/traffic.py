"""A job's block-to-block traffic: the bytes of each phase of an iteration, and over time. Pure.

One iteration of a job (:class:`~optimizer.jobs.spec.JobSpec`) is two phases:

- **compute** (``iteration_seconds``): forward and backward passes; the pipeline sends and the
  expert all-to-alls happen during it, spread evenly over it;
- **all-reduce**: the data-parallel gradient all-reduce after the backward pass, as a burst
  that lasts as long as the busiest block of the job needs to send or receive its share at the
  line rate of its uplinks (with the job alone on them).

Only transfers between ranks on different blocks cross the fabric; tensor-parallel traffic
stays inside a block. Matrices are over the fabric's blocks (source row, destination column).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from optimizer.fabric import Fabric
from optimizer.jobs.collectives import (
    Transfer,
    all_to_all,
    hierarchical_all_reduce,
    pipeline_sends,
    ring_all_reduce,
    tree_all_reduce,
)
from optimizer.jobs.spec import Collective, JobSpec
from optimizer.traffic import TrafficMatrix, egress_capacity

BITS_PER_BYTE = 8.0


@dataclass(frozen=True)
class Phase:
    name: str  # "compute" or "all-reduce"
    bytes: np.ndarray  # [n, n] block-to-block bytes sent during the phase
    seconds: float

    def gbps(self) -> np.ndarray:
        return self.bytes * BITS_PER_BYTE / self.seconds / 1e9


@dataclass(frozen=True)
class JobTraffic:
    job: JobSpec
    blocks: tuple[str, ...]  # the fabric's, the matrices' order
    phases: tuple[Phase, ...]

    @property
    def period(self) -> float:
        """Seconds per iteration: compute, then the all-reduce burst."""
        return sum(p.seconds for p in self.phases)

    def iteration_bytes(self) -> np.ndarray:
        total: np.ndarray = np.sum([p.bytes for p in self.phases], axis=0)
        return total

    def mean(self) -> TrafficMatrix:
        """The iteration's bytes as an average rate (Gbit/s) over its period."""
        return TrafficMatrix(self.blocks, self.iteration_bytes() * BITS_PER_BYTE / self.period / 1e9)

    def pair_gbytes(self) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray]:
        """The block pairs the job sends between (fabric block indices) and, per pair, the GB of
        its all-reduce and of its compute phase in one iteration."""
        reduce = next((p.bytes for p in self.phases if p.name == "all-reduce"), None)
        compute = next(p.bytes for p in self.phases if p.name == "compute")
        total = compute if reduce is None else compute + reduce
        pairs = [(int(i), int(j)) for i, j in zip(*np.nonzero(total), strict=True)]
        reduce_gb = np.array([0.0 if reduce is None else reduce[i, j] / 1e9 for i, j in pairs])
        compute_gb = np.array([compute[i, j] / 1e9 for i, j in pairs])
        return pairs, reduce_gb, compute_gb

    def peak(self) -> TrafficMatrix:
        """Per pair, the highest rate of any phase (what a burst asks of the fabric)."""
        return TrafficMatrix(self.blocks, np.max([p.gbps() for p in self.phases], axis=0))


def compute_transfers(job: JobSpec) -> list[Transfer]:
    """The pipeline sends and expert all-to-alls of one iteration."""
    out: list[Transfer] = []
    if job.pipeline > 1:
        for dp in range(job.data):
            for tp in range(job.tensor):
                stages = [job.rank(dp, tp, pp) for pp in range(job.pipeline)]
                out += pipeline_sends(stages, job.microbatches, job.activation_bytes)
    if job.expert > 1:
        for pp in range(job.pipeline):
            for tp in range(job.tensor):
                for group in range(job.data // job.expert):
                    members = [job.rank(group * job.expert + e, tp, pp) for e in range(job.expert)]
                    out += all_to_all(members, job.all_to_all_bytes)
    return out


def all_reduce_transfers(job: JobSpec) -> list[Transfer]:
    """The gradient all-reduce of every data-parallel group (one per pipeline and tensor index)."""
    out: list[Transfer] = []
    buffer = job.gradient_bytes
    for pp in range(job.pipeline):
        for tp in range(job.tensor):
            members = [job.rank(dp, tp, pp) for dp in range(job.data)]
            if job.collective is Collective.RING:
                out += ring_all_reduce(members, buffer)
            elif job.collective is Collective.TREE:
                out += tree_all_reduce(members, buffer)
            else:
                out += hierarchical_all_reduce(members, buffer, job.block_of)
    return out


def block_bytes(job: JobSpec, blocks: Sequence[str], transfers: Iterable[Transfer]) -> np.ndarray:
    """[n, n] bytes between blocks (``blocks`` order); transfers inside a block are left out."""
    index = {b: i for i, b in enumerate(blocks)}
    out = np.zeros((len(blocks), len(blocks)))
    for src, dst, volume in transfers:
        a, b = index[job.block_of(src)], index[job.block_of(dst)]
        if a != b:
            out[a, b] += volume
    return out


def burst_seconds(fabric: Fabric, volume: np.ndarray) -> float:
    """How long the busiest block needs to send or receive its bytes at its uplinks' line rate."""
    capacity = egress_capacity(fabric) * 1e9 / BITS_PER_BYTE  # bytes/s
    worst = np.maximum(volume.sum(axis=1), volume.sum(axis=0)) / capacity
    return float(worst.max()) if worst.size else 0.0


def job_traffic(job: JobSpec, fabric: Fabric) -> JobTraffic:
    blocks = fabric.block_names
    compute = block_bytes(job, blocks, compute_transfers(job))
    phases = [Phase("compute", compute, job.iteration_seconds)]
    reduce = block_bytes(job, blocks, all_reduce_transfers(job))
    seconds = burst_seconds(fabric, reduce)
    if seconds > 0:
        phases.append(Phase("all-reduce", reduce, seconds))
    return JobTraffic(job, blocks, tuple(phases))


def jobs_series(traffic: Sequence[JobTraffic], iterations: int) -> tuple[np.ndarray, np.ndarray]:
    """Every job running ``iterations`` iterations from time 0, its phases back to back: the times
    at which the offered matrix changes and the matrix (Gbit/s, the jobs summed) from each on.
    The last matrix is the idle fabric once every job has ended."""
    if not traffic:
        raise ValueError("no job")
    n = len(traffic[0].blocks)
    edges: list[tuple[float, np.ndarray]] = []  # (time, rate change)
    for t in traffic:
        at = 0.0
        for _ in range(iterations):
            for phase in t.phases:
                rate = phase.gbps()
                edges.append((at, rate))
                at += phase.seconds
                edges.append((at, -rate))
    times = sorted({round(at, 9) for at, _ in edges})
    level = np.zeros((n, n))
    out = []
    edges.sort(key=lambda e: e[0])
    k = 0
    for at in times:
        while k < len(edges) and round(edges[k][0], 9) <= at:
            level = level + edges[k][1]
            k += 1
        out.append(np.maximum(level, 0.0))
    return np.array(times), np.array(out)


def line_rate_comm_seconds(traffic: JobTraffic, fabric: Fabric) -> float:
    """The least communication time per iteration any topology and routing can give the job:
    each phase's bytes at the line rate of its busiest block's uplinks, nothing else on them.
    The all-reduce burst takes that long (it is how its length is defined); a compute phase's
    transfers are exposed only by what they would outlast the compute at that rate."""
    total = 0.0
    for phase in traffic.phases:
        need = burst_seconds(fabric, phase.bytes)
        total += max(0.0, need - phase.seconds) if phase.name == "compute" else need
    return total
