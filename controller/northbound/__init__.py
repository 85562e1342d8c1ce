"""The controller's northbound interfaces: the gRPC API (``heliostat.controller.v1``), the
Prometheus metrics endpoint, and the client ``heliostat ctl`` uses.

``start_northbound`` serves a :class:`~controller.api.ControllerApi`; ``ControllerClient``
calls it from another process.
"""

from controller.northbound.client import ControllerClient, StatusReport
from controller.northbound.errors import (
    ControllerCallFailed,
    ControllerClientError,
    ControllerUnreachable,
    NorthboundError,
)
from controller.northbound.server import NorthboundServers, start_northbound

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
