"""The controller's operations, as the northbound API and ``heliostat ctl`` see them.

The daemon implements :class:`ControllerApi`; the gRPC northbound server translates each
call to and from protobuf and maps :class:`ApiError` onto status codes. Every method is
thread-safe and quick: long work (a ToE run, a maintenance drain) is queued for the
daemon's loop and the call returns what was accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from optimizer.errors import HeliostatError


class Phase(StrEnum):
    """What the controller is doing now."""

    STARTING = "starting"  # reconciling with the devices
    IDLE = "idle"  # running TE cycles; no reconfiguration in flight
    PLANNING = "planning"  # topology engineering / staging
    RECONFIGURING = "reconfiguring"  # executing stages
    ROLLING_BACK = "rolling_back"  # undoing a failed stage
    STOPPING = "stopping"


#: The most reconfigurations one history request may ask for.
MAX_HISTORY_LIMIT = 1000


class ApiErrorCode(StrEnum):
    INVALID_ARGUMENT = "invalid_argument"  # bad request: unknown device, bad value
    NOT_FOUND = "not_found"  # nothing to return (e.g. no plan yet)
    FAILED_PRECONDITION = "failed_precondition"  # not now (e.g. ToE already running)
    UNAVAILABLE = "unavailable"  # the daemon is starting or stopping


class ApiError(HeliostatError):
    """A northbound request that cannot be served; the daemon keeps running."""

    def __init__(self, code: ApiErrorCode, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code.value}: {message}")


class MaintenanceKind(StrEnum):
    BLOCK = "block"
    OCS = "ocs"
    SPINE = "spine"


@dataclass(frozen=True)
class StatusSnapshot:
    """The controller's state at one moment (times are Unix seconds)."""

    phase: Phase
    fabric: str
    toe_paused: bool
    te_runs: int
    toe_runs: int
    last_te_time: float | None = None
    last_toe_time: float | None = None
    mlu: float | None = None  # MLU TE planned for the live topology and current matrix
    measured_mlu: float | None = None  # highest link utilisation measured from counters
    predicted_mlu: float | None = None  # MLU of the predicted (peak) matrix on the live topology
    reconfiguration_id: int | None = None  # journal intent in flight
    stage: int | None = None  # index of the stage in flight (0-based)
    stages_total: int | None = None
    step: str | None = None  # drain, verify_drain, apply_ocs, qualify, undrain
    last_error: str | None = None
    maintenance: tuple[str, ...] = ()  # "block:b3", "ocs:ocs2"
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToeRequestResult:
    """What a ToE trigger did: a dry run returns the plan; a real run is queued."""

    accepted: bool
    dry_run: bool
    message: str
    plan: dict[str, Any] | None = None  # the plan JSON (as ``heliostat toe`` prints it)
    plan_id: str | None = None  # a dry run's id for ``trigger_toe(plan_id=...)``
    reconfiguration_id: int | None = None  # the reconfiguration a reviewed plan started


class ControllerApi(Protocol):
    """The operations behind the northbound API. JSON-shaped dicts are as the CLI prints them."""

    def status(self) -> StatusSnapshot: ...

    def topology(self) -> dict[str, Any]:
        """``{"topology": {"links": [...]}, "circuits": [...]}`` as installed on the devices.

        Links are ``{"a", "b", "count"}`` (``Topology.to_json``); circuits are
        ``{"ocs", "a": {"block", "port"}, "b": {"block", "port"}}`` (``Circuit.to_json``).
        """
        ...

    def matrices(self) -> dict[str, Any]:
        """``{"current": {src: {dst: gbps}}, "prediction": {...}, "time": t}``."""
        ...

    def history(self, limit: int = 20) -> list[dict[str, Any]]:
        """Past and in-flight reconfigurations, newest first (the server checks 1 <= limit)."""
        ...

    def trigger_toe(self, dry_run: bool = False, plan_id: str | None = None) -> ToeRequestResult:
        """Plan now: a dry run returns the plan and its id; ``plan_id`` applies exactly that plan
        (ApiError NOT_FOUND for an unknown id, FAILED_PRECONDITION with the reason when it no
        longer fits the fabric); otherwise ToE is queued for the next cycle."""
        ...

    def pause_toe(self) -> None: ...

    def resume_toe(self) -> None: ...

    def set_maintenance(self, kind: MaintenanceKind, name: str, drained: bool, force: bool = False) -> str:
        """Drain (``drained=True``) or undrain a block or an OCS; returns what was queued.

        A drain whose predicted MLU would exceed ``max(stage_mlu, MLU now)`` is refused
        (ApiError FAILED_PRECONDITION with the figure) unless ``force``; draining what is
        already drained, or undraining what is not, changes nothing and says so.

        An unknown name raises ApiError INVALID_ARGUMENT naming the field
        (``name: fabric 'demo-8' has no block 'b9'``). The northbound server refuses empty
        names itself, and unknown ones too when it is given the fabric.
        """
        ...

    def last_plan(self) -> dict[str, Any]:
        """The last ToE plan (raises ApiError NOT_FOUND if there is none yet)."""
        ...

    def reconfiguration(self, intent_id: int) -> dict[str, Any]:
        """One reconfiguration with its plan's stages and its journaled steps, in the field
        names of ``heliostat.controller.v1.Reconfiguration`` (stages and steps numbered from 1;
        None for what is unset). ApiError NOT_FOUND for an unknown id."""
    # -- what the status page shows besides (controller/ui/facts.py) ------------------------

    def fabric_summary(self) -> dict[str, Any]:
        """The fabric: ``name``, ``blocks``, ``ocs``, ``domains`` (OCSes by failure domain),
        ``spine`` and ``capacity_gbps``."""
        ...

    def devices(self) -> list[dict[str, Any]]:
        """Every polled device: ``name``, ``kind``, ``state`` (up, unreachable, unpowered,
        unknown), ``last_seen`` (Unix seconds or None) and ``maintenance``."""
        ...

    def events(self, limit: int = 50) -> list[dict[str, Any]]:
        """Recent events (TE runs, ToE decisions, stage steps, warnings), newest first:
        ``seq``, ``time``, ``kind``, ``level`` (info, warning, error), ``details``."""
        ...

    def mlu_history(self, limit: int = 360) -> list[dict[str, Any]]:
        """MLU (planned, measured, predicted) and demand over time, oldest first, one sample
        per poll (demand alone before the daemon started, from the journal's matrices)."""
        ...

    def reconfiguration_progress(self) -> dict[str, Any] | None:
        """The reconfiguration in flight (its stages, the stage and step now, ``progress`` from
        0 to 1, its latest journaled steps), or None."""
        ...

    # -- the fabric as a picture and its drill-downs (controller/ui/fabric_view.py) ----------

    def fabric_view(self) -> dict[str, Any]:
        """Blocks, OCSes and per block pair the circuits, the OCS carrying each and the load
        (``controller.ui.fabric_view.fabric_view``)."""
        ...

    def link(self, a: str, b: str) -> dict[str, Any]:
        """One block pair with its load history and circuits; ApiError NOT_FOUND naming a block
        the fabric does not have."""
        ...

    def device(self, name: str) -> dict[str, Any]:
        """One block, OCS or spine switch with its load history and circuits; ApiError
        NOT_FOUND naming a device the fabric does not have."""
        ...
