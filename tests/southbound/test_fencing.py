"""Leadership fencing over real loopback gRPC: the emulated devices keep the highest epoch seen."""

from __future__ import annotations

import grpc
import pytest

from southbound.errors import ErrorCode, Fenced
from southbound.types import CrossConnect
from tests.support.southbound_fixtures import served_ocs, served_switch


class Epochs:
    """An epoch source whose epoch the test sets; it records the refusals it hears."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.refusals: list[tuple[str, int]] = []

    def current_epoch(self) -> int:
        return self.epoch

    def refused(self, device: str, highest_epoch: int) -> None:
        self.refusals.append((device, highest_epoch))


def test_ocs_refuses_a_lower_epoch_and_changes_nothing() -> None:
    with served_ocs() as (device, _, client, _):
        new, old = Epochs(7), Epochs(5)
        client.epoch = new
        first = client.apply(expected_generation=device.generation, add=[CrossConnect(0, 8)])
        client.epoch = old
        with pytest.raises(Fenced) as refused:
            client.apply(expected_generation=first.generation, add=[CrossConnect(1, 9)])
        table = client.cross_connects()
    assert refused.value.highest_epoch == 7
    assert refused.value.code is ErrorCode.FENCED
    assert refused.value.transport_code == grpc.StatusCode.FAILED_PRECONDITION
    assert "below 7" in str(refused.value)
    assert old.refusals == [("ocs-t", 7)] and new.refusals == []
    assert table.generation == first.generation  # the refused apply changed nothing
    assert CrossConnect(1, 9) not in table.cross_connects and CrossConnect(0, 8) in table.cross_connects


def test_epoch_zero_is_not_fenced_and_the_same_epoch_goes_on() -> None:
    """Without an election (epoch 0) nothing is fenced; the leader's own epoch repeats freely."""
    with served_ocs() as (device, _, client, _):
        client.epoch = Epochs(4)
        g = client.apply(expected_generation=device.generation, add=[CrossConnect(0, 8)]).generation
        g = client.apply(expected_generation=g, add=[CrossConnect(1, 9)]).generation
        client.epoch = Epochs(0)
        g = client.apply(expected_generation=g, add=[CrossConnect(2, 10)]).generation
    assert g == device.generation
    assert {CrossConnect(0, 8), CrossConnect(1, 9), CrossConnect(2, 10)} <= client_table(device)


def client_table(device: object) -> set[CrossConnect]:
    _, items = device.cross_connects()  # type: ignore[attr-defined]
    return {c for c, _ in items}


def test_switch_fences_groups_drain_and_undrain() -> None:
    with served_switch() as (device, _, client, _):
        client.epoch = Epochs(9)
        client.drain([1])
        client.epoch = stale = Epochs(8)
        with pytest.raises(Fenced):
            client.undrain([1])
        with pytest.raises(Fenced):
            client.drain([2])
        with pytest.raises(Fenced):
            client.set_groups(expected_generation=device.generation, source={"b": {"b": 1}})
        generation = device.generation
        drained = {p.port for p in client.ports() if p.drained}
    assert drained == {1}  # neither the undrain of 1 nor the drain of 2 took effect
    assert generation == 1  # no group push either
    assert stale.refusals == [("sw-a", 9)] * 3
