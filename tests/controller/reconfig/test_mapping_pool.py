"""The planners' process pool (controller/reconfig/workers.py): started only where it pays off,
and a plan made on it is the plan made without it, for ``heliostat toe`` and the daemon alike."""

from __future__ import annotations

import logging
import os

import pytest

from controller.reconfig.toe_run import ToePlanner
from controller.reconfig.workers import domain_pool, pays_off
from optimizer.policy import ReconfigurePolicy
from optimizer.toe import plan_reconfiguration
from optimizer.topology import uniform_mesh
from optimizer.traffic import gravity_matrix
from tests.support.mapping_helpers import jupiter_like


class CountingMap:
    """A real pool's ``map`` that counts the items it ran."""

    def __init__(self, parallel_map) -> None:
        self.parallel_map = parallel_map
        self.items = 0

    def __call__(self, fn, items):
        items = list(items)
        self.items += len(items)
        return self.parallel_map(fn, items)


@pytest.fixture(autouse=True)
def small_work_on_the_pool(monkeypatch):
    """The 16-block fabric here is below PARALLEL_WORK: the pool is used from 1024 on."""
    monkeypatch.setattr("optimizer.mapping.mapper.PARALLEL_WORK", 1024)
    monkeypatch.setattr("controller.reconfig.workers.PARALLEL_WORK", 1024)


def test_the_pool_runs_in_other_processes_and_only_where_it_pays_off(fabric8):
    big = jupiter_like(blocks=16, ocs=64, domains=4)
    assert pays_off(big) and not pays_off(fabric8)
    with domain_pool(1) as none:
        assert none is None
    with domain_pool(2, fabric8) as none:
        assert none is None
    with domain_pool(2, big) as parallel_map:
        pids = set(parallel_map(_pid, range(8)))
    assert pids and os.getpid() not in pids


def _pid(_: int) -> int:
    return os.getpid()


def test_what_a_worker_logs_shows_here(caplog):
    """A record logged in a worker comes back to the logger of the same name here, with the
    worker's process; below the level the pool was made with, nothing comes."""
    big = jupiter_like(blocks=16, ocs=64, domains=4)
    caplog.set_level(logging.INFO, logger="optimizer")
    with domain_pool(2, big) as parallel_map:
        pids = list(parallel_map(_log_from_worker, range(2)))
    got = [r for r in caplog.records
           if r.name == "optimizer.mapping.mapper" and r.getMessage().startswith("from worker")]
    assert {r.getMessage() for r in got} == {f"from worker {pid} item {i}" for i, pid in enumerate(pids)}
    assert {r.process for r in got} == set(pids) and os.getpid() not in pids
    assert not any("debug from worker" in r.getMessage() for r in caplog.records)


def _log_from_worker(item: int) -> int:
    log = logging.getLogger("optimizer.mapping.mapper")
    log.info("from worker %d item %d", os.getpid(), item)
    log.debug("debug from worker %d", os.getpid())
    return os.getpid()


@pytest.mark.slow
def test_plans_on_the_pool_are_the_plans_without_it():
    """``heliostat toe`` (plan_reconfiguration) and the daemon's ToePlanner, 16 blocks in 4
    failure domains, a skewed gravity matrix from the mesh: the same circuits with the pool."""
    fabric = jupiter_like(blocks=16, ocs=64, domains=4)
    mesh = uniform_mesh(fabric)
    tm = gravity_matrix(fabric, seed=1, load=0.5, skew=2.0)
    alone = plan_reconfiguration(fabric, tm, mesh)
    assert alone.mapping.removed > 0
    policy = ReconfigurePolicy(0.0, 0.0)
    with domain_pool(2, fabric) as parallel_map:
        counting = CountingMap(parallel_map)
        pooled = plan_reconfiguration(fabric, tm, mesh, parallel_map=counting)
        assert counting.items >= 4  # every failure domain of every mapping ran on the pool
        assert pooled.mapping.circuits == alone.mapping.circuits
        assert pooled.staging.final_circuits == alone.staging.final_circuits
        daemon = ToePlanner(fabric, 0.8, parallel_map=counting)
        proposal = daemon.propose("dry_run", tm, frozenset(mesh), 0.0, None, policy)
    without = ToePlanner(fabric, 0.8).propose("dry_run", tm, frozenset(mesh), 0.0, None, policy)
    assert proposal.target == without.target
    assert proposal.changed == without.changed
