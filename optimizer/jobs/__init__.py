"""Training jobs as the fabric sees them: the job file, the collectives' formulas, and the
block-to-block traffic of each phase of an iteration and over time (issue 31).

The face of the package: :func:`load_job`, :func:`parse_job` and :class:`JobSpec`
(:mod:`optimizer.jobs.spec`); :func:`job_traffic`, :class:`JobTraffic`, :class:`Phase` and
:func:`jobs_series`, :func:`line_rate_comm_seconds` (:mod:`optimizer.jobs.traffic`);
:func:`job_iteration_seconds`,
:func:`completion_times` and :func:`max_min_rates` (:mod:`optimizer.jobs.completion`: how long
a job's transfers take when they share the fabric max-min fairly); :func:`planning_demand`,
:class:`AnnouncedJob` (:mod:`optimizer.jobs.intents`: what the controller plans for once jobs
are announced). The formulas are in
:mod:`optimizer.jobs.collectives`. Pure: no I/O but reading a job file, no clock.
"""

from optimizer.jobs.completion import completion_times, job_iteration_seconds, max_min_rates
from optimizer.jobs.intents import AnnouncedJob, JobPhase, planned_jobs, planning_demand
from optimizer.jobs.spec import Collective, JobSpec, load_job, parse_job
from optimizer.jobs.traffic import JobTraffic, Phase, job_traffic, jobs_series, line_rate_comm_seconds

__all__ = [
    "AnnouncedJob",
    "Collective",
    "JobPhase",
    "JobSpec",
    "JobTraffic",
    "Phase",
    "completion_times",
    "job_iteration_seconds",
    "job_traffic",
    "jobs_series",
    "line_rate_comm_seconds",
    "load_job",
    "max_min_rates",
    "parse_job",
    "planned_jobs",
    "planning_demand",
]
