"""``heliostat replay --jobs SCHEDULE``: jobs arriving and leaving, under each ToE policy."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from controller.commands.output import emit, emit_json
from controller.config import ControllerConfig
from controller.replay.job_policies import Policy, run_policy
from controller.replay.job_report import jobs_json, jobs_table
from controller.replay.job_time import judge
from optimizer.config import load_fabric
from optimizer.errors import ConfigError
from optimizer.jobs.schedule import load_schedule

log = logging.getLogger(__name__)
ARGS = "<command line>"
#: What ``--policies`` compares unless told: the baseline first.
JOB_POLICIES = tuple(p.value for p in Policy)
DEFAULT_POLICIES = ("mesh", "reactive", "job-aware")


def parse_policies(text: str) -> list[Policy]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ConfigError(ARGS, "--policies", "name at least one policy")
    out = []
    for name in names:
        if name not in JOB_POLICIES:
            known = ", ".join(JOB_POLICIES)
            raise ConfigError(ARGS, "--policies", f"unknown policy {name!r}; one of {known}")
        if Policy(name) in out:
            raise ConfigError(ARGS, "--policies", f"{name!r} is named twice")
        out.append(Policy(name))
    return out


def replay_jobs(args: argparse.Namespace, fabric_path: Path, config: ControllerConfig) -> int:
    policies = parse_policies(args.policies)
    fabric = load_fabric(fabric_path)
    schedule = load_schedule(args.jobs, fabric)
    outcomes = []
    for policy in policies:
        run = run_policy(policy, fabric_path, fabric, schedule, config)
        outcomes.append(judge(run, fabric, schedule))
        log.info("replay --jobs: %s done", policy.value)
    if args.format == "json":
        settings = {
            "schedule": str(args.jobs),
            "fabric": fabric.name,
            "toe_check_interval_s": config.intervals.toe_check_interval,
            "job_lead_time_s": config.intervals.job_lead_time,
            "te_interval_s": config.intervals.te_interval,
        }
        emit_json(jobs_json(outcomes, settings), args.out)
    else:
        emit(jobs_table(outcomes, config.intervals.toe_check_interval) + "\n", args.out)
    return 0
