"""Jobs' iterations played phase by phase on a fabric, max-min fair: communication time per
iteration (issue 31 item 3). Pure.

Each job repeats its iteration (:class:`~optimizer.jobs.traffic.JobTraffic`): a **compute**
phase, then its **all-reduce** burst. A phase moves one *flow* per block pair (its bytes for
the iteration, from :meth:`JobTraffic.pair_gbytes`), split over the pair's paths with the
fixed shares of the routing in force (:func:`optimizer.jobs.completion.link_usage`):

- the compute phase lasts ``iteration_seconds`` and its flows (pipeline sends, expert
  all-to-alls) are spread over it: each is capped at ``bytes / iteration_seconds``, and the
  phase ends when the compute is done *and* its last flow has arrived (what outlasts the
  compute is exposed communication);
- the all-reduce phase has no cap: its flows take what max-min fair sharing gives them and
  the phase ends when its last flow ends.

All the flows in flight share the links max-min fairly (progressive filling,
:func:`~optimizer.jobs.completion.max_min_rates`; a cap is a private link of that capacity);
``background`` Gbit/s per link (traffic that is not the jobs') is taken off the capacity
first. Rates are filled again at every event (a flow ends, a compute ends, a phase starts).

A job's **communication time per iteration** is its iteration's length minus its compute
time: the all-reduce plus the compute-phase transfers that outlasted the compute.
:func:`play` runs every job from time 0 (all in step: the worst case) for ``horizon``
seconds and averages over each job's complete iterations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from optimizer.jobs.completion import link_usage, max_min_rates
from optimizer.jobs.traffic import BITS_PER_BYTE, JobTraffic

_EPS = 1e-12


@dataclass(frozen=True)
class PlayedPhase:
    """One phase of a job as the player sees it: per flow its link usage row and Gbit."""

    name: str
    usage: np.ndarray  # [F, links]: a flow's share of its rate on each link
    gbit: np.ndarray  # [F]
    min_seconds: float = 0.0  # the compute time the phase lasts at least
    capped: bool = False  # flows spread over min_seconds (rate <= gbit / min_seconds)


@dataclass(frozen=True)
class PlayedJob:
    name: str
    phases: tuple[PlayedPhase, ...]

    @property
    def compute_seconds(self) -> float:
        return sum(p.min_seconds for p in self.phases)


@dataclass
class JobTime:
    """What :func:`play` measured for one job."""

    name: str
    iterations: int = 0
    comm_seconds: list[float] = field(default_factory=list)  # per complete iteration

    @property
    def mean_comm_seconds(self) -> float | None:
        return float(np.mean(self.comm_seconds)) if self.comm_seconds else None


class NoCapacity(ValueError):
    """A flow crosses a link with no capacity left: the routing blackholes it."""


def played_jobs(
    traffic: Sequence[JobTraffic],
    nodes: Sequence[str],
    tables: Mapping[str, Mapping[str, Mapping[str, int]]],
    capacity: np.ndarray,
) -> tuple[list[PlayedJob], np.ndarray]:
    """The jobs' phases on the links of ``capacity`` [m, m] Gbit/s (``nodes``: the blocks, then
    any spine switches) routed by ``tables``; returns them with the links' capacity. Raises
    :class:`NoCapacity` when a route uses a link without capacity."""
    pairs_all = sorted({p for t in traffic for p in t.pair_gbytes()[0]})
    try:
        usage_all, link_capacity = link_usage(nodes, tables, capacity, pairs_all)
    except ValueError as exc:
        raise NoCapacity(str(exc)) from exc
    row = {p: k for k, p in enumerate(pairs_all)}
    out = []
    for t in traffic:
        pairs, reduce, compute = t.pair_gbytes()
        usage = usage_all[[row[p] for p in pairs]] if pairs else np.zeros((0, len(link_capacity)))
        phases = [
            PlayedPhase("compute", usage, compute * BITS_PER_BYTE, t.job.iteration_seconds, capped=True)
        ]
        if reduce.sum() > 0:
            phases.append(PlayedPhase("all-reduce", usage, reduce * BITS_PER_BYTE))
        out.append(PlayedJob(t.job.name, tuple(phases)))
    return out, link_capacity


@dataclass
class _Running:
    job: PlayedJob
    phase: int = 0
    phase_start: float = 0.0
    iteration_start: float = 0.0
    remaining: np.ndarray = field(default_factory=lambda: np.zeros(0))


def play(
    jobs: Sequence[PlayedJob],
    link_capacity: np.ndarray,
    horizon: float,
    background: np.ndarray | None = None,
    max_events: int = 200_000,
) -> dict[str, JobTime]:
    """Play ``jobs`` from time 0 for ``horizon`` seconds (see the module docstring)."""
    if horizon <= 0:
        raise ValueError(f"the horizon must be > 0, got {horizon:g}")
    capacity = np.asarray(link_capacity, dtype=np.float64)
    if background is not None:
        capacity = capacity - np.asarray(background, dtype=np.float64)
        if (capacity < -1e-9).any():
            raise NoCapacity("the background traffic alone is over some link's capacity")
        capacity = np.maximum(capacity, 0.0)
    results = {j.name: JobTime(j.name) for j in jobs}
    running = [_Running(j) for j in jobs if j.phases]
    for r in running:
        r.remaining = r.job.phases[0].gbit.copy()
    now = 0.0
    for _ in range(max_events):
        if now >= horizon - _EPS or not running:
            return results
        rates = _rates(running, capacity)
        step = horizon - now
        for r, rate in zip(running, rates, strict=True):
            step = min(step, _time_to_event(r, rate, now))
        now += step
        for r, rate in zip(running, rates, strict=True):
            r.remaining = np.maximum(r.remaining - rate * step, 0.0)
            r.remaining[r.remaining <= 1e-9 * np.maximum(_phase(r).gbit, 1.0)] = 0.0
            _maybe_next_phase(r, now, results[r.job.name])
    raise RuntimeError(f"the player stopped after {max_events} events at t={now:g} s of {horizon:g}")


def _phase(r: _Running) -> PlayedPhase:
    return r.job.phases[r.phase]


def _rates(running: Sequence[_Running], capacity: np.ndarray) -> list[np.ndarray]:
    """Max-min fair rates (Gbit/s) of every flow with bytes left; a capped flow gets a private
    link of its cap's capacity."""
    rows, caps, sizes = [], [], []
    for r in running:
        phase = _phase(r)
        live = r.remaining > 0
        sizes.append(int(live.sum()))
        rows.append(phase.usage[live])
        if phase.capped:
            caps += list(phase.gbit[live] / phase.min_seconds)
        else:
            caps += [np.inf] * int(live.sum())
    total = sum(sizes)
    if total == 0:
        return [np.zeros_like(r.remaining) for r in running]
    usage = np.vstack(rows)
    capped = [k for k, c in enumerate(caps) if np.isfinite(c)]
    extra = np.zeros((total, len(capped)))
    for col, k in enumerate(capped):
        extra[k, col] = 1.0
    flat = max_min_rates(np.hstack([usage, extra]), np.concatenate([capacity, [caps[k] for k in capped]]))
    if not np.isfinite(flat).all() or (flat <= _EPS).any():
        raise NoCapacity("a flow crosses no link or a link with no capacity left")
    out, at = [], 0
    for r, size in zip(running, sizes, strict=True):
        rate = np.zeros_like(r.remaining)
        rate[r.remaining > 0] = flat[at : at + size]
        out.append(rate)
        at += size
    return out


def _time_to_event(r: _Running, rate: np.ndarray, now: float) -> float:
    live = r.remaining > 0
    ends = float((r.remaining[live] / rate[live]).min()) if live.any() else np.inf
    phase = _phase(r)
    compute_left = r.phase_start + phase.min_seconds - now
    if compute_left > _EPS:
        return min(ends, compute_left)
    return ends if live.any() else 0.0


def _maybe_next_phase(r: _Running, now: float, result: JobTime) -> None:
    """Move ``r`` on while its phase is over (no bytes left, compute done)."""
    while not (r.remaining > 0).any() and now >= r.phase_start + _phase(r).min_seconds - 1e-9:
        r.phase += 1
        if r.phase == len(r.job.phases):
            result.iterations += 1
            result.comm_seconds.append(max(0.0, now - r.iteration_start - r.job.compute_seconds))
            r.phase, r.iteration_start = 0, now
        r.phase_start = now
        r.remaining = _phase(r).gbit.copy()
