"""The pure election decisions (controller/ha/election.py): roles, epochs, when to act."""

from __future__ import annotations

from controller.ha.election import (
    ACT_FRACTION,
    ElectionState,
    LeaderRecord,
    Role,
    Round,
    acting,
    fenced,
    observe,
)

TTL = 5.0


def lead(state: ElectionState, at: float, epoch: int = 10, lease: int = 7) -> ElectionState:
    return observe(state, Round(True, lease, LeaderRecord("a", epoch, lease), at), "a", TTL)


def test_the_replica_holding_the_key_with_its_lease_leads_with_that_epoch() -> None:
    state = lead(ElectionState(), at=100.0)
    assert (state.role, state.leader, state.epoch, state.own_epoch) == (Role.LEADER, "a", 10, 10)
    assert acting(state, 100.0 + ACT_FRACTION * TTL - 0.01, TTL)
    assert not acting(state, 100.0 + ACT_FRACTION * TTL, TTL)  # stops before the lease can expire


def test_a_key_on_another_lease_or_name_is_someone_else() -> None:
    other = observe(ElectionState(), Round(True, 7, LeaderRecord("b", 12, 9), 1.0), "a", TTL)
    assert (other.role, other.leader, other.epoch, other.own_epoch) == (Role.STANDBY, "b", 12, 0)
    assert not acting(other, 1.0, TTL)
    # our name, but a lease that is not ours (a replica of ours before a restart): not us
    stale = observe(ElectionState(), Round(True, 7, LeaderRecord("a", 12, 9), 1.0), "a", TTL)
    assert stale.role is Role.STANDBY


def test_unreachable_etcd_keeps_the_role_but_acting_ends_with_the_lease() -> None:
    state = lead(ElectionState(), at=100.0)
    cut = observe(state, Round(False), "a", TTL)
    assert cut.role is Role.LEADER and cut.reason == "etcd unreachable"
    assert acting(cut, 101.0, TTL)
    assert not acting(cut, 100.0 + TTL, TTL)
    back = lead(cut, at=104.5)  # a keep-alive got through with the same key: acting again
    assert acting(back, 105.0, TTL) and back.epoch == 10 and back.changes == cut.changes


def test_losing_the_key_is_a_leadership_change_and_the_epoch_grows() -> None:
    state = lead(ElectionState(), at=0.0)
    lost = observe(state, Round(True, None, LeaderRecord("b", 15, 9), 6.0), "a", TTL)
    assert lost.role is Role.STANDBY and lost.reason == "lost the lease: b leads now"
    assert (lost.epoch, lost.own_epoch) == (15, 10)  # devices get 10 from us: refused
    assert lost.changes == state.changes + 1


def test_fenced_steps_down_at_once() -> None:
    state = lead(ElectionState(), at=0.0)
    down = fenced(state, 15)
    assert down.role is Role.STANDBY and not acting(down, 0.1, TTL)
    assert "epoch 15" in down.reason and down.epoch == 15
    assert fenced(state, 10) is state  # a refusal of our older epoch than the one we hold


def test_nobody_leads() -> None:
    state = observe(lead(ElectionState(), at=0.0), Round(True, 7, None, 1.0), "a", TTL)
    assert state.role is Role.STANDBY and state.leader is None
