"""Benchmark: ``heliostat replay`` of a deferred ToE plan on a hot period then a quiet one (issue 30).

hot-8 (mixed 100G/200G) under its shift matrix (``--matrix ring``: the ring, whose safe
sequence now gains enough to apply at once): ``--hot`` intervals at mesh MLU ``--hot-load``, then
``--quiet`` intervals at ``--quiet-load``, 30 s apart; ToE checked every 4 intervals on a
prediction window of 4, minimum gain 10%, stage limit 0.8. The daemon (unchanged, in simulated
time) defers the target while hot; the table says when it applied, how long it waited and the
MLU in force before and after (the replay's own report).

    python -m benchmarks.hot.deferred_replay [--matrix shift] [--hot 20] [--quiet 20]
        [--hot-load 0.9] [--quiet-load 0.45]
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from dataclasses import replace
from pathlib import Path

from benchmarks.machine import machine_summary
from controller.config import ControllerConfig
from controller.replay.engine import ReplayEngine
from controller.replay.report import replay_table
from optimizer.config import dump_fabric_yaml
from tests.support.hot_fabrics import mesh_scaled, mixed_fabric, ring, shift
from tests.support.shaped_series import INTERVAL, steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--matrix", choices=("shift", "ring"), default="shift")
    parser.add_argument("--hot", type=int, default=20)
    parser.add_argument("--quiet", type=int, default=20)
    parser.add_argument("--hot-load", type=float, default=0.9)
    parser.add_argument("--quiet-load", type=float, default=0.45)
    parser.add_argument("--ttl", type=float, default=1200.0, help="thresholds.deferred_plan_ttl")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    fabric = mixed_fabric(8)
    shape = mesh_scaled(fabric, (shift if args.matrix == "shift" else ring)(fabric), 1.0).gbps
    series = steps(
        fabric, [(shape * args.hot_load, args.hot), (shape * args.quiet_load, args.quiet)], "hot then quiet"
    )
    with tempfile.TemporaryDirectory(prefix="heliostat-deferred-") as tmp:
        fabric_file = Path(tmp) / "hot-8.yaml"
        fabric_file.write_text(dump_fabric_yaml(fabric))
        base = ControllerConfig("<bench>", fabric_file, Path(tmp) / "devices.yaml", Path(tmp) / "journal.db")
        config = replace(
            base,
            intervals=replace(base.intervals, te_interval=INTERVAL, prediction_window=4 * INTERVAL,
                              toe_check_interval=4 * INTERVAL),
            thresholds=replace(base.thresholds, reconfig_gain=0.1, min_reconfig_interval=600.0,
                               deferred_plan_ttl=args.ttl),
        )
        result = ReplayEngine(fabric_file, fabric, series, config, toe=True).run()
    argv_text = " ".join(argv) if argv else ""
    print(f"`python -m benchmarks.hot.deferred_replay {argv_text}`".replace(" `", "`")
          + f" on {machine_summary()}:\n")
    print("```\n" + replay_table(result) + "\n```")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
