"""What the daemon's parts tell the outside: events (the recorder, the listener), the status
board, the metrics, and journal writes the loop can go on without."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from controller.daemon.state import DaemonState, EventListener
from controller.metrics import ControllerMetrics
from controller.reconfig.journal import JournalError
from controller.status import StatusBoard
from controller.ui.recorder import Recorder

log = logging.getLogger(__name__)


class Reporter:
    """The board, recorder, metrics and listener every part reports through."""

    def __init__(
        self,
        state: DaemonState,
        board: StatusBoard,
        recorder: Recorder,
        metrics: ControllerMetrics,
        listener: EventListener | None,
        clock: Callable[[], float],
        store: Path,
    ) -> None:
        self.state = state
        self.board = board
        self.recorder = recorder
        self.metrics = metrics
        self.listener = listener
        self.clock = clock
        self.store = store  # the journal's file, named when it becomes writable again

    def emit(self, kind: str, **details: object) -> None:
        self.recorder.event(self.clock(), kind, details)
        if self.listener is not None:
            try:
                self.listener(kind, details)
            except Exception:  # a listener must not break the loop
                log.exception("event listener failed on %s", kind)

    def journal_softly(self, what: str, write: Callable[[], object]) -> None:
        """A journal write the loop can go on without (the matrix history, the prediction):
        when it fails (a full disk) the loop still polls and runs TE, the status shows it, and
        the first write that succeeds again clears it."""
        try:
            write()
        except JournalError as exc:
            if self.board.get("journal_error") is None:
                log.warning("journal: cannot write %s (%s); going on without it", what, exc.problem)
            self.state.cycle_error = f"journal: cannot write {what}: {exc}"
            self.board.update(journal_error=str(exc), last_error=self.state.cycle_error)
            return
        if self.board.get("journal_error") is not None:
            log.warning("journal %s: writable again", self.store)
            self.board.update(journal_error=None)

    def step_event(self, intent: int, stage: int, step: str, event: str) -> None:
        """The executor's listener: a step started, finished or failed."""
        total = self.board.get("stages_total")
        if step in ("stage", "rollback"):
            self.metrics.reconfiguration(stage, total, "rollback" if step == "rollback" and event == "started"
                                         else None)
            self.board.update(step=None)
            self.emit(step, intent=intent, stage=stage, event=event)
            return
        self.metrics.reconfiguration(stage, total, step)
        self.board.update(step=step, phase="reconfiguring")
        self.emit("step", intent=intent, stage=stage, step=step, event=event)
