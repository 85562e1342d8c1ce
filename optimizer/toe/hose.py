"""The hose floor: what no routing can beat, and when it proves that no safe stage can help.

Every Gbit/s a block sends (or receives) crosses one of its own circuits or spine links, so
on any topology the MLU is at least ``max(egress, ingress) / capacity`` for every block, its
*hose floor*. When the MLU of today's topology equals the hose floor of a block whose
uplinks are all in use, and draining any one of its circuits would raise its floor over the
stage limit (``max(threshold / margin, MLU where the stage starts)``, which no safe stage
raises), no sequence of safe stages can lower the MLU: the MLU cannot fall below that
block's floor without more capacity for it, more capacity needs one of its circuits
changed, and with no free uplink every change to its circuits starts by draining one, which
lowers its capacity and raises the floor over the limit. :func:`hose_limit` finds such a
block and gives the figures. Pure.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from optimizer.fabric import Fabric
from optimizer.staging import StagingBlocked, limit_words
from optimizer.toe.plan import ToePlan
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

#: Relative slack within which today's MLU counts as at a block's hose floor.
TIGHT = 1e-6


@dataclass(frozen=True)
class HoseLimit:
    """Block ``block`` is hose-bound at today's MLU and cannot be changed safely."""

    block: str
    demand_gbps: float  # the larger of what it sends and receives, worst over the matrices
    capacity_gbps: float  # its circuits' and spine links' capacity today
    drained_mlu: float  # its hose floor with its slowest circuit drained: a lower bound
    limit: float  # the stage limit a drain is checked against (max(threshold / margin, MLU now))

    @property
    def mlu(self) -> float:
        return self.demand_gbps / self.capacity_gbps

    def message(self, over: str | None = None) -> str:
        """Why, with the figures; ``over`` says what the limit is (default: its value)."""
        over = over or f"over the stage limit of {self.limit:.4f}"
        return (
            f"no sequence of safe stages can lower the MLU: block {self.block} alone sets it "
            f"({self.demand_gbps:.0f} Gbit/s over its {self.capacity_gbps:.0f} Gbit/s of links = "
            f"{self.mlu:.4f}, whatever the routing), only more capacity for {self.block} lowers it, and "
            f"with every uplink of {self.block} in use each change to its circuits starts by draining "
            f"one, which raises the MLU to at least {self.drained_mlu:.4f}, {over}"
        )


def speed_matrix(fabric: Fabric) -> np.ndarray:
    """Gbit/s of one circuit between each two blocks (the slower end's speed)."""
    names = fabric.block_names
    return fabric.derived(
        "hose.speed",
        lambda: np.array(
            [[fabric.link_speed_gbps(a, b) if a != b else 0.0 for b in names] for a in names],
            dtype=np.float64,
        ),
    )


def spine_capacity(fabric: Fabric) -> np.ndarray:
    """Per block, Gbit/s of its spine links."""

    def compute() -> np.ndarray:
        out = np.zeros(fabric.n_blocks)
        for sw in fabric.spine:
            for i, block in enumerate(fabric.blocks):
                out[i] += sw.links_to(block.name) * min(block.speed_gbps, sw.speed_gbps)
        return out

    return fabric.derived("hose.spine", compute)


def block_demand(matrices: Sequence[TrafficMatrix]) -> np.ndarray:
    """Per block, the larger of what it sends and receives, worst over the matrices."""
    worst = np.max([np.maximum(tm.gbps.sum(axis=1), tm.gbps.sum(axis=0)) for tm in matrices], axis=0)
    return np.asarray(worst, dtype=np.float64)


def hose_floors(fabric: Fabric, counts: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """Per block, the MLU no routing on ``counts`` beats (inf: demand and no capacity)."""
    capacity = (np.asarray(counts) * speed_matrix(fabric)).sum(axis=1) + spine_capacity(fabric)
    with np.errstate(divide="ignore", invalid="ignore"):
        none = np.where(demand > 0, np.inf, 0.0)
        floors = np.where(capacity > 0, demand / np.maximum(capacity, 1e-12), none)
    return np.asarray(floors, dtype=np.float64)


def free_uplinks(fabric: Fabric, counts: np.ndarray) -> np.ndarray:
    """Per block, cabled OCS ports that no circuit uses."""
    cabled = np.array([sum(1 for _ in fabric.ports_of(b)) for b in fabric.block_names])
    return np.asarray(cabled - np.asarray(counts).sum(axis=1), dtype=np.int64)


def hose_limit(
    fabric: Fabric,
    circuits: Iterable[Circuit],
    matrices: Sequence[TrafficMatrix],
    mlu_now: float,
    threshold: float,
    margin: float = 1.0,
) -> HoseLimit | None:
    """The block that proves no safe sequence of stages lowers ``mlu_now`` (see the module
    docstring), or None when there is none (a search may still find nothing)."""
    # a safe sequence never takes the MLU over ``limit`` (each stage stays within max(threshold /
    # margin, MLU where it starts)), so a drain of the block over it is never safe
    limit = max(threshold / margin, mlu_now)
    counts = np.asarray(Topology.from_circuits(fabric, circuits).counts)
    demand = block_demand(matrices)
    floors = hose_floors(fabric, counts, demand)
    free = free_uplinks(fabric, counts)
    speeds = speed_matrix(fabric)
    capacity = (counts * speeds).sum(axis=1) + spine_capacity(fabric)
    for h in np.argsort(-floors):
        if floors[h] < mlu_now * (1 - TIGHT):
            break
        if free[h] > 0 or not np.isfinite(floors[h]):
            continue
        slowest = speeds[h][counts[h] > 0].min(initial=np.inf)
        if not np.isfinite(slowest) or capacity[h] <= slowest:
            continue
        drained = float(demand[h] / (capacity[h] - slowest))
        if drained > limit * (1 + TIGHT):
            return HoseLimit(fabric.block_names[int(h)], float(demand[h]), float(capacity[h]), drained, limit)
    return None


class HoseBlocked(StagingBlocked):
    """Staging refused before any search: a hose-bound block proves no safe stage lowers the MLU
    (:mod:`optimizer.toe.hose`)."""

    def __init__(
        self,
        proof: HoseLimit,
        pair: tuple[str, str],
        domain: int,
        threshold: float,
        margin: float,
        start: float,
    ) -> None:
        super().__init__(domain, pair, proof.drained_mlu, proof.limit, threshold, margin, start)
        self.proof = proof
        self.args = (f"cannot stage the change: {proof.message(limit_words(threshold, margin, start))}",)


def hose_proof(
    fabric: Fabric,
    circuits: Sequence[Circuit],
    matrices: Sequence[TrafficMatrix],
    toe: ToePlan,
    threshold: float,
    margin: float,
) -> HoseBlocked | None:
    """The refusal to raise at once when the plan is for a lower MLU and a hose-bound block
    proves that no sequence of safe stages reaches one."""
    if toe.nothing_to_gain is not None:
        return None
    if not toe.mlu < toe.current_mlu * (1 - 1e-6) and not gain_left(toe):
        return None  # a plan for shorter paths only: the proof says nothing about it
    proof = hose_limit(fabric, circuits, matrices, toe.current_mlu, threshold, margin)
    if proof is None:
        return None
    log.info("ToE: %s", proof.message())
    # the pair and domain of the hose-bound block's slowest circuit: the cheapest drain that fails
    ends = [(c, c.blocks(fabric)) for c in sorted(circuits)]
    own = [(c, a if b == proof.block else b) for c, (a, b) in ends if proof.block in (a, b)]
    circuit, other = min(own, key=lambda co: fabric.link_speed_gbps(proof.block, co[1]))
    domain = fabric.ocs_named(circuit.ocs).domain
    return HoseBlocked(proof, (proof.block, other), domain, threshold, margin, toe.current_mlu)


def gain_left(toe: ToePlan, min_gain: float = 0.0) -> bool:
    """Whether the relaxed bound lowers today's MLU (by more than ``min_gain`` of it)."""
    if toe.nothing_to_gain is not None or toe.throughput_scale_relaxed is None:
        return False
    return 1.0 / toe.throughput_scale_relaxed < toe.current_mlu * (1 - max(min_gain, 1e-6))
