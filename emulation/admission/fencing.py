"""The devices' side of leadership fencing (HA, issue 14; the client side is southbound/fencing.py).

A device keeps the highest leadership epoch it has seen on a mutating call and refuses a
lower one with FAILED_PRECONDITION, naming the highest in the ``heliostat-epoch`` trailing
metadata. A leader that was paused past its lease (SIGSTOP, a long GC, a partition) and
wakes up after another replica took over can therefore change nothing: the new leader's
first write raised the bar. Epoch 0 (the field absent: a controller without ``ha``) is
neither fenced nor raises the bar, which keeps today's single-controller behaviour.

The epoch is held in memory, as the rest of an emulated device's state; a real device would
keep it across its own restarts (a restarted emulated device accepts the next epoch it sees).
"""

from __future__ import annotations

import logging
import threading

import grpc

from emulation.errors import DeviceRefusal

log = logging.getLogger(__name__)


class StaleEpoch(DeviceRefusal):
    """A mutating call from a replaced leader: nothing changed."""

    code = grpc.StatusCode.FAILED_PRECONDITION

    def __init__(self, message: str, highest_epoch: int) -> None:
        super().__init__(message)
        self.highest_epoch = highest_epoch


class EpochFence:
    """One device's highest epoch seen. Thread-safe: the servicers call it from gRPC workers."""

    def __init__(self, device: str) -> None:
        self.device = device
        self._lock = threading.Lock()
        self._highest = 0

    @property
    def highest(self) -> int:
        with self._lock:
            return self._highest

    def admit(self, epoch: int) -> None:
        """Let a mutating call with ``epoch`` through (raising the bar), or raise StaleEpoch."""
        if epoch == 0:
            return
        with self._lock:
            if epoch < self._highest:
                raise StaleEpoch(
                    f"{self.device}: epoch {epoch} is below {self._highest}, the highest seen: "
                    "a newer controller leader acts on this device",
                    self._highest,
                )
            if epoch > self._highest:
                if self._highest:
                    log.info("%s: leadership epoch %d replaces %d", self.device, epoch, self._highest)
                self._highest = epoch
