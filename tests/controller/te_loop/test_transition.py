"""Group transitions: the bound on old/new mixes, and intermediates that keep it in limit."""

from __future__ import annotations

import numpy as np
import pytest

from controller.te_loop.te_push import group_tables
from controller.te_loop.transition import (
    fractions,
    mix_utilisation,
    plan_transition,
    source_loads,
    transition_steps,
    worst_transition,
)
from optimizer.te import solve_te
from optimizer.topology import Topology, uniform_mesh
from optimizer.traffic import TrafficMatrix, hotspot_matrix
from tests.support import shipped_fabric

FABRIC = shipped_fabric("fabric-8")
BLOCKS = FABRIC.block_names
MESH = Topology.from_circuits(FABRIC, uniform_mesh(FABRIC))
SPEED = 100.0


def test_loads_count_first_and_second_hops_per_source() -> None:
    demand = np.zeros((8, 8))
    demand[0, 2] = 90.0
    tables = {"b1": {"b3": {"b2": 2, "b3": 1}}}  # 2/3 through b2, 1/3 direct
    loads = source_loads(fractions(tables, BLOCKS), demand)
    assert np.isclose(loads[0, 0, 1], 60.0) and np.isclose(loads[0, 1, 2], 60.0)
    assert np.isclose(loads[0, 0, 2], 30.0)
    assert np.isclose(loads.sum(), 150.0)  # 60 twice (two hops) + 30 direct
    # Destinations without a group go direct.
    demand[3, 4] = 10.0
    assert np.isclose(source_loads(fractions({}, BLOCKS), demand)[3, 3, 4], 10.0)


def test_a_mix_can_exceed_both_plans_and_the_steps_keep_it_near_them() -> None:
    # As in a stage's drain: TE on the topology without ocs1's circuits, pushed while those
    # circuits still carry traffic (the full mesh is the capacity during the push).
    tm = hotspot_matrix(FABRIC, seed=3, load=0.6)
    demand = np.asarray(tm.gbps)
    capacity = MESH.counts * SPEED
    drained = Topology.from_circuits(FABRIC, [c for c in uniform_mesh(FABRIC) if c.ocs != "ocs1"])
    old = group_tables(solve_te(FABRIC, MESH, tm, spine=()), BLOCKS)
    new = group_tables(solve_te(FABRIC, drained, tm, spine=()), BLOCKS)
    a, b = source_loads(fractions(old, BLOCKS), demand), source_loads(fractions(new, BLOCKS), demand)
    ends = max(mix_utilisation(a, a, capacity), mix_utilisation(b, b, capacity))
    jump = mix_utilisation(a, b, capacity)
    assert jump > 1.0 > ends  # jumping could overload a link that neither plan overloads
    steps = transition_steps(old, new, BLOCKS, demand, capacity, limit=ends + 1e-9)
    assert steps[-1] == new and len(steps) > 2
    sequence = [fractions(old, BLOCKS)] + [fractions(t, BLOCKS) for t in steps]
    loads = [source_loads(x, demand) for x in sequence]
    worst = max(mix_utilisation(loads[k], loads[k + 1], capacity) for k in range(len(loads) - 1))
    assert worst <= ends * 1.05
    assert all(sum(hops.values()) <= 128 for t in steps for g in t.values() for hops in g.values())


def test_no_intermediates_when_the_jump_is_safe_or_nothing_was_pushed_before() -> None:
    tm = hotspot_matrix(FABRIC, seed=1, load=0.3)
    tables = group_tables(solve_te(FABRIC, MESH, tm, spine=()), BLOCKS)
    capacity = MESH.counts * SPEED
    assert transition_steps(tables, tables, BLOCKS, tm.gbps, capacity, limit=0.8) == [tables]
    assert transition_steps(None, tables, BLOCKS, tm.gbps, capacity, limit=0.8) == [tables]


def crossing_moves(load: float, swap: bool):
    """b1 sends ``load`` to b4, first via b2, then via b3. Its move lands on b3->b4, which a
    second source leaves at the same time: b3 itself (direct -> via b6), or with ``swap``
    b5 (via b3 -> via b2), whose move lands where b1's leaves: no order helps then."""
    n = len(BLOCKS)
    demand = np.zeros((n, n))
    old: dict = {b: {} for b in BLOCKS}
    new: dict = {b: {} for b in BLOCKS}
    demand[0, 3] = load
    old["b1"], new["b1"] = {"b4": {"b2": 1}}, {"b4": {"b3": 1}}
    if swap:
        demand[4, 3] = load
        old["b5"], new["b5"] = {"b4": {"b3": 1}}, {"b4": {"b2": 1}}
    else:
        demand[2, 3] = load
        old["b3"], new["b3"] = {"b4": {"b4": 1}}, {"b4": {"b6": 1}}
    capacity = np.full((n, n), 100.0)
    np.fill_diagonal(capacity, 0.0)
    return old, new, demand, capacity


def test_blocks_change_one_at_a_time_in_an_order_that_keeps_the_limit() -> None:
    old, new, demand, capacity = crossing_moves(60.0, swap=False)
    a, b = source_loads(fractions(old, BLOCKS), demand), source_loads(fractions(new, BLOCKS), demand)
    assert mix_utilisation(a, b, capacity) > 1.0  # all at once, b3->b4 could carry both
    steps = transition_steps(old, new, BLOCKS, demand, capacity, limit=0.61)
    assert len(steps) == 2 and steps[-1] == new
    assert steps[0]["b3"] == new["b3"] and steps[0]["b1"] == old["b1"]  # b3 leaves b3->b4 first
    assert worst_transition(old, steps, BLOCKS, demand, capacity) == pytest.approx(0.6)


def test_when_no_order_helps_intermediates_bring_the_bound_down() -> None:
    old, new, demand, capacity = crossing_moves(60.0, swap=True)
    jump = worst_transition(old, [new], BLOCKS, demand, capacity)
    assert jump == pytest.approx(1.2)
    steps = transition_steps(old, new, BLOCKS, demand, capacity, limit=0.7)
    assert steps[-1] == new and len(steps) > 2
    assert worst_transition(old, steps, BLOCKS, demand, capacity) <= 0.7
    tight = transition_steps(old, new, BLOCKS, demand, capacity, limit=0.62)  # out of reach
    assert tight[-1] == new
    assert 0.62 < worst_transition(old, tight, BLOCKS, demand, capacity) < 0.7


@pytest.mark.parametrize(("swap", "limit"), [(False, 0.61), (True, 0.7), (True, 0.62), (False, 2.0)])
def test_the_planned_bound_is_what_the_steps_reach(swap: bool, limit: float) -> None:
    old, new, demand, capacity = crossing_moves(60.0, swap=swap)
    planned = plan_transition(old, new, BLOCKS, demand, capacity, limit)
    assert planned.steps == transition_steps(old, new, BLOCKS, demand, capacity, limit)
    assert planned.worst == pytest.approx(worst_transition(old, planned.steps, BLOCKS, demand, capacity))


class RecordingDrivers:
    def __init__(self) -> None:
        self.pushes: list[dict] = []

    def push_groups(self, tables: dict, request_prefix: str) -> dict[str, int]:
        self.pushes.append(dict(tables))
        return dict.fromkeys(tables, 1)


def test_the_pusher_sends_an_ordered_step_to_its_one_block_and_the_last_to_all(monkeypatch) -> None:
    from types import SimpleNamespace

    import controller.te_loop.te_push as te_push

    circuits = frozenset(uniform_mesh(FABRIC))
    capacity = np.asarray(MESH.counts) * np.array(
        [[FABRIC.link_speed_gbps(a, b) for b in BLOCKS] for a in BLOCKS]
    )
    old, new, demand, _ = crossing_moves(0.5 * capacity[capacity > 0].min(), swap=False)
    monkeypatch.setattr(te_push, "group_tables", lambda result, blocks: new)
    drivers = RecordingDrivers()
    pusher = te_push.TePusher(FABRIC, drivers, mix_floor=0.0)  # type: ignore[arg-type]
    pusher.pushed = old
    result = SimpleNamespace(mlu=0.5, mlu_quantized=0.5, total_demand_gbps=float(demand.sum()))
    pusher.push(result, circuits, "t", TrafficMatrix(BLOCKS, demand))  # type: ignore[arg-type]
    assert [set(p) for p in drivers.pushes] == [{"b3"}, set(BLOCKS)]
    assert drivers.pushes[0]["b3"] == new["b3"] and drivers.pushes[1] == new
    assert pusher.pushed == new
