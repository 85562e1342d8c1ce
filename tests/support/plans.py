"""Small typed plans for the journal tests (controller/reconfig/stage_plan.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controller.reconfig.stage_plan import Plan, StageSpec
from optimizer.topology import Circuit


def stage(index: int, domain: int = 0, add: Sequence[Circuit] = (), remove: Sequence[Circuit] = (),
          **figures: Any) -> StageSpec:
    return StageSpec(index, domain, tuple(remove), tuple(add), **figures)


def small_plan(n: int = 0, stages: Sequence[StageSpec] = (), **fields: Any) -> Plan:
    """A plan named by ``n`` (its reason is ``plan n``) with ``stages``."""
    base: dict[str, Any] = {
        "fabric": "test", "trigger": "auto", "reason": f"plan {n}", "current_mlu": 0.5, "planned_mlu": 0.4,
        "circuits_removed": sum(len(s.remove) for s in stages),
        "circuits_added": sum(len(s.add) for s in stages),
    }
    return Plan(**(base | fields), stages=tuple(stages))
