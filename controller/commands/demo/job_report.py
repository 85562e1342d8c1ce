"""What ``heliostat demo --jobs`` reads from the emulated devices and prints at the end."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from controller.daemon.job_comm import RoutingInForce
from optimizer.topology import Circuit


def routing_on_devices(fabric: Any) -> RoutingInForce:
    """The routing in the emulated data plane (an ``EmulatedFabric``): the circuits every OCS
    has established, each block switch's source groups and drained ports."""
    circuits = frozenset(
        Circuit(name, c.a, c.b) for name, device in fabric.ocs.items() for c in device.established()
    )
    tables = {}
    drained = set()
    for block, switch in fabric.switches.items():
        committed = switch.tables()
        tables[block] = committed.source
        drained |= {(block, int(p)) for p in committed.drained.nonzero()[0]}
    return RoutingInForce(circuits, tables, frozenset(drained))


@dataclass
class Figures:
    names: list[str]
    lead_s: float
    before: dict[str, float] | None = None  # comm s/iteration at the announcement (the mesh)
    at_start: dict[str, float] | None = None  # at the job's start (the reshaped fabric)
    after_te: dict[str, float] | None = None  # once TE routed the jobs' measured traffic
    ready: bool = False  # the reconfiguration was done before the start
    changed: int = 0  # circuits removed or added between the announcement and the start
    stages: int = 0
    peak_mlu_before_start: float = 0.0
    stats_announced: Any = None
    stats_start: Any = None
    stats_end: Any = None
    listed: list[dict[str, Any]] = field(default_factory=list)  # ListJobs at the end
    toe: list[dict[str, Any]] = field(default_factory=list)
    outcome: dict[str, Any] | None = None
    wall_s: float = 0.0

    def improved(self) -> bool:
        """Every job's communication time at its start is below the one at the announcement."""
        if not self.before or not self.at_start:
            return False
        return all(self.at_start[n] < self.before[n] for n in self.names)


def _s(value: float | None) -> str:
    return "blackholed" if value is None else f"{value:.3f} s"


def _of(figures: dict[str, float] | None, name: str) -> float | None:
    return None if figures is None else figures.get(name)


def print_summary(f: Figures) -> int:
    """Prints the summary; returns the exit status (0: ready in time, nothing blackholed, faster)."""
    lost = f.stats_end.blackholed_bytes - f.stats_announced.blackholed_bytes
    dropped_before = f.stats_start.dropped_bytes - f.stats_announced.dropped_bytes
    dropped_after = f.stats_end.dropped_bytes - f.stats_start.dropped_bytes
    job_toe = [t for t in f.toe if t.get("trigger") == "job"]
    ok = f.ready and f.changed > 0 and lost == 0 and dropped_before == 0 and f.improved()
    print()
    print("summary")
    print(f"  job lead time: {f.lead_s:g} s; ToE on the job trigger: "
          + (", ".join("APPLY" if t["apply"] else "keep" for t in job_toe) or "none"))
    state = "done before the job's start" if f.ready else "NOT done by the job's start"
    outcome = f.outcome["outcome"] if f.outcome else "none"
    print(f"  reconfiguration: {outcome}, {state}; {f.changed} circuits changed (removed or "
          f"added) in {f.stages} stages")
    print("  communication time per iteration (played on the routing read from the devices, bursts and all):")
    print(f"    {'job':<14}{'before (mesh)':>16}{'at its start':>16}{'after TE':>16}{'daemon: before':>16}"
          f"{'daemon: now':>14}")
    daemon = {j["name"]: j.get("comm_seconds") or {} for j in f.listed}
    for name in f.names:
        theirs = daemon.get(name, {})
        print(f"    {name:<14}{_s(_of(f.before, name)):>16}{_s(_of(f.at_start, name)):>16}"
              f"{_s(_of(f.after_te, name)):>16}{_s(theirs.get('announced')):>16}{_s(theirs.get('now')):>14}")
    phases = ", ".join(f"{j['name']} {j['phase']}" for j in f.listed)
    print(f"  jobs as the daemon lists them (ListJobs, the status page's jobs card): {phases}")
    print(f"  traffic lost (blackholed) from the announcement on: {lost:.0f} bytes; dropped by congestion: "
          f"{dropped_before:.0f} bytes before the start, {dropped_after:.0f} bytes after it")
    print(f"  highest link utilisation before the start: {f.peak_mlu_before_start:.3f}; MLU with the jobs "
          f"running: {f.stats_end.mlu:.3f}")
    print(f"  time taken: demo {f.wall_s:.1f} s")
    print(f"  outcome: {'OK' if ok else 'FAILED'}")
    sys.stdout.flush()
    return 0 if ok else 1
