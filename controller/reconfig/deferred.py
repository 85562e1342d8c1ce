"""Deferred ToE plans (issue 30): plan now, apply when the predicted load leaves room for the stages.

On a hot fabric the ToE's target may be well worth applying while no way to it is safe: a
stage would drain circuits that today's predicted load needs, breaking the stage rule (a
stage may not push the MLU above ``max(stage_mlu, MLU where it starts)``). Then the daemon
keeps the target as a :class:`DeferredPlan` (journaled) and, on each later ToE check,
stages it again against the newest prediction (:func:`judge`):

1. a plan older than its time to live has **expired** and is dropped (the next plan is made
   afresh for the newest prediction);
2. a target that is no longer a gain (the matrix or the topology moved: the policy's
   minimum gain is not met on the newest prediction) is **dropped**, as is one the fabric
   cannot take any more (e.g. maintenance changed what may be switched);
3. when every stage passes at the newest prediction it is **applied**, with the usual
   executor, guards and stages;
4. otherwise it **waits**, and says which stage does not fit (its MLU against the limit).

Pure: no clock, no I/O, no solver; the times, the MLUs and the staging (or the stage that
blocks it) are the caller's (:mod:`controller.reconfig.toe_run` computes them).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from optimizer.errors import HeliostatError
from optimizer.policy import ReconfigurePolicy, relative_gains, should_reconfigure
from optimizer.staging import StagingBlocked, StagingPlan
from optimizer.topology import Circuit

#: The journal's state key of the deferred plan (absent: none).
DEFERRED_PLAN_KEY = "deferred_plan"
#: The default time to live of a deferred plan, in ToE check intervals.
DEFAULT_TTL_CHECKS = 3


class DeferredPlanError(HeliostatError):
    """A journaled deferred plan that cannot be read (the field and the problem named)."""


@dataclass(frozen=True)
class StageMisfit:
    """The stage that does not fit: draining even one circuit between ``pair`` (failure
    ``domain``) would give the LP an MLU of ``mlu`` where it is held to ``limit``
    (``max(stage_limit / margin, MLU where the stage starts)``; ``stage_limit`` is the
    configured stage limit)."""

    domain: int
    pair: tuple[str, str]
    mlu: float
    limit: float
    stage_limit: float

    @classmethod
    def of(cls, blocked: StagingBlocked) -> StageMisfit:
        return cls(blocked.domain, blocked.pair, blocked.mlu, blocked.limit, blocked.threshold)

    def describe(self) -> str:
        a, b = self.pair
        return (
            f"a stage in failure domain {self.domain} would drain a circuit between {a} and {b}: MLU "
            f"{self.mlu:.4f} against a limit of {self.limit:.4f} (stage limit {self.stage_limit:g})"
        )

    def to_json(self) -> dict[str, Any]:
        return {"domain": self.domain, "pair": list(self.pair), "mlu": self.mlu, "limit": self.limit,
                "stage_limit": self.stage_limit}

    @classmethod
    def from_json(cls, raw: object, where: str) -> StageMisfit:
        data = _mapping(raw, where)
        pair = data.get("pair")
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise DeferredPlanError(f"{where}.pair: expected two block names, got {pair!r}")
        return cls(
            domain=int(_number(data, "domain", where)),
            pair=(pair[0], pair[1]),
            mlu=_number(data, "mlu", where),
            limit=_number(data, "limit", where),
            stage_limit=_number(data, "stage_limit", where),
        )


@dataclass(frozen=True)
class DeferredPlan:
    """A target kept until the predicted load leaves room for its stages.

    ``current_mlu`` and ``target_mlu`` are today's and the target's MLU on the prediction the
    plan was made for; ``latest_*`` the same figures at the last check (the newest prediction).
    """

    target: frozenset[Circuit]
    since: float
    expires_at: float
    current_mlu: float
    target_mlu: float
    changed: int  # circuits removed plus added when it was deferred
    misfit: StageMisfit
    checks: int = 0
    last_checked_at: float | None = None
    latest_current_mlu: float | None = None
    latest_target_mlu: float | None = None

    def waited(self, now: float) -> float:
        return max(0.0, now - self.since)

    def facts(self) -> dict[str, Any]:
        """What the status shows: that a plan is deferred, why, and since when (the readers
        count the time waited from ``since``: the facts are not rewritten every cycle)."""
        current = self.current_mlu if self.latest_current_mlu is None else self.latest_current_mlu
        target = self.target_mlu if self.latest_target_mlu is None else self.latest_target_mlu
        return {
            "since": self.since,
            "expires_at": self.expires_at,
            "why": self.misfit.describe(),
            "stage_mlu": round(self.misfit.mlu, 6),
            "stage_limit": round(self.misfit.limit, 6),
            "current_mlu": _round(current),
            "target_mlu": _round(target),
            "circuits_changed": self.changed,
            "checks": self.checks,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "target": [[c.ocs, c.a, c.b] for c in sorted(self.target)],
            "since": self.since,
            "expires_at": self.expires_at,
            "current_mlu": self.current_mlu,
            "target_mlu": self.target_mlu,
            "changed": self.changed,
            "misfit": self.misfit.to_json(),
            "checks": self.checks,
            "last_checked_at": self.last_checked_at,
            "latest_current_mlu": self.latest_current_mlu,
            "latest_target_mlu": self.latest_target_mlu,
        }

    @classmethod
    def from_json(cls, raw: object, where: str = DEFERRED_PLAN_KEY) -> DeferredPlan:
        data = _mapping(raw, where)
        target = data.get("target")
        if not isinstance(target, list):
            raise DeferredPlanError(f"{where}.target: expected a list of [ocs, port_a, port_b]")
        circuits = []
        for i, item in enumerate(target):
            if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
                    and all(isinstance(p, int) for p in item[1:])):
                raise DeferredPlanError(f"{where}.target[{i}]: expected [ocs, port_a, port_b], got {item!r}")
            circuits.append(Circuit(item[0], item[1], item[2]))
        return cls(
            target=frozenset(circuits),
            since=_number(data, "since", where),
            expires_at=_number(data, "expires_at", where),
            current_mlu=_number(data, "current_mlu", where),
            target_mlu=_number(data, "target_mlu", where),
            changed=int(_number(data, "changed", where)),
            misfit=StageMisfit.from_json(data.get("misfit"), f"{where}.misfit"),
            checks=int(_number(data, "checks", where)),
            last_checked_at=_optional(data, "last_checked_at", where),
            latest_current_mlu=_optional(data, "latest_current_mlu", where),
            latest_target_mlu=_optional(data, "latest_target_mlu", where),
        )


def defer(
    target: Iterable[Circuit],
    live: Iterable[Circuit],
    current_mlu: float,
    target_mlu: float,
    misfit: StageMisfit,
    now: float,
    ttl: float,
    policy: ReconfigurePolicy,
) -> DeferredPlan | None:
    """The deferred plan for a ``target`` whose staging is blocked by ``misfit``, or None when
    there is nothing worth keeping: deferral is off (``ttl`` 0), the target changes nothing
    or is no gain under the policy (its minimum gain on the MLU)."""
    target = frozenset(target)
    changed = len(target ^ frozenset(live))
    if ttl <= 0 or changed == 0 or not _gain(current_mlu, target_mlu) > policy.min_gain:
        return None
    return DeferredPlan(target, now, now + ttl, current_mlu, target_mlu, changed, misfit)


class Verdict(StrEnum):
    APPLY = "applied"
    WAIT = "waiting"
    EXPIRED = "expired"
    DROPPED = "dropped"


@dataclass(frozen=True)
class DeferredCheck:
    """One check of a deferred plan: what to do, why in words, and the plan as checked."""

    verdict: Verdict
    reason: str
    plan: DeferredPlan
    gain: float  # the target's relative MLU gain on the newest prediction (0 when not evaluated)

    @property
    def keep(self) -> bool:
        return self.verdict is Verdict.WAIT


def expired(plan: DeferredPlan, now: float) -> bool:
    return now >= plan.expires_at


def judge(
    plan: DeferredPlan,
    now: float,
    current_mlu: float | None,
    target_mlu: float | None,
    staged: StagingPlan | StageMisfit | None,
    policy: ReconfigurePolicy,
    last_reconfig_at: float | None = None,
    problem: str | None = None,
) -> DeferredCheck:
    """The rules of the module docstring, in order, on the newest prediction's figures.

    ``current_mlu``, ``target_mlu``: today's and the target's MLU now (None: not evaluated,
    only when the plan expired). ``staged``: the target's complete staging, the stage that
    does not fit, or None when it was not staged (the target is no gain: nothing to stage).
    ``problem``: why the fabric can no longer take the target (None: it can).
    """
    waited = plan.waited(now)
    if expired(plan, now):
        return DeferredCheck(
            Verdict.EXPIRED,
            f"the deferred plan expired after {waited:.0f} s without room for its stages "
            f"({plan.misfit.describe()})",
            plan,
            0.0,
        )
    if current_mlu is None or target_mlu is None:
        raise ValueError("a deferred plan that has not expired is judged on today's and the target's MLU")
    checked = replace(
        plan, checks=plan.checks + 1, last_checked_at=now, latest_current_mlu=current_mlu,
        latest_target_mlu=target_mlu,
    )
    gain = _gain(current_mlu, target_mlu)
    if problem is not None:
        return DeferredCheck(Verdict.DROPPED, f"the deferred plan was dropped: {problem}", checked, gain)
    if not gain > policy.min_gain:
        return DeferredCheck(
            Verdict.DROPPED,
            f"the deferred plan is no longer a gain: MLU {current_mlu:.4f} -> {target_mlu:.4f} "
            f"({gain:.1%}, not over the {policy.min_gain:.1%} threshold) on the newest prediction",
            checked,
            gain,
        )
    if isinstance(staged, StageMisfit):
        checked = replace(checked, misfit=staged)
        return DeferredCheck(
            Verdict.WAIT,
            f"deferred for {waited:.0f} s: {staged.describe()} (MLU {current_mlu:.4f} -> {target_mlu:.4f} "
            "once applied)",
            checked,
            gain,
        )
    if staged is None or not staged.complete:
        return DeferredCheck(Verdict.WAIT, f"deferred for {waited:.0f} s: {plan.misfit.describe()}",
                             checked, gain)
    changed = sum(len(s.remove) + len(s.add) for s in staged.stages)
    decision = should_reconfigure(current_mlu, staged.final_mlu, now, last_reconfig_at, policy,
                                  circuits_changed=changed)
    if not decision.apply:
        if decision.gain > policy.min_gain and changed > 0:  # too soon after the last change: wait
            return DeferredCheck(Verdict.WAIT, f"deferred for {waited:.0f} s: {decision.reason}",
                                 checked, gain)
        return DeferredCheck(Verdict.DROPPED, f"the deferred plan was dropped: {decision.reason}",
                             checked, gain)
    return DeferredCheck(
        Verdict.APPLY,
        f"deferred plan applied after {waited:.0f} s: every stage fits the newest prediction; "
        f"{decision.reason}",
        checked,
        decision.gain,
    )


def _gain(current_mlu: float, target_mlu: float) -> float:
    return relative_gains(current_mlu, target_mlu, None, None)[0]


def _round(value: float) -> float | None:
    return round(value, 6) if math.isfinite(value) else None


def _mapping(raw: object, where: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise DeferredPlanError(f"{where}: expected an object, got {type(raw).__name__}")
    return raw


def _number(data: Mapping[str, Any], key: str, where: str) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DeferredPlanError(f"{where}.{key}: expected a number, got {value!r}")
    return float(value)


def _optional(data: Mapping[str, Any], key: str, where: str) -> float | None:
    return None if data.get(key) is None else _number(data, key, where)
