"""The daemon's status board: what the loop last did, readable from any thread."""

from __future__ import annotations

import threading
from typing import Any

_DEFAULTS: dict[str, Any] = {
    "phase": "starting",
    "toe_paused": False,
    "te_runs": 0,
    "toe_runs": 0,
    "last_te_time": None,
    "last_toe_time": None,
    "mlu": None,
    "mlu_quantized": None,
    "measured_mlu": None,
    "predicted_mlu": None,
    "reconfiguration_id": None,
    "stage": None,
    "stages_total": None,
    "step": None,
    "last_error": None,
    "maintenance": (),
    "unreachable": (),
    "ocs_down": (),  # unreachable or without power
    "circuits_installed": None,
    "circuits_up": None,
    "circuits_carrying": None,  # up and not drained (maintenance, quarantine): what TE routes over
    "poll_s": None,
    "unexplained_drains": 0,  # drained ports found at start-up that no journal explained
    "journal_error": None,
    "deferred_plan": None,  # a deferred ToE plan's facts (controller/reconfig/deferred.py), or None
    # HA (controller/daemon/leadership.py): None without ha
    "role": None,  # leader or standby
    "leader": None,  # the leader replica's name
    "leader_northbound": None,  # its northbound API address, as it published it
    "epoch": None,  # the leader's epoch (the devices fence on it)
    "role_reason": None,  # a journal write failed (e.g. a full disk); None once one succeeds
}


class StatusBoard:
    """Named values the loop writes and the API reads, under one lock."""

    def __init__(self, fabric: str) -> None:
        self.fabric = fabric
        self._lock = threading.Lock()
        self._values = dict(_DEFAULTS)

    def update(self, **values: Any) -> None:
        unknown = set(values) - set(_DEFAULTS)
        if unknown:
            raise KeyError(f"unknown status fields: {', '.join(sorted(unknown))}")
        with self._lock:
            self._values.update(values)

    def get(self, name: str) -> Any:
        with self._lock:
            return self._values[name]

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._values)
