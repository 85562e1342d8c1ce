"""Training jobs as the fabric sees them: the job file, the collectives' formulas, and the
block-to-block traffic of each phase of an iteration and over time (issue 31).

The face of the package: :func:`load_job`, :func:`parse_job` and :class:`JobSpec`
(:mod:`optimizer.jobs.spec`); :func:`job_traffic`, :class:`JobTraffic`, :class:`Phase` and
:func:`jobs_series` (:mod:`optimizer.jobs.traffic`). The formulas are in
:mod:`optimizer.jobs.collectives`. Pure: no I/O but reading a job file, no clock.
"""

from optimizer.jobs.spec import Collective, JobSpec, load_job, parse_job
from optimizer.jobs.traffic import JobTraffic, Phase, job_traffic, jobs_series

__all__ = [
    "Collective",
    "JobSpec",
    "JobTraffic",
    "Phase",
    "job_traffic",
    "jobs_series",
    "load_job",
    "parse_job",
]
