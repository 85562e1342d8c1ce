"""What a replay measured, as JSON, a table, route lines and a picture.

``summary.ratio`` is over the snapshots judged (some routing in force and a non-empty matrix):
``mlu / mlu_optimal`` per snapshot, its mean and percentiles.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from controller.device_view import circuit_ends
from controller.replay.engine import ReplayResult
from controller.replay.series_fabric import RoutingState
from optimizer.fabric import Fabric
from optimizer.topology import Topology


def ratio_summary(ratios: np.ndarray) -> dict[str, float | None]:
    if ratios.size == 0:
        return dict.fromkeys(("mean", "p50", "p90", "p99", "max"))
    return {
        "mean": float(ratios.mean()),
        "p50": float(np.percentile(ratios, 50)),
        "p90": float(np.percentile(ratios, 90)),
        "p99": float(np.percentile(ratios, 99)),
        "max": float(ratios.max()),
    }


def summary_json(result: ReplayResult) -> dict[str, Any]:
    ratios = result.ratios()
    judged = [s for s in result.snapshots if s.ratio is not None]
    kept = [c for c in result.stage_checks if c.kept]
    return {
        "snapshots": len(result.snapshots),
        "judged": len(judged),
        "ratio": ratio_summary(ratios),
        "mlu_mean": float(np.mean([s.mlu for s in judged])) if judged else None,
        "mlu_optimal_mean": float(np.mean([s.mlu_optimal for s in judged])) if judged else None,
        "mlu_p99": float(np.percentile([s.mlu for s in judged], 99)) if judged else None,
        "te_runs": result.te_runs,
        "toe_checks": result.toe_checks,
        "toe_failures": sum(result.toe_failures.values()),
        "reconfigurations": result.reconfigurations,
        "reconfigurations_rolled_back": result.reconfigurations_rolled_back,
        "circuits_changed": result.circuits_changed,
        "stage_checks": len(result.stage_checks),
        "stage_checks_kept": len(kept),
        "blackholed_bytes": result.blackholed_bytes,
        "deferred_plans": {
            outcome: sum(1 for d in result.deferred if d.outcome == outcome)
            for outcome in ("deferred", "waiting", "applied", "expired", "dropped")
        },
    }


def replay_json(result: ReplayResult) -> dict[str, Any]:
    return {
        "fabric": result.fabric,
        "summary": summary_json(result),
        "settings": result.settings,
        "snapshots": [
            {"time": s.time, "mlu": s.mlu, "mlu_optimal": s.mlu_optimal, "reconfiguring": s.reconfiguring}
            for s in result.snapshots
        ],
        "toe_failures": result.toe_failures,
        "deferred": [
            {
                "time": d.time, "outcome": d.outcome, "since": d.since, "waited_s": d.waited_s,
                "current_mlu": d.current_mlu, "target_mlu": d.target_mlu, "stage_mlu": d.stage_mlu,
                "stage_limit": d.stage_limit, "mlu_before": d.mlu_before, "mlu_after": d.mlu_after,
                "reconfiguration_s": d.reconfiguration_s, "reason": d.reason,
            }
            for d in result.deferred
        ],
        "stage_checks": [
            {
                "time": c.time,
                "intent": c.intent,
                "stage": c.stage,
                "mlu": c.mlu,
                "limit": c.limit,
                "kept": c.kept,
            }
            for c in result.stage_checks
        ],
    }


def replay_table(result: ReplayResult) -> str:
    s = summary_json(result)
    r = s["ratio"]

    def fmt(value: object) -> str:
        return "-" if value is None else f"{value:.4f}"

    lines = [
        f"replay on {result.fabric}: {s['snapshots']} snapshots, {s['judged']} judged, "
        f"{s['te_runs']} TE runs",
        "MLU / optimal (the weights in force on each snapshot vs its min-MLU LP optimum):",
        f"  mean {fmt(r['mean'])}  p50 {fmt(r['p50'])}  p90 {fmt(r['p90'])}  p99 {fmt(r['p99'])}  "
        f"max {fmt(r['max'])}",
        f"MLU: mean {fmt(s['mlu_mean'])}  p99 {fmt(s['mlu_p99'])}; optimal mean {fmt(s['mlu_optimal_mean'])}",
        f"ToE: {s['toe_checks']} proposals judged, {s['toe_failures']} failed; reconfigurations: "
        f"{s['reconfigurations']} ({s['reconfigurations_rolled_back']} rolled back), "
        f"{s['circuits_changed']} circuits changed",
    ]
    for why, count in sorted(result.toe_failures.items(), key=lambda kv: -kv[1])[:3]:
        lines.append(f"  ToE failed {count}x: {why}")
    lines.extend(deferred_lines(result))
    if s["stage_checks"]:
        lines.append(
            f"staging rule on the traffic while stages ran: kept {s['stage_checks_kept']} "
            f"of {s['stage_checks']}"
        )
    if s["blackholed_bytes"]:
        lines.append(f"blackholed: {s['blackholed_bytes']:.0f} bytes")
    te = result.settings.get("te", {})
    if isinstance(te, dict):
        lines.append("te: " + ", ".join(f"{k} {v}" for k, v in te.items()))
    lines.append("settings: " + ", ".join(f"{k} {v}" for k, v in result.settings.items() if k != "te"))
    return "\n".join(lines)


def deferred_lines(result: ReplayResult) -> list[str]:
    """When deferred plans were made, and when each would have applied and what it gained."""
    if not result.deferred:
        return []
    counts = summary_json(result)["deferred_plans"]
    lines = [
        f"deferred plans: {counts['deferred']} deferred, {counts['applied']} applied, "
        f"{counts['expired']} expired, {counts['dropped']} dropped ({counts['waiting']} checks waited)"
    ]

    def fmt(value: float | None) -> str:
        return "-" if value is None else f"{value:.4f}"

    for d in result.deferred:
        if d.outcome == "deferred":
            lines.append(
                f"  t={d.time:.0f}s deferred: MLU {d.current_mlu:.4f} -> {d.target_mlu:.4f} predicted; "
                f"a stage would reach {d.stage_mlu:.4f} against a limit of {d.stage_limit:.4f}"
            )
        elif d.outcome == "applied":
            took = "" if d.reconfiguration_s is None else f", reconfigured in {d.reconfiguration_s:.0f}s"
            lines.append(
                f"  t={d.time:.0f}s applied after waiting {d.waited_s:.0f}s (deferred at t={d.since:.0f}s): "
                f"MLU in force {fmt(d.mlu_before)} -> {fmt(d.mlu_after)}{took}"
            )
        elif d.outcome in ("expired", "dropped"):
            lines.append(f"  t={d.time:.0f}s {d.outcome} after {d.waited_s:.0f}s: {d.reason}")
    return lines


def route_lines(fabric: Fabric, result: ReplayResult) -> Iterator[dict[str, Any]]:
    """One line each time the topology or the weights in force change, at the first snapshot
    time they are in force: ``{time, links?, groups?}``."""
    history = result.routing
    times = np.array([s.time for s in history])
    last_links: list[Any] | None = None
    last_groups: list[Any] | None = None
    for snap in result.snapshots:
        state = history[int(np.searchsorted(times, snap.time, side="right")) - 1]
        links = _links(fabric, state)
        groups = _groups(state)
        line: dict[str, Any] = {"time": snap.time}
        if links != last_links:
            line["links"] = links
        if groups != last_groups and groups:
            line["groups"] = groups
        if len(line) > 1:
            yield line
        last_links, last_groups = links, groups if groups else last_groups


def write_routes(path: Path, fabric: Fabric, result: ReplayResult) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for line in route_lines(fabric, result):
            out.write(json.dumps(line) + "\n")
            count += 1
    return count


def _links(fabric: Fabric, state: RoutingState) -> list[dict[str, Any]]:
    usable = [c for c in state.circuits if not any(end in state.drained for end in circuit_ends(fabric, c))]
    return Topology.from_circuits(fabric, usable).to_json()["links"]


def _groups(state: RoutingState) -> list[dict[str, Any]]:
    out = []
    for src in sorted(state.tables):
        for dst in sorted(state.tables[src]):
            hops = state.tables[src][dst]
            total = sum(hops.values())
            out.append(
                {
                    "src": src,
                    "dst": dst,
                    "next_hops": [
                        {"via": via, "weight": w, "share": round(w / total, 6) if total else 0.0}
                        for via, w in sorted(hops.items())
                    ],
                }
            )
    return out


def plot_replay(path: Path, result: ReplayResult, title: str | None = None) -> None:
    """MLU / optimal over time and its CDF, with the reconfigurations marked (a PNG, in the
    style of :mod:`controller.ui.plots`)."""
    from controller.ui.plots import ALERT, MAIN, MUTED, pyplot, save_figure

    plt = pyplot()
    judged = [s for s in result.snapshots if s.ratio is not None]
    times = np.array([s.time for s in judged])
    ratios = np.array([s.ratio for s in judged])
    fig, (ax_time, ax_cdf) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [2.2, 1]})
    ax_time.plot(times, ratios, lw=0.7, color=MAIN, label="MLU / optimal")
    for s in result.snapshots:
        if s.reconfiguring:
            ax_time.axvline(s.time, color=ALERT, alpha=0.15, lw=1)
    if any(s.reconfiguring for s in result.snapshots):
        ax_time.plot([], [], color=ALERT, alpha=0.5, label="reconfiguring")
    ax_time.axhline(1.0, color=MUTED, lw=0.6, ls="--")
    ax_time.set_xlabel("time (s)")
    ax_time.set_ylabel("MLU / optimal")
    ax_time.legend(loc="upper right")
    if ratios.size:
        ordered = np.sort(ratios)
        ax_cdf.plot(ordered, np.arange(1, len(ordered) + 1) / len(ordered), color=MAIN)
        for q in (50, 90, 99):
            ax_cdf.axvline(np.percentile(ratios, q), color=MUTED, lw=0.5, ls=":")
    ax_cdf.set_xlabel("MLU / optimal")
    ax_cdf.set_ylabel("CDF")
    ax_cdf.set_ylim(0, 1)
    summary = ratio_summary(ratios)
    mean = summary["mean"]
    fig.suptitle(
        (title or f"replay on {result.fabric}")
        + (f": mean {mean:.3f}, p99 {summary['p99']:.3f}" if mean is not None else "")
    )
    save_figure(fig, path)
