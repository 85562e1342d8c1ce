"""Topology engineering, the slow loop: which blocks the circuits join, and the way there.

The face of the package (other packages import from here only):

- :func:`plan_topology`, :class:`ToeKnobs`, :class:`ToePlan` (:mod:`optimizer.toe.plan`): the
  LP relaxation, its rounding to integer circuit counts and the starved-block repair;
- :func:`plan_target`, :func:`plan_reconfiguration`, :func:`decide`
  (:mod:`optimizer.toe.reconfigure`): ToE, the per-OCS mapping under a change limit, staging
  and the final TE in one call, shared by ``heliostat toe`` and the daemon;
- :func:`te_min_mlu`, :func:`lp_min_mlu`, :func:`worst_scale`: evaluators of a topology.

Inside: :mod:`~optimizer.toe.lp` (the lexicographic LP: :mod:`~optimizer.toe.lp.build`
defines its rows and columns, :mod:`~optimizer.toe.lp.columns` prices transit paths,
:mod:`~optimizer.toe.lp.result` reads the answer back), :mod:`~optimizer.toe.rounding` and
:mod:`~optimizer.toe.repair`; :mod:`~optimizer.toe.sequence` (safe stages found one by one when a
target cannot be staged whole, its swaps ranked by :mod:`~optimizer.toe.swap_rank`),
:mod:`~optimizer.toe.merge` (consecutive stages of one failure domain merged where still safe)
and :mod:`~optimizer.toe.hose` (the proof that none can help).
Pure: no I/O; the only clock is the time budget's.
"""

from optimizer.toe.plan import (
    DEFAULT_MIN_GAIN,
    DEFAULT_TIME_LIMIT,
    NEAR_OPTIMAL,
    STATUS_OPTIMAL,
    STATUS_ROUND_LIMIT,
    STATUS_TIME_LIMIT,
    NothingToGain,
    ToeKnobs,
    ToePlan,
    build_problem,
    lp_min_mlu,
    plan_topology,
    solve_relaxation,
    te_min_mlu,
    worst_scale,
)
from optimizer.toe.reconfigure import (
    MAX_STAGE_LIMIT,
    ReconfigurationPlan,
    TargetPlan,
    decide,
    plan_reconfiguration,
    plan_target,
    te_evaluator,
)

__all__ = [
    "DEFAULT_MIN_GAIN",
    "DEFAULT_TIME_LIMIT",
    "MAX_STAGE_LIMIT",
    "NEAR_OPTIMAL",
    "STATUS_OPTIMAL",
    "STATUS_ROUND_LIMIT",
    "STATUS_TIME_LIMIT",
    "NothingToGain",
    "ReconfigurationPlan",
    "TargetPlan",
    "ToeKnobs",
    "ToePlan",
    "build_problem",
    "decide",
    "lp_min_mlu",
    "plan_reconfiguration",
    "plan_target",
    "plan_topology",
    "solve_relaxation",
    "te_evaluator",
    "te_min_mlu",
    "worst_scale",
]
