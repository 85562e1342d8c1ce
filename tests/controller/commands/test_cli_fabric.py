"""``heliostat fabric`` and ``heliostat demand`` end to end."""

from __future__ import annotations

import json
from pathlib import Path

from optimizer.config import load_fabric
from optimizer.traffic import load_matrix
from tests.support import shipped_fabric
from tests.support.cli_helpers import run_cli


def test_fabric_generate_writes_a_valid_file(tmp_path: Path) -> None:
    out = tmp_path / "f.yaml"
    run_cli(
        "fabric", "generate", "--blocks", "64", "--uplinks", "512", "--ocs", "256",
        "--ports", "136", "--domains", "4", "--out", str(out), check=True,
    )
    fabric = load_fabric(out)
    assert fabric.n_blocks == 64 and len(fabric.ocs) == 256 and fabric.domains == (0, 1, 2, 3)


def test_fabric_wiring_json_lists_every_cabled_port() -> None:
    result = run_cli("fabric", "wiring", "configs/fabric-4.yaml", "--format", "json", check=True)
    ports = json.loads(result.stdout)
    assert len(ports) == 32
    assert ports[0] == {"ocs": "ocs1", "port": 0, "block": "b1", "block_port": 0, "side": "north"}
    assert {p["side"] for p in ports} == {"north", "south"}


def test_fabric_mesh_json_is_circuits() -> None:
    result = run_cli("fabric", "mesh", "configs/fabric-8.yaml", "--format", "json", check=True)
    circuits = json.loads(result.stdout)["circuits"]
    assert len(circuits) == 128
    assert all(c["a"]["block"] != c["b"]["block"] for c in circuits)


def test_demand_generate_csv_loads(tmp_path: Path) -> None:
    out = tmp_path / "tm.csv"
    run_cli(
        "demand", "generate", "--fabric", "configs/fabric-8.yaml", "--kind", "hotspot",
        "--seed", "4", "--format", "csv", "--out", str(out), check=True,
    )
    tm = load_matrix(out, shipped_fabric("fabric-8"))
    assert tm.total() > 0


def test_bad_fabric_exits_nonzero_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nblocks:\n  - {name: b1, uplinks: 3}\nocs:\n  - {name: o1, ports: 8}\n")
    result = run_cli("fabric", "check", str(bad))
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert f"{bad}: blocks[0].uplinks:" in result.stderr


def test_generate_rejects_impossible_numbers() -> None:
    result = run_cli("fabric", "generate", "--blocks", "4", "--uplinks", "6", "--ocs", "4", "--ports", "8")
    assert result.returncode != 0
    assert "blocks[0].uplinks" in result.stderr and "Traceback" not in result.stderr


def test_fabric_check_warns_when_the_mesh_cannot_join_every_pair(tmp_path: Path) -> None:
    short = tmp_path / "short.yaml"
    run_cli(
        "fabric", "generate", "--blocks", "24", "--uplinks", "16", "--ocs", "8", "--ports", "48",
        "--domains", "4", "--out", str(short), check=True,
    )
    result = run_cli("fabric", "check", str(short), check=True)
    assert "is valid" in result.stdout
    assert "warning:" in result.stderr and "cannot join" in result.stderr
    assert "fewer uplinks than the 23 other blocks" in result.stderr

    enough = tmp_path / "enough.yaml"
    run_cli(
        "fabric", "generate", "--blocks", "24", "--uplinks", "32", "--ocs", "16", "--ports", "48",
        "--domains", "4", "--out", str(enough), check=True,
    )
    result = run_cli("fabric", "check", str(enough), check=True)
    assert "warning" not in result.stderr
