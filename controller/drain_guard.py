"""What a maintenance drain would do to the fabric, before it is queued (pure).

``heliostat ctl drain block|ocs NAME`` asks the daemon; the daemon routes its prediction
(or the last measured matrix) on the live circuits that would stay in service with the
drain added to today's maintenance, and refuses a drain whose MLU would exceed
``max(stage_mlu, MLU now)`` unless forced: the same rule a reconfiguration stage keeps
(a healthy fabric stays under the stage limit, a congested one gets no worse). A block
under maintenance also takes its own traffic out (its demand is no longer routed).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from controller.decision import Maintenance, MaintenanceTarget
from controller.device_view import circuit_ends
from optimizer.errors import InfeasibleError
from optimizer.fabric import Fabric
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

#: fabric, topology, matrix -> min MLU (raises InfeasibleError when a demand has no path)
Evaluate = Callable[[Fabric, Topology, TrafficMatrix], float]


@dataclass(frozen=True)
class DrainCheck:
    mlu_now: float
    mlu_after: float  # math.inf when some demand would have no path at all
    limit: float  # max(stage_mlu, mlu_now)
    stage_mlu: float

    @property
    def allowed(self) -> bool:
        return self.mlu_after <= self.limit + 1e-9

    def words(self, target: Maintenance) -> str:
        after = "unroutable (some demand would have no path)" if math.isinf(self.mlu_after) else (
            f"{self.mlu_after:.4f}"
        )
        return (
            f"draining {target} would take the predicted MLU from {self.mlu_now:.4f} to {after}, "
            f"over the stage limit {self.stage_mlu:g}"
            + (f" and today's {self.mlu_now:.4f}" if self.mlu_now > self.stage_mlu else "")
        )


def in_service(
    fabric: Fabric, circuits: Iterable[Circuit], maintenance: Iterable[Maintenance]
) -> tuple[frozenset[Circuit], frozenset[str]]:
    """The circuits left in service under ``maintenance``, and the blocks taken out."""
    maintenance = tuple(maintenance)
    blocks = frozenset(m.name for m in maintenance if m.kind is MaintenanceTarget.BLOCK)
    ocs = {m.name for m in maintenance if m.kind is MaintenanceTarget.OCS}
    kept = frozenset(
        c for c in circuits
        if c.ocs not in ocs and not any(b in blocks for b, _ in circuit_ends(fabric, c))
    )
    return kept, blocks


def check_drain(
    fabric: Fabric,
    circuits: Iterable[Circuit],
    maintenance: Iterable[Maintenance],
    target: Maintenance,
    matrix: TrafficMatrix,
    stage_mlu: float,
    evaluate: Evaluate,
) -> DrainCheck:
    """The predicted MLU with and without ``target`` added to ``maintenance``."""
    circuits = tuple(circuits)
    before = tuple(maintenance)
    now = _mlu(fabric, *in_service(fabric, circuits, before), matrix, evaluate)
    after = _mlu(fabric, *in_service(fabric, circuits, (*before, target)), matrix, evaluate)
    return DrainCheck(now, after, max(stage_mlu, now), stage_mlu)


def _mlu(
    fabric: Fabric,
    circuits: frozenset[Circuit],
    out: frozenset[str],
    matrix: TrafficMatrix,
    evaluate: Evaluate,
) -> float:
    gbps = matrix.gbps.copy()
    for block in out:
        i = fabric.block_index(block)
        gbps[i, :] = 0.0
        gbps[:, i] = 0.0
    tm = TrafficMatrix(matrix.blocks, gbps)
    if tm.total() <= 0:
        return 0.0
    if not circuits and not fabric.has_spine:
        return math.inf
    try:
        return evaluate(fabric, Topology.from_circuits(fabric, circuits), tm)
    except InfeasibleError:
        return math.inf
