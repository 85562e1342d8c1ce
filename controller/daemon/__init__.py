"""The controller daemon (``heliostat run``): a thin shim around the pure decisions.

Each cycle (every ``te_interval``, sooner while a reconfiguration is in flight or a request
waits): poll the devices, feed the estimator, :func:`controller.decision.decide`, then
carry out the actions it returns (restore circuits, TE, ToE planning, one executor stage)
and report each outcome back to the decisions. A device that is down is logged and tried
again next cycle; nothing that fails in a cycle stops the loop.

The face is :class:`Daemon` (:mod:`~controller.daemon.core`: the loop), built from its parts:
:mod:`~controller.daemon.startup` (journal, reconciliation, crash recovery),
:mod:`~controller.daemon.sensing` (polls, estimation, quarantine, the spine in service),
:mod:`~controller.daemon.te_step` (TE and maintenance drains) and
:mod:`~controller.daemon.reconfiguration` (ToE plans, intents, stages), over the shared state
of :mod:`~controller.daemon.parts`.
"""

from controller.daemon.core import Daemon
from controller.daemon.parts import (
    PREDICTION_KEY,
    QUARANTINE_KEY,
    ApplyReviewed,
    DaemonError,
    DryRun,
    EventListener,
)

__all__ = [
    "PREDICTION_KEY",
    "QUARANTINE_KEY",
    "ApplyReviewed",
    "Daemon",
    "DaemonError",
    "DryRun",
    "EventListener",
]
