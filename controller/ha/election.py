"""The pure part of the election: a replica's role from what it saw of etcd, and when to act.

No I/O here: :mod:`controller.ha.elector` talks to etcd and feeds each round's
:class:`Round` (and the time, from a monotonic clock) to :func:`observe`.

- The **leader** is the replica whose lease holds the leader key ``<prefix>/leader``.
- Its **epoch** is the revision at which it created that key: etcd revisions only grow, so
  every new leadership has a higher epoch than every earlier one; the devices fence on it.
- A leader **acts** only while its lease is surely alive: less than ``lease_ttl`` (less a
  margin) since the last keep-alive etcd confirmed, counted from when that request was
  *sent*. When etcd cannot be reached (quorum lost, partition) the leader stops acting
  before its lease can expire, and resumes if a keep-alive gets through in time; if not,
  another replica may win, with a higher epoch.
- A leader refused by a device (a higher epoch seen there) **steps down** at once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

#: a leader stops acting this fraction of lease_ttl after its last confirmed keep-alive, before
#: etcd can expire the lease (its clock may run a little faster than ours)
ACT_FRACTION = 0.8


class Role(StrEnum):
    LEADER = "leader"
    STANDBY = "standby"


@dataclass(frozen=True)
class LeaderRecord:
    """What the leader key says: who leads, with which epoch and lease."""

    name: str
    epoch: int
    lease: int
    northbound: str | None = None


@dataclass(frozen=True)
class Round:
    """One round of the elector against etcd."""

    reachable: bool  # etcd answered (a keep-alive and a read of the leader key)
    lease: int | None = None  # our lease, alive as etcd confirmed this round; None: none or gone
    leader: LeaderRecord | None = None  # the leader key (None: nobody leads; or unreachable)
    sent_at: float = 0.0  # when this round's keep-alive was sent (monotonic)


@dataclass(frozen=True)
class ElectionState:
    role: Role = Role.STANDBY
    leader: str | None = None  # the leader's name, as last seen
    leader_northbound: str | None = None
    epoch: int = 0  # the leader's epoch, as last seen
    own_epoch: int = 0  # the epoch of our latest leadership (what we put on device calls)
    renewed_at: float | None = None  # when our last confirmed keep-alive was sent (monotonic)
    changes: int = 0  # leadership changes seen (another name or a new epoch)
    reason: str = "starting"


def observe(state: ElectionState, seen: Round, me: str, lease_ttl: float) -> ElectionState:
    """The state after one round."""
    if not seen.reachable:
        return replace(state, reason="etcd unreachable")
    renewed = seen.sent_at if seen.lease is not None else None
    record = seen.leader
    changes = state.changes
    if record is not None and (record.name, record.epoch) != (state.leader, state.epoch):
        changes += 1
    if record is None:
        return replace(
            state, role=Role.STANDBY, leader=None, leader_northbound=None, renewed_at=renewed,
            changes=changes, reason="nobody leads",
        )
    mine = seen.lease is not None and record.name == me and record.lease == seen.lease
    role = Role.LEADER if mine else Role.STANDBY
    reason = "leading" if mine else f"{record.name} leads"
    if not mine and state.role is Role.LEADER:
        reason = f"lost the lease: {record.name} leads now"
    return replace(
        state,
        role=role,
        leader=record.name,
        leader_northbound=record.northbound,
        epoch=record.epoch,
        own_epoch=record.epoch if mine else state.own_epoch,
        renewed_at=renewed,
        changes=changes,
        reason=reason,
    )


def fenced(state: ElectionState, highest_epoch: int) -> ElectionState:
    """A device has seen ``highest_epoch`` (above ours): another replica leads; step down."""
    if highest_epoch <= state.own_epoch and state.role is Role.LEADER:
        return state  # a refusal of an older epoch of ours than the one we now hold
    return replace(
        state,
        role=Role.STANDBY,
        epoch=max(state.epoch, highest_epoch),
        reason=f"fenced: a device has seen epoch {highest_epoch}, above ours ({state.own_epoch})",
    )


def acting(state: ElectionState, now: float, lease_ttl: float) -> bool:
    """True while this replica leads and its lease is surely alive at ``now`` (monotonic)."""
    return (
        state.role is Role.LEADER
        and state.renewed_at is not None
        and now - state.renewed_at < ACT_FRACTION * lease_ttl
    )
