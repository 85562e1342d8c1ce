"""The controller's decisions, pure and clocked (Faucet's habit): state + observation -> actions.

:func:`decide` takes the :class:`ControlState`, one :class:`Observation` of the fabric (made
by the daemon from a poll) and returns the new state and the :class:`Action` list to carry
out, in order. The daemon reports each action's outcome with the matching ``*_finished``
function, which again returns a new state. Nothing here reads a clock or does I/O, so every
rule is unit-tested with plain values.

The rules, in order of precedence:

1. Operator requests (pause/resume ToE, trigger ToE, maintenance) are folded into the state.
2. Circuits that should be installed (the journal's intended set) but are missing from a
   reachable, powered OCS whose ports are free are restored (after an OCS power loss).
3. TE runs when it never ran, when the last run failed, when the live topology differs from
   the one TE last ran on (circuits lost, restored or changed), when maintenance changed,
   when the estimator says the matrix moved meaningfully, or when the weights in force no
   longer fit the traffic: they give the latest matrix an MLU more than ``te_stale_ratio``
   times what is possible on the live topology (:class:`WeightsFit`; not below an MLU of
   ``te_stale_floor``, where nothing is at risk). A matrix that steps and
   then holds moves no more, so only this last rule re-plans for it; it re-plans at most
   ``max_stale_runs`` times in a row (a fit no re-plan improves, e.g. the integer weights'
   rounding, does not make TE run every cycle). TE needs a measured matrix.
4. While a reconfiguration is in flight its next stage runs (one stage per cycle; TE may run
   before it). Only one failure domain is ever touched at a time: stages are sequential.
5. Otherwise ToE is planned on operator request, or every ``toe_check_interval`` unless
   paused, some OCS is unreachable or down, or the last reconfiguration is more recent
   than the policy's minimum interval. Maintenance does not stop it: ToE plans around the
   blocks, OCSes and spine switches drained for maintenance (their circuits are kept as
   they are; see :mod:`controller.reconfig.in_service`), as TE routes around them. Whether a plan is applied
   is :func:`toe_verdict` (the reconfiguration policy; an operator request skips the
   interval but still needs the plan to change something). A target worth applying that no
   safe stage reaches at today's load is kept as a deferred plan and, at each automatic ToE
   check, staged again against the newest prediction (:mod:`controller.reconfig.deferred`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum

from optimizer.policy import Decision, ReconfigurePolicy, relative_gains, should_reconfigure
from optimizer.topology import Circuit
from optimizer.traffic import TrafficMatrix, matrix_change


class MaintenanceTarget(StrEnum):
    BLOCK = "block"
    OCS = "ocs"
    SPINE = "spine"  # a spine switch of a hybrid fabric


@dataclass(frozen=True, order=True)
class Maintenance:
    kind: MaintenanceTarget
    name: str

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.name}"


# -- operator requests ---------------------------------------------------------------------


#: The trigger of a ToE run for announced jobs (controller/daemon/jobs.py).
JOB_TRIGGER = "job"


@dataclass(frozen=True)
class ToeTrigger:
    trigger: str = "operator"


@dataclass(frozen=True)
class SetToePaused:
    paused: bool


@dataclass(frozen=True)
class SetMaintenance:
    target: Maintenance
    drained: bool


Request = ToeTrigger | SetToePaused | SetMaintenance


# -- actions -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RestoreCircuits:
    """Re-install intended circuits an OCS lost (e.g. after a power loss)."""

    circuits: tuple[Circuit, ...]


@dataclass(frozen=True)
class RunTe:
    reason: str


@dataclass(frozen=True)
class PlanToe:
    trigger: str  # "auto" or "operator"


@dataclass(frozen=True)
class RunStage:
    intent_id: int
    stage: int


Action = RestoreCircuits | RunTe | PlanToe | RunStage


# -- state and observations ----------------------------------------------------------------


@dataclass(frozen=True)
class Reconfiguration:
    intent_id: int
    stages_total: int
    next_stage: int = 0


@dataclass(frozen=True)
class Settings:
    toe_check_interval: float = 300.0
    policy: ReconfigurePolicy = field(default_factory=ReconfigurePolicy)
    te_stale_ratio: float = 1.10  # re-plan when the weights in force give more than this x optimum
    te_stale_floor: float = 0.05  # ... and an MLU of at least this (an idle fabric risks nothing)
    max_stale_runs: int = 2  # re-plans in a row for stale weights alone


@dataclass(frozen=True)
class WeightsFit:
    """What the weights in force give the latest matrix (``in_force``, MLU) against what is
    possible on the same topology (``possible``: the LP optimum when ``exact``, else a lower
    bound of it that already showed the weights fit)."""

    in_force: float
    possible: float
    exact: bool = True

    def stale(self, ratio: float, floor: float = 0.0) -> bool:
        return self.exact and self.in_force >= floor and self.in_force > ratio * self.possible + 1e-12


@dataclass(frozen=True)
class ControlState:
    te_circuits: frozenset[Circuit] | None = None  # the live circuits TE last ran on
    te_spine_links: frozenset[object] = frozenset()  # the spine links up when TE last ran
    te_maintenance: frozenset[Maintenance] = frozenset()
    te_failed: bool = False
    last_te_at: float | None = None
    last_toe_check_at: float | None = None
    last_reconfig_at: float | None = None
    toe_paused: bool = False
    toe_requested: str | None = None
    maintenance: frozenset[Maintenance] = frozenset()
    reconfiguration: Reconfiguration | None = None
    intended: frozenset[Circuit] | None = None  # what the OCSes should hold (the journal's)
    last_error: str | None = None
    te_stale_runs: int = 0  # TE runs in a row for stale weights alone


@dataclass(frozen=True)
class Observation:
    """One poll of the fabric, as the daemon saw it."""

    live_circuits: frozenset[Circuit]  # established with both links up (last known if unreachable)
    have_matrix: bool  # the estimator has rates for some pair
    te_due: bool  # the matrix moved more than te_matrix_change since TE last ran
    ocs_down: frozenset[str] = frozenset()  # unreachable or without power
    requests: tuple[Request, ...] = ()
    installed: frozenset[Circuit] | None = None  # everything the OCSes hold (default: live)
    spine_links: frozenset[object] = frozenset()  # a hybrid fabric's spine links that are up
    weights_fit: WeightsFit | None = None  # the weights in force on the latest matrix (None: unknown)
    #: the switches route nothing TE wrote and count no bytes per destination (a P4 switch starts
    #: with empty tables and counts on its routes only): no matrix can be measured until TE routes
    routes_missing: bool = False


def decide(
    state: ControlState, obs: Observation, now: float, settings: Settings
) -> tuple[ControlState, list[Action]]:
    """The actions for this cycle (see the module docstring for the rules)."""
    state = apply_requests(state, obs.requests)
    actions: list[Action] = []
    installed = obs.live_circuits if obs.installed is None else obs.installed
    missing = missing_circuits(state.intended, installed, obs.ocs_down)
    if missing and state.reconfiguration is None:
        actions.append(RestoreCircuits(missing))
    reason = te_reason(state, obs, settings)
    if reason is not None:
        actions.append(RunTe(reason))
        stale = reason.startswith(STALE_REASON)
        state = replace(state, te_stale_runs=state.te_stale_runs + 1 if stale else 0)
    if state.reconfiguration is not None:
        r = state.reconfiguration
        actions.append(RunStage(r.intent_id, r.next_stage))
        return state, actions
    # Under maintenance ToE plans around it, once TE has routed around it (not in the cycle
    # that changed it).
    settled = state.te_maintenance == state.maintenance or state.toe_requested is not None
    if not obs.ocs_down and obs.have_matrix and not missing and settled:
        if state.toe_requested is not None:
            actions.append(PlanToe(state.toe_requested))
        elif not state.toe_paused and _toe_check_due(state, now, settings):
            actions.append(PlanToe("auto"))
    return state, actions


def next_cycle_at(
    last_due: float, interval: float, now: float, reconfiguring: bool, started: float | None = None
) -> float:
    """When the next cycle runs: right away while a reconfiguration has stages left (one
    stage per cycle), else one ``interval`` after the last cycle was due, or now if that has
    passed (a long cycle is not made up for by a burst of short ones).

    ``started`` is when the cycle that just ended began (None: when it was due). A cycle
    that began before ``last_due`` was not the scheduled one: an operator request woke the
    loop early. It leaves the schedule alone, so the next poll stays ``last_due`` however
    many requests arrive (each one used to push polling and TE one interval further out).
    """
    if reconfiguring:
        return now
    if started is not None and started < last_due:
        return last_due
    return max(last_due + interval, now)


def _toe_check_due(state: ControlState, now: float, settings: Settings) -> bool:
    if state.last_reconfig_at is not None and now - state.last_reconfig_at < settings.policy.min_interval_s:
        return False  # the policy would refuse any plan: do not compute one
    return state.last_toe_check_at is None or now - state.last_toe_check_at >= settings.toe_check_interval


def apply_requests(state: ControlState, requests: Iterable[Request]) -> ControlState:
    for request in requests:
        if isinstance(request, ToeTrigger):
            state = replace(state, toe_requested=request.trigger)
        elif isinstance(request, SetToePaused):
            state = replace(state, toe_paused=request.paused)
        elif isinstance(request, SetMaintenance):
            targets = set(state.maintenance)
            if request.drained:
                targets.add(request.target)
            else:
                targets.discard(request.target)
            state = replace(state, maintenance=frozenset(targets))
    return state


#: How a TE run for stale weights alone is announced (the reason starts with it).
STALE_REASON = "the weights in force give"
#: TE before any traffic is measured: the switches need routes to carry (and count) it; TE routes
#: what it has (nothing yet), as it does on a measured idle fabric.
NO_ROUTES_REASON = "no routes on the switches yet: routing them before traffic is measured"


def te_reason(state: ControlState, obs: Observation, settings: Settings | None = None) -> str | None:
    """Why TE should run now, or None."""
    settings = settings or Settings()
    if obs.routes_missing and not obs.have_matrix and (state.last_te_at is None or state.te_failed):
        return NO_ROUTES_REASON
    if not obs.have_matrix:
        return None
    if state.last_te_at is None:
        return "first run"
    if state.te_failed:
        return "retrying after a failed run"
    if state.te_circuits != obs.live_circuits:
        lost = len((state.te_circuits or frozenset()) - obs.live_circuits)
        gained = len(obs.live_circuits - (state.te_circuits or frozenset()))
        return f"live topology changed (-{lost} +{gained} circuits)"
    if state.te_maintenance != state.maintenance:
        return "maintenance changed"
    if state.te_spine_links != obs.spine_links:
        lost = len(state.te_spine_links - obs.spine_links)
        gained = len(obs.spine_links - state.te_spine_links)
        return f"spine links changed (-{lost} +{gained})"
    if obs.te_due:
        return "traffic matrix changed"
    fit = obs.weights_fit
    patient = state.te_stale_runs < settings.max_stale_runs
    if fit is not None and fit.stale(settings.te_stale_ratio, settings.te_stale_floor) and patient:
        return f"{STALE_REASON} MLU {fit.in_force:.4f} where {fit.possible:.4f} is possible; re-planning"
    return None


def inferred_te_due(
    matrix: TrafficMatrix, te_matrix: TrafficMatrix | None, floor_gbps: float, te_matrix_change: float
) -> bool:
    """TE is due on a matrix inferred by tomogravity (no per-destination counters) when it
    moved more than ``te_matrix_change`` from the matrix TE last ran on (the estimator's rule
    for measured matrices, applied to the inferred one)."""
    return matrix_change(matrix, te_matrix, floor_gbps).distance > te_matrix_change


def toe_skip_reason(trigger: str, predicted: TrafficMatrix | None) -> str | None:
    """Why a ToE check is skipped without planning, or None. An idle fabric is healthy:
    nothing to plan for is not an error (an operator's request is planned regardless)."""
    if trigger == "auto" and (predicted is None or predicted.total() <= 0):
        return "no traffic is predicted"
    return None


def missing_circuits(
    intended: frozenset[Circuit] | None, installed: frozenset[Circuit], ocs_down: frozenset[str]
) -> tuple[Circuit, ...]:
    """Intended circuits absent from a reachable OCS whose two ports are free."""
    if intended is None:
        return ()
    used = {(c.ocs, p) for c in installed for p in (c.a, c.b)}
    return tuple(
        sorted(
            c
            for c in intended - installed
            if c.ocs not in ocs_down and (c.ocs, c.a) not in used and (c.ocs, c.b) not in used
        )
    )


# -- outcomes ------------------------------------------------------------------------------


def te_finished(
    state: ControlState,
    now: float,
    circuits: frozenset[Circuit],
    ok: bool,
    error: str | None = None,
    spine_links: frozenset[object] | None = None,
) -> ControlState:
    """TE ran (``ok``) or failed; ``spine_links`` are the spine links it saw up (None: as before)."""
    if not ok:
        return replace(state, te_failed=True, last_error=error)
    return replace(
        state,
        te_failed=False,
        te_circuits=circuits,
        te_maintenance=state.maintenance,
        te_spine_links=state.te_spine_links if spine_links is None else spine_links,
        last_te_at=now,
    )


def toe_checked(state: ControlState, now: float, error: str | None = None) -> ControlState:
    """A ToE plan was computed (or failed) and not applied."""
    return replace(
        state,
        last_toe_check_at=now,
        toe_requested=None,
        last_error=error if error is not None else state.last_error,
    )


def reconfiguration_started(state: ControlState, now: float, intent_id: int, stages: int) -> ControlState:
    return replace(
        state,
        last_toe_check_at=now,
        toe_requested=None,
        reconfiguration=Reconfiguration(intent_id, stages, 0),
    )


def stage_finished(
    state: ControlState, now: float, ok: bool, intended: frozenset[Circuit], error: str | None = None
) -> ControlState:
    """A stage completed (``ok``) or was rolled back; ``intended`` is what the OCSes now hold."""
    r = state.reconfiguration
    if r is None:
        return replace(state, intended=intended)
    if not ok:
        return replace(state, reconfiguration=None, intended=intended, last_reconfig_at=now, last_error=error)
    following = r.next_stage + 1
    if following >= r.stages_total:
        return replace(state, reconfiguration=None, intended=intended, last_reconfig_at=now)
    return replace(state, reconfiguration=replace(r, next_stage=following), intended=intended)


def stage_advanced(
    state: ControlState,
    now: float,
    intent_id: int,
    stages_total: int,
    next_stage: int,
    circuits: frozenset[Circuit],
    te_ran: bool,
) -> ControlState:
    """A stage completed and the reconfiguration goes on at ``next_stage``; ``circuits`` is
    what the OCSes now hold (``te_ran``: the stage's undrain ran TE on them)."""
    if te_ran:
        state = te_finished(state, now, circuits, True)
    return replace(
        state, intended=circuits, reconfiguration=Reconfiguration(intent_id, stages_total, next_stage)
    )


def reconfiguration_ended(
    state: ControlState,
    now: float,
    intent_id: int,
    stage: int,
    ok: bool,
    circuits: frozenset[Circuit],
    error: str | None,
    te_ran: bool,
) -> ControlState:
    """The reconfiguration ended at ``stage``: its last stage completed (``ok``) or it was
    rolled back. A stage resumed after a restart may end one the state does not know yet."""
    record = state.reconfiguration or Reconfiguration(intent_id, stage + 1, stage)
    state = stage_finished(replace(state, reconfiguration=record), now, ok, circuits, error)
    if te_ran:
        state = te_finished(state, now, circuits, True)
    return state


def toe_verdict(
    trigger: str,
    current_mlu: float,
    proposed_mlu: float,
    circuits_changed: int,
    now: float,
    last_reconfig_at: float | None,
    policy: ReconfigurePolicy,
) -> Decision:
    """Whether to apply a ToE plan: the policy, except that an operator skips the interval, and
    so does a job about to start (``JOB_TRIGGER``: the policy's gain still holds, so that a
    job announced again, or one the topology already serves, changes nothing)."""
    if trigger == JOB_TRIGGER:
        return should_reconfigure(
            current_mlu, proposed_mlu, now, None, policy, circuits_changed=circuits_changed
        )
    if trigger != "auto":
        if circuits_changed == 0:
            return Decision(False, "the proposed topology changes no circuits", 0.0)
        gain = relative_gains(current_mlu, proposed_mlu, None, None)[0]
        figures = f"MLU {current_mlu:.4f} -> {proposed_mlu:.4f}"
        if not proposed_mlu <= current_mlu * (1 + 1e-9):
            refused = f"operator request refused: the plan would not lower the MLU ({figures})"
            return Decision(False, refused, gain)
        return Decision(True, f"operator request: {figures}, {circuits_changed} circuits changed", gain)
    return should_reconfigure(
        current_mlu, proposed_mlu, now, last_reconfig_at, policy, circuits_changed=circuits_changed
    )
