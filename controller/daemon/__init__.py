"""The controller daemon (``heliostat run``): a thin shim around the pure decisions.

Each cycle (every ``te_interval``, sooner while a reconfiguration is in flight or a request
waits): poll the devices, feed the estimator, :func:`controller.decision.decide`, then
carry out the actions it returns (restore circuits, TE, ToE planning, one executor stage)
and report each outcome back to the decisions. A device that is down is logged and tried
again next cycle; nothing that fails in a cycle stops the loop.

The face is :class:`Daemon` (:mod:`~controller.daemon.core`: the composition root and the
loop). It builds one :class:`~controller.daemon.state.DaemonState` and the parts, each a class
handed its collaborators: :mod:`~controller.daemon.leadership` (the election),
:mod:`~controller.daemon.startup` (a term's start: reconciliation, crash recovery),
:mod:`~controller.daemon.sensing` (polls, estimation, releasing quarantine),
:mod:`~controller.daemon.te_step` (TE, maintenance drains, restoring circuits) and
:mod:`~controller.daemon.reconfiguration` (ToE plans, intents, stages; a plan deferred until
the load leaves room for its stages: :mod:`~controller.daemon.deferral`), the announced
jobs ToE plans for (:mod:`~controller.daemon.jobs`), with the small
:mod:`~controller.daemon.quarantine`, :mod:`~controller.daemon.spine` and
:mod:`~controller.daemon.report` they share. controller/README.md draws the whole.
"""

from controller.daemon.core import Daemon, Term
from controller.daemon.state import (
    PREDICTION_KEY,
    QUARANTINE_KEY,
    ApplyReviewed,
    DaemonError,
    DaemonState,
    DryRun,
    EventListener,
)

__all__ = [
    "PREDICTION_KEY",
    "QUARANTINE_KEY",
    "ApplyReviewed",
    "Daemon",
    "DaemonError",
    "DaemonState",
    "DryRun",
    "EventListener",
    "Term",
]
