"""A reconfiguration as the journal stores it: the plan of an intent, stage by stage.

The intent's plan is plain JSON (the journal's ``plan`` column, the northbound API's "last
plan"): figures for the operator and, per stage, its failure domain and the circuits it
removes and adds as ``[ocs, port_a, port_b]``. The executor reads its stage back from it,
so a restarted daemon needs nothing else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from optimizer.errors import HeliostatError
from optimizer.fabric import Fabric
from optimizer.staging import StagingPlan
from optimizer.topology import Circuit


class PlanError(HeliostatError):
    """A journaled plan cannot be read back."""


@dataclass(frozen=True)
class StageSpec:
    index: int
    domain: int
    remove: tuple[Circuit, ...]
    add: tuple[Circuit, ...]
    mlu_drained: float | None = None

    @property
    def ocs_names(self) -> tuple[str, ...]:
        return tuple(sorted({c.ocs for c in (*self.remove, *self.add)}))


def _circuits(items: Any) -> list[list[Any]]:
    return [[c.ocs, c.a, c.b] for c in sorted(items)]


def _num(x: float) -> float | None:
    return round(float(x), 6) if math.isfinite(x) else None


def reconfiguration_plan(
    fabric: Fabric,
    trigger: str,
    staging: StagingPlan,
    current_mlu: float,
    planned_mlu: float,
    reason: str,
) -> dict[str, Any]:
    """The JSON plan of an intent."""
    stages = []
    for i, s in enumerate(staging.stages):
        stages.append(
            {
                "index": i,
                "domain": s.domain,
                "remove": _circuits(s.remove),
                "add": _circuits(s.add),
                "mlu_start": _num(s.mlu_start),
                "mlu_drained": _num(s.mlu_drained),
                "mlu_after": _num(s.mlu_after),
            }
        )
    removed = sum(len(s.remove) for s in staging.stages)
    added = sum(len(s.add) for s in staging.stages)
    return {
        "fabric": fabric.name,
        "trigger": trigger,
        "reason": reason,
        "current_mlu": _num(current_mlu),
        "planned_mlu": _num(planned_mlu),
        "threshold": staging.threshold,
        "wcmp_margin": staging.margin,
        "circuits_removed": removed,
        "circuits_added": added,
        "topology": staging.final_topology.to_json(),
        "stages": stages,
    }


def stage_count(plan: Any) -> int:
    try:
        return len(plan["stages"])
    except (KeyError, TypeError) as exc:
        raise PlanError(f"the plan has no stages: {exc}") from exc


def stage_spec(plan: Any, index: int) -> StageSpec:
    try:
        raw = plan["stages"][index]
        return StageSpec(
            index=index,
            domain=int(raw["domain"]),
            remove=tuple(Circuit(str(o), int(a), int(b)) for o, a, b in raw["remove"]),
            add=tuple(Circuit(str(o), int(a), int(b)) for o, a, b in raw["add"]),
            mlu_drained=raw.get("mlu_drained"),
        )
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise PlanError(f"stage {index} of the plan is unreadable: {exc}") from exc
