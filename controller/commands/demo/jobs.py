"""``heliostat demo --jobs [FILE...]``: a training job announced ahead of its start, and the
fabric reshaped for it before its first iteration (issue 31 item 5).

Starts the emulated fabric (uniform background traffic) and the controller in lockstep, as
``heliostat demo`` does (:mod:`controller.commands.demo.lockstep`: the fabric stands still while
the controller works, so the lead time, the job's start, ``--timeout`` and the times on the
progress lines are the controller's seconds, and a loaded machine stretches only the real
time the demo takes), with the job lead time set to ``--job-lead`` seconds and the northbound API
served. Once TE routes the background, it announces the job(s) through the API's ``AddJob``
(as a scheduler would), starting ``--job-lead`` seconds later: the job is due at once, the
daemon's ``job`` trigger asks ToE, which plans for the job's traffic and applies stage by
stage before the start. At the start the emulator plays the jobs' traffic: each job's
**average** rate per block pair over its iteration (the flow-level data plane carries rates,
not transfers: an all-reduce burst at line rate would show as drops, not as a longer
all-reduce). The communication time per iteration is played, bursts and all, with
:func:`optimizer.jobs.routed.comm_seconds` on the routing read from the emulated devices (the
OCSes' circuits, the switches' groups and drains): before (at the announcement) and after
(at the job's start, and once TE has routed the job's measured traffic). The daemon's own
figures (:mod:`controller.daemon.job_comm`) are listed through ``ListJobs``, as the status
page's jobs card shows them. Exit status 1 unless the fabric changed before the job's start,
no byte was blackholed and the job's communication time went down.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from controller.commands.demo import scripted as base
from controller.commands.demo.job_report import Figures, print_summary, routing_on_devices
from controller.commands.demo.lockstep import Lockstep
from controller.commands.emulator import EmulatedFabric
from controller.config import load_controller_config
from controller.daemon import Daemon
from optimizer.config import load_fabric
from optimizer.errors import ConfigError, HeliostatError
from optimizer.jobs import JobTraffic, job_traffic, load_job
from optimizer.jobs.routed import comm_seconds
from optimizer.traffic import TrafficMatrix, uniform_matrix

JOB_FILES = base.ROOT / "configs" / "jobs"
DEFAULT_JOBS = (JOB_FILES / "llm-dense.yaml", JOB_FILES / "moe.yaml")
ARGS = "<command line>"


def run_jobs_demo(args: argparse.Namespace) -> int:
    if args.job_lead <= 0:
        raise ConfigError(ARGS, "--job-lead", f"must be > 0 seconds, got {args.job_lead:g}")
    if not 0 <= args.background < 1:
        raise ConfigError(ARGS, "--background", f"must be in [0, 1), got {args.background:g}")
    started = time.monotonic()
    loaded = load_controller_config(args.config)
    run_dir = Path(tempfile.mkdtemp(prefix="heliostat-demo-jobs-"))
    intervals = dataclasses.replace(loaded.intervals, job_lead_time=float(args.job_lead))
    config = dataclasses.replace(loaded, devices=run_dir / "devices.yaml", store=run_dir / "heliostat.db",
                                 intervals=intervals)
    files = [Path(f) for f in args.jobs] or list(DEFAULT_JOBS)
    model = load_fabric(config.fabric)
    specs = [load_job(f, model) for f in files]  # a bad file is a ConfigError naming it
    fabric = EmulatedFabric(model, tick_s=0.25, devices_file=config.devices, protocols=args.protocols)
    traffic = [job_traffic(s, model) for s in specs]
    lockstep = Lockstep(fabric, args.speed, pace=args.serve)
    lockstep.give_up_at = started + base.REAL_BACKSTOP * args.timeout
    progress = base.Progress(lockstep.now(), clock=lockstep.now)  # the controller's seconds
    with fabric:
        progress.say(
            f"emulated fabric {model.name}: {model.n_blocks} blocks, {len(model.ocs)} OCSes, "
            f"{len(fabric.agents)} devices speaking {base._spoken(args.protocols)}; clock x{args.speed:g} "
            f"in lockstep with the controller; run dir {run_dir}"
        )
        background = uniform_matrix(model, load=args.background)
        fabric.set_demand(background)
        progress.say(f"demand: uniform background, {background.total():.0f} Gbit/s")
        events = base._event_hub()
        daemon = Daemon(config, listener=base._both(_job_events(progress), events.publish),
                        clock=lockstep.now, wait=lockstep.wait)
        lockstep.attach(daemon)
        daemon.start()
        servers = page = client = None
        signals = base._Signals() if args.serve else None
        try:
            servers, page = base._serve(daemon, progress, events) if args.serve else (_api(daemon), None)
            client = _client(servers)
            with base.PlanningTicker(progress, lambda: daemon.board.get("phase")):
                run = JobsRun(args, lockstep, client, progress, background, files, traffic, started)
                result = run.script()
            if signals is not None:
                signals.wait(progress, lockstep)
            return result
        finally:
            if signals is not None:
                signals.restore()
            if client is not None:
                client.close()
            if page is not None:
                page.stop()
            if servers is not None:
                servers.stop()
            lockstep.stop.set()
            daemon.stop()
            daemon.close()


def _api(daemon: Daemon) -> Any:
    from controller.commands.run import start_api_servers

    servers = start_api_servers(daemon)
    if servers is None:
        raise HeliostatError("the demo announces its jobs through the northbound API, which is not installed")
    return servers


def _client(servers: Any) -> Any:
    from controller.northbound.client import ControllerClient

    return ControllerClient(str(servers.grpc_address))


def _job_events(progress: base.Progress) -> Any:
    """The demo's listener, which also says when jobs become due (the daemon's ``jobs`` event)."""

    def listener(kind: str, details: dict[str, Any]) -> None:
        if kind == "jobs":
            due = ", ".join(details["due"])
            progress.say(f"daemon: job(s) due within the lead time: {due}: ToE plans for them")
        progress(kind, details)

    return listener


class JobsRun:
    """The scripted part: announce, watch the fabric reshape, start the jobs, measure. Its
    waits are in the controller's time (the fabric stands still while the controller works):
    a loaded machine stretches the demo's real time, not what happens in it."""

    def __init__(self, args: argparse.Namespace, lockstep: Lockstep, client: Any, progress: base.Progress,
                 background: TrafficMatrix, files: Sequence[Path], traffic: Sequence[JobTraffic],
                 started: float) -> None:
        self.args, self.lockstep, self.client, self.progress = args, lockstep, client, progress
        self.background, self.files, self.traffic, self.started = background, files, traffic, started
        self.fabric: EmulatedFabric = lockstep.fabric
        self.stop_at = lockstep.now() + args.timeout
        self.model = self.fabric.fabric

    def comm(self, routing: Any) -> dict[str, float] | None:
        return comm_seconds(self.model, self.traffic, routing.circuits, routing.tables, routing.drained)

    def until(self, condition: Any, within_s: float) -> bool:
        """Cycle until ``condition()``, for at most ``within_s`` of the controller's time."""
        return base._until(self.lockstep, condition, within_s, self.stop_at)

    def script(self) -> int:
        progress, fabric, lockstep = self.progress, self.fabric, self.lockstep
        offered = self.background.total()
        if not self.until(lambda: abs(progress.te_demand_gbps - offered) <= 0.1 * offered, 30):
            progress.say("the controller did not route the background traffic in time")
            return 1
        lockstep.run_for(0.5, self.stop_at)
        figures = Figures(names=[t.job.name for t in self.traffic], lead_s=float(self.args.job_lead))
        mesh = routing_on_devices(fabric)
        figures.before = self.comm(mesh)
        start = lockstep.now() + self.args.job_lead
        figures.stats_announced = fabric.stats()
        for path in self.files:
            job = self.client.add_job(path.read_text(), start)
            progress.say(f"AddJob {job['name']} ({path.name}): {job['phase']}, starts in "
                         f"{start - lockstep.now():.0f} s on {','.join(job['blocks'])}, "
                         f"{job['gbps']:.0f} Gbit/s on average")
        peak = [0.0]

        def watch_peak() -> None:
            peak[0] = max(peak[0], fabric.stats().mlu)

        lockstep.after_move.append(watch_peak)
        try:
            if not lockstep.run_until(lambda: lockstep.now() >= start, self.stop_at):
                progress.say("the demo's --timeout came before the job's start")
                return 1
        finally:
            lockstep.after_move.remove(watch_peak)
        figures.peak_mlu_before_start = peak[0]
        figures.ready = progress.outcome is not None and (progress.reconfig_ended or 0) <= start
        at_start = routing_on_devices(fabric)
        figures.changed = len(at_start.circuits ^ mesh.circuits)
        figures.at_start = self.comm(at_start)
        figures.stats_start = fabric.stats()
        jobs = np.sum([t.mean().gbps for t in self.traffic], axis=0)
        playing = TrafficMatrix(self.model.block_names, self.background.gbps + jobs)
        fabric.set_demand(playing)
        progress.say(f"the job(s) start: the emulator plays their average traffic, {jobs.sum():.0f} Gbit/s "
                     f"(with the background: {playing.total():.0f} Gbit/s)")
        total = playing.total()
        if not self.until(lambda: abs(progress.te_demand_gbps - total) <= 0.1 * total, 20):
            progress.say("TE did not route the jobs' measured traffic in time")
        lockstep.run_for(1.5, self.stop_at)
        figures.after_te = self.comm(routing_on_devices(fabric))
        figures.stats_end = fabric.stats()
        figures.listed = self.client.list_jobs()["jobs"]
        figures.toe = list(progress.toe)
        figures.outcome = progress.outcome
        figures.stages = progress.stages_total
        figures.wall_s = time.monotonic() - self.started
        return print_summary(figures)
