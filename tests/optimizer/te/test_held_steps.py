"""Steps that hold (issue 26): the scenario planner stops averaging a regime the traffic has left,
but keeps a share for it while that costs the traffic in force little (on/off bursts)."""

from __future__ import annotations

import numpy as np

from optimizer.te import RecentDemand, TeMethod, TePolicy, TeSolver, route
from optimizer.te.scenarios import HOLD_DISTANCE, held_count
from optimizer.topology import mesh_topology
from optimizer.traffic import TrafficMatrix, gravity_matrix, hotspot_matrix, uniform_matrix

POLICY = TePolicy(method=TeMethod.SCENARIOS, window=12)


def test_held_count_is_the_run_of_newest_rows_within_the_hold_distance() -> None:
    a, b = np.array([10.0, 0.0, 5.0]), np.array([0.0, 10.0, 5.0])
    near_b = b * (1 + HOLD_DISTANCE / 2)
    assert held_count(np.array([a, a, b, near_b])) == 2
    assert held_count(np.array([a, a, a])) == 3
    assert held_count(np.array([b, a])) == 1
    assert held_count(np.array([b, a, b * 1.5])) == 1  # a load step is a move too


def _ratio(fabric, result_tables_of, matrix: TrafficMatrix) -> float:
    return result_tables_of.mlu_quantized / TeSolver(fabric).min_mlu(mesh_topology(fabric), matrix, ())


def _judge(solver: TeSolver, fabric, history: list[TrafficMatrix], matrix: TrafficMatrix) -> float:
    """The integer weights planned on ``history``, judged on ``matrix`` against its optimum."""
    mesh = mesh_topology(fabric)
    planned = route(solver, mesh, RecentDemand(tuple(history)), POLICY)
    weights = planned.weights_by_source()
    judge = TeSolver(fabric)
    optimum = judge.min_mlu(mesh, matrix, ())
    return _mlu_of(fabric, weights, matrix) / optimum


def _mlu_of(fabric, weights, matrix: TrafficMatrix) -> float:
    """MLU of group tables on the mesh, computed independently of the solver: each source
    splits by weight, transit goes direct, a trunk's capacity is its circuits x speed."""
    blocks = list(fabric.block_names)
    index = {b: i for i, b in enumerate(blocks)}
    counts = mesh_topology(fabric).counts
    load = np.zeros((len(blocks), len(blocks)))
    for s, src in enumerate(blocks):
        for d, dst in enumerate(blocks):
            gbps = float(matrix.gbps[s, d])
            if s == d or gbps <= 0:
                continue
            hops = weights.get(src, {}).get(dst) or {dst: 1}
            total = sum(hops.values())
            for via, w in hops.items():
                v = index[via]
                share = gbps * w / total
                load[s, v] += share
                if v != d:
                    load[v, d] += share
    speed = np.array([[fabric.link_speed_gbps(a, b) for b in blocks] for a in blocks])
    capacity = counts * speed
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(capacity > 0, load / np.where(capacity > 0, capacity, 1), 0.0)
    return float(util.max())


def test_a_step_that_holds_is_routed_within_ten_percent_by_its_second_interval(fabric8) -> None:
    uniform, hot = uniform_matrix(fabric8, 0.5), hotspot_matrix(fabric8, 1, 0.5)
    solver = TeSolver(fabric8)
    history = [uniform] * 12
    assert _judge(solver, fabric8, history, uniform) < 1.10
    history = [*history[1:], hot]
    _judge(solver, fabric8, history, hot)  # the first interval: one matrix is no regime yet
    history = [*history[1:], hot]
    assert _judge(solver, fabric8, history, hot) <= 1.10


def test_on_off_bursts_keep_a_share_for_the_regime_they_left(fabric8) -> None:
    base = TrafficMatrix(fabric8.block_names, 0.5 * gravity_matrix(fabric8, 1).gbps)
    burst = TrafficMatrix(fabric8.block_names, base.gbps + hotspot_matrix(fabric8, 4, 0.4).gbps)
    hedged, fresh = TeSolver(fabric8), TeSolver(fabric8)
    history = [base] * 9 + [burst] * 3
    route(hedged, mesh_topology(fabric8), RecentDemand(tuple(history)), POLICY)
    history = [*history[2:], base, base]  # the burst ends and the base holds
    assert _judge(hedged, fabric8, history, base) <= 1.10
    hedged_on_burst = _judge(hedged, fabric8, history, burst)
    only_base = _judge(fresh, fabric8, [base] * 12, burst)  # a routing that forgot the burst
    assert hedged_on_burst < only_base


def test_measurement_noise_on_traffic_that_holds_is_no_step(fabric8) -> None:
    rng = np.random.default_rng(11)
    base = gravity_matrix(fabric8, 2, 0.4).gbps
    solver = TeSolver(fabric8)
    history = []
    for _ in range(16):
        history = [
            *history[-11:],
            TrafficMatrix(fabric8.block_names, base * rng.uniform(0.99, 1.01, base.shape)),
        ]
        result = route(solver, mesh_topology(fabric8), RecentDemand(tuple(history)), POLICY)
        assert result.method.startswith(f"scenarios ({len(history)} matrices")
    assert solver._scenarios.shifts == 0
