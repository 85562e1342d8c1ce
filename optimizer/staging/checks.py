"""The TE checks of a staging search, per stage (:mod:`optimizer.staging.traffic`). Pure.

The plan's matrices judge what a stage reaches (:meth:`StageChecks.plan_mlu`). A stage's drain
is checked on every traffic that may flow while it runs (its *groups*: the traffic before the
first due job starts, then with each job that may have started, up to the plan's matrices),
each against its own limit: the MLU with the stage's circuits drained, worst over a group's
matrices, at most ``max(threshold / margin, the same where the stage starts)``. To let the
searches compare one number with one limit (as they always did), :class:`StageRule` gives the
drained MLU *in the terms of the last group*: each group's MLU scaled by the last group's limit
over its own. It passes its :attr:`~StageRule.limit` exactly when every group passes its own;
with one group (no announced jobs) it is that group's MLU and limit, the rule as it was.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optimizer.errors import InfeasibleError
from optimizer.fabric import Fabric
from optimizer.staging.plan import MluFunction
from optimizer.staging.traffic import SAME, StageTraffic
from optimizer.topology import Topology
from optimizer.traffic import TrafficMatrix


def routed_mlu(
    evaluate: MluFunction, fabric: Fabric, topology: Topology, matrices: Sequence[TrafficMatrix]
) -> float:
    """The worst MLU over ``matrices``, or infinity when some demand has no path on ``topology``
    (TE raises InfeasibleError; :func:`optimizer.toe.plan.worst_scale` counts it as scale
    0): a drain that strands demand blackholes it, so it never passes a stage rule, and the
    search tries a smaller one instead of giving the plan up."""
    try:
        return max((evaluate(fabric, topology, tm) for tm in matrices if tm.total() > 0), default=0.0)
    except InfeasibleError:
        return math.inf


class StageChecks:
    """Min-MLU checks, cached per group and topology: :meth:`plan_mlu` on the plan's matrices,
    :meth:`rule` the stage rule of stage ``k`` (``offset`` stages come before the search's
    first)."""

    def __init__(
        self,
        fabric: Fabric,
        evaluate: MluFunction,
        plan: Sequence[TrafficMatrix],
        lp_threshold: float,
        traffic: StageTraffic | None = None,
        offset: int = 0,
    ) -> None:
        self.fabric = fabric
        self.evaluate = evaluate
        self.lp_threshold = lp_threshold
        traffic = traffic or SAME
        self.traffic = traffic.after(offset) if offset else traffic
        plan = [m for m in plan if m.total() > 0]
        self.groups: list[list[TrafficMatrix]] = [
            [m for m in ms if m.total() > 0] for _, ms in self.traffic.windows
        ] + [plan]
        self._cache: dict[tuple[int, bytes], float] = {}

    @property
    def plan(self) -> list[TrafficMatrix]:
        return self.groups[-1]

    def plan_mlu(self, topology: Topology) -> float:
        return self.group_mlu(len(self.groups) - 1, topology)

    def group_mlu(self, g: int, topology: Topology) -> float:
        key = (g, np.asarray(topology.counts).tobytes())
        if key not in self._cache:
            self._cache[key] = routed_mlu(self.evaluate, self.fabric, topology, self.groups[g])
        return self._cache[key]

    def matrices(self, k: int) -> list[TrafficMatrix]:
        """Every matrix stage ``k``'s drain is checked on (for orderings by load)."""
        return [m for g in self._groups_of(k) for m in self.groups[g]]

    def _groups_of(self, k: int) -> range:
        """The traffic of every slot stage ``k`` may run in: from now to its window's (the
        stages after the last window may run after every due job started: every group)."""
        return range(self.traffic.window(k) + 1)

    def rule(self, k: int, start: Topology, start_plan_mlu: float | None = None) -> StageRule:
        """Stage ``k``'s rule from the topology ``start`` (``start_plan_mlu``: its MLU on the
        plan's matrices when known, which saves a TE check)."""
        groups = self._groups_of(k)
        begins: list[float] = []
        for g in groups:
            if start_plan_mlu is not None and g == len(self.groups) - 1:
                begins.append(start_plan_mlu)
            else:
                begins.append(self.group_mlu(g, start))
        limits = [max(self.lp_threshold, b) for b in begins]
        return StageRule(self, tuple(groups), tuple(begins), tuple(limits))


@dataclass(frozen=True)
class StageRule:
    """One stage's rule: the groups it is checked on, their MLU where it starts and limits."""

    checks: StageChecks
    groups: tuple[int, ...]
    begins: tuple[float, ...]
    limits: tuple[float, ...]

    @property
    def limit(self) -> float:
        """The last group's limit, which :meth:`drained` is in the terms of."""
        return self.limits[-1]

    @property
    def begin(self) -> float:
        """The last group's MLU where the stage starts."""
        return self.begins[-1]

    @property
    def checked_start(self) -> float | None:
        """:attr:`begin` when the stage is checked on more than the plan's matrices (what
        :attr:`optimizer.staging.Stage.mlu_checked_start` records), else None."""
        return None if self.groups == (len(self.checks.groups) - 1,) else self.begin

    def scale(self, position: int) -> float:
        """The factor that puts group ``groups[position]``'s MLU in the last group's terms."""
        return self.limit / self.limits[position]

    def drained(self, topology: Topology) -> float:
        """The drained MLU in the last group's terms (see the module docstring): within
        :attr:`limit` exactly when every group is within its own. Stops at the first group over."""
        worst = 0.0
        for p, g in enumerate(self.groups):
            value = self.checks.group_mlu(g, topology) * self.scale(p)
            worst = max(worst, value)
            if value > self.limit * (1 + 1e-9) + 1e-9:
                break
        return worst
