"""Cutting a circuit change into safe, ordered stages.

The face of the package: :func:`stage_changes` and :func:`routed_mlu`
(:mod:`optimizer.staging.order`: the search, and how it goes, in its docstring);
:func:`cut_at_lowest` (:mod:`optimizer.staging.cut`: the stages found, cut after the best one);
:class:`StagingPlan`, :class:`Stage`, :class:`StagingBlocked`, :class:`BlockedTarget`,
:class:`StagingTimedOut`, :func:`limit_words`, :data:`MluFunction` and the default stage limit
:data:`DEFAULT_THRESHOLD` (:mod:`optimizer.staging.plan`). Which circuits are drained first and
which swaps are tried is :mod:`optimizer.staging.ranking`. Which traffic each stage's drain is
checked against (the traffic flowing while it runs: before a due job starts, without it) is
:class:`StageTraffic` and :class:`StageTiming` (:mod:`optimizer.staging.traffic`), the cached
checks :class:`StageChecks` (:mod:`optimizer.staging.checks`).
"""

from optimizer.staging.checks import StageChecks, StageRule, routed_mlu
from optimizer.staging.cut import cut_at_lowest
from optimizer.staging.order import stage_changes
from optimizer.staging.plan import (
    DEFAULT_THRESHOLD,
    BlockedTarget,
    MluFunction,
    Stage,
    StagingBlocked,
    StagingPlan,
    StagingTimedOut,
    limit_words,
)
from optimizer.staging.traffic import SAME, StageTiming, StageTraffic

__all__ = [
    "DEFAULT_THRESHOLD",
    "SAME",
    "BlockedTarget",
    "MluFunction",
    "Stage",
    "StageChecks",
    "StageRule",
    "StageTiming",
    "StageTraffic",
    "StagingBlocked",
    "StagingPlan",
    "StagingTimedOut",
    "cut_at_lowest",
    "limit_words",
    "routed_mlu",
    "stage_changes",
]
