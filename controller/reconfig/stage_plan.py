"""A reconfiguration plan, typed: the plan of an intent, stage by stage.

:class:`Plan` is what ToE proposes, the executor runs and the journal keeps: figures for the
operator and, per stage (:class:`StageSpec`), its failure domain and the circuits it removes
and adds. Frozen dataclasses from the planner to the executor; JSON only at the edges: the
journal's ``plan`` column (and the etcd journal's intent records) and the northbound API's
plans, written by :meth:`Plan.to_json` with the schema version :data:`PLAN_SCHEMA` and read
back by :meth:`Plan.from_json`. A plan without a version is one journaled before the version
existed (main up to b2f6973): the same fields, read the same way. The executor reads its
stage back from the journal's plan, so a restarted daemon needs nothing else.

In JSON a circuit is ``[ocs, port_a, port_b]`` and a topology ``{"links": [{"a", "b",
"count"}]}``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from optimizer.errors import HeliostatError
from optimizer.fabric import Fabric
from optimizer.staging import StagingPlan
from optimizer.topology import Circuit, Topology

#: The ``schema`` of the plans this code writes; it reads these and unversioned ones.
PLAN_SCHEMA = 1


class PlanError(HeliostatError):
    """A journaled (or received) plan cannot be read back; the message names the field."""


@dataclass(frozen=True)
class StageSpec:
    """One stage: the circuits it removes and adds in one failure domain, and the MLUs the
    planner expected at its start, drained and after it."""

    index: int
    domain: int
    remove: tuple[Circuit, ...]
    add: tuple[Circuit, ...]
    mlu_drained: float | None = None
    mlu_start: float | None = None
    mlu_after: float | None = None

    @property
    def ocs_names(self) -> tuple[str, ...]:
        return tuple(sorted({c.ocs for c in (*self.remove, *self.add)}))

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "domain": self.domain,
            "remove": _circuits_json(self.remove),
            "add": _circuits_json(self.add),
            "mlu_start": self.mlu_start,
            "mlu_drained": self.mlu_drained,
            "mlu_after": self.mlu_after,
        }

    @classmethod
    def from_json(cls, raw: object, index: int, where: str) -> StageSpec:
        """Stage ``index`` (its position in the plan, whatever its ``index`` field says)."""
        data = _mapping(raw, where)
        return cls(
            index=index,
            domain=_int(_required(data, "domain", where), f"{where}.domain"),
            remove=_circuits(_required(data, "remove", where), f"{where}.remove"),
            add=_circuits(_required(data, "add", where), f"{where}.add"),
            mlu_drained=_number(data.get("mlu_drained"), f"{where}.mlu_drained"),
            mlu_start=_number(data.get("mlu_start"), f"{where}.mlu_start"),
            mlu_after=_number(data.get("mlu_after"), f"{where}.mlu_after"),
        )


@dataclass(frozen=True)
class PlanLink:
    """``count`` circuits between blocks ``a`` and ``b`` (a topology as a plan shows it)."""

    a: str
    b: str
    count: int


@dataclass(frozen=True)
class SolverSummary:
    """How the topology LP ended (``optimizer.toe.ToePlan.solver_json``) and the change limit
    the plan was made under."""

    status: str
    timed_out: bool
    cut_stage: str | None
    max_change: float

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "timed_out": self.timed_out, "cut_stage": self.cut_stage,
                "max_change": self.max_change}


@dataclass(frozen=True)
class Plan:
    """An intent's plan. ``stages`` is empty when the verdict keeps today's topology; the
    fields after ``stages`` are None when the plan does not carry them (``threshold`` and
    ``wcmp_margin`` come with staged plans, ``planned_at`` once the daemon proposed it,
    ``plan_id`` with a dry run's plan kept for review, ``frozen_circuits`` under maintenance)."""

    fabric: str
    trigger: str
    reason: str
    current_mlu: float | None
    planned_mlu: float | None
    circuits_removed: int
    circuits_added: int
    stages: tuple[StageSpec, ...] = ()
    threshold: float | None = None
    wcmp_margin: float | None = None
    topology: tuple[PlanLink, ...] | None = None  # what the stages reach
    complete: bool | None = None  # False: a step towards the target, ``blocked`` says why
    blocked: str | None = None
    target_topology: tuple[PlanLink, ...] | None = None  # the target the mapping laid out
    frozen_circuits: int | None = None
    repair_trades: int | None = None
    solver: SolverSummary | None = None
    planned_at: float | None = None
    plan_id: str | None = None

    def stage(self, index: int) -> StageSpec:
        if not 0 <= index < len(self.stages):
            raise PlanError(f"the plan has {len(self.stages)} stages, not a stage {index}")
        return self.stages[index]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema": PLAN_SCHEMA,
            "fabric": self.fabric,
            "trigger": self.trigger,
            "reason": self.reason,
            "current_mlu": self.current_mlu,
            "planned_mlu": self.planned_mlu,
            "circuits_removed": self.circuits_removed,
            "circuits_added": self.circuits_added,
            "stages": [s.to_json() for s in self.stages],
        }
        optional: dict[str, Any] = {
            "threshold": self.threshold,
            "wcmp_margin": self.wcmp_margin,
            "topology": None if self.topology is None else _links_json(self.topology),
            "complete": self.complete,
            "target_topology": None if self.target_topology is None else _links_json(self.target_topology),
            "frozen_circuits": self.frozen_circuits,
            "repair_trades": self.repair_trades,
            "solver": None if self.solver is None else self.solver.to_json(),
            "planned_at": self.planned_at,
            "plan_id": self.plan_id,
        }
        out.update((k, v) for k, v in optional.items() if v is not None)
        if self.complete is not None:
            out["blocked"] = self.blocked  # null on a complete plan, as the planner wrote it
        return out

    @classmethod
    def from_json(cls, raw: object, source: str = "plan") -> Plan:
        """Read a plan this code or an older one wrote; PlanError names the field and problem."""
        data = _mapping(raw, source)
        schema = data.get("schema")
        if schema is not None and (not isinstance(schema, int) or isinstance(schema, bool)
                                   or not 1 <= schema <= PLAN_SCHEMA):
            raise PlanError(f"{source}.schema: this controller reads plan schema 1 to {PLAN_SCHEMA}, "
                            f"got {schema!r} (written by a newer controller?)")
        stages = _required(data, "stages", source)
        if not isinstance(stages, list):
            raise PlanError(f"{source}.stages: expected a list, got {type(stages).__name__}")
        solver = data.get("solver")
        return cls(
            fabric=_str(_required(data, "fabric", source), f"{source}.fabric"),
            trigger=_str(_required(data, "trigger", source), f"{source}.trigger"),
            reason=_str(_required(data, "reason", source), f"{source}.reason"),
            current_mlu=_number(data.get("current_mlu"), f"{source}.current_mlu"),
            planned_mlu=_number(data.get("planned_mlu"), f"{source}.planned_mlu"),
            circuits_removed=_int(_required(data, "circuits_removed", source), f"{source}.circuits_removed"),
            circuits_added=_int(_required(data, "circuits_added", source), f"{source}.circuits_added"),
            stages=tuple(StageSpec.from_json(s, i, f"{source}.stages[{i}]") for i, s in enumerate(stages)),
            threshold=_number(data.get("threshold"), f"{source}.threshold"),
            wcmp_margin=_number(data.get("wcmp_margin"), f"{source}.wcmp_margin"),
            topology=_optional_links(data.get("topology"), f"{source}.topology"),
            complete=_optional_bool(data.get("complete"), f"{source}.complete"),
            blocked=None if data.get("blocked") is None else _str(data["blocked"], f"{source}.blocked"),
            target_topology=_optional_links(data.get("target_topology"), f"{source}.target_topology"),
            frozen_circuits=_optional_int(data.get("frozen_circuits"), f"{source}.frozen_circuits"),
            repair_trades=_optional_int(data.get("repair_trades"), f"{source}.repair_trades"),
            solver=None if solver is None else _solver(solver, f"{source}.solver"),
            planned_at=_number(data.get("planned_at"), f"{source}.planned_at"),
            plan_id=None if data.get("plan_id") is None else _str(data["plan_id"], f"{source}.plan_id"),
        )


def topology_links(topology: Topology) -> tuple[PlanLink, ...]:
    return tuple(PlanLink(a, b, int(c)) for a, b, c in topology.links())


def _num(x: float) -> float | None:
    return round(float(x), 6) if math.isfinite(x) else None


def reconfiguration_plan(
    fabric: Fabric,
    trigger: str,
    staging: StagingPlan,
    current_mlu: float,
    planned_mlu: float,
    reason: str,
) -> Plan:
    """The plan of an intent that applies ``staging``."""
    stages = tuple(
        StageSpec(
            index=i,
            domain=s.domain,
            remove=tuple(sorted(s.remove)),
            add=tuple(sorted(s.add)),
            mlu_drained=_num(s.mlu_drained),
            mlu_start=_num(s.mlu_start),
            mlu_after=_num(s.mlu_after),
        )
        for i, s in enumerate(staging.stages)
    )
    return Plan(
        fabric=fabric.name,
        trigger=trigger,
        reason=reason,
        current_mlu=_num(current_mlu),
        planned_mlu=_num(planned_mlu),
        circuits_removed=sum(len(s.remove) for s in stages),
        circuits_added=sum(len(s.add) for s in stages),
        stages=stages,
        threshold=staging.threshold,
        wcmp_margin=staging.margin,
        topology=topology_links(staging.final_topology),
    )


# -- JSON, read strictly ----------------------------------------------------------------------


def _circuits_json(circuits: Iterable[Circuit]) -> list[list[Any]]:
    return [[c.ocs, c.a, c.b] for c in circuits]


def _links_json(links: Iterable[PlanLink]) -> dict[str, Any]:
    return {"links": [{"a": link.a, "b": link.b, "count": link.count} for link in links]}


def _mapping(raw: object, where: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise PlanError(f"{where}: expected an object, got {type(raw).__name__}")
    return raw


def _required(data: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise PlanError(f"{where}.{key}: required key is missing")
    return data[key]


def _str(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise PlanError(f"{where}: expected a string, got {type(value).__name__}")
    return value


def _int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PlanError(f"{where}: expected an integer, got {value!r}")
    return value


def _optional_int(value: object, where: str) -> int | None:
    return None if value is None else _int(value, where)


def _optional_bool(value: object, where: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise PlanError(f"{where}: expected true or false, got {value!r}")
    return value


def _number(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PlanError(f"{where}: expected a number, got {value!r}")
    return value


def _circuits(value: object, where: str) -> tuple[Circuit, ...]:
    if not isinstance(value, list):
        raise PlanError(f"{where}: expected a list of [ocs, port_a, port_b], got {type(value).__name__}")
    out = []
    for i, item in enumerate(value):
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)):
            raise PlanError(f"{where}[{i}]: expected [ocs, port_a, port_b], got {item!r}")
        out.append(Circuit(item[0], _int(item[1], f"{where}[{i}][1]"), _int(item[2], f"{where}[{i}][2]")))
    return tuple(out)


def _optional_links(value: object, where: str) -> tuple[PlanLink, ...] | None:
    if value is None:
        return None
    links = _required(_mapping(value, where), "links", where)
    if not isinstance(links, list):
        raise PlanError(f"{where}.links: expected a list, got {type(links).__name__}")
    out = []
    for i, raw in enumerate(links):
        link = _mapping(raw, f"{where}.links[{i}]")
        out.append(PlanLink(
            _str(_required(link, "a", f"{where}.links[{i}]"), f"{where}.links[{i}].a"),
            _str(_required(link, "b", f"{where}.links[{i}]"), f"{where}.links[{i}].b"),
            _int(_required(link, "count", f"{where}.links[{i}]"), f"{where}.links[{i}].count"),
        ))
    return tuple(out)


def _solver(value: object, where: str) -> SolverSummary:
    data = _mapping(value, where)
    cut = data.get("cut_stage")
    timed_out = data.get("timed_out")
    if not isinstance(timed_out, bool):
        raise PlanError(f"{where}.timed_out: expected true or false, got {timed_out!r}")
    max_change = _number(_required(data, "max_change", where), f"{where}.max_change")
    return SolverSummary(
        status=_str(_required(data, "status", where), f"{where}.status"),
        timed_out=timed_out,
        cut_stage=None if cut is None else _str(cut, f"{where}.cut_stage"),
        max_change=float(max_change if max_change is not None else 1.0),
    )
