"""The staging plan, its stages, and the errors that say why a change is not staged.

:class:`StagingPlan` is the ordered :class:`Stage` list :func:`optimizer.staging.stage_changes`
gives; :class:`StagingBlocked` and :class:`StagingTimedOut` are what it raises when no safe
plan is found.

``margin`` accounts for integer WCMP weights: the LP's MLU is checked against
``threshold / margin`` (the weights pushed may over-subscribe links by up to ``margin``), and
every message names the configured ``threshold`` and says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from optimizer.errors import InfeasibleError
from optimizer.fabric import Fabric
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

DEFAULT_THRESHOLD = 0.8

#: fabric, topology, matrix -> the minimum MLU traffic engineering reaches.
MluFunction = Callable[[Fabric, Topology, TrafficMatrix], float]


class StagingBlocked(InfeasibleError):
    """No split of the change keeps the drained MLU within the limit.

    ``limit`` is the limit the LP's MLU was checked against: ``max(threshold / margin, MLU
    where the stage starts)``; ``threshold`` is the configured stage limit.
    """

    def __init__(
        self,
        domain: int,
        pair: tuple[str, str],
        mlu: float,
        limit: float,
        threshold: float | None = None,
        margin: float = 1.0,
        start: float | None = None,
    ) -> None:
        self.domain = domain
        self.pair = pair
        self.mlu = mlu
        self.limit = limit
        self.threshold = limit if threshold is None else threshold
        self.margin = margin
        self.start = start
        self.target: BlockedTarget | None = None  # set by plan_target when it gives up
        effect = (
            "would leave some demand without a path"
            if math.isinf(mlu)
            else f"would raise the MLU to {mlu:.4f}, {limit_words(self.threshold, margin, start)}"
        )
        super().__init__(
            f"cannot stage the change in failure domain {domain}: draining even one circuit "
            f"between {pair[0]} and {pair[1]} {effect}; raise the threshold or change less"
        )


@dataclass(frozen=True)
class BlockedTarget:
    """The target a blocked staging was for (:func:`optimizer.toe.reconfigure.plan_target`
    sets it on the :class:`StagingBlocked` it raises): its circuits and MLU, and today's MLU,
    on the matrices the plan was made for. A daemon may keep it as a deferred plan."""

    circuits: frozenset[Circuit]
    mlu: float
    current_mlu: float


class StagingTimedOut(InfeasibleError):
    """The time given to staging ran out before any stage lowered the MLU."""


def limit_words(threshold: float, margin: float, start: float | None) -> str:
    """How a drained MLU's limit reads in a message: the configured threshold, and why the
    LP was held to less (integer weights) or allowed more (the MLU where the stage starts)."""
    lp_threshold = threshold / margin
    if start is not None and start > lp_threshold:
        return f"over the MLU where the stage starts ({start:.4f}, above the stage limit {threshold:g})"
    if margin != 1.0:
        return (
            f"over the stage limit {threshold:g} (the LP's MLU is held to {lp_threshold:.4f}, which "
            f"leaves room for the up to {margin:g}x over-subscription of integer WCMP weights)"
        )
    return f"over the stage limit {threshold:g}"


@dataclass(frozen=True)
class Stage:
    domain: int
    remove: tuple[Circuit, ...]
    add: tuple[Circuit, ...]
    mlu_start: float  # MLU of the topology the stage starts from
    mlu_drained: float  # MLU with the stage's removed circuits drained
    mlu_after: float  # MLU once the stage's circuits are added
    #: the MLU where the stage starts on the matrices its drain was checked against, when they are
    #: not the plan's (:mod:`optimizer.staging.traffic`: before a due job starts); ``mlu_drained``
    #: is then on those matrices too
    mlu_checked_start: float | None = None

    def to_json(self, fabric: Fabric) -> dict[str, object]:
        own = self.mlu_checked_start
        checked = {} if own is None else {"mlu_checked_start": _num(own)}
        return {
            **checked,
            "domain": self.domain,
            "remove": [c.to_json(fabric) for c in self.remove],
            "add": [c.to_json(fabric) for c in self.add],
            "mlu_start": _num(self.mlu_start),
            "mlu_drained": _num(self.mlu_drained),
            "mlu_after": _num(self.mlu_after),
        }


@dataclass(frozen=True)
class StagingPlan:
    stages: tuple[Stage, ...]
    threshold: float  # the configured stage limit
    start_mlu: float
    final_topology: Topology
    final_circuits: frozenset[Circuit]
    final_mlu: float
    margin: float = 1.0  # the LP's MLU is checked against threshold / margin
    blocked: str | None = None  # why the rest of the target is not staged (a partial plan)
    remaining: int = 0  # circuits of the target change (removed plus added) the stages leave
    #: what stops the rest of the target (a partial plan's stage that breaks the rule), if known
    blocked_by: StagingBlocked | None = field(default=None, compare=False)

    @classmethod
    def reaching(
        cls,
        fabric: Fabric,
        stages: Sequence[Stage],
        circuits: Iterable[Circuit],
        start_mlu: float,
        final_mlu: float,
        threshold: float,
        margin: float,
    ) -> StagingPlan:
        """A whole plan: ``stages`` in order, ending on ``circuits`` at ``final_mlu``."""
        final = frozenset(circuits)
        return cls(
            stages=tuple(stages),
            threshold=threshold,
            start_mlu=start_mlu,
            final_topology=Topology.from_circuits(fabric, final),
            final_circuits=final,
            final_mlu=final_mlu,
            margin=margin,
        )

    @property
    def complete(self) -> bool:
        return self.blocked is None

    def to_json(self, fabric: Fabric) -> list[dict[str, object]]:
        return [s.to_json(fabric) for s in self.stages]


def _num(x: float) -> float | None:
    return round(x, 6) if math.isfinite(x) else None
