"""``heliostat plan`` as a whole process against the plain PuLP + CBC path LP as a whole process.

``python -m benchmarks.scale.plan_process [--runs 7] [--before DIR] [--bytecode]`` (issue 29, item 3: the
target is >= 10x, same MLU). On configs/fabric-64.yaml with the matrices of
``benchmarks/bench_te.py`` (gravity seed 1, busiest block at 50% of its uplinks; hotspot
seed 1 at 90%), written to CSV files once, it starts fresh processes, interleaved:

- **plan**: ``heliostat plan --fabric F --demand TM`` (the venv's console script, the
  checkout on PYTHONPATH), the command's own defaults (table output, 128 entries a group,
  the mesh, the spine if any), stdout to a file;
- **before** (with ``--before DIR``): the same command run from another checkout (e.g. a
  ``git archive`` of the commit before a change), so before and after share one run;
- **PuLP**: ``python -m benchmarks.scale.plan_process --pulp F TM``: read the same two files,
  build the full path LP in PuLP and solve it by CBC (``tests/support/te_reference.py``, as
  ``bench_te.py`` does), print its MLU.

Wall time is from the fork to the exit as the parent sees it; CPU time (user + system) and
peak RSS come from ``wait4`` (CPU: the process and its children, CBC for PuLP; RSS: the larger
of the process and its CBC child). On a shared machine the CPU time moves less than the wall
time (a process waits for a core: the wall time was about twice the CPU time at load 3-4 on
2 cores). The order of the commands rotates every round; each round's ratio is PuLP's wall
time over plan's in that round. The machine is shared: compare ratios within one run. The
section goes to ``benchmarks/RESULTS_plan.md`` (what follows ``### Earlier runs`` is kept).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.machine import machine_summary

ROOT = Path(__file__).resolve().parents[2]
FABRIC = ROOT / "configs" / "fabric-64.yaml"
OUT = ROOT / "benchmarks" / "RESULTS_plan.md"
EARLIER = "### Earlier runs"
TARGET = 10.0
PACKAGES = ("optimizer", "controller", "benchmarks", "tests/support")
MLU_TOLERANCE = 0.005  # the table prints 4 decimals; bench_te's tolerance
LABELS = {"plan": "`heliostat plan`", "before": "`heliostat plan` before", "pulp": "PuLP + CBC"}
log = logging.getLogger(__name__)


@dataclass
class Runs:
    """One command's runs on one matrix: wall seconds, peak RSS (MB) and what it printed."""

    seconds: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


def write_matrices(folder: Path, kinds: list[str]) -> dict[str, Path]:
    from optimizer.config import load_fabric
    from optimizer.traffic import dump_matrix, gravity_matrix, hotspot_matrix

    fabric = load_fabric(FABRIC)
    files = {}
    for kind in kinds:
        if kind == "gravity":
            tm = gravity_matrix(fabric, seed=1, load=0.5)
        else:
            tm = hotspot_matrix(fabric, seed=1, load=0.9)
        files[kind] = folder / f"{kind}.csv"
        files[kind].write_text(dump_matrix(tm, "csv"), encoding="utf-8")
    return files


def timed(argv: list[str], root: Path, out: Path) -> tuple[float, float, float, str]:
    """Run ``argv`` from ``root`` (on its PYTHONPATH); wall seconds, CPU seconds (user +
    system, its children's included), peak RSS in MB, stdout."""
    env = dict(os.environ, PYTHONPATH=str(root))
    with out.open("w", encoding="utf-8") as sink:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=root, env=env, stdout=sink)  # -m puts cwd first on sys.path
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
    text = out.read_text(encoding="utf-8")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed (status {status}):\n{text}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, text  # Linux: KiB


def plan_argv(fabric: Path, demand: Path) -> list[str]:
    """The console script beside this interpreter (what an operator runs; the checkout on
    PYTHONPATH is the one imported), else ``python -m controller.cli``."""
    script = Path(sys.executable).with_name("heliostat")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "controller.cli"]
    return [*command, "plan", "--fabric", str(fabric), "--demand", str(demand)]


def pulp_argv(fabric: Path, demand: Path) -> list[str]:
    return [sys.executable, "-m", "benchmarks.scale.plan_process", "--pulp", str(fabric), str(demand)]


def table_figure(text: str, label: str) -> float:
    """A figure from ``heliostat plan``'s table (``MLU (LP)``, ``MLU (integer weights)``)."""
    found = re.search(rf"^\s*{re.escape(label)}\s+([0-9.]+)", text, re.MULTILINE)
    if found is None:
        raise RuntimeError(f"no {label!r} in the plan's output:\n{text}")
    return float(found.group(1))


def measure(kinds: list[str], runs: int, before: Path | None) -> dict[str, dict[str, Runs]]:
    """Every command on every matrix, ``runs`` rounds, the order rotating each round."""
    results: dict[str, dict[str, Runs]] = {kind: {} for kind in kinds}
    with tempfile.TemporaryDirectory(prefix="plan-process-") as tmp:
        folder = Path(tmp)
        files = write_matrices(folder, kinds)
        commands: dict[str, tuple[list[str], Path]] = {}
        for kind in kinds:
            cases = [("plan", plan_argv(FABRIC, files[kind]), ROOT)]
            cases.append(("pulp", pulp_argv(FABRIC, files[kind]), ROOT))
            if before is not None:
                cases.insert(1, ("before", plan_argv(FABRIC, files[kind]), before))
            for name, argv, root in cases:
                commands[f"{kind}/{name}"] = (argv, root)
        names = list(commands)
        for r in range(runs):
            shift = r % len(names)
            for key in names[shift:] + names[:shift]:
                argv, root = commands[key]
                kind, name = key.split("/")
                seconds, cpu, rss, text = timed(argv, root, folder / "out.txt")
                got = results[kind].setdefault(name, Runs())
                got.seconds.append(seconds)
                got.rss_mb.append(rss)
                got.cpu.append(cpu)
                got.outputs.append(text)
                log.info("round %d %-8s %-6s %6.2f s (CPU %5.2f s) %5.0f MB",
                         r + 1, kind, name, seconds, cpu, rss)
    return results


def ratios(pulp: Runs, plan: Runs) -> list[float]:
    return [p / q for p, q in zip(pulp.seconds, plan.seconds, strict=True)]


def rows(results: dict[str, dict[str, Runs]]) -> tuple[list[str], bool]:
    """The table's rows, and whether every MLU agrees."""
    lines = [
        "| matrix | process | wall median (s) | wall max (s) | CPU median (s) | peak RSS (MB) | MLU (LP) "
        "| MLU (integer weights) | PuLP / it, wall, per round: median (min) | PuLP / it, CPU medians |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    agree = True
    for kind, by_name in results.items():
        pulp = by_name["pulp"]
        ref = float(pulp.outputs[-1].split()[-1])
        for name in ("plan", "before", "pulp"):
            if name not in by_name:
                continue
            got = by_name[name]
            cells = [kind, LABELS[name], f"{statistics.median(got.seconds):.3f}", f"{max(got.seconds):.3f}",
                     f"{statistics.median(got.cpu):.3f}", f"{max(got.rss_mb):.0f}"]
            if name == "pulp":
                cells += [f"{ref:.6f}", "", "", ""]
            else:
                lp = {table_figure(o, "MLU (LP)") for o in got.outputs}
                q = {table_figure(o, "MLU (integer weights)") for o in got.outputs}
                agree &= all(abs(m - ref) / ref <= MLU_TOLERANCE for m in lp)
                per_round = ratios(pulp, got)
                cells += [
                    " / ".join(f"{m:.4f}" for m in sorted(lp)),
                    " / ".join(f"{m:.4f}" for m in sorted(q)),
                    f"{statistics.median(per_round):.1f}x ({min(per_round):.1f}x)",
                    f"{statistics.median(pulp.cpu) / statistics.median(got.cpu):.1f}x",
                ]
            lines.append("| " + " | ".join(cells) + " |")
    return lines, agree


def compile_bytecode(roots: list[Path]) -> None:
    """Each checkout's modules compiled to ``__pycache__`` (git-ignored), as an installed
    package has them; the processes then read them even under PYTHONDONTWRITEBYTECODE."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for root in roots:
        folders = [f for f in PACKAGES if (root / f).is_dir()]
        subprocess.run([sys.executable, "-m", "compileall", "-q", *folders], cwd=root, env=env, check=True,
                       stdout=subprocess.DEVNULL)


def bytecode_note(compiled: bool) -> str:
    if compiled:
        return "Bytecode: compiled beforehand (`--bytecode`), as an installed package has it."
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return ("Bytecode: none (PYTHONDONTWRITEBYTECODE is set here): every process compiles the "
                "project's modules from source; `--bytecode` compiles them first.")
    return "Bytecode: as Python left it (written on first import)."


def report(
    results: dict[str, dict[str, Runs]], runs: int, before: str | None, load: tuple[float, float],
    compiled: bool = False,
) -> str:
    lines, agree = rows(results)
    command = "python -m benchmarks.scale.plan_process" + (f" --runs {runs}" if runs else "")
    if before:
        command += f" --before {before}"
    if compiled:
        command += " --bytecode"
    return "\n".join(
        [
            "## `heliostat plan` as a process against PuLP + CBC (64 blocks)",
            "",
            f"`{command}` on {machine_summary()}; load average {load[0]:.1f} at the start, "
            f"{load[1]:.1f} at the end.",
            "",
            (__doc__ or "").split("\n\n", 1)[1].strip(),
            "",
            f"{runs} rounds; the MLUs {'agree' if agree else 'DO NOT agree'} within "
            f"{100 * MLU_TOLERANCE:g}% (the table prints 4 decimals). Target: >= {TARGET:g}x. "
            + bytecode_note(compiled),
            "",
            *lines,
        ]
    )


def pulp_main(fabric_path: str, demand_path: str) -> int:
    """The PuLP process: read the files, solve the full path LP by CBC, print its MLU."""
    from optimizer.config import load_plannable_fabric
    from optimizer.traffic import load_matrix
    from tests.support.te_reference import reference_mlu

    fabric = load_plannable_fabric(fabric_path)
    tm = load_matrix(demand_path, fabric)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PuLP 3.3 warns of its 4.0 API
        sys.stdout.write(f"{reference_mlu(fabric, tm)!r}\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--kinds", nargs="*", default=["hotspot", "gravity"], choices=("hotspot", "gravity"))
    parser.add_argument("--before", type=Path, default=None, help="a checkout whose plan is timed too")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--bytecode", action="store_true", help="compile the checkouts' modules first")
    parser.add_argument("--pulp", nargs=2, metavar=("FABRIC", "DEMAND"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.pulp:
        return pulp_main(*args.pulp)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.bytecode:
        compile_bytecode([ROOT] if args.before is None else [ROOT, args.before])
    start_load = os.getloadavg()[0]
    results = measure(args.kinds, args.runs, args.before)
    before = None if args.before is None else str(args.before)
    text = report(results, args.runs, before, (start_load, os.getloadavg()[0]), args.bytecode)
    earlier = args.out.read_text(encoding="utf-8").partition(EARLIER)[2] if args.out.exists() else ""
    if earlier:
        text += "\n\n" + EARLIER + earlier.rstrip("\n")
    args.out.write_text(text + "\n", encoding="utf-8")
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
