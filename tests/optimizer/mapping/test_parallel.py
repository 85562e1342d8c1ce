"""Failure domains mapped side by side on a real process pool give the same circuits as one
after the other (the pool is the caller's: the mapping is given its ``map``)."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

from optimizer.budget import TimeBudget
from optimizer.fabric import Block, Ocs, OcsSides, build_fabric
from optimizer.mapping import map_topology
from optimizer.topology import Topology, mesh_topology, uniform_mesh
from tests.support.circuit_checker import check_mapping
from tests.support.mapping_helpers import as_pairs, gravity_topology, jupiter_like, perturb


class CountingMap:
    """A pool's ``map`` that counts the items it was given (to show the pool did the work)."""

    def __init__(self, pool: ProcessPoolExecutor) -> None:
        self.pool = pool
        self.items = 0

    def __call__(self, fn, items):
        items = list(items)
        self.items += len(items)
        return self.pool.map(fn, items)


@pytest.fixture(autouse=True)
def small_work_on_the_pool(monkeypatch):
    """The 16-block fabrics here are below PARALLEL_WORK: the pool is used from 1024 on."""
    monkeypatch.setattr("optimizer.mapping.mapper.PARALLEL_WORK", 1024)


@pytest.fixture(scope="module")
def pool():
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as executor:
        yield executor


def test_jupiter_domains_side_by_side_give_the_same_circuits(pool):
    """16 blocks, 64 OCSes in 4 domains (dive, repair and recolouring all run per domain)."""
    fabric = jupiter_like(blocks=16, ocs=64, domains=4)
    assert len(fabric.ocs) * fabric.n_blocks >= 1024
    mesh = uniform_mesh(fabric)
    for target in (perturb(mesh_topology(fabric), 40, np.random.default_rng(3)),
                   gravity_topology(fabric, np.random.default_rng(5), skew=1.5)):
        one_by_one = map_topology(fabric, target, mesh)
        parallel_map = CountingMap(pool)
        side_by_side = map_topology(fabric, target, mesh, parallel_map=parallel_map)
        assert parallel_map.items == 4  # one job per failure domain, all on the pool
        assert side_by_side.circuits == one_by_one.circuits
        assert side_by_side.removed == one_by_one.removed
        assert not check_mapping(fabric, side_by_side.circuits, as_pairs(target))


def test_side_by_side_under_a_time_budget_gives_the_same_circuits(pool):
    """A budget that does not run out changes nothing (each worker gets its share in seconds)."""
    fabric = jupiter_like(blocks=16, ocs=64, domains=4)
    target = perturb(mesh_topology(fabric), 40, np.random.default_rng(8))
    mesh = uniform_mesh(fabric)
    free = map_topology(fabric, target, mesh)
    budgeted = map_topology(fabric, target, mesh, budget=TimeBudget(600.0), parallel_map=pool.map)
    assert budgeted.circuits == free.circuits


def test_any_ocs_sides_chosen_in_a_worker_come_back(pool, monkeypatch):
    """On ``any`` OCSes with an odd share per block the domain's mapping picks each port's side;
    picked in a worker, the sides must reach the ports the circuits are laid on."""
    monkeypatch.setattr("optimizer.mapping.mapper.PARALLEL_WORK", 0)  # a small fabric on the pool
    blocks = [Block(f"b{i}", 3) for i in range(4)]
    ocs = [Ocs("o1", 8, 0, OcsSides.ANY), Ocs("o2", 8, 1, OcsSides.ANY), Ocs("o3", 8, 2, OcsSides.ANY)]
    fabric = build_fabric("any-odd", blocks, ocs)
    target = Topology.from_links(fabric.block_names, [("b0", "b1", 3), ("b2", "b3", 3)])
    parallel_map = CountingMap(pool)
    side_by_side = map_topology(fabric, target, (), parallel_map=parallel_map)
    assert parallel_map.items == 3
    assert not check_mapping(fabric, side_by_side.circuits, as_pairs(target))
    assert side_by_side.circuits == map_topology(fabric, target, ()).circuits
    again = map_topology(fabric, target, side_by_side.circuits, parallel_map=pool.map)
    assert again.removed == again.added == 0


def test_small_fabrics_stay_in_the_callers_process(pool, fabric8):
    """Below PARALLEL_WORK shipping the domains costs more than it saves: the map is not used."""
    assert len(fabric8.ocs) * fabric8.n_blocks < 1024
    parallel_map = CountingMap(pool)
    target = perturb(mesh_topology(fabric8), 4, np.random.default_rng(1))
    result = map_topology(fabric8, target, uniform_mesh(fabric8), parallel_map=parallel_map)
    assert parallel_map.items == 0
    assert result.circuits == map_topology(fabric8, target, uniform_mesh(fabric8)).circuits
