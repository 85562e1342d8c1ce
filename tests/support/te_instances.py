"""Small TE instances for tests: fabrics with chosen speeds, topologies and spines."""

from __future__ import annotations

import numpy as np

from optimizer.fabric import Block, Fabric, Ocs, OcsSides, SpineSwitch, build_fabric
from optimizer.topology import Topology
from optimizer.traffic import TrafficMatrix


def small_fabric(
    n: int,
    speeds: list[float] | None = None,
    spine: list[SpineSwitch] | None = None,
    uplinks: int = 16,
) -> Fabric:
    speeds = speeds or [100.0] * n
    blocks = [Block(f"b{i + 1}", uplinks, speeds[i]) for i in range(n)]
    ocs = [Ocs("ocs1", n * uplinks, 0, OcsSides.ANY)]
    return build_fabric(f"small-{n}", blocks, ocs, spine or [])


def topology(fabric: Fabric, links: dict[tuple[str, str], int]) -> Topology:
    return Topology.from_links(fabric.block_names, [(a, b, c) for (a, b), c in links.items()])


def matrix(fabric: Fabric, demands: dict[tuple[str, str], float]) -> TrafficMatrix:
    arr = np.zeros((fabric.n_blocks, fabric.n_blocks))
    for (a, b), gbps in demands.items():
        arr[fabric.block_index(a), fabric.block_index(b)] = gbps
    return TrafficMatrix(fabric.block_names, arr)


def random_instance(seed: int) -> tuple[Fabric, Topology, TrafficMatrix]:
    """3-5 blocks of mixed speed, a random sparse topology, maybe a spine, a random matrix."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 6))
    speeds = [float(rng.choice([100.0, 200.0])) for _ in range(n)]
    names = [f"b{i + 1}" for i in range(n)]
    spine = []
    if rng.random() < 0.5:
        links = tuple((b, int(rng.integers(0, 3))) for b in names)
        spine.append(SpineSwitch("s1", links, float(rng.choice([100.0, 400.0]))))
    fabric = small_fabric(n, speeds, spine)
    counts = np.triu(rng.integers(0, 4, size=(n, n)) * (rng.random((n, n)) < 0.8), 1)
    topo = Topology(fabric.block_names, counts + counts.T)
    demand = rng.exponential(150.0, size=(n, n)) * (rng.random((n, n)) < 0.7)
    np.fill_diagonal(demand, 0.0)
    return fabric, topo, TrafficMatrix(fabric.block_names, demand)
