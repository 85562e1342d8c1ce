"""``heliostat demo``: the closed loop on an emulated 8-block fabric, end to end.

Starts the emulated fabric (its clock runs ``--speed`` times real time) and the controller
with ``configs/controller-demo.yaml``, offers uniform traffic, then shifts it to a hotspot
pattern; prints each TE run, the ToE decision and each stage as they happen, and ends with
a summary: MLU before and after, circuits changed, bytes lost during the change, time taken.
Exit status 1 if the reconfiguration did not complete or lost traffic.

With ``--serve`` it also serves the northbound API, the metrics and the status page (at the
config's ``listen`` addresses) from the start, prints their URLs, and after the summary keeps
the fabric and the controller running until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.commands.demo.lockstep import SYNC_TIMEOUT_S, Lockstep
from controller.commands.emulator import EmulatedFabric
from controller.config import load_controller_config
from controller.daemon import Daemon
from optimizer.errors import ConfigError
from optimizer.traffic import hotspot_matrix, uniform_matrix

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_CONFIG = ROOT / "configs" / "controller-demo.yaml"
#: how much longer than ``--timeout`` in real time the scripted demo may take before giving up
REAL_BACKSTOP = 5


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the controller against an emulated fabric through a demand shift")
    p.add_argument("--config", default=str(DEFAULT_CONFIG), help="controller config (default: %(default)s)")
    p.add_argument("--speed", type=float, default=20.0, help="emulated seconds per real second")
    p.add_argument("--load", type=float, default=0.6, help="busiest block's load after the shift")
    p.add_argument("--seed", type=int, default=1, help="hotspot pattern seed")
    p.add_argument("--timeout", type=float, default=100.0,
                   help="give up after this many seconds of the controller's time (the fabric's "
                   "clock scaled back; real time may be longer on a loaded machine, up to "
                   f"{REAL_BACKSTOP}x) (default: %(default)s)")
    p.add_argument(
        "--serve",
        action="store_true",
        help="serve the API, metrics and status page, and keep running after the summary until SIGTERM",
    )
    p.add_argument("--protocols", choices=("standard", "native"), default="standard",
                   help="what the emulated devices speak: P4Runtime, gNMI and NETCONF (standard) or "
                   "heliostat.southbound.v1 (native) (default: %(default)s)")
    p.add_argument("--ha", action="store_true",
                   help="3 etcd members and 3 replicas; kill the leader mid-reconfiguration (issue 14)")
    p.add_argument("--jobs", nargs="*", metavar="FILE", default=None,
                   help="announce training jobs (default: configs/jobs/llm-dense.yaml and moe.yaml) and "
                   "reshape the fabric before they start (issue 31)")
    p.add_argument("--job-lead", type=float, default=45.0,
                   help="with --jobs: the jobs start this many seconds after they are announced, and the "
                   "controller's job lead time (default: %(default)s)")
    p.add_argument("--background", type=float, default=0.1,
                   help="with --jobs: the uniform background traffic's load (default: %(default)s)")
    p.set_defaults(handler=_demo)


class Progress:
    """Prints the daemon's events as they happen and remembers what the summary needs."""

    def __init__(self, started: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.started = started
        self.clock = clock  # the times printed and kept: real, or the controller's (lockstep)
        self.lock = threading.Lock()
        self.te_runs = 0
        self.toe: list[dict[str, Any]] = []
        self.outcome: dict[str, Any] | None = None
        self.reconfig_started: float | None = None
        self.reconfig_ended: float | None = None
        self.stages_total = 0
        self.changed = 0  # circuits the applied plan changes (its target against the live set)
        self.te_demand_gbps = 0.0  # the demand the last TE run routed

    def say(self, text: str) -> None:
        print(f"[{self.clock() - self.started:6.1f}s] {text}", flush=True)

    def __call__(self, event: str, d: dict[str, Any]) -> None:
        with self.lock:
            if event == "te":
                self.te_runs += 1
                self.te_demand_gbps = float(d["demand_gbps"])
                self.say(
                    f"TE #{self.te_runs} ({d['reason']}): {d['demand_gbps']:.0f} Gbit/s over "
                    f"{d['circuits']} circuits, planned MLU {d['mlu']:.3f} (weights {d['mlu_quantized']:.3f})"
                )
            elif event == "toe":
                self.toe.append(d)
                verdict = "APPLY" if d["apply"] else "keep today's topology"
                self.say(f"ToE ({d['trigger']}): {verdict}: {d['reason']}")
                if d["apply"]:
                    self.stages_total = int(d["stages"])
                    self.changed = int(d["changed"])
                    self.reconfig_started = self.clock()
                    self.say(f"    {d['changed']} circuits to change in {d['stages']} stages")
            elif event == "step" and d["event"] == "failed":
                self.say(f"    stage {d['stage'] + 1}: {d['step']} FAILED")
            elif event == "stage":
                self.say(
                    f"    stage {d['stage'] + 1}/{self.stages_total} done (drain, verify, switch, "
                    f"qualify, undrain)"
                )
            elif event == "rollback":
                self.say(f"    stage {d['stage'] + 1}: rollback {d['event']}")
            elif event == "reconfiguration":
                self.outcome = d
                self.reconfig_ended = self.clock()
                self.say(f"reconfiguration {d['outcome']}" + (f": {d['reason']}" if d["reason"] else ""))


class PlanningTicker:
    """Says when the ToE starts planning and, every ``every_s`` while it plans, for how long:
    a first plan can take tens of seconds on a loaded machine, and silence looks like a hang."""

    def __init__(self, progress: Progress, phase: Any, every_s: float = 5.0) -> None:
        self.progress = progress
        self.phase = phase  # () -> the daemon's phase ("planning" while the ToE plans)
        self.every_s = every_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="demo-planning", daemon=True)

    def __enter__(self) -> PlanningTicker:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=2)

    def _run(self) -> None:
        since: float | None = None
        said = 0.0
        while not self.stop.wait(0.2):
            planning = self.phase() == "planning"
            now = time.monotonic()
            if planning and since is None:
                since, said = now, now
                self.progress.say("ToE: planning the topology ...")
            elif planning and since is not None and now - said >= self.every_s:
                said = now
                self.progress.say(f"ToE: still planning ({now - since:.0f} s)")
            elif not planning:
                since = None


def _demo(args: argparse.Namespace) -> int:
    if args.ha and args.serve:
        raise ConfigError("<command line>", "--serve", "not with --ha (the HA demo kills its replicas)")
    if args.ha and args.jobs is not None:
        raise ConfigError("<command line>", "--jobs", "not with --ha")
    if args.verbose == 0 and args.jobs is not None:
        logging.getLogger().setLevel(logging.ERROR)
    if args.jobs is not None:
        from controller.commands.demo.jobs import run_jobs_demo

        return run_jobs_demo(args)
    if args.ha:
        from controller.commands.demo.ha import run_ha_demo

        return run_ha_demo(args)
    if args.verbose == 0:  # the progress lines say what the warnings would
        logging.getLogger().setLevel(logging.ERROR)
    started = time.monotonic()
    base = load_controller_config(args.config)
    run_dir = Path(tempfile.mkdtemp(prefix="heliostat-demo-"))
    config = dataclasses.replace(base, devices=run_dir / "devices.yaml", store=run_dir / "heliostat.db")
    progress = Progress(started)
    fabric = EmulatedFabric.from_config(config.fabric, tick_s=0.25, devices_file=config.devices,
                                        protocols=args.protocols)
    model = fabric.fabric
    uniform = uniform_matrix(model, load=0.5)
    hotspot = hotspot_matrix(model, seed=args.seed, load=args.load)
    lockstep = Lockstep(fabric, args.speed, pace=args.serve)
    stop_at = lockstep.now() + args.timeout
    lockstep.give_up_at = started + REAL_BACKSTOP * args.timeout
    with fabric:
        progress.say(
            f"emulated fabric {model.name}: {model.n_blocks} blocks, {len(model.ocs)} OCSes, "
            f"{len(fabric.agents)} devices speaking {_spoken(args.protocols)}; clock x{args.speed:g} "
            f"in lockstep with the controller; run dir {run_dir}"
        )
        fabric.set_demand(uniform)
        progress.say(f"demand: uniform, {uniform.total():.0f} Gbit/s")
        # with --serve, WatchEvents (`heliostat ctl watch`) follows the loop as it does under `run`
        events = _event_hub() if args.serve else None
        daemon = Daemon(config, listener=progress if events is None else _both(progress, events.publish),
                        clock=lockstep.now, wait=lockstep.wait)
        lockstep.attach(daemon)
        daemon.start()
        servers = page = None
        signals = _Signals() if args.serve else None
        try:
            if signals is not None:
                servers, page = _serve(daemon, progress, events)
            with PlanningTicker(progress, lambda: daemon.board.get("phase")):
                result = _script(args, fabric, lockstep, daemon, progress, hotspot, stop_at, started)
            if signals is not None:
                signals.wait(progress, lockstep)
            return result
        finally:
            if signals is not None:
                signals.restore()
            if page is not None:
                page.stop()
            if servers is not None:
                servers.stop()
            lockstep.stop.set()
            daemon.stop()
            daemon.close()


def _spoken(protocols: str) -> str:
    if protocols == "standard":
        return "P4Runtime + gNMI (switches) and NETCONF (OCSes)"
    return "heliostat.southbound.v1"


def _event_hub() -> Any:
    from controller.northbound.events import EventHub

    return EventHub()


def _both(first: Any, second: Any) -> Any:
    """One listener calling two, in order."""

    def listener(kind: str, details: dict[str, Any]) -> None:
        first(kind, details)
        second(kind, details)

    return listener


def _serve(daemon: Daemon, progress: Progress, events: Any) -> tuple[Any, Any]:
    """The API (with its event stream), metrics and the status page, as ``heliostat run``
    serves them; prints the URLs."""
    from controller.commands.run import start_api_servers, start_status_page

    servers = start_api_servers(daemon, events)
    page = start_status_page(daemon, servers)
    if page is None:
        progress.say(f"{daemon.config.source}: listen.web is not set: no status page")
    else:
        progress.say(f"status page: {page.url}")
    if servers is not None:
        progress.say(f"metrics: {servers.metrics.url if servers.metrics else 'not served'}; "
                     f"API: heliostat ctl --address {servers.grpc_address} status")
    return servers, page


class _Signals:
    """SIGTERM and SIGINT while serving: during the scripted shift they interrupt it (as Ctrl-C
    does without ``--serve``); after it they end the wait."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.scripted = True
        self.previous = {sig: signal.signal(sig, self._handle) for sig in (signal.SIGTERM, signal.SIGINT)}

    def _handle(self, signum: int, frame: object) -> None:
        self.stop.set()
        if self.scripted:
            raise KeyboardInterrupt

    def wait(self, progress: Progress, lockstep: Lockstep | None = None) -> None:
        """Until SIGTERM or SIGINT, the fabric and the controller go on (in lockstep, or in
        their own threads without ``lockstep``)."""
        self.scripted = False
        progress.say("serving until SIGTERM or Ctrl-C")
        if lockstep is not None:
            lockstep.give_up_at = float("inf")  # the script's backstop: serving has no end
            lockstep.run_until(self.stop.is_set, float("inf"))
        else:
            while not self.stop.wait(0.5):
                pass
        progress.say("stopping")

    def restore(self) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def _until(lockstep: Lockstep, condition: Any, within_s: float, stop_at: float) -> bool:
    """Cycle until ``condition()``, for at most ``within_s`` of the controller's time."""
    until = lockstep.now() + within_s
    return lockstep.run_until(lambda: condition() or lockstep.now() >= until, stop_at) and condition()


def _script(
    args: argparse.Namespace,
    fabric: EmulatedFabric,
    lockstep: Lockstep,
    daemon: Daemon,
    progress: Progress,
    hotspot: Any,
    stop_at: float,
    started: float,
) -> int:
    if not _until(lockstep, lambda: progress.te_runs >= 1 and progress.toe, 30, stop_at):
        progress.say("the controller did not run TE and ToE on the uniform demand in time")
        return 1
    lockstep.run_for(1.0, stop_at)
    uniform_mlu = fabric.stats().mlu
    progress.say(f"measured MLU on uniform demand: {uniform_mlu:.3f}")
    fabric.set_demand(hotspot)
    progress.say(f"demand shift: hotspot (seed {args.seed}), {hotspot.total():.0f} Gbit/s")
    # TE has reacted once it routed the new demand (within 10%): a run on a matrix measured
    # across the shift (part old demand, part new) does not count
    offered = hotspot.total()
    if not _until(lockstep, lambda: abs(progress.te_demand_gbps - offered) <= 0.1 * offered, 30, stop_at):
        progress.say("TE did not react to the shift in time")
        return 1
    lockstep.run_for(1.5, stop_at)
    before = fabric.stats()
    progress.say(f"measured MLU after TE, before ToE: {before.mlu:.3f}")
    peak = [0.0]

    def watch_peak() -> None:
        if progress.reconfig_started is not None and progress.outcome is None:
            peak[0] = max(peak[0], fabric.stats().mlu)

    lockstep.after_move.append(watch_peak)
    if not lockstep.run_until(lambda: progress.outcome is not None, stop_at):
        progress.say(f"no reconfiguration completed within --timeout ({args.timeout:g} s of the "
                     f"controller's time, {time.monotonic() - started:.0f} s real)")
        return 1
    during = fabric.stats()
    runs = progress.te_runs
    _until(lockstep, lambda: progress.te_runs > runs, 3, stop_at)
    lockstep.run_for(1.5, stop_at)
    after = fabric.stats()
    intents = daemon.journal.reconfigurations(1) if daemon.journal is not None else []
    plan = intents[0].plan.to_json() if intents else {}
    changed = plan.get("circuits_removed", 0) + plan.get("circuits_added", 0)
    lost = during.blackholed_bytes - before.blackholed_bytes
    dropped = during.dropped_bytes - before.dropped_bytes
    reconfig_s = (progress.reconfig_ended or 0) - (progress.reconfig_started or 0)
    ok = progress.outcome is not None and progress.outcome["outcome"] == "done" and lost == dropped == 0
    print()
    print("summary")
    print(f"  MLU before (hotspot on the uniform mesh, after TE): {before.mlu:.3f}")
    change = f"  ({(after.mlu - before.mlu) / before.mlu:+.1%})" if before.mlu else ""
    print(f"  MLU after reconfiguration:                          {after.mlu:.3f}{change}")
    planned = plan.get("planned_mlu")
    print(f"  MLU the planner predicted:                          {planned:.3f}" if planned else "")
    moves = (f"; the stages make {changed} moves ({plan.get('circuits_removed')} removals, "
             f"{plan.get('circuits_added')} additions: a circuit may move twice)"
             if changed != progress.changed else
             f" ({plan.get('circuits_removed')} removed, {plan.get('circuits_added')} added)")
    print(f"  circuits changed: {progress.changed}{moves} in {progress.stages_total} stages")
    solver = plan.get("solver") or {}
    if solver.get("timed_out"):
        print("  the planner's time limit cut its search: another run may find a different plan")
    print(
        f"  traffic lost during the change (blackholed): {lost:.0f} bytes; dropped by congestion: "
        f"{dropped:.0f} bytes"
    )
    print(
        f"  highest link utilisation during the change: {peak[0]:.3f} (stage limit "
        f"{daemon.config.thresholds.stage_mlu:g})"
    )
    print(f"  time taken: reconfiguration {reconfig_s:.1f} s, demo {time.monotonic() - started:.1f} s")
    if lockstep.unsynced:
        print(f"  the switches' counters lagged the fabric's clock {lockstep.unsynced} times (over "
              f"{SYNC_TIMEOUT_S:g} s each): the machine is loaded, the matrices may differ from run to run")
    print(f"  outcome: {'OK' if ok else 'FAILED'}")
    sys.stdout.flush()
    return 0 if ok else 1
