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
3. One TE decision at 8 and 64 blocks (``configs/fabric-8.yaml``, ``fabric-64.yaml``) with a
   history of the policy's window (at least 12), in a fresh process: time and peak RSS.

Results go to ``benchmarks/RESULTS_replay.md``.
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
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
    "scenarios (48, S=0.5, bursts 0.1)": TePolicy(TeMethod.SCENARIOS, Predictor.LAST, 48, 0.5, tail=0.0),
    "scenarios (12), an old default": TePolicy(window=12, burst=0.0, tail=0.0),
    "scenarios (96, bursts 0.1), no tail": TePolicy(tail=0.0),
    "default: scenarios (96, bursts 0.1, tail 0.1)": TePolicy(),
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


def _te_run(pod: str, number: int, name: str, limit: int | None) -> tuple[np.ndarray, float]:
    """One policy on one series: the ratios and the replay's seconds (a worker's job)."""
    series = series_of(pod, number)
    if limit:
        series = series.window(0, limit)
    started = time.perf_counter()
    ratios = replay(pod, series, POLICIES[name], toe=False).ratios()
    return ratios, time.perf_counter() - started


def te_section(limit: int | None, jobs: int = 1) -> tuple[list[str], dict[str, Any]]:
    """Every policy on every series, ``jobs`` replays at a time (each in its own process when
    more than one: the replays share nothing, and their figures do not depend on the order)."""
    rows: list[str] = []
    pooled: dict[tuple[str, str], list[np.ndarray]] = {}
    figures: dict[str, Any] = {}
    runs = [(pod, number, name) for pod in UNIT_GBPS for number in FILES for name in POLICIES]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            futures = [pool.submit(_te_run, pod, number, name, limit) for pod, number, name in runs]
            results = [f.result() for f in futures]
    else:
        results = [_te_run(pod, number, name, limit) for pod, number, name in runs]
    for (pod, number, name), (ratios, seconds) in zip(runs, results, strict=True):
        pooled.setdefault((pod, name), []).append(ratios)
        s = ratio_summary(ratios)
        log.info("%s/%d %-28s mean %.3f p99 %.3f (%.0f s)", pod, number, name, s["mean"], s["p99"], seconds)
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


def decision(policy_name: str, blocks: int = 64) -> dict[str, Any]:
    """Child process: one TE decision on fabric-<blocks> from a history of the policy's window
    (at most 96 matrices; the scenario method reads about a dozen at 64 blocks)."""
    from optimizer.te import RecentDemand, TeSolver, route
    from optimizer.topology import mesh_topology
    from optimizer.traffic import gravity_matrix

    fabric = load_fabric(ROOT / "configs" / f"fabric-{blocks}.yaml")
    rng = np.random.default_rng(7)
    base = gravity_matrix(fabric, 3, 0.5)
    policy = POLICIES[policy_name]
    history = tuple(base.scaled(1.0) if k == 0 else _jitter(base, rng) for k in range(max(12, policy.window)))
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


TITLES = {
    "te": "### 1. TE: MLU of the weights in force / the snapshot's optimum (ToE off)",
    "toe": "### 2. ToE over a trace (default TE policy)",
    "scale": "### 3. One TE decision at 8 and 64 blocks (fabric-8 / fabric-64, fresh process)",
    "tail": "### 4. Tail sweep: TE policies for pod_a's p99 (`python -m benchmarks.replay.tail_sweep`)",
    "bound": "### 5. What the scenario family can reach: clairvoyant bounds "
    "(`python -m benchmarks.replay.bound`)",
}

#: What the tables mean; kept with the code that writes them.
NOTES = {
    "te": [
        "The peers, as reported in issue 29 on the test split kept aside (2,488 scored snapshots",
        "a pod; FIGRET (SIGCOMM'24) trained and tested with its own code and defaults; the",
        "Jupiter-style row above is the same routing), beside the issue's targets for Heliostat:",
        "",
        "| pods, test split | Jupiter-style | FIGRET | Heliostat default then (scenarios (12)) | target |",
        "|---|---|---|---|---|",
        "| pod_b, mean / p99 | 1.20 / 1.47 | 1.080 / 1.329 | 1.039 / 1.256 | <= 1.03 / <= 1.20 |",
        "| pod_a, mean / p99 | 1.231 / 1.660 | 1.131 / 1.799 | 1.150 / 1.769 | <= 1.11 / <= 1.55 |",
        "",
        "Only the training split is here: the rows above are training-split figures (tuned on",
        "pod_a series 1, checked on series 3, then 2, 4 and pod_b). The default is tail-robust",
        "(issue 29 item 1): scenarios over 96 measurements, a tenth of the objective on per-pair",
        "burst scenarios (each pair's own jump where the window's halves agree on which pairs",
        "jump, as on pod_b, else the burstiest pair's) and a tenth on the CVaR of the worst 5% of",
        "the scenarios; the reason is in the README's TE section. `no tail` is the same with",
        "`tail: 0` (with the any-pair bursts of the default before, pod_a 1.131 / 1.670 and pod_b",
        "1.041 / 1.262: pod_a's bursts are any pair's either way, pod_b's now its own).",
        "",
        "Measured on this split (pooled, mean / p99): the default 1.150 / 1.528 on pod_a and",
        "1.039 / 1.256 on pod_b, against 1.131 / 1.670 and 1.038 / 1.256 without the tail term",
        "and 1.208 / 1.539, 1.189 / 1.491 for the Jupiter-style routing. On pod_a its p99 is",
        "below the Jupiter-style routing's, the best peer p99 here, on every series (1.536,",
        "1.552, 1.508, 1.508 against 1.566, 1.553, 1.515, 1.519), for 0.019 of mean over the",
        "no-tail policy (still 0.058 below the Jupiter-style mean); on pod_b it is ahead of both",
        "peers on both figures. The issue's targets (pod_a <= 1.11 / 1.55, pod_b <= 1.03 /",
        "1.20) are not met on the means: pod_a's 1.11 is what the routing optimal for the next",
        "96 matrices, known in advance, scores (1.110-1.111, section 5), so no method that",
        "estimates the traffic's distribution from the past reaches it; each pair's share is",
        "uncorrelated with its past (lag-1 |rho| < 0.06), so single snapshots are no easier.",
    ],
    "toe": [
        "ToE made no reconfiguration on these traces, on or off, cold or hot: it proposed (and the",
        "policy refused) plans within 0.5% of the mesh. That is right here: the optimum of",
        "97-100% of the snapshots equals the hose bound (the busiest pod's egress or ingress over",
        "its uplinks), which no topology can change, as every pod keeps its uplinks. Planned for",
        "the long-run mean matrix or the hour's per-pair peak, the best topology differs from the",
        "mesh by 4-8 circuits and gives the same optimal MLU (pod_b 0.800 / p99 0.943 at x1.6 on",
        "both). ToE earns its keep on pair-level skew (a hotspot, a ring), which these pod-level",
        "traces do not have; `benchmarks/bench_toe.py` measures those cases.",
    ],
    "scale": [
        "Target: one decision <= 2 s and <= 2 GB. Warm is a decision after another (the daemon's",
        "steady state: the scenario method starts from the routing in force); cold is the first",
        "after a start (the scenario method then takes 2 x 10 steps from the even split).",
    ],
}


def read_sections() -> dict[str, list[str]]:
    """The sections already in RESULTS_replay.md, so that ``--only`` rewrites just its own."""
    path = HERE / "RESULTS_replay.md"
    parts: dict[str, list[str]] = {}
    if not path.exists():
        return parts
    key = "head"
    for line in path.read_text(encoding="utf-8").splitlines():
        for name, title in TITLES.items():
            if line.startswith(title[:6]):
                key = name
        parts.setdefault(key, []).append(line)
    return parts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=int, default=None, help="snapshots per series (default: all)")
    parser.add_argument("--only", choices=("te", "toe", "scale"), nargs="*", default=None)
    parser.add_argument("--jobs", type=int, default=1, help="TE replays at a time (default: 1)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-blocks", type=int, default=64, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("controller").setLevel(logging.ERROR)
    logging.getLogger("optimizer").setLevel(logging.ERROR)
    if args.child:
        print(json.dumps(decision(args.child, args.child_blocks)))
        return 0
    sections = args.only or ["te", "toe", "scale"]
    parts = read_sections()
    parts["head"] = [
        "## Replay: the controller on Meta's pod traces",
        "",
        f"`python -m benchmarks.bench_replay` on {machine_summary()}.",
        "",
        __doc__.split("\n\n", 1)[1].strip(),
        "",
    ]
    if "te" in sections:
        lines, _ = te_section(args.limit, max(1, args.jobs))
        parts["te"] = [TITLES["te"], "", f"Run on {machine_summary()}.", "", *lines, "", *NOTES["te"]]
    if "toe" in sections:
        parts["toe"] = [
            TITLES["toe"],
            "",
            f"Run on {machine_summary()}.",
            "",
            *toe_section(args.limit),
            "",
            *NOTES["toe"],
        ]
    if "scale" in sections:
        rows = [
            "| blocks | policy | cold (s) | warm (s) | peak RSS (MB) | MLU |",
            "|---:|---|---:|---:|---:|---:|",
        ]
        for blocks in (8, 64):
            for name in POLICIES:
                data = run_module("benchmarks.bench_replay", "--child", name, "--child-blocks", str(blocks))
                rows.append(
                    f"| {blocks} | {name} | {data['cold_s']:.2f} | {data['warm_s']:.2f} | "
                    f"{data['peak_rss_mb']:.0f} | {data['mlu']:.4f} |"
                )
        parts["scale"] = [TITLES["scale"], "", f"Run on {machine_summary()}.", "", *rows, "", *NOTES["scale"]]
    write_sections(parts)
    return 0


def write_sections(parts: dict[str, list[str]]) -> None:
    """RESULTS_replay.md from its sections (``tail`` is written by ``benchmarks.replay.tail_sweep``,
    ``bound`` by ``benchmarks.replay.bound``)."""
    order = ("head", "te", "toe", "scale", "tail", "bound")
    sections = [parts[key] for key in order if parts.get(key)]
    text = "\n\n".join("\n".join(lines).strip("\n") for lines in sections)
    (HERE / "RESULTS_replay.md").write_text(text.rstrip() + "\n", encoding="utf-8")
    log.info("wrote %s", HERE / "RESULTS_replay.md")


if __name__ == "__main__":
    sys.exit(main())
