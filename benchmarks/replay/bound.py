"""What the scenario family can reach (``python -m benchmarks.replay.bound``): issue 29 item 1.

The scenario method routes the next interval by the routing that minimises the mean ratio
(MLU over the matrix's own optimum) over the last ``window`` matrices: an estimate of the
traffic's distribution. Its best case is a clairvoyant one, the routing optimal for the
*next* window's own matrices, applied to them: any method that predicts the distribution
(not each snapshot) does no better on average. This script measures it, by exact LPs
(scipy's HiGHS) on the fractional routing:

- ``clairvoyant W``: the snapshots cut into blocks of W; each block routed by the routing
  that minimises its own mean ratio (W = the whole series: one fixed routing in hindsight);
- ``clairvoyant W, tail T``: the same with T of the objective on the CVaR of the block's
  worst 5% of ratios (the best p99 a known distribution allows at that mean);
- ``causal W, every S``: the routing minimising the mean ratio of the last W snapshots,
  recomputed every S snapshots (the scenario method's objective solved exactly, no bursts);

each scored on every snapshot from the W-th on (the first W have no past), and how
predictable one snapshot is from the one before: the lag-1 autocorrelation of each pair's
share of the matrix, of the optimal MLU, and of the ratio under a fixed routing.

Fractional routing, no WCMP rounding: the replay's integer weights add a little to these
(``benchmarks/RESULTS_replay.md`` section 1 is scored on them).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.bench_replay import (
    FILES,
    TITLES,
    UNIT_GBPS,
    fabric_file,
    read_sections,
    series_of,
    write_sections,
)
from benchmarks.machine import machine_summary
from controller.replay.report import ratio_summary
from optimizer.config import load_fabric
from optimizer.te.paths import all_pairs, build_link_graph, candidate_paths
from optimizer.te.scenarios import PathOperator
from optimizer.topology import mesh_topology

log = logging.getLogger(__name__)

TAIL_MASS = 0.05  # the CVaR's share of the scenarios, as the scenario method's te.tail


@dataclass
class Trace:
    """One series as arrays: the demand of every pair per snapshot and each snapshot's optimum."""

    operator: PathOperator
    demands: np.ndarray  # (T, P) Gbit/s
    optimum: np.ndarray  # (T,) min MLU of each snapshot on the mesh

    def ratios(self, fractions: np.ndarray, rows: slice | np.ndarray) -> np.ndarray:
        mlu = self.operator.utilisation(fractions, self.demands[rows]).max(axis=1)
        ratios: np.ndarray = mlu / self.optimum[rows]
        return ratios


def trace_of(pod: str, number: int) -> Trace:
    fabric = load_fabric(fabric_file(pod))
    graph = build_link_graph(fabric, mesh_topology(fabric))
    src, dst = all_pairs(fabric.n_blocks)
    operator = PathOperator(graph, candidate_paths(graph, src, dst))
    gbps = series_of(pod, number).gbps
    demands = gbps[:, src, dst]
    demands = demands[demands.sum(axis=1) > 0]
    one = np.ones(1)
    optimum = np.array([routing_lp(operator, demands[k : k + 1], one)[1] for k in range(len(demands))])
    return Trace(operator, demands, optimum)


def routing_lp(
    operator: PathOperator, demands: np.ndarray, scale: np.ndarray, tail: float = 0.0
) -> tuple[np.ndarray, float]:
    """The routing (P, N) minimising ``(1 - tail) mean_k r_k + tail CVaR(r)``, r_k the max
    link utilisation of matrix k over ``scale[k]``, and that objective (exact LP, HiGHS)."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    valid = operator.paths.valid
    pairs, vias = valid.shape
    columns = np.flatnonzero(valid.ravel())
    m, count = len(columns), len(demands)
    per_link = sp.diags(operator.inv_capacity) @ operator.A[:, columns]  # (L, m)
    pair_of = columns // vias
    blocks = [per_link @ sp.diags(demands[k, pair_of] / scale[k]) for k in range(count)]
    links = per_link.shape[0]
    load = sp.vstack(blocks)  # (K L, m) utilisation over scale of every link under every matrix
    pick = sp.kron(sp.identity(count), np.ones((links, 1)))  # r_k against each of its links
    weights = np.full(count, 1.0 / count)
    if tail > 0.0:  # r_k - t - z_k <= 0, z >= 0: CVaR = t + sum_k w_k z_k / mass
        a_ub = sp.vstack(
            [
                sp.hstack([load, -pick, sp.csr_matrix((count * links, 1 + count))]),
                sp.hstack(
                    [sp.csr_matrix((count, m)), sp.identity(count), -np.ones((count, 1)), -sp.identity(count)]
                ),
            ]
        )
        cost = np.concatenate([np.zeros(m), (1.0 - tail) * weights, [tail], tail * weights / TAIL_MASS])
        bounds: list[tuple[float | None, float | None]] = [(0.0, 1.0)] * m + [(0.0, None)] * count
        bounds += [(None, None)] + [(0.0, None)] * count
        extra = 1 + count
    else:
        a_ub = sp.hstack([load, -pick])
        cost = np.concatenate([np.zeros(m), weights])
        bounds = [(0.0, 1.0)] * m + [(0.0, None)] * count
        extra = 0
    a_eq = sp.hstack(
        [
            sp.csr_matrix((np.ones(m), (pair_of, np.arange(m))), shape=(pairs, m)),
            sp.csr_matrix((pairs, count + extra)),
        ]
    )
    result = linprog(
        cost,
        A_ub=a_ub.tocsr(),
        b_ub=np.zeros(a_ub.shape[0]),
        A_eq=a_eq.tocsr(),
        b_eq=np.ones(pairs),
        bounds=bounds,
        method="highs",
    )
    if result.status != 0:
        raise RuntimeError(f"routing LP failed: {result.message}")
    fractions = np.zeros(valid.size)
    fractions[columns] = result.x[:m]
    return fractions.reshape(valid.shape), float(result.fun)


def clairvoyant(trace: Trace, window: int, start: int, tail: float = 0.0) -> np.ndarray:
    """Ratios from snapshot ``start`` on, each block of ``window`` routed by its own best routing."""
    out = []
    for lo in range(start, len(trace.demands), window):
        rows = slice(lo, min(lo + window, len(trace.demands)))
        fractions, _ = routing_lp(trace.operator, trace.demands[rows], trace.optimum[rows], tail)
        out.append(trace.ratios(fractions, rows))
    return np.concatenate(out)


def causal(trace: Trace, window: int, every: int, start: int) -> np.ndarray:
    """Ratios from ``start`` (>= window) on, routed by the best routing of the last ``window``
    snapshots, recomputed every ``every`` snapshots."""
    out = []
    for lo in range(start, len(trace.demands), every):
        past = slice(lo - window, lo)
        fractions, _ = routing_lp(trace.operator, trace.demands[past], trace.optimum[past])
        out.append(trace.ratios(fractions, slice(lo, min(lo + every, len(trace.demands)))))
    return np.concatenate(out)


def lag1(values: np.ndarray) -> float:
    """Lag-1 autocorrelation of a series (nan when it is constant)."""
    x = values - values.mean()
    denominator = float(x @ x)
    return float(x[1:] @ x[:-1]) / denominator if denominator > 0 else float("nan")


def predictability(trace: Trace, fixed: np.ndarray) -> dict[str, float]:
    shares = trace.demands / trace.demands.sum(axis=1, keepdims=True)
    per_pair = np.array([lag1(shares[:, p]) for p in range(shares.shape[1])])
    ratios = trace.ratios(fixed, slice(0, len(trace.demands)))
    worst = ratios >= np.percentile(ratios, 99)
    return {
        "share_rho_median": float(np.nanmedian(per_pair)),
        "share_rho_max": float(np.nanmax(np.abs(per_pair))),
        "optimum_rho": lag1(trace.optimum),
        "ratio_rho": lag1(ratios),
        "p99_after_p99": float(worst[1:][worst[:-1]].mean()),
    }


WINDOW = 96
#: (label, kind, window, tail or every)
RUNS: tuple[tuple[str, str, int, float], ...] = (
    ("clairvoyant, whole series", "clairvoyant", 0, 0.0),
    ("clairvoyant 96", "clairvoyant", 96, 0.0),
    ("clairvoyant 96, tail 0.1", "clairvoyant", 96, 0.1),
    ("clairvoyant 96, tail 0.3", "clairvoyant", 96, 0.3),
    ("clairvoyant 24", "clairvoyant", 24, 0.0),
    ("clairvoyant 12", "clairvoyant", 12, 0.0),
    ("clairvoyant 4", "clairvoyant", 4, 0.0),
    ("causal 96, every 4", "causal", 96, 4),
    ("causal 24, every 4", "causal", 24, 4),
)


def measure(pod: str, number: int) -> tuple[list[str], dict[str, float]]:
    started = time.perf_counter()
    trace = trace_of(pod, number)
    rows = []
    for label, kind, window, extra in RUNS:
        if kind == "clairvoyant":
            ratios = clairvoyant(trace, window or len(trace.demands) - WINDOW, WINDOW, extra)
        else:
            ratios = causal(trace, window, int(extra), WINDOW)
        s = ratio_summary(ratios)
        cells = " | ".join(f"{s[k]:.3f}" for k in ("mean", "p50", "p90", "p99", "max"))
        rows.append(f"| {pod} | {number} | {label} | {len(ratios)} | {cells} |")
        print(rows[-1], flush=True)
    fixed, _ = routing_lp(trace.operator, trace.demands[WINDOW:], trace.optimum[WINDOW:])
    figures = predictability(trace, fixed)
    log.info("%s/%d measured in %.0f s", pod, number, time.perf_counter() - started)
    return rows, figures



#: The routing rows, then the predictability row (a pod and series each).
HEADER = [
    "| fabric | series | routing | snapshots | mean | p50 | p90 | p99 | max |",
    "|---|---|---|---:|---:|---:|---:|---:|---:|",
]
PREDICT_HEADER = [
    "| fabric | series | pair share, lag-1 rho (median over pairs) | largest pair abs(rho) | "
    "optimal MLU, lag-1 rho | ratio under the fixed routing, lag-1 rho | p99 snapshot after a p99 one |",
    "|---|---|---:|---:|---:|---:|---:|",
]

NOTES = [
    "Fractional routing, exact LPs (HiGHS), scored on the snapshot's own LP optimum from the",
    "97th snapshot on; before the integer weights the replay scores (section 1). `causal` is",
    "the scenario method's objective solved exactly on the past (no burst scenarios, no tail),",
    "re-solved every 4 snapshots (every 2 minutes; the daemon re-solves every 30 s). pod_b's",
    "series 1 took 30 minutes (its exact LPs on 96 matrices x 56 links); pod_a's 45 s each.",
    "",
    "What it says. pod_a: the routing optimal for the next 96 matrices, known in advance,",
    "scores 1.111 and 1.110 on average (series 1 and 3); one fixed routing chosen in hindsight",
    "for the whole series 1.119 / 1.116. The issue's mean target (<= 1.11, test split) is the",
    "best this family reaches with a perfect forecast of the distribution, and out of reach",
    "for a method that estimates the distribution from the past: the same LP on the past 96",
    "gets 1.126 / 1.122, the default in the replay 1.137 / 1.130 before its tail term. Only a",
    "forecast of each snapshot could go lower (knowing blocks of 24 / 12 / 4 matrices:",
    "1.092 / 1.074 / 1.037), and single snapshots are not predictable from the last: each",
    "pair's share has a lag-1 autocorrelation of 0.003 / -0.001 (median over pairs; the largest",
    "0.055), the ratio under the fixed routing 0.065-0.068, a p99 snapshot follows another",
    "10-14% of the time. The optimal MLU itself is predictable on series 1 (0.586; the load",
    "level, which routing does not change), not on series 3 (0.017). A shorter past does",
    "worse (causal 24: 1.139 / 1.137): the distribution does not drift within 48 minutes in a",
    "way 12 minutes of history can follow.",
    "",
    "The tail is within the family's reach when the distribution is known: 0.1 of the",
    "objective on the CVaR of the worst 5% gives p99 1.409 / 1.434 at a mean of 1.117 / 1.115,",
    "0.3 gives 1.298 / 1.303 at 1.136 / 1.135. The default's `tail 0.1` gets 1.536 / 1.508 at",
    "1.154 / 1.145 (section 1): the gap is the forecast of which pair bursts next.",
    "",
    "pod_b: the clairvoyant 96 scores 1.011 / p99 1.147, the causal LP 1.042 / 1.284 (the",
    "default, 1.04 / 1.26-1.30): the issue's pod_b targets (1.03 / 1.20) are within the",
    "family's reach only with a better forecast of the distribution than the last 96 matrices",
    "give; 24 matrices are much worse (1.117 / 1.477: its 56 pairs need the longer sample).",
    "Its bursts persist more than pod_a's (the ratio's lag-1 autocorrelation 0.223, a p99",
    "snapshot after another 24% of the time), which the own-jump burst scenarios use.",
]


def _saved(out: Path, pod: str, number: int) -> Path:
    return out / f"bound-{pod}-{number}.md"


def write(out: Path, runs: list[tuple[str, int]]) -> None:
    """Section 5 of ``RESULTS_replay.md`` from the runs saved under ``out``."""
    rows: list[str] = []
    predict: list[str] = []
    for pod, number in runs:
        path = _saved(out, pod, number)
        if not path.exists():
            raise FileNotFoundError(f"{path}: {pod} series {number} not measured (run it without --write)")
        lines = path.read_text(encoding="utf-8").splitlines()
        rows += lines[:-1]
        predict.append(lines[-1])
    parts = read_sections()
    head = [TITLES["bound"], "", f"Run on {machine_summary()}.", ""]
    parts["bound"] = [*head, *HEADER, *rows, "", *PREDICT_HEADER, *predict, "", *NOTES]
    write_sections(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", nargs="+", default=["pod_a:1", "pod_a:3", "pod_b:1"], help="pod:series")
    parser.add_argument("--out", type=Path, default=Path("/tmp/tail_bound"), help="where the runs' rows go")
    parser.add_argument(
        "--write", action="store_true", help="write section 5 of RESULTS_replay.md from the runs saved"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    runs = []
    for run in args.runs:
        pod, _, number = run.partition(":")
        if pod not in UNIT_GBPS or not number.isdigit() or int(number) not in FILES:
            parser.error(f"--runs: {run!r} is not pod:series, pod in {tuple(UNIT_GBPS)}, series in {FILES}")
        runs.append((pod, int(number)))
    if args.write:
        write(args.out, runs)
        return 0
    print(*HEADER, sep="\n")
    args.out.mkdir(parents=True, exist_ok=True)
    for pod, number in runs:
        found, f = measure(pod, number)
        predict = (
            f"| {pod} | {number} | {f['share_rho_median']:.3f} | {f['share_rho_max']:.3f} | "
            f"{f['optimum_rho']:.3f} | {f['ratio_rho']:.3f} | {f['p99_after_p99']:.2f} |"
        )
        print(predict, flush=True)
        _saved(args.out, pod, number).write_text("\n".join([*found, predict]) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
