"""A schedule of job arrivals and departures: what ``heliostat replay --jobs`` plays.

The file (YAML; ``configs/jobs/schedules/`` holds examples)::

    background_gbps: 5.0          # optional: Gbit/s between every pair of blocks, all along (default 0)
    end: 9000                     # optional: seconds the replay lasts (default: the last job's end + 900)
    jobs:                         # job files (optimizer.jobs.spec), relative to this file
      - {job: ../llm-dense.yaml, start: 600, end: 4200}
      - {job: ../moe.yaml, start: 1800, end: 6000}

Times are seconds from the start of the replay; a job runs from ``start`` to ``end``. Job
names (the job files' ``name``) must differ. Errors are :class:`ConfigError` naming the file
and the key (``jobs[1].start``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optimizer import limits, schema
from optimizer.config import parse_yaml
from optimizer.errors import ConfigError
from optimizer.fabric import Fabric
from optimizer.jobs.spec import JobSpec, parse_job
from optimizer.jobs.traffic import JobTraffic, job_traffic
from optimizer.traffic import TrafficMatrix

#: A schedule covers at most this long (seconds) and this many jobs.
MAX_SCHEDULE_S = 30 * 86_400.0
MAX_SCHEDULED_JOBS = 256
#: Seconds the replay goes on after the last job ends, unless ``end`` says otherwise.
DEFAULT_TAIL_S = 900.0
MAX_BACKGROUND_GBPS = 1e6


@dataclass(frozen=True)
class ScheduledJob:
    spec: JobSpec
    text: str  # the job file (what a scheduler announces)
    start: float
    end: float
    traffic: JobTraffic

    @property
    def name(self) -> str:
        return self.spec.name

    def running(self, at: float) -> bool:
        return self.start <= at < self.end


@dataclass(frozen=True)
class Schedule:
    jobs: tuple[ScheduledJob, ...]
    end: float
    background_gbps: float
    source: str = "<schedule>"

    def background(self, blocks: tuple[str, ...]) -> TrafficMatrix:
        n = len(blocks)
        return TrafficMatrix(blocks, np.full((n, n), self.background_gbps) * (1 - np.eye(n)))

    def running(self, at: float) -> list[ScheduledJob]:
        return [j for j in self.jobs if j.running(at)]

    def offered(self, at: float, blocks: tuple[str, ...]) -> np.ndarray:
        """[n, n] Gbit/s offered at ``at``: the background and the running jobs' averages."""
        total = self.background(blocks).gbps.copy()
        for j in self.running(at):
            total += j.traffic.mean().gbps
        return total

    def events(self) -> list[float]:
        """Every time the offered traffic changes, with 0 and the end, in order."""
        return sorted({0.0, self.end, *(j.start for j in self.jobs), *(j.end for j in self.jobs)})


def load_schedule(path: str | Path, fabric: Fabric) -> Schedule:
    source = str(path)
    data = parse_yaml(schema.read_file(path, limits.MAX_YAML_FILE_BYTES), source)
    top = schema.mapping(data, source, "")
    schema.check_keys(top, source, "", ("jobs", "end", "background_gbps"), ("jobs",))
    items = schema.sequence(top["jobs"], source, "jobs")
    if not items:
        raise ConfigError(source, "jobs", "a schedule holds at least one job")
    if len(items) > MAX_SCHEDULED_JOBS:
        raise ConfigError(source, "jobs", f"at most {MAX_SCHEDULED_JOBS} jobs, got {len(items)}")
    here = Path(path).parent
    jobs: list[ScheduledJob] = []
    for i, item in enumerate(items):
        key = f"jobs[{i}]"
        entry = schema.mapping(item, source, key)
        schema.check_keys(entry, source, key, ("job", "start", "end"), ("job", "start", "end"))
        job_path = here / schema.string(entry["job"], source, f"{key}.job")
        if not job_path.is_file():
            raise ConfigError(source, f"{key}.job", f"no job file {str(job_path)!r}")
        start = schema.number(entry["start"], source, f"{key}.start", minimum=0.0, maximum=MAX_SCHEDULE_S)
        end = schema.number(entry["end"], source, f"{key}.end", minimum=0.0, maximum=MAX_SCHEDULE_S)
        if end <= start:
            raise ConfigError(source, f"{key}.end", f"the job ends ({end:g}) before it starts ({start:g})")
        text = schema.read_file(job_path, limits.MAX_YAML_FILE_BYTES)
        spec = parse_job(parse_yaml(text, str(job_path)), str(job_path), fabric)
        if any(j.name == spec.name for j in jobs):
            raise ConfigError(source, f"{key}.job", f"a job named {spec.name!r} is already scheduled")
        jobs.append(ScheduledJob(spec, text, start, end, job_traffic(spec, fabric)))
    last = max(j.end for j in jobs)
    end = schema.number(
        top.get("end", last + DEFAULT_TAIL_S), source, "end", positive=True, maximum=MAX_SCHEDULE_S
    )
    if end < last:
        raise ConfigError(source, "end", f"the replay ends ({end:g}) before the last job does ({last:g})")
    background = schema.number(
        top.get("background_gbps", 0.0), source, "background_gbps", minimum=0.0, maximum=MAX_BACKGROUND_GBPS
    )
    return Schedule(tuple(sorted(jobs, key=lambda j: (j.start, j.name))), end, background, source)
