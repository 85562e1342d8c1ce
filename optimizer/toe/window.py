"""The load at which a change that cannot be staged today would stage whole (issue 30's
deferred plans, as ``heliostat toe --defer`` shows them).

The stage rule holds each drained stage to ``max(threshold, MLU where it starts)``; on a hot
fabric a stage of the change may break it at today's predicted load while the same change
stages whole once the load falls. :func:`staging_window` stages ``current -> target`` on the
predicted matrices scaled down step by step (``scales``, highest first) and gives the first
load at which every stage fits, with its stages. Pure: no I/O, the clock only the budget's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from optimizer.budget import TimeBudget
from optimizer.fabric import Fabric
from optimizer.staging import MluFunction, StagingBlocked, StagingPlan, StagingTimedOut, stage_changes
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

#: The loads tried, as shares of the predicted matrices, highest first.
DEFAULT_SCALES = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)


@dataclass(frozen=True)
class StagingWindow:
    """At ``scale`` times the predicted load the whole change stages (``staging``): today's
    topology gives ``current_mlu`` there and the target ``staging.final_mlu``."""

    scale: float
    staging: StagingPlan
    current_mlu: float

    def to_json(self, fabric: Fabric) -> dict[str, object]:
        return {
            "scale": self.scale,
            "current_mlu": round(self.current_mlu, 6),
            "target_mlu": round(self.staging.final_mlu, 6),
            "stages": self.staging.to_json(fabric),
        }


def staging_window(
    fabric: Fabric,
    current: Iterable[Circuit],
    target: Iterable[Circuit],
    matrices: Sequence[TrafficMatrix],
    evaluate: MluFunction,
    threshold: float,
    *,
    margin: float = 1.0,
    scales: Sequence[float] = DEFAULT_SCALES,
    budget: TimeBudget | None = None,
) -> StagingWindow | None:
    """The first of ``scales`` (highest first) at which ``current -> target`` stages whole
    within the stage rule, or None when none does (or ``budget`` ran out first)."""
    current, target = tuple(current), tuple(target)
    for scale in sorted(scales, reverse=True):
        if budget is not None and budget.expired():
            return None
        scaled = [m.scaled(scale) for m in matrices]
        try:
            staging = stage_changes(
                fabric, current, target, scaled, evaluate, threshold, margin=margin, budget=budget
            )
        except StagingBlocked:
            continue
        except StagingTimedOut:  # the budget ran out within this scale's staging
            return None
        topology = Topology.from_circuits(fabric, current)
        today = max((evaluate(fabric, topology, m) for m in scaled if m.total() > 0), default=0.0)
        return StagingWindow(scale, staging, today)
    return None
