"""TE fits its weights to the group-table budget the switches declare (GroupWriter.budget)."""

from __future__ import annotations

import pytest

from controller.te_loop.te_push import TePusher, group_tables
from optimizer.te import RecentDemand
from optimizer.topology import uniform_mesh
from optimizer.traffic import gravity_matrix
from southbound.types import GroupBudget
from tests.support import shipped_fabric

FABRIC = shipped_fabric("fabric-8")


class _NoDevices:
    def push_groups(self, *args: object) -> dict[str, int]:
        raise AssertionError("solving pushes nothing")


@pytest.mark.parametrize(("group", "total"), [(16, 49_152), (128, 40), (32, 100)])
def test_the_weights_fit_the_smallest_declared_budget(group: int, total: int) -> None:
    pusher = TePusher(FABRIC, _NoDevices())  # type: ignore[arg-type]
    budgets = {b: GroupBudget(128, 49_152) for b in FABRIC.block_names}
    budgets[FABRIC.block_names[3]] = GroupBudget(group, total)  # one small switch rules them all
    assert pusher.fit_budgets(budgets) == (min(group, pusher.policy.table_size), total)
    circuits = uniform_mesh(FABRIC)
    result = pusher.solve(circuits, RecentDemand.of(gravity_matrix(FABRIC, 3, load=0.4)))
    tables = group_tables(result, FABRIC.block_names)
    assert max(sum(g.values()) for t in tables.values() for g in t.values()) <= group
    assert max(sum(sum(g.values()) for g in t.values()) for t in tables.values()) <= total


def test_no_declared_budget_keeps_the_policy() -> None:
    pusher = TePusher(FABRIC, _NoDevices())  # type: ignore[arg-type]
    assert pusher.fit_budgets({}) == (pusher.policy.table_size, 49_152)
