"""Dry-run ToE plans (``heliostat ctl toe --dry-run``) computed beside the control loop.

A plan can take the whole ToE time budget (``timeouts.toe_solve``, 60 s by default). Planned
inside the loop, every dry run held up polling and TE that long, and ten of them ten times
as long. Here one worker thread plans while the loop goes on; the dry runs that arrive
while it plans are all answered by the next plan (one plan per batch, however many ask).
The planner only reads the daemon's state, so a preview never changes anything.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from optimizer.errors import HeliostatError

log = logging.getLogger(__name__)


class DryRunFailed(HeliostatError):
    """The plan raised something other than a HeliostatError (a bug): the caller gets this."""


class DryRunner:
    """Answers futures with ``plan()``; batches the ones that wait while a plan runs."""

    def __init__(self, plan: Callable[[], Any]) -> None:
        self._plan = plan
        self._lock = threading.Lock()
        self._waiting: list[Future] = []
        self._worker: threading.Thread | None = None
        self._closed = False

    def submit(self, future: Future) -> None:
        with self._lock:
            if self._closed:
                future.set_exception(DryRunFailed("the controller is stopping"))
                return
            self._waiting.append(future)
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="dry-run", daemon=True)
                self._worker.start()

    def close(self) -> None:
        """Refuse new dry runs and those still waiting (a plan in progress finishes)."""
        with self._lock:
            self._closed = True
            waiting, self._waiting = self._waiting, []
        for future in waiting:
            future.set_exception(DryRunFailed("the controller is stopping"))

    def _work(self) -> None:
        while True:
            with self._lock:
                batch, self._waiting = self._waiting, []
                if not batch:
                    self._worker = None
                    return
            try:
                proposal = self._plan()
            except HeliostatError as exc:
                outcome: tuple[Any, BaseException | None] = (None, exc)
            except Exception as exc:  # a bug must not leave callers waiting
                log.exception("dry-run plan failed")
                outcome = (None, DryRunFailed(f"planning failed: {type(exc).__name__}: {exc}"))
            else:
                outcome = (proposal, None)
            log.info("dry-run plan answered %d request(s)", len(batch))
            for future in batch:
                if outcome[1] is not None:
                    future.set_exception(outcome[1])
                else:
                    future.set_result(outcome[0])
