"""Arbitration as fencing: the highest leadership epoch is the P4Runtime primary."""

from __future__ import annotations

import grpc
import pytest

from southbound.errors import DeviceError, ErrorCode, Fenced
from southbound.standard.p4rt.driver import P4GroupWriter
from southbound.standard.p4rt.session import uint128
from southbound.standard.pb import p4runtime_pb2, p4runtime_pb2_grpc
from tests.support.p4rt_support import p4_device, served_p4_switch
from tests.support.southbound_fixtures import wait_for


class Epoch:
    """An epoch source a test moves by hand; records the refusals it is told of."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.refusals: list[tuple[str, int]] = []

    def current_epoch(self) -> int:
        return self.epoch

    def refused(self, device: str, highest_epoch: int) -> None:
        self.refusals.append((device, highest_epoch))


def test_the_lower_epoch_is_fenced_and_the_primarys_writes_land() -> None:
    with served_p4_switch() as (device, agent, _, _):
        with P4GroupWriter(p4_device(agent.address)) as old, P4GroupWriter(p4_device(agent.address)) as new:
            old.epoch, new.epoch = Epoch(3), Epoch(5)
            new.set_groups(expected_generation=1, source={"b": {"b": 1}})
            with pytest.raises(Fenced) as info:
                old.set_groups(expected_generation=2, source={"c": {"c": 1}})
            assert info.value.highest_epoch == 5
            assert old.epoch.refusals == [("sw-a", 5)]  # type: ignore[attr-defined]
            new.set_groups(expected_generation=2, source={"d": {"d": 2}})
        assert device.groups()[1] == {"d": {"d": 2}}


def test_a_primary_that_learns_it_was_replaced_is_fenced_on_its_next_write() -> None:
    with served_p4_switch() as (device, agent, _, _), P4GroupWriter(p4_device(agent.address)) as old:
        old.epoch = Epoch(2)
        old.set_groups(expected_generation=1, source={"b": {"b": 1}})
        with P4GroupWriter(p4_device(agent.address)) as new:
            new.epoch = Epoch(7)
            new.set_groups(expected_generation=2, source={"c": {"c": 1}})
            wait_for(lambda: not old._session.primary, what="the old primary to hear of the new one")
            with pytest.raises(Fenced) as info:
                old.set_groups(expected_generation=3, source={"d": {"d": 1}})
        # the new primary left; the old epoch still may not write (the switch keeps the highest)
        with pytest.raises(Fenced):
            old.set_groups(expected_generation=3, source={"d": {"d": 1}})
        old.epoch = Epoch(8)  # re-elected with a higher epoch: primary again
        old.set_groups(expected_generation=3, source={"d": {"d": 1}})
    assert info.value.highest_epoch == 7
    assert device.groups()[1] == {"d": {"d": 1}} and device.generation == 4


def test_a_write_without_arbitration_is_permission_denied() -> None:
    with served_p4_switch() as (_, agent, _, _):
        channel = grpc.insecure_channel(agent.address)
        try:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
            request = p4runtime_pb2.WriteRequest(device_id=1, election_id=uint128(9))
            with pytest.raises(grpc.RpcError) as info:
                stub.Write(request, timeout=5)
            wrong = p4runtime_pb2.WriteRequest(device_id=4, election_id=uint128(9))
            with pytest.raises(grpc.RpcError) as unknown:
                stub.Write(wrong, timeout=5)
        finally:
            channel.close()
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND


def test_two_writers_without_an_election_and_an_unknown_device_id_are_named() -> None:
    with served_p4_switch() as (device, agent, first, _):
        first.set_groups(expected_generation=1, source={"b": {"b": 1}})
        with P4GroupWriter(p4_device(agent.address)) as second:
            with pytest.raises(DeviceError, match="two controllers without an election") as info:
                second.set_groups(expected_generation=2, source={"c": {"c": 1}})
            assert info.value.code is ErrorCode.DENIED
        with P4GroupWriter(p4_device(agent.address, device_id=9)) as stranger:
            with pytest.raises(DeviceError, match="device_id 9") as unknown:
                stranger.set_groups(expected_generation=2, source={"c": {"c": 1}})
            assert unknown.value.code is ErrorCode.NOT_FOUND
    assert device.generation == 2
