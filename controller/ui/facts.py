"""The facts the status page shows that ``ctl`` did not have yet: the fabric, the devices'
health and the reconfiguration in flight, as JSON-shaped dicts.

:class:`controller.northbound.daemon_api.DaemonApi` serves them as
:class:`~controller.northbound.api.ControllerApi` methods, so the JSON endpoints
(:mod:`controller.ui.web`) and any RPC that serves them later read the same functions.
Pure: the caller passes the fabric, the status board's values and the journal's records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controller.reconfig.journal import IntentRecord, StepName, StepRecord
from optimizer.fabric import Fabric

#: The executor's steps of one stage, in order (progress counts them).
STEPS = tuple(s.value for s in StepName)
#: Journaled steps of the reconfiguration in flight that the page lists (the latest).
MAX_STEPS_SHOWN = 40


def fabric_json(fabric: Fabric) -> dict[str, Any]:
    """Blocks, OCSes by failure domain and spine switches, with their sizes."""
    return {
        "name": fabric.name,
        "blocks": [{"name": b.name, "uplinks": b.uplinks, "speed_gbps": b.speed_gbps} for b in fabric.blocks],
        "ocs": [
            {"name": o.name, "ports": o.ports, "domain": o.domain, "sides": o.sides.value} for o in fabric.ocs
        ],
        "domains": [
            {"domain": d, "ocs": [o.name for o in fabric.ocs_in_domain(d)]} for d in fabric.domains
        ],
        "spine": [
            {"name": s.name, "speed_gbps": s.speed_gbps, "links": {b: n for b, n in s.links if n > 0}}
            for s in fabric.spine
        ],
        "capacity_gbps": sum(b.uplinks * b.speed_gbps for b in fabric.blocks),
    }


def devices_json(
    fabric: Fabric,
    managed_spines: Iterable[str],
    board: Mapping[str, Any],
    last_seen: Mapping[str, float],
) -> list[dict[str, Any]]:
    """Every device the controller polls: ``up``, ``unreachable`` (did not answer the last
    poll) or ``unpowered`` (an OCS that answers without power), when it last answered, and
    whether it is drained for maintenance. Before the first poll every device is ``unknown``."""
    unreachable = set(board.get("unreachable") or ())
    ocs_down = set(board.get("ocs_down") or ())
    maintenance = set(board.get("maintenance") or ())
    polled = board.get("circuits_installed") is not None
    named = [
        *(("block", b.name) for b in fabric.blocks),
        *(("ocs", o.name) for o in fabric.ocs),
        *(("spine", s) for s in sorted(managed_spines)),
    ]
    out = []
    for kind, name in named:
        if name in unreachable:
            state = "unreachable"
        elif kind == "ocs" and name in ocs_down:
            state = "unpowered"
        else:
            state = "up" if polled else "unknown"
        out.append(
            {
                "name": name,
                "kind": kind,
                "state": state,
                "last_seen": last_seen.get(name),
                "maintenance": f"{kind}:{name}" in maintenance,
            }
        )
    return out


def stage_progress(stage: int | None, stages_total: int | None, steps_done: int) -> float | None:
    """The share of the reconfiguration done: whole stages, plus the steps of this one done."""
    if stage is None or not stages_total:
        return None
    per_stage = len(STEPS)
    done = stage * per_stage + min(max(steps_done, 0), per_stage)
    return round(min(done / (stages_total * per_stage), 1.0), 4)


def reconfiguration_json(
    intent: IntentRecord, steps: Sequence[StepRecord], board: Mapping[str, Any]
) -> dict[str, Any]:
    """The reconfiguration in flight: its stages, the stage and step now, the progress, and
    its latest journaled steps."""
    plan = intent.plan.to_json()
    stages = plan.get("stages") or []
    total = board.get("stages_total") or len(stages)
    stage = board.get("stage")
    if stage is None and steps:
        stage = steps[-1].stage
    done_here = sum(1 for s in steps if s.stage == stage and s.completed)
    return {
        **intent.summary_json(),
        "stages_total": total,
        "stage": stage,
        "step": board.get("step"),
        "steps": list(STEPS),
        "progress": stage_progress(stage, total, done_here),
        "stages": [_stage_json(i, s) for i, s in enumerate(stages)],
        "journal": [
            {
                "stage": s.stage,
                "step": s.name,
                "state": s.state.value,
                "started": s.started,
                "finished": s.finished,
                "error": s.error,
            }
            for s in steps[-MAX_STEPS_SHOWN:]
        ],
    }


def _stage_json(index: int, stage: Any) -> dict[str, Any]:
    if not isinstance(stage, Mapping):
        return {"index": index}
    return {
        "index": index,
        "domain": stage.get("domain"),
        "remove": len(stage.get("remove") or ()),
        "add": len(stage.get("add") or ()),
        "mlu_start": stage.get("mlu_start"),
        "mlu_drained": stage.get("mlu_drained"),
        "mlu_after": stage.get("mlu_after"),
    }
