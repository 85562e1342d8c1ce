"""Replay benchmark (``python -m benchmarks.bench_replay``): the controller on real traffic.

Meta's pod-level traces (``../shared/data/meta-pod-traces``, training split): pod_a (4 pods)
and pod_b (8 pods), four series each, replayed by ``heliostat replay``'s engine on
``configs/fabric-pod-a.yaml`` / ``fabric-pod-b.yaml`` (a full mesh of equal trunks, as in
the traces), one snapshot every 30 s (the TE interval). Each file's units are scaled so that
the median snapshot's optimum on the mesh is about 0.5 (``UNIT_GBPS``; ratios do not depend
on it, ToE does).

1. TE: every policy below on the same snapshots in this process, ToE off; per snapshot the
   MLU of the weights in force over the snapshot's own LP optimum; mean and percentiles per
   series and pooled.
2. ToE over a trace: ToE on against the fixed uniform mesh, at the median-0.5 scale and a hot
   one (x1.6), with the default TE policy.
3. One TE decision at 64 blocks (``configs/fabric-64.yaml``) with a 12-snapshot history, in a
   fresh process: time and peak RSS.

Results go to ``benchmarks/RESULTS_replay.md``.
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.child import run_module
from benchmarks.machine import machine_summary
from controller.config import ControllerConfig
from controller.replay.engine import ReplayEngine, ReplayResult
from controller.replay.report import ratio_summary
from controller.replay.series import Series, load_series
from optimizer.config import load_fabric
from optimizer.te import Predictor, TeMethod, TePolicy

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TRACES = ROOT.parent / "shared" / "data" / "meta-pod-traces"
FILES = (1, 2, 3, 4)
INTERVAL_S = 30.0
#: Gbit/s per unit of each trace, so that the median snapshot's optimum on the mesh is ~0.5.
UNIT_GBPS = {"pod_a": 0.01, "pod_b": 0.00085}
HOT = 1.6
log = logging.getLogger(__name__)

#: The policies compared; the first is the baseline the targets are measured against.
POLICIES: dict[str, TePolicy] = {
    "jupiter (peak of 12, S=0.5)": TePolicy(TeMethod.MIN_MLU, Predictor.PEAK, 12, 0.5),
    "last snapshot, no hedge": TePolicy(TeMethod.MIN_MLU, Predictor.LAST, 1, None),
    "last snapshot, S=0.5": TePolicy(TeMethod.MIN_MLU, Predictor.LAST, 1, 0.5),
    "scenarios (48, S=0.5)": TePolicy(TeMethod.SCENARIOS, Predictor.LAST, 48, 0.5),
}


def fabric_file(pod: str) -> Path:
    return ROOT / "configs" / f"fabric-pod-{pod[-1]}.yaml"


def series_of(pod: str, number: int) -> Series:
    fabric = load_fabric(fabric_file(pod))
    path = TRACES / pod / "train" / f"{number}.hist"
    return load_series(path, fabric, interval_s=INTERVAL_S, unit_gbps=UNIT_GBPS[pod])


def config_for(pod: str, policy: TePolicy) -> ControllerConfig:
    base = ControllerConfig("<bench>", fabric_file(pod), ROOT / "unused", ROOT / "unused")
    return replace(base, te=policy, intervals=replace(base.intervals, te_interval=INTERVAL_S))


def replay(pod: str, series: Series, policy: TePolicy, toe: bool) -> ReplayResult:
    path = fabric_file(pod)
    return ReplayEngine(path, load_fabric(path), series, config_for(pod, policy), toe=toe).run()


# -- 1. TE ------------------------------------------------------------------------------------


def te_section(limit: int | None) -> tuple[list[str], dict[str, Any]]:
    rows, pooled, figures = [], {}, {}
    for pod in UNIT_GBPS:
        for number in FILES:
            series = series_of(pod, number)
            if limit:
                series = series.window(0, limit)
            for name, policy in POLICIES.items():
                started = time.perf_counter()
                result = replay(pod, series, policy, toe=False)
                seconds = time.perf_counter() - started
                ratios = result.ratios()
                pooled.setdefault((pod, name), []).append(ratios)
                s = ratio_summary(ratios)
                log.info(
                    "%s/%d %-28s mean %.3f p99 %.3f (%.0f s)", pod, number, name, s["mean"], s["p99"], seconds
                )
                rows.append(_row(pod, str(number), name, s, len(ratios), seconds))
    for (pod, name), parts in pooled.items():
        ratios = np.concatenate(parts)
        s = ratio_summary(ratios)
        figures[f"{pod}/{name}"] = s
        rows.append(_row(pod, "all", name, s, len(ratios), None))
    lines = [
        "| fabric | series | policy | snapshots | mean | p50 | p90 | p99 | max | replay (s) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
    ]
    return lines, figures


def _row(pod: str, series: str, name: str, s: dict[str, float | None], n: int, seconds: float | None) -> str:
    cells = [f"{s[k]:.3f}" if s[k] is not None else "-" for k in ("mean", "p50", "p90", "p99", "max")]
    label = f"**{series}**" if series == "all" else series
    took = f"{seconds:.0f}" if seconds is not None else ""
    return f"| {pod} | {label} | {name} | {n} | " + " | ".join(cells) + f" | {took} |"


# -- 2. ToE over a trace ------------------------------------------------------------------------


def toe_section(limit: int | None) -> list[str]:
    lines = [
        "| fabric | series | scale | ToE | reconfigurations | circuits changed | stage checks kept | "
        "MLU mean | MLU p99 | ratio mean | ratio p99 | ToE proposals | ToE failed |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for pod in UNIT_GBPS:
        for number in FILES:
            base = series_of(pod, number)
            if limit:
                base = base.window(0, limit)
            for scale in (1.0, HOT):
                series = base.scaled(scale)
                for toe in (False, True):
                    result = replay(pod, series, TePolicy(), toe=toe)
                    lines.append(_toe_row(pod, number, scale, toe, result))
                    log.info("%s", lines[-1])
    return lines


def _toe_row(pod: str, number: int, scale: float, toe: bool, result: ReplayResult) -> str:
    judged = [s for s in result.snapshots if s.ratio is not None]
    mlus = np.array([s.mlu for s in judged])
    r = ratio_summary(result.ratios())
    kept = sum(c.kept for c in result.stage_checks)
    cells = [
        pod,
        str(number),
        f"x{scale:g}",
        "on" if toe else "off (mesh)",
        str(result.reconfigurations),
        str(result.circuits_changed),
        f"{kept}/{len(result.stage_checks)}",
        f"{mlus.mean():.3f}",
        f"{np.percentile(mlus, 99):.3f}",
        f"{r['mean']:.3f}",
        f"{r['p99']:.3f}",
        str(result.toe_checks),
        str(sum(result.toe_failures.values())),
    ]
    return "| " + " | ".join(cells) + " |"


# -- 3. one decision at 64 blocks ------------------------------------------------------------------


def decision_64(policy_name: str) -> dict[str, Any]:
    """Child process: one TE decision on fabric-64 from a 12-matrix history."""
    from optimizer.te import RecentDemand, TeSolver, route
    from optimizer.topology import mesh_topology
    from optimizer.traffic import gravity_matrix

    fabric = load_fabric(ROOT / "configs" / "fabric-64.yaml")
    rng = np.random.default_rng(7)
    base = gravity_matrix(fabric, 3, 0.5)
    history = tuple(base.scaled(1.0) if k == 0 else _jitter(base, rng) for k in range(12))
    policy = POLICIES[policy_name]
    solver = TeSolver(fabric, hedge=policy.hedge, table_size=policy.table_size)
    mesh = mesh_topology(fabric)
    started = time.perf_counter()
    result = route(solver, mesh, RecentDemand(history), policy)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    route(solver, mesh, RecentDemand((*history[1:], _jitter(base, rng))), policy)
    warm = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return {"policy": policy_name, "cold_s": cold, "warm_s": warm, "peak_rss_mb": rss, "mlu": result.mlu}


def _jitter(matrix: Any, rng: np.random.Generator) -> Any:
    from optimizer.traffic import TrafficMatrix

    noise = rng.lognormal(0.0, 0.3, matrix.gbps.shape)
    np.fill_diagonal(noise, 0.0)
    return TrafficMatrix(matrix.blocks, matrix.gbps * noise)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=int, default=None, help="snapshots per series (default: all)")
    parser.add_argument("--only", choices=("te", "toe", "scale"), nargs="*", default=None)
    parser.add_argument("--child-64", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("controller").setLevel(logging.ERROR)
    logging.getLogger("optimizer").setLevel(logging.ERROR)
    if args.child_64:
        print(json.dumps(decision_64(args.child_64)))
        return 0
    sections = args.only or ["te", "toe", "scale"]
    out = [
        "## Replay: the controller on Meta's pod traces",
        "",
        f"`python -m benchmarks.bench_replay` on {machine_summary()}.",
        "",
        __doc__.split("\n\n", 1)[1].strip(),
        "",
    ]
    if "te" in sections:
        lines, _ = te_section(args.limit)
        out += ["### 1. TE: MLU of the weights in force / the snapshot's optimum (ToE off)", "", *lines, ""]
    if "toe" in sections:
        out += ["### 2. ToE over a trace (default TE policy)", "", *toe_section(args.limit), ""]
    if "scale" in sections:
        rows = ["| policy | cold (s) | warm (s) | peak RSS (MB) | MLU |", "|---|---:|---:|---:|---:|"]
        for name in POLICIES:
            data = run_module("benchmarks.bench_replay", "--child-64", name)
            rows.append(
                f"| {name} | {data['cold_s']:.2f} | {data['warm_s']:.2f} | {data['peak_rss_mb']:.0f} | "
                f"{data['mlu']:.4f} |"
            )
        out += [
            "### 3. One TE decision at 64 blocks (fabric-64, 12-matrix history, fresh process)",
            "",
            *rows,
            "",
        ]
    (HERE / "RESULTS_replay.md").write_text("\n".join(out) + "\n", encoding="utf-8")
    log.info("wrote %s", HERE / "RESULTS_replay.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
