"""Each announced job's communication time per iteration, as the status shows it (issue 31).

Two figures per job, both played with :func:`optimizer.jobs.routed.comm_seconds` (the job's
iterations, bursts and all, max-min fair, with the jobs running or due at the time):

- ``announced``: on the routing in force when the job was announced (what the job would have
  got had the controller done nothing: the *before*);
- ``now``: on the routing in force now (after the fabric reshaped for it: the *after*).

The routing in force (:class:`RoutingInForce`) is the daemon's view of it: the live circuits
(what the OCSes report, both ends up), the groups TE last pushed (none pushed: every block
sends direct) and the ports drained for maintenance or quarantined. Traffic that is not the
jobs' is left out: the figures are the jobs' own. None: the routing sends some of the job's
traffic to a trunk without capacity. A job's ``announced`` figure lives as long as the daemon
(after a restart, the first figure computed stands for it). Thread-safe; ``now`` figures are
played again only when the routing or the set of jobs changed. No clock: ``now`` is given.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optimizer.fabric import Fabric
from optimizer.jobs.intents import JobPhase
from optimizer.jobs.routed import comm_seconds
from optimizer.topology import Circuit

if TYPE_CHECKING:
    from controller.daemon.jobs import BookedJob


@dataclass(frozen=True)
class RoutingInForce:
    circuits: frozenset[Circuit]
    tables: Mapping[str, Mapping[str, Mapping[str, int]]]  # {block: {destination: {via: weight}}}
    drained: frozenset[tuple[str, int]] = frozenset()

    def key(self) -> tuple[Any, ...]:
        tables = tuple(sorted(
            (block, tuple(sorted((dst, tuple(sorted(hops.items()))) for dst, hops in groups.items())))
            for block, groups in self.tables.items()
        ))
        return self.circuits, tables, self.drained


def routing_in_force(
    live: frozenset[Circuit],
    pushed: Mapping[str, Mapping[str, Mapping[str, int]]] | None,
    drained: Iterable[Mapping[str, Iterable[int]]],
) -> RoutingInForce:
    """The routing from the daemon's state: live circuits, groups pushed, ports drained."""
    ports = frozenset((b, p) for group in drained for b, plist in group.items() for p in plist)
    return RoutingInForce(live, pushed or {}, ports)


class JobCommTimes:
    """The ``announced`` and ``now`` figures of the module's docstring."""

    def __init__(self, fabric: Fabric, lead_time: float) -> None:
        self.fabric = fabric
        self.lead_time = lead_time
        self._lock = threading.Lock()
        self._announced: dict[tuple[str, float], float | None] = {}
        self._cache: dict[tuple[Any, ...], dict[str, float] | None] = {}

    def _played(self, group: Sequence[BookedJob], routing: RoutingInForce) -> dict[str, float] | None:
        key = (routing.key(), frozenset((j.name, j.added_at) for j in group))
        if key not in self._cache:
            if len(self._cache) > 64:  # routings gone by
                self._cache.clear()
            self._cache[key] = comm_seconds(self.fabric, [j.modelled for j in group],
                                            routing.circuits, routing.tables, routing.drained)
        return self._cache[key]

    def _group(self, job: BookedJob, jobs: Sequence[BookedJob], now: float) -> list[BookedJob]:
        """``job`` with the other jobs running or due at ``now``."""
        planned = (JobPhase.RUNNING, JobPhase.DUE)
        return [j for j in jobs if j.name == job.name or j.announced().phase(now, self.lead_time) in planned]

    def note_announced(self, job: BookedJob, jobs: Sequence[BookedJob], routing: RoutingInForce,
                       now: float) -> float | None:
        """Play ``job`` (one of ``jobs``, the book) on the routing in force as it is announced."""
        with self._lock:
            played = self._played(self._group(job, jobs, now), routing)
            value = None if played is None else played[job.name]
            self._announced[(job.name, job.added_at)] = value
            return value

    def figures(
        self, jobs: Sequence[BookedJob], routing: RoutingInForce, now: float
    ) -> dict[str, dict[str, Any]]:
        """Per job of ``jobs`` (the book), ``{"announced": s, "now": s}`` (None: unknown or
        blackholed); an ended job's ``now`` is None."""
        out: dict[str, dict[str, Any]] = {}
        with self._lock:
            kept = {(j.name, j.added_at) for j in jobs}
            for gone in [k for k in self._announced if k not in kept]:
                self._announced.pop(gone)
            for job in jobs:
                current = None
                if job.announced().phase(now, self.lead_time) is not JobPhase.ENDED:
                    played = self._played(self._group(job, jobs, now), routing)
                    current = None if played is None else played[job.name]
                key = (job.name, job.added_at)
                if key not in self._announced:  # announced before a restart: the first figure stands
                    self._announced[key] = current
                out[job.name] = {"announced": _rounded(self._announced[key]), "now": _rounded(current)}
        return out


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
