"""The daemon under a hotspot and after it (issue 13), replayed in simulated time.

Before issue 13 every automatic ToE under a hotspot at load 0.7 on fabric-8 failed (staging
blocked), so the hotspot kept the mesh's MLU; and a topology specialised for traffic that
had gone was not brought back while within the minimum interval.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from controller.config import ControllerConfig
from controller.replay.engine import ReplayEngine
from controller.replay.series import Series
from optimizer.traffic import hotspot_matrix, uniform_matrix
from tests.support import CONFIGS, shipped_fabric

FABRIC_FILE = CONFIGS / "fabric-8.yaml"
FABRIC = shipped_fabric("fabric-8")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.mark.slow
def test_a_hotspot_gets_a_topology_and_the_mesh_comes_back_after_it(tmp_path: Path) -> None:
    hot, cold = hotspot_matrix(FABRIC, 1, 0.7).gbps, uniform_matrix(FABRIC, 0.5).gbps
    steps = 120
    gbps = np.array([hot if k < 60 else cold for k in range(steps)])
    series = Series(FABRIC.block_names, np.arange(steps) * 10.0, gbps, "<test>")
    base = ControllerConfig("<test>", FABRIC_FILE, tmp_path / "devices.yaml", tmp_path / "journal.db")
    config = replace(
        base,
        intervals=replace(base.intervals, te_interval=10.0, prediction_window=120.0, toe_check_interval=60.0),
        thresholds=replace(base.thresholds, min_reconfig_interval=600.0, reconfig_gain=0.05),
    )
    result = ReplayEngine(FABRIC_FILE, FABRIC, series, config, toe=True).run()
    mlu = [s.mlu for s in result.snapshots]
    hot_first = next(m for m in mlu[:60] if m is not None)
    assert result.reconfigurations >= 2 and result.reconfigurations_rolled_back == 0
    assert mlu[59] is not None and mlu[59] < hot_first * 0.95  # the hotspot got its topology
    # the uniform matrix that follows: brought back close to what the mesh gives it
    mesh_mlu = 0.5 * 32 / 28  # uniform 0.5 on the mesh of fabric-8 (4 or 5 circuits a pair)
    assert mlu[-1] is not None and mlu[-1] < 0.6 and mlu[-1] < mesh_mlu * 1.1
    assert result.blackholed_bytes == 0.0
