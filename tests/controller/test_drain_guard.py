"""The maintenance drain guard: the predicted MLU after a drain, against the stage limit."""

from __future__ import annotations

import math

import pytest

from controller.decision import Maintenance, MaintenanceTarget
from controller.drain_guard import check_drain, in_service
from optimizer.te import min_mlu
from optimizer.topology import uniform_mesh
from optimizer.traffic import uniform_matrix
from tests.support import shipped_fabric

FABRIC = shipped_fabric("fabric-8")
MESH = frozenset(uniform_mesh(FABRIC))
TM = uniform_matrix(FABRIC, 0.5)


def evaluate(fabric, topology, tm):  # type: ignore[no-untyped-def]
    return min_mlu(fabric, topology, tm, spine=())


def ocs(name: str) -> Maintenance:
    return Maintenance(MaintenanceTarget.OCS, name)


def test_one_ocs_of_four_is_allowed_and_the_figure_is_the_drained_topology_s() -> None:
    from optimizer.topology import Topology

    check = check_drain(FABRIC, MESH, (), ocs("ocs1"), TM, 0.8, evaluate)
    assert check.mlu_now == pytest.approx(evaluate(FABRIC, Topology.from_circuits(FABRIC, MESH), TM))
    without = Topology.from_circuits(FABRIC, [c for c in MESH if c.ocs != "ocs1"])
    assert check.mlu_after == pytest.approx(evaluate(FABRIC, without, TM))
    assert check.mlu_now < check.mlu_after < 0.8  # a quarter of the uplinks gone
    assert check.allowed


def test_draining_half_of_the_ocses_is_refused_with_the_figure() -> None:
    check = check_drain(FABRIC, MESH, (ocs("ocs1"),), ocs("ocs2"), TM, 0.8, evaluate)
    assert check.mlu_after > 1.0  # half of every block's uplinks gone under load 0.5 (plus unevenness)
    assert not check.allowed
    words = check.words(ocs("ocs2"))
    assert "ocs:ocs2" in words and f"{check.mlu_after:.4f}" in words and "stage limit 0.8" in words


def test_every_ocs_gone_is_unroutable() -> None:
    under = tuple(ocs(o.name) for o in FABRIC.ocs[:3])
    check = check_drain(FABRIC, MESH, under, ocs(FABRIC.ocs[3].name), TM, 0.8, evaluate)
    assert math.isinf(check.mlu_after) and not check.allowed
    assert "unroutable" in check.words(ocs(FABRIC.ocs[3].name))


def test_a_block_under_maintenance_takes_its_circuits_and_its_traffic_out() -> None:
    block = Maintenance(MaintenanceTarget.BLOCK, "b1")
    kept, out = in_service(FABRIC, MESH, (block,))
    assert out == {"b1"}
    assert all("b1" not in c.blocks(FABRIC) for c in kept) and len(kept) < len(MESH)
    check = check_drain(FABRIC, MESH, (), block, TM, 0.8, evaluate)
    assert check.allowed and check.mlu_after < 0.8
