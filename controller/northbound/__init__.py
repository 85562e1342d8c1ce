"""The controller's northbound interfaces: the gRPC API (``heliostat.controller.v1``), the
Prometheus metrics endpoint, and the client ``heliostat ctl`` uses.

``start_northbound`` serves a :class:`~controller.northbound.api.ControllerApi`; ``ControllerClient``
calls it from another process.

The names below are loaded on first use (PEP 562): ``heliostat ctl`` imports the client
without the server, which brings the metrics, the config and through it the optimiser.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.northbound.client import ControllerClient, StatusReport
    from controller.northbound.errors import (
        ControllerCallFailed,
        ControllerClientError,
        ControllerUnreachable,
        NorthboundError,
    )
    from controller.northbound.server import NorthboundServers, start_northbound

_WHERE = {
    "ControllerCallFailed": "controller.northbound.errors",
    "ControllerClient": "controller.northbound.client",
    "ControllerClientError": "controller.northbound.errors",
    "ControllerUnreachable": "controller.northbound.errors",
    "NorthboundError": "controller.northbound.errors",
    "NorthboundServers": "controller.northbound.server",
    "StatusReport": "controller.northbound.client",
    "start_northbound": "controller.northbound.server",
}

__all__ = [
    "ControllerCallFailed",
    "ControllerClient",
    "ControllerClientError",
    "ControllerUnreachable",
    "NorthboundError",
    "NorthboundServers",
    "StatusReport",
    "start_northbound",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
