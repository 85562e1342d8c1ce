"""Fabrics that run hot (issue 30): mixed 100G/200G blocks, with and without a spine switch,
under matrices scaled so that the uniform mesh runs at a chosen MLU.

Shared by the ToE tests and ``benchmarks/bench_toe_hot.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.fabric import Block, Fabric, Ocs, SpineSwitch, build_fabric
from optimizer.te import TeSolver
from optimizer.traffic import TrafficMatrix, gravity_matrix, ring_matrix


def mixed_fabric(
    blocks: int,
    uplinks: int = 16,
    ocs: int = 4,
    domains: int = 2,
    speeds: tuple[float, ...] = (100.0, 200.0),
    spine_links: int = 0,
    name: str | None = None,
) -> Fabric:
    """``blocks`` blocks of ``uplinks`` each, speeds taken in turn from ``speeds``, striped over
    ``ocs`` OCSes (a few spare ports each) in ``domains`` failure domains; with ``spine_links``,
    one 100G spine switch with that many links from every block."""
    width = len(str(blocks - 1))
    block_list = [Block(f"a{i:0{width}d}", uplinks, speeds[i % len(speeds)]) for i in range(blocks)]
    ports = blocks * (uplinks // ocs) + 8
    ocs_list = [Ocs(f"o{j}", ports, domain=j * domains // ocs) for j in range(ocs)]
    spine = []
    if spine_links:
        spine = [SpineSwitch("s0", tuple((b.name, spine_links) for b in block_list), 100.0)]
    label = name or f"hot-{blocks}{'-spine' if spine_links else ''}"
    return build_fabric(label, block_list, ocs_list, spine, source="<hot fabric>")


def mesh_scaled(fabric: Fabric, matrix: TrafficMatrix, mlu: float) -> TrafficMatrix:
    """``matrix`` scaled so that its min-MLU on the uniform mesh is ``mlu``."""
    return matrix.scaled(mlu / TeSolver(fabric).min_mlu(None, matrix, None))


def skewed(fabric: Fabric, seed: int = 5, skew: float = 1.5) -> TrafficMatrix:
    return gravity_matrix(fabric, seed, 0.5, skew=skew)


def ring(fabric: Fabric, seed: int = 3) -> TrafficMatrix:
    return ring_matrix(fabric, seed, 0.5)


def shift(fabric: Fabric, seed: int = 3) -> TrafficMatrix:
    """Each block to the block two places on (a fixed permutation, as a shifted collective)."""
    return ring_matrix(fabric, seed, 0.5, phase=1)


@dataclass(frozen=True)
class HotCase:
    name: str
    fabric: Fabric
    matrix: TrafficMatrix


def family(sizes: tuple[int, ...] = (8, 16, 32), loads: tuple[float, ...] = (0.9, 1.2)) -> list[HotCase]:
    """The hot-fabric family: every size, with and without a spine, skewed, ring and shift
    matrices, the mesh at each load."""
    out = []
    for n in sizes:
        for spine_links in (0, 2):
            fabric = mixed_fabric(n, spine_links=spine_links)
            for kind, make in (("skewed", skewed), ("ring", ring), ("shift", shift)):
                for load in loads:
                    label = f"{fabric.name} {kind} x{load:g}"
                    out.append(HotCase(label, fabric, mesh_scaled(fabric, make(fabric), load)))
    return out
