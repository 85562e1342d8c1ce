"""What a topology planned offline could do for a schedule's busiest moment: the jobs running
then, played (:mod:`optimizer.jobs.player`) on the uniform mesh and on ToE's topology, each
routed by TE for the jobs' averages or for their bursts (per pair, the peak phase), with the
schedule's background. No controller, no staging: a bound on what the replay's policies can
reach with this planner, used by :mod:`benchmarks.jobs.schedule` to explain its figures."""

from __future__ import annotations

import numpy as np

from optimizer.fabric import Fabric
from optimizer.jobs.completion import link_usage
from optimizer.jobs.player import play, played_jobs
from optimizer.jobs.schedule import Schedule
from optimizer.te import TeSolver
from optimizer.toe import plan_topology
from optimizer.topology import Topology, mesh_topology
from optimizer.traffic import TrafficMatrix

ITERATIONS = 4


def busiest(schedule: Schedule) -> float:
    """The first time the most jobs run at once."""
    return max(schedule.events(), key=lambda t: (len(schedule.running(t)), -t))


def comm_times(
    fabric: Fabric, schedule: Schedule, at: float, topology: Topology, routed: TrafficMatrix
) -> dict[str, float]:
    running = schedule.running(at)
    blocks = fabric.block_names
    tables = TeSolver(fabric).solve(topology, routed).weights_by_source()
    speed = np.array([[fabric.link_speed_gbps(a, c) for c in blocks] for a in blocks])
    capacity = np.asarray(topology.counts) * speed
    jobs, links = played_jobs([j.traffic for j in running], blocks, tables, capacity)
    pairs = [(i, k) for i in range(len(blocks)) for k in range(len(blocks)) if i != k]
    usage, _ = link_usage(blocks, tables, capacity, pairs)
    background = usage.T @ np.array([schedule.background_gbps] * len(pairs))
    horizon = ITERATIONS * 2 * max(j.traffic.period for j in running)
    got = play(jobs, links, horizon, background)
    return {j.name: got[j.name].mean_comm_seconds or 0.0 for j in running}


def bound_rows(fabric: Fabric, schedule: Schedule) -> tuple[float, list[tuple[str, dict[str, float]]]]:
    """The busiest moment and, per topology and routing, each running job's communication time
    per iteration (seconds)."""
    at = busiest(schedule)
    running = schedule.running(at)
    background = schedule.background(fabric.block_names).gbps
    mean = TrafficMatrix(fabric.block_names, background + sum(j.traffic.mean().gbps for j in running))
    peak = TrafficMatrix(fabric.block_names, background + sum(j.traffic.peak().gbps for j in running))
    mesh = mesh_topology(fabric)
    rows = []
    for label, topology, routed in (
        ("uniform mesh, TE on the averages", mesh, mean),
        ("uniform mesh, TE on the bursts", mesh, peak),
        ("ToE and TE on the averages", plan_topology(fabric, mean).topology, mean),
        ("ToE and TE on the bursts", plan_topology(fabric, peak).topology, peak),
    ):
        rows.append((label, comm_times(fabric, schedule, at, topology, routed)))
    return at, rows


def bound_lines(
    fabric: Fabric, schedule: Schedule, rows: tuple[float, list[tuple[str, dict[str, float]]]] | None = None
) -> list[str]:
    at, table = rows or bound_rows(fabric, schedule)
    running = schedule.running(at)
    lines = []
    base: float | None = None
    for label, got in table:
        average = float(np.mean(list(got.values())))
        base = average if base is None else base
        cells = " | ".join(f"{got[j.name] * 1000:.1f}" for j in running)
        lines.append(f"| {label} | {cells} | {average * 1000:.1f} | {average / base:.2f} |")
    names = " | ".join(j.name for j in running)
    return [
        f"Offline bound at t = {at:.0f} s ({len(running)} jobs running; communication time per "
        "iteration, ms):",
        "",
        f"| topology and routing | {names} | mean | / first |",
        "|---|" + "---:|" * (len(running) + 2),
        *lines,
    ]
