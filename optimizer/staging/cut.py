"""Cutting the stages found after the best one: the best reachable step of a change that is
blocked, or of one whose time ran out (:func:`optimizer.staging.stage_changes`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from optimizer.fabric import Fabric
from optimizer.staging.plan import Stage, StagingBlocked, StagingPlan, StagingTimedOut
from optimizer.topology import Circuit

log = logging.getLogger(__name__)


def _lowers(mlu: float, start_mlu: float) -> bool:
    """Whether a stage's MLU counts as lower than where the staging started."""
    return mlu < start_mlu * (1 - 1e-6)


def cut_at_lowest(
    fabric: Fabric,
    stages: Sequence[Stage],
    states: Sequence[frozenset[Circuit]],
    start_mlu: float,
    threshold: float,
    margin: float,
) -> StagingPlan | None:
    """The stages cut after the one whose topology has the lowest MLU (the earliest of
    equals; ``states[k]`` is the topology after stage k); None when no prefix lowers the MLU."""
    best = min(range(len(stages)), key=lambda k: (stages[k].mlu_after, k), default=None)
    if best is None or not _lowers(stages[best].mlu_after, start_mlu):
        return None
    return StagingPlan.reaching(
        fabric, stages[: best + 1], states[best], start_mlu, stages[best].mlu_after, threshold, margin
    )


def _cut_by_time(
    fabric: Fabric,
    stages: list[Stage],
    states: list[frozenset[Circuit]],
    goal: set[Circuit],
    start_mlu: float,
    threshold: float,
    margin: float,
    why: str,
) -> StagingPlan:
    """The stages found before the time limit, cut after the lowest-MLU one; raises
    StagingTimedOut when none lowers the MLU."""
    cut = cut_at_lowest(fabric, stages, states, start_mlu, threshold, margin)
    if cut is None:
        raise StagingTimedOut(f"cannot stage the change: {why}, and no stage lowered the MLU")
    remaining = len(cut.final_circuits ^ goal)
    return replace(cut, blocked=f"{remaining} circuit changes of the target wait for a later plan: {why}",
                   remaining=remaining)


def _best_reachable(
    fabric: Fabric,
    stages: list[Stage],
    states: list[frozenset[Circuit]],
    goal: set[Circuit],
    start_mlu: float,
    threshold: float,
    margin: float,
    blocked: StagingBlocked,
) -> StagingPlan:
    """The stages cut after the one whose topology has the lowest MLU (the earliest of equals).

    Raises ``blocked`` (with what was reached) when no prefix lowers the MLU at all.
    """
    cut = cut_at_lowest(fabric, stages, states, start_mlu, threshold, margin)
    if cut is None:
        if stages:
            blocked.args = (
                f"{blocked.args[0]}; the {len(stages)} stages that are safe do not lower the MLU "
                f"below {start_mlu:.4f}",
            )
        raise blocked
    remaining = len(cut.final_circuits ^ goal)
    why = f"{remaining} circuit changes of the target wait for a later plan: {blocked}"
    log.info("staging: the best reachable step has %d stages, MLU %.4f -> %.4f; %s",
             len(cut.stages), start_mlu, cut.final_mlu, why)
    return replace(cut, blocked=why, remaining=remaining, blocked_by=blocked)

