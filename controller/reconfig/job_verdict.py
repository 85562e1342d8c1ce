"""A job's plan judged by the jobs' communication time as well as by the MLU (issue 31 item 4).

On a job's arrival (trigger ``job``) the daemon judges the plan by the announced jobs' played
communication time per iteration (:class:`optimizer.jobs.objective.JobsJudge`) beside the MLU
of the demand: a plan the MLU verdict refuses still applies when it lowers the jobs' mean
communication time by more than the policy's gain, changes circuits, and keeps the MLU under
``max(today's, the stage limit)``. Before the mapping and the staging (most of a minute at 64
blocks), the LP's topology is played against today's: :func:`precheck` says whether a plan can
be worth it by that measure. Pure.

On fabrics of more than :data:`MAX_PLAYED_BLOCKS` blocks the jobs are not played (:func:`judge_for`
gives None): there the LP and two TE solves for the precheck cost 7 to 25 s of a job's planning
on 2 cores (``benchmarks/jobs/arrival_plan.py``), over the 20 s a plan for a job's arrival may
take, and the MLU bound alone decides whether anything is planned.
"""

from __future__ import annotations

from collections.abc import Sequence

from optimizer.fabric import Fabric
from optimizer.jobs.objective import CommGain, JobsJudge, judged
from optimizer.jobs.traffic import JobTraffic
from optimizer.policy import Decision, ReconfigurePolicy
from optimizer.toe import ToeKnobs, plan_topology
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

#: The largest fabric a job's plan is judged on by the jobs' played communication time.
MAX_PLAYED_BLOCKS = 32


def judge_for(fabric: Fabric, jobs: Sequence[JobTraffic]) -> JobsJudge | None:
    """The judge of a job's plan on ``fabric`` (None: no job, a spine, or too many blocks)."""
    return judged(fabric, jobs) if fabric.n_blocks <= MAX_PLAYED_BLOCKS else None


def precheck(judge: JobsJudge, fabric: Fabric, demand: TrafficMatrix, live: frozenset[Circuit],
             time_limit: float) -> CommGain:
    """The jobs' time on today's topology against the LP's (rounded, not mapped) for ``demand``."""
    today = Topology.from_circuits(fabric, live)
    planned = plan_topology(fabric, demand, current=today, knobs=ToeKnobs(time_limit=time_limit)).topology
    return judge.gain(today, planned, demand)


def worth_planning(gain: CommGain, policy: ReconfigurePolicy) -> bool:
    return gain.gain > policy.min_gain


def comm_verdict(verdict: Decision, judge: JobsJudge, fabric: Fabric,
                 circuits: tuple[frozenset[Circuit], frozenset[Circuit]], demand: TrafficMatrix,
                 mlu: tuple[float, float, float], policy: ReconfigurePolicy) -> Decision:
    """``verdict`` (the MLU's) for the plan from today's circuits to the target's
    (``circuits``), or an apply when the jobs' time gains more than the policy asks; ``mlu``
    is today's, the plan's and the stage limit."""
    live, target = circuits
    if verdict.apply or live == target:
        return verdict
    gain = judge.gain(Topology.from_circuits(fabric, live), Topology.from_circuits(fabric, target), demand)
    current_mlu, planned_mlu, stage_mlu = mlu
    figures = f"MLU {current_mlu:.4f} -> {planned_mlu:.4f}"
    if gain.gain > policy.min_gain and planned_mlu <= max(current_mlu, stage_mlu):
        reason = f"{gain.words()}, over the {policy.min_gain:.1%} threshold ({figures})"
        return Decision(True, reason, gain.gain)
    return Decision(False, f"{verdict.reason}; {gain.words()}", verdict.gain)
