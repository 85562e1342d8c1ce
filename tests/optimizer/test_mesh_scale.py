"""The uniform mesh at the sizes the limits accept (issue 32): its cost grows gently."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from optimizer import topology
from optimizer.config import dump_fabric_yaml, generate_fabric
from optimizer.topology import Topology, check_circuits, mesh_gaps, uniform_mesh

ROOT = Path(__file__).resolve().parents[2]


def _sparse(blocks: int, domains: int = 1):  # type: ignore[no-untyped-def]
    """Issue 32's fabric: N blocks x 8 uplinks over 4 OCSes of 2N ports."""
    return generate_fabric(blocks, 8, 4, 2 * blocks, domains)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("domains", [1, 4])
def test_sparse_mesh_of_200_blocks_takes_well_under_a_second(domains: int) -> None:
    """Before: did not finish in 60 s (every gap scanned every circuit; the exact mesh's
    constraint rows scanned every arc). Now the first builder already reaches the floor."""
    fabric = _sparse(200, domains)
    start = time.perf_counter()
    circuits = uniform_mesh(fabric)
    assert time.perf_counter() - start < 5.0
    check_circuits(fabric, circuits)
    assert 2 * len(circuits) == len(fabric.wiring)
    # every circuit joins a pair of its own: as many pairs joined as any mesh can
    assert len(mesh_gaps(fabric, circuits)) == 200 * 199 // 2 - len(circuits)
    assert int(Topology.from_circuits(fabric, circuits).counts.max()) == 1


def test_fewest_gaps_is_the_floor_the_ports_allow() -> None:
    assert topology._fewest_gaps(_sparse(100)) == 100 * 99 // 2 - 100 * 8 // 2
    assert topology._fewest_gaps(generate_fabric(8, 8, 4, 16)) == 0  # 8 ports, 7 partners


@pytest.mark.timeout(120)
def test_fabric_check_of_1024_sparse_blocks_answers_in_seconds(tmp_path: Path) -> None:
    """The largest fabric the limits accept in issue 32's shape, through the CLI."""
    path = tmp_path / "fabric-1024.yaml"
    path.write_text(dump_fabric_yaml(_sparse(1024)), encoding="utf-8")
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "controller.cli", "fabric", "check", str(path)],
        cwd=ROOT, capture_output=True, text=True, timeout=90, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "1024 blocks" in proc.stdout
    assert "fewer uplinks than the 1023 other blocks (every block)" in proc.stderr
    assert time.perf_counter() - start < 30.0


def test_gap_closing_stops_at_its_work_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fabric whose assignment leaves gaps: with no work allowed the gaps stay, and the
    circuits are still a valid mesh using every port; with the bound the result is the same
    as without one."""
    fabric = generate_fabric(24, 32, 16, 48 * 8, 4)
    unbounded = topology._assigned_mesh(fabric)
    monkeypatch.setattr(topology, "_GAP_SWAP_WORK", 0)
    bounded = topology._assigned_mesh(fabric)
    check_circuits(fabric, bounded)
    assert len(bounded) == len(unbounded)
    assert len(mesh_gaps(fabric, bounded)) >= len(mesh_gaps(fabric, unbounded))


def test_assignment_tries_shrink_with_the_fabric() -> None:
    assert topology._assignment_tries(generate_fabric(16, 64, 8, 16 * 8 + 8, 4)) == topology._ASSIGNMENT_TRIES
    big = generate_fabric(512, 512, 256, 1024, 4)
    assert topology._assignment_tries(big) == 0
