"""``heliostat replay --jobs``: its table and its JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controller.replay.job_time import PolicyOutcome


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f}"


def _reached(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds:+.0f} s"


def jobs_table(outcomes: Sequence[PolicyOutcome], toe_interval: float) -> str:
    """Per policy: each job's communication time per iteration (ms), the mean over the jobs and
    its ratio to the first policy's, reconfigurations and blackholes; then when each job's
    topology was reached, from its start."""
    if not outcomes:
        return ""
    names = [j.name for j in outcomes[0].jobs]
    base = outcomes[0].mean_comm_seconds
    lines = [
        "communication time per iteration (ms, the mean over each job's iterations while it runs)",
        "",
        f"| policy | {' | '.join(names)} | mean | / {outcomes[0].policy} | reconfigurations | blackholes "
        "| slowest plan on a job arrival |",
        "|---|" + "---:|" * (len(names) + 5),
    ]
    for o in outcomes:
        mean = o.mean_comm_seconds
        ratio = "-" if mean is None or not base else f"{mean / base:.2f}"
        cells = " | ".join(_ms(j.comm_seconds) for j in o.jobs)
        holes = f"{o.blackholed_segments} of {o.segments} segments, {o.blackholed_bytes:.0f} B counted"
        slowest = o.slowest_plan("job")
        plan = "-" if slowest is None else f"{slowest:.1f} s"
        changes = f"{o.reconfigurations}" + (f" ({o.rolled_back} rolled back)" if o.rolled_back else "")
        lines.append(f"| {o.policy} | {cells} | {_ms(mean)} | {ratio} | {changes} | {holes} | {plan} |")
    lines += [
        "",
        "topology reached (the last circuit change for the job, from its start; "
        f"ToE interval {toe_interval:.0f} s)",
        "",
        f"| policy | {' | '.join(names)} |",
        "|---|" + "---:|" * len(names),
    ]
    for o in outcomes:
        lines.append(f"| {o.policy} | {' | '.join(_reached(j.reached) for j in o.jobs)} |")
    return "\n".join(lines)


def jobs_json(outcomes: Sequence[PolicyOutcome], settings: dict[str, Any]) -> dict[str, Any]:
    return {
        "settings": settings,
        "policies": [
            {
                "policy": o.policy,
                "mean_comm_seconds": o.mean_comm_seconds,
                "reconfigurations": o.reconfigurations,
                "rolled_back": o.rolled_back,
                "circuits_changed": o.circuits_changed,
                "stages": o.stages,
                "stages_kept": o.stages_kept,
                "blackholed_bytes": o.blackholed_bytes,
                "blackholed_segments": o.blackholed_segments,
                "segments": o.segments,
                "plans": [{"trigger": p.trigger, "at": p.at, "seconds": p.seconds} for p in o.plan_seconds],
                "jobs": [
                    {
                        "name": j.name,
                        "start": j.start,
                        "end": j.end,
                        "comm_seconds": j.comm_seconds,
                        "iterations": j.iterations,
                        "reached_s": j.reached,
                        "blackholed_segments": j.blackholed_segments,
                    }
                    for j in o.jobs
                ],
            }
            for o in outcomes
        ],
    }
