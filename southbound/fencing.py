"""Leadership epochs on mutating calls (HA, issue 14): what the clients send and hear back.

With replicas, only the elected leader may change a device. Every mutating call (apply
cross-connects, set next-hop groups, drain, undrain) carries the leader's **epoch**, a number
that only grows from one leadership to the next (controller/ha: the etcd revision that
created the leader key). A device keeps the highest epoch it has seen and refuses a lower
one with FAILED_PRECONDITION, naming the highest in the ``heliostat-epoch`` trailing
metadata; the client raises :class:`Fenced` and tells its :class:`EpochSource`, so a
leader that was paused past its lease learns at its first write that it was replaced.

Epoch 0 means "no election": one controller, nothing fenced (the behaviour without ``ha``).
"""

from __future__ import annotations

from typing import Protocol

from southbound.errors import Fenced

__all__ = ["NO_ELECTION", "EpochSource", "Fenced", "NoElection"]


class EpochSource(Protocol):
    """Where a client reads the epoch to send, and reports a refusal."""

    def current_epoch(self) -> int:
        """The epoch to put on a mutating call (0: no election)."""
        ...

    def refused(self, device: str, highest_epoch: int) -> None:
        """``device`` has seen ``highest_epoch``, above ours: another leader acts."""
        ...


class NoElection:
    """Epoch 0 on every call: one controller, no fencing."""

    def current_epoch(self) -> int:
        return 0

    def refused(self, device: str, highest_epoch: int) -> None:
        return None


NO_ELECTION = NoElection()
