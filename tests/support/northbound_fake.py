"""A small in-memory ControllerApi for the northbound tests (the daemon is not under test)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from controller.metrics import ControllerMetrics
from controller.northbound import ControllerClient, NorthboundServers, start_northbound
from controller.northbound.api import (
    ApiError,
    ApiErrorCode,
    MaintenanceKind,
    Phase,
    StatusSnapshot,
    ToeRequestResult,
)

BLOCKS = ("b1", "b2", "b3", "b4")
OCSES = ("ocs1", "ocs2")

TOPOLOGY = {
    "topology": {
        "links": [
            {"a": "b1", "b": "b2", "count": 2},
            {"a": "b1", "b": "b3", "count": 1},
            {"a": "b3", "b": "b4", "count": 3},
        ]
    },
    "circuits": [
        {"ocs": "ocs1", "a": {"block": "b1", "port": 0}, "b": {"block": "b2", "port": 4}},
        {"ocs": "ocs1", "a": {"block": "b1", "port": 1}, "b": {"block": "b3", "port": 6}},
        {"ocs": "ocs2", "a": {"block": "b3", "port": 2}, "b": {"block": "b4", "port": 7}},
    ],
}

MATRICES = {
    "current": {"b1": {"b2": 120.5, "b3": 0.0}, "b3": {"b4": 300.25}},
    "prediction": {"b1": {"b2": 150.0}, "b3": {"b4": 410.0, "b1": 12.5}},
    "time": 1_790_000_000.5,
}

_C1 = {"ocs": "ocs1", "a": {"block": "b1", "port": 0}, "b": {"block": "b2", "port": 4}}
_C2 = {"ocs": "ocs1", "a": {"block": "b1", "port": 0}, "b": {"block": "b4", "port": 5}}
_C3 = {"ocs": "ocs2", "a": {"block": "b3", "port": 2}, "b": {"block": "b4", "port": 7}}

#: Shaped like the daemon's reconfiguration plan.
PLAN_ID = "0123abcd4567"
PLAN = {
    "fabric": "fake-4",
    "trigger": "dry_run",
    "reason": "predicted MLU improves by 43%",
    "current_mlu": 0.91,
    "planned_mlu": 0.52,
    "threshold": 0.8,
    "circuits_removed": 1,
    "circuits_added": 2,
    "topology": {"links": [{"a": "b1", "b": "b4", "count": 2}, {"a": "b3", "b": "b4", "count": 4}]},
    "stages": [
        {"index": 0, "domain": 0, "remove": [_C1], "add": [_C2], "mlu_start": 0.91, "mlu_drained": 0.7,
         "mlu_after": 0.6},
        {"index": 1, "domain": 1, "remove": [], "add": [_C3], "mlu_start": 0.6, "mlu_drained": 0.6,
         "mlu_after": 0.52},
    ],
}

#: Shaped like DaemonApi.reconfiguration: reconfiguration 7 rolled back in its second stage.
RECONFIGURATION = {
    "id": 7, "state": "rolled_back", "trigger": "auto", "reason": "stage 2: qualify failed: b4 port 7 dark",
    "created": 1_790_000_000.0, "finished": 1_790_000_090.5, "current_mlu": 0.91, "planned_mlu": 0.52,
    "stages": [
        {"number": 1, "domain": 0, "circuits_removed": 1, "circuits_added": 1, "mlu_start": 0.91,
         "mlu_drained": 0.7, "mlu_after": 0.6},
        {"number": 2, "domain": 1, "circuits_removed": 0, "circuits_added": 1, "mlu_start": 0.6,
         "mlu_drained": 0.6, "mlu_after": 0.52},
    ],
    "steps": [
        {"stage": 1, "name": name, "state": "done", "error": None, "started": 1_790_000_001.0 + i,
         "finished": 1_790_000_001.5 + i}
        for i, name in enumerate(("drain", "verify_drain", "apply_ocs", "qualify", "undrain"))
    ] + [
        {"stage": 2, "name": "apply_ocs", "state": "done", "error": None, "started": 1_790_000_060.0,
         "finished": 1_790_000_061.0},
        {"stage": 2, "name": "qualify", "state": "failed", "error": "b4 port 7 dark",
         "started": 1_790_000_061.0, "finished": 1_790_000_090.0},
    ],
}

#: Shaped like DaemonApi.history: the newest in flight, then finished ones.
HISTORY = [
    {"id": 7 - i, "state": "done" if i else "in_progress", "trigger": "auto",
     "reason": None if i else "predicted MLU improves by 43% " + "and more " * 12,
     "created": 1_790_000_000.0 - 3600 * i, "finished": None if i == 0 else 1_790_000_090.0 - 3600 * i,
     "stages": 2, "circuits_removed": 1, "circuits_added": 2, "current_mlu": 0.91, "planned_mlu": 0.52,
     "plan_id": None}
    for i in range(5)
]


class FakeControllerApi:
    """Answers every ControllerApi call from memory. ``fail[method] = exc`` makes that method
    raise ``exc``; ``calls`` records (method, args) in order; ``block`` holds a method until
    released (for deadline tests)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.snapshot = StatusSnapshot(
            phase=Phase.IDLE,
            fabric="fake-4",
            toe_paused=False,
            te_runs=12,
            toe_runs=1,
            last_te_time=1_790_000_100.25,
            last_toe_time=None,
            mlu=0.4213,
            measured_mlu=0.398,
            predicted_mlu=0.55,
            details={"stale_counters": 0, "solver": "highs"},
        )
        self.topology_data: Any = TOPOLOGY
        self.matrices_data: Any = MATRICES
        self.history_data: list[dict[str, Any]] = list(HISTORY)
        self.plan: dict[str, Any] | None = None
        self.toe_queued = False
        self.maintenance: list[str] = []
        self.fail: dict[str, BaseException] = {}
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.hold = threading.Event()
        self.hold.set()
        self.held_methods: set[str] = set()

    def _enter(self, method: str, *args: Any) -> None:
        with self._lock:
            self.calls.append((method, args))
            error = self.fail.get(method)
        if method in self.held_methods:
            self.hold.wait(10)
        if error is not None:
            raise error

    def calls_to(self, method: str) -> list[tuple[Any, ...]]:
        with self._lock:
            return [args for name, args in self.calls if name == method]

    @contextmanager
    def holding(self, method: str) -> Iterator[None]:
        """``method`` blocks until the context ends."""
        self.hold.clear()
        self.held_methods.add(method)
        try:
            yield
        finally:
            self.held_methods.discard(method)
            self.hold.set()

    # -- ControllerApi --------------------------------------------------------------------

    def status(self) -> StatusSnapshot:
        self._enter("status")
        with self._lock:
            return replace(self.snapshot, maintenance=tuple(self.maintenance))

    def topology(self) -> dict[str, Any]:
        self._enter("topology")
        return self.topology_data

    def matrices(self) -> dict[str, Any]:
        self._enter("matrices")
        return self.matrices_data

    def history(self, limit: int = 20) -> list[dict[str, Any]]:
        self._enter("history", limit)
        return self.history_data[:limit]

    def trigger_toe(self, dry_run: bool = False, plan_id: str | None = None) -> ToeRequestResult:
        self._enter("trigger_toe", dry_run)
        with self._lock:
            if plan_id is not None:
                if plan_id != PLAN_ID:
                    raise ApiError(ApiErrorCode.NOT_FOUND, f"no reviewed plan {plan_id!r}")
                return ToeRequestResult(True, False, f"reviewed plan {plan_id} started", None, plan_id, 7)
            if dry_run:
                self.plan = PLAN
                return ToeRequestResult(True, True, "planned 2 stages, 4 circuits change", PLAN, PLAN_ID)
            if self.toe_queued:
                raise ApiError(ApiErrorCode.FAILED_PRECONDITION, "a ToE run is already queued")
            self.toe_queued = True
            return ToeRequestResult(True, False, "ToE run queued")

    def pause_toe(self) -> None:
        self._enter("pause_toe")
        with self._lock:
            self.snapshot = replace(self.snapshot, toe_paused=True)

    def resume_toe(self) -> None:
        self._enter("resume_toe")
        with self._lock:
            self.snapshot = replace(self.snapshot, toe_paused=False)

    def set_maintenance(self, kind: MaintenanceKind, name: str, drained: bool, force: bool = False) -> str:
        self._enter("set_maintenance", kind, name, drained)
        self.last_force = force
        known = BLOCKS if kind is MaintenanceKind.BLOCK else OCSES
        if name not in known:
            raise ApiError(ApiErrorCode.INVALID_ARGUMENT, f"name: no {kind.value} {name!r} in fabric fake-4")
        entry = f"{kind.value}:{name}"
        with self._lock:
            if drained and entry not in self.maintenance:
                self.maintenance.append(entry)
            if not drained and entry in self.maintenance:
                self.maintenance.remove(entry)
        return f"{'drain' if drained else 'undrain'} of {kind.value} {name} queued"

    def reconfiguration(self, intent_id: int) -> dict[str, Any]:
        self._enter("reconfiguration", intent_id)
        if intent_id != RECONFIGURATION["id"]:
            raise ApiError(ApiErrorCode.NOT_FOUND, f"no reconfiguration {intent_id}")
        return RECONFIGURATION

    def last_plan(self) -> dict[str, Any]:
        self._enter("last_plan")
        with self._lock:
            if self.plan is None:
                raise ApiError(ApiErrorCode.NOT_FOUND, "no ToE plan yet")
            return self.plan


@contextmanager
def serving(
    api: FakeControllerApi | None = None, **kwargs: Any
) -> Iterator[tuple[FakeControllerApi, NorthboundServers, ControllerMetrics]]:
    """The northbound servers on loopback port 0 over ``api`` (a fresh fake by default)."""
    api = api or FakeControllerApi()
    metrics = ControllerMetrics()
    servers = start_northbound(api, "127.0.0.1:0", metrics, "127.0.0.1:0", **kwargs)
    try:
        yield api, servers, metrics
    finally:
        api.hold.set()
        servers.stop(grace_s=0)


def client_for(servers: NorthboundServers, **kwargs: Any) -> ControllerClient:
    return ControllerClient(str(servers.grpc_address), **kwargs)
