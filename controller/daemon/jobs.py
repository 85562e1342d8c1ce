"""Announced jobs (issue 31): the :class:`JobBook` a scheduler fills through ``ctl job add``.

A scheduler announces a training job before it starts (its job file, :mod:`optimizer.jobs.spec`,
with a start time and optionally an end). The book validates it against the fabric (a
:class:`JobRejected` names the problem: ``unknown_block``, ``degrees`` when data x tensor x
pipeline is not the accelerators placed, ``out_of_range`` for a size outside its bounds,
``invalid`` for anything else wrong in the file, ``duplicate``, ``unknown_job``, ``too_many``,
``times``), journals the whole book (as operator requests are: durable before acknowledged,
:mod:`controller.operator_requests`) and only then keeps it. A restarted daemon reads the book
back (:meth:`JobBook.attach`).

What the controller plans for is :func:`optimizer.jobs.intents.planning_demand` over the
booked jobs' average traffic (:meth:`JobBook.demand`), its stages checked on the traffic flowing
while they may run (:meth:`JobBook.stage_traffic`); :meth:`JobBook.newly_planned` tells the
loop when a job became due or started, so that ToE plans (and applies, with the usual staging
and guards) before the job sends its first byte.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from controller.reconfig.journal import Journal
from optimizer import limits
from optimizer.config import parse_yaml
from optimizer.errors import ConfigError, HeliostatError
from optimizer.fabric import Fabric
from optimizer.jobs import JobSpec, JobTraffic, job_traffic, parse_job
from optimizer.jobs.intents import AnnouncedJob, JobPhase, planned_jobs, planning_demand, stage_traffic
from optimizer.staging import StageTiming, StageTraffic
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

JOBS_KEY = "jobs"
#: Jobs the book holds at once (each is re-validated at every start).
MAX_JOBS = 256
#: A job file's size as the API takes it.
MAX_JOB_TEXT = limits.MAX_YAML_FILE_BYTES
#: How far ahead (seconds) a job may be announced, and how long it may run.
MAX_AHEAD_S = 30 * 86_400.0


class JobProblem(StrEnum):
    UNKNOWN_BLOCK = "unknown_block"
    DEGREES = "degrees"
    OUT_OF_RANGE = "out_of_range"
    INVALID = "invalid"
    DUPLICATE = "duplicate"
    UNKNOWN_JOB = "unknown_job"
    TOO_MANY = "too_many"
    TIMES = "times"


class JobRejected(HeliostatError):
    """A job announcement the controller refuses; ``problem`` names the kind."""

    def __init__(self, problem: JobProblem, message: str) -> None:
        self.problem = problem
        self.message = message
        super().__init__(f"{problem.value}: {message}")


def classify(error: ConfigError) -> JobProblem:
    """The kind of a job file's error, from the key it names and its problem."""
    if error.key.startswith("placement.blocks") and error.problem.startswith("no block"):
        return JobProblem.UNKNOWN_BLOCK
    if error.key in ("parallelism", "parallelism.tensor", "parallelism.expert") and (
        "accelerators" in error.problem or "divide" in error.problem
    ):
        return JobProblem.DEGREES
    if error.problem.startswith(("must be <=", "must be >=", "must be > 0")):
        return JobProblem.OUT_OF_RANGE
    return JobProblem.INVALID


def parse_announcement(text: str, source: str, fabric: Fabric) -> JobSpec:
    """The job file ``text`` validated against ``fabric``; JobRejected names the problem."""
    if len(text.encode()) > MAX_JOB_TEXT:
        raise JobRejected(JobProblem.INVALID, f"{source}: the job file is over {MAX_JOB_TEXT:,} bytes")
    try:
        return parse_job(parse_yaml(text, source), source, fabric)
    except ConfigError as exc:
        raise JobRejected(classify(exc), str(exc)) from exc


@dataclass(frozen=True)
class BookedJob:
    spec: JobSpec
    text: str  # the job file as announced (journaled; parsed again at a restart)
    start: float
    end: float | None
    added_at: float
    traffic: TrafficMatrix  # its Gbit/s between blocks: the average (or the bursts' peak)
    modelled: JobTraffic  # its iteration's phases: its communication time, and what a plan is judged by

    @property
    def name(self) -> str:
        return self.spec.name

    def announced(self) -> AnnouncedJob:
        return AnnouncedJob(self.name, self.traffic, self.start, self.end)

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "text": self.text, "start": self.start, "end": self.end,
                "added_at": self.added_at}

    def to_json(self, now: float, lead: float, comm: dict[str, Any] | None = None) -> dict[str, Any]:
        """The job as the API shows it; ``comm``: its communication time per iteration
        (:mod:`controller.daemon.job_comm`), None when not computed."""
        spec, gbps = self.spec, self.traffic.gbps
        blocks = self.traffic.blocks
        pairs = [
            {"src": blocks[i], "dst": blocks[j], "gbps": round(float(gbps[i, j]), 6)}
            for i in range(len(blocks)) for j in range(len(blocks)) if gbps[i, j] > 0
        ]
        return {
            "name": self.name,
            "phase": self.announced().phase(now, lead).value,
            "start": self.start,
            "end": self.end,
            "added_at": self.added_at,
            "blocks": list(spec.blocks),
            "accelerators": spec.world,
            "parallelism": {"data": spec.data, "tensor": spec.tensor, "pipeline": spec.pipeline,
                            "expert": spec.expert},
            "collective": spec.collective.value,
            "gbps": round(float(gbps.sum()), 6),
            "pairs": pairs,
            "iteration_seconds": spec.iteration_seconds,
            "comm_seconds": comm or {"announced": None, "now": None},
        }


class JobBook:
    """The announced jobs; thread-safe (the API's threads add and remove, the loop reads)."""

    def __init__(self, fabric: Fabric, lead_time: float, bursts: bool = False) -> None:
        self.fabric = fabric
        self.lead_time = lead_time
        #: plan for each pair's peak over the iteration's phases (its all-reduce burst) rather
        #: than the average: what ``heliostat replay --jobs`` compares as ``job-aware-bursts``
        self.bursts = bursts
        self._jobs: dict[str, BookedJob] = {}
        self._journal: Journal | None = None
        self._lock = threading.Lock()
        self._planned: frozenset[str] = frozenset()

    def _book(self, text: str, source: str, start: float, end: float | None, added_at: float) -> BookedJob:
        spec = parse_announcement(text, source, self.fabric)
        if end is not None and end <= start:
            raise JobRejected(JobProblem.TIMES,
                              f"job {spec.name!r}: it ends ({end:g}) before it starts ({start:g})")
        modelled = job_traffic(spec, self.fabric)
        traffic = modelled.peak() if self.bursts else modelled.mean()
        return BookedJob(spec, text, start, end, added_at, traffic, modelled)

    def attach(self, journal: Journal) -> list[str]:
        """Read the journaled book (a new term); returns the names of jobs dropped because they
        no longer fit the fabric (logged)."""
        dropped: list[str] = []
        jobs: dict[str, BookedJob] = {}
        for i, raw in enumerate(journal.get_state(JOBS_KEY) or ()):
            try:
                end = raw.get("end")
                job = self._book(str(raw["text"]), f"journal jobs[{i}]", float(raw["start"]),
                                 None if end is None else float(end), float(raw["added_at"]))
            except (HeliostatError, KeyError, TypeError, ValueError, AttributeError) as exc:
                name = raw.get("name", f"jobs[{i}]") if isinstance(raw, dict) else f"jobs[{i}]"
                log.warning("journal: announced job %s dropped: %s", name, exc)
                dropped.append(str(name))
                continue
            jobs[job.name] = job
        with self._lock:
            self._journal, self._jobs = journal, jobs
        if jobs:
            log.info("announced jobs restored from the journal: %s", ", ".join(sorted(jobs)))
        return dropped

    def detach(self) -> None:
        """The term ended: nothing is journaled until the next one attaches."""
        with self._lock:
            self._journal = None

    def add(self, text: str, start: float, end: float | None, now: float, source: str = "<job>") -> BookedJob:
        """Validate, journal, then keep; raises JobRejected, or JournalError (nothing kept)."""
        if not now - MAX_AHEAD_S <= start <= now + MAX_AHEAD_S:
            raise JobRejected(JobProblem.TIMES, f"start: {start:g} is more than {MAX_AHEAD_S:g} s from now")
        if end is not None and end > start + MAX_AHEAD_S:
            raise JobRejected(JobProblem.TIMES, f"end: more than {MAX_AHEAD_S:g} s after the start")
        job = self._book(text, source, start, end, now)
        with self._lock:
            journal = self._require_journal()
            old = self._jobs.get(job.name)
            if old is not None:
                if (old.text, old.start, old.end) == (text, start, end):
                    return old  # the same announcement again (a scheduler's retry): nothing to do
                raise JobRejected(JobProblem.DUPLICATE, f"a job named {job.name!r} is already announced; "
                                  "remove it first")
            if len(self._jobs) >= MAX_JOBS:
                raise JobRejected(JobProblem.TOO_MANY, f"the controller holds at most {MAX_JOBS} jobs")
            jobs = {**self._jobs, job.name: job}
            journal.put_state(JOBS_KEY, [j.record() for j in jobs.values()])
            self._jobs = jobs
        log.info("job %s announced: starts at %.0f, %d blocks", job.name, start, len(job.spec.blocks))
        return job

    def remove(self, name: str) -> BookedJob:
        with self._lock:
            journal = self._require_journal()
            job = self._jobs.get(name)
            if job is None:
                raise JobRejected(JobProblem.UNKNOWN_JOB, f"name: no job {name!r} is announced")
            jobs = {k: v for k, v in self._jobs.items() if k != name}
            journal.put_state(JOBS_KEY, [j.record() for j in jobs.values()])
            self._jobs = jobs
        log.info("job %s removed", name)
        return job

    def _require_journal(self) -> Journal:
        if self._journal is None:
            raise HeliostatError("the controller is starting (no journal yet)")
        return self._journal

    def jobs(self) -> list[BookedJob]:
        with self._lock:
            return sorted(self._jobs.values(), key=lambda j: (j.start, j.name))

    def demand(self, measured: TrafficMatrix | None, now: float) -> TrafficMatrix | None:
        """What to plan for at ``now``: the measured (or predicted) matrix with the jobs'."""
        return planning_demand(measured, [j.announced() for j in self.jobs()], now, self.lead_time,
                               self.fabric.block_names)

    def stage_traffic(
        self, measured: TrafficMatrix | None, now: float, timing: StageTiming
    ) -> StageTraffic | None:
        """What each stage of a plan made at ``now`` is checked against (the traffic flowing
        while it may run: :func:`optimizer.jobs.intents.stage_traffic`); None when no job is due."""
        return stage_traffic(measured, [j.announced() for j in self.jobs()], now, self.lead_time, timing,
                             self.fabric.block_names)

    def planned(self, now: float) -> list[str]:
        """The jobs the demand counts at ``now`` (running or due), by name."""
        return sorted(planned_jobs([j.announced() for j in self.jobs()], now, self.lead_time))

    def planned_traffic(self, now: float) -> list[JobTraffic]:
        """The phases of the jobs the demand counts at ``now`` (running or due)."""
        names = planned_jobs([j.announced() for j in self.jobs()], now, self.lead_time)
        return [j.modelled for j in self.jobs() if j.name in names]

    def newly_planned(self, now: float) -> list[str]:
        """Jobs that became due or started since the last call (the loop asks ToE then)."""
        current = frozenset(self.planned(now))
        with self._lock:
            new, self._planned = current - self._planned, current
        return sorted(new)

    def phase(self, job: BookedJob, now: float) -> JobPhase:
        return job.announced().phase(now, self.lead_time)
