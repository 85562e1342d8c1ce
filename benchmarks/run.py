"""``make bench``: run every benchmark module, then gather their results into RESULTS.md.

Each ``bench_*.py`` module is run as ``python -m benchmarks.bench_x`` in a fresh process
(so peak-memory figures are its own) and writes ``RESULTS_x.md`` beside this file;
``RESULTS.md`` is those sections in a fixed order under a note of the machine.
"""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
from pathlib import Path

from benchmarks.machine import machine_summary

HERE = Path(__file__).resolve().parent
ORDER = ("te", "mapping", "toe", "toe_limit", "southbound", "controller")
#: Results written by runs that ``make bench`` does not start (``python -m benchmarks.bench_te
#: --wcmp``, ``benchmarks.hot.family``, ``benchmarks.jobs.comm_time``, ``benchmarks.scale.mesh_sweep``,
#: ``benchmarks.scale.plan_process``, ``benchmarks.soak``, ``benchmarks.standard.p4rt_push``,
#: ``benchmarks.standard.gnmi_sampling``).
EXTRA_SECTIONS = ("wcmp", "te_pairs", "plan", "hot", "jobs", "mesh", "soak", "p4rt", "gnmi")

log = logging.getLogger(__name__)


def bench_modules() -> list[str]:
    names = sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def gather() -> str:
    parts = [
        "# Benchmark results",
        "",
        "Written by `make bench` (`python -m benchmarks.run`); each section by its own",
        "`python -m benchmarks.bench_<name>`. Machines here are shared and noisy: compare the",
        "ratios measured within one run, not absolute times across runs.",
        "",
        f"Last gathered on: {machine_summary()}",
        "",
    ]
    for name in [*bench_modules(), *EXTRA_SECTIONS]:
        section = HERE / f"RESULTS_{name}.md"
        if section.exists():
            parts.append(section.read_text(encoding="utf-8").rstrip() + "\n")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", help="benchmark names to run (default: all)")
    parser.add_argument("--gather-only", action="store_true", help="only rebuild RESULTS.md")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    failed = []
    if not args.gather_only:
        for name in args.only or bench_modules():
            log.info("== benchmarks.bench_%s", name)
            code = subprocess.call([sys.executable, "-m", f"benchmarks.bench_{name}"], cwd=HERE.parent)
            if code:
                failed.append(name)
    (HERE / "RESULTS.md").write_text(gather(), encoding="utf-8")
    log.info("wrote %s", HERE / "RESULTS.md")
    if failed:
        log.error("failed: %s", ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
