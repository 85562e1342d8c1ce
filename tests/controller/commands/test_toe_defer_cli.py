"""``heliostat toe --defer`` end to end, as a subprocess: on a hot fabric whose target cannot be
staged whole at the predicted demand, the share of the demand at which every stage fits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from optimizer.config import dump_fabric_yaml
from optimizer.traffic import dump_matrix
from tests.support.hot_fabrics import mesh_scaled, mixed_fabric, ring

FABRIC = mixed_fabric(8)
THRESHOLD = 0.8


def heliostat(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("defer")
    fabric, demand = folder / "hot-8.yaml", folder / "ring.json"
    fabric.write_text(dump_fabric_yaml(FABRIC))
    demand.write_text(dump_matrix(mesh_scaled(FABRIC, ring(FABRIC), 0.9), "json"))
    return fabric, demand


def test_defer_gives_the_load_at_which_the_whole_target_stages(files: tuple[Path, Path]) -> None:
    fabric, demand = files
    done = heliostat("toe", "--fabric", str(fabric), "--demand", str(demand), "--defer", "--format", "json",
                     "--time-limit", "30", "-q")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["complete"] is False  # at mesh MLU 0.9 only a step of the target is safe
    window = plan["deferred"]
    assert window is not None and 0.3 <= window["scale"] < 1.0
    assert window["target_mlu"] < window["current_mlu"] <= 0.9 * window["scale"] + 1e-6
    assert window["stages"]
    for stage in window["stages"]:  # every stage within the rule at that load
        assert stage["mlu_drained"] <= max(THRESHOLD, stage["mlu_start"]) + 1e-9
    table = heliostat("toe", "--fabric", str(fabric), "--demand", str(demand), "--defer",
                      "--time-limit", "30", "-q")
    assert table.returncode == 0, table.stderr
    line = next(x for x in table.stdout.splitlines() if x.startswith("deferred: "))
    assert f"once the demand falls to x{window['scale']:g} of it" in line


def test_without_defer_nothing_is_said_of_it(files: tuple[Path, Path]) -> None:
    fabric, demand = files
    done = heliostat("toe", "--fabric", str(fabric), "--demand", str(demand), "--format", "json",
                     "--time-limit", "30", "-q")
    assert done.returncode == 0, done.stderr
    assert "deferred" not in json.loads(done.stdout)
