"""The fence in the edit over NETCONF: epoch, generation compare-and-set, request-id replay."""

from __future__ import annotations

import pytest

from southbound.errors import ErrorCode, Fenced, InvalidRequest, StaleGeneration
from southbound.types import CrossConnect as XC
from tests.southbound.test_fencing import Epochs
from tests.support.netconf_support import served_netconf_ocs


def test_a_lower_epoch_is_refused_in_the_same_edit_and_changes_nothing() -> None:
    with served_netconf_ocs() as (device, server, client, _):
        new, old = Epochs(7), Epochs(5)
        client.epoch = new
        first = client.apply(expected_generation=1, add=[XC(0, 8)])
        client.epoch = old
        with pytest.raises(Fenced) as refused:
            client.apply(expected_generation=first.generation, add=[XC(1, 9)])
        table = client.cross_connects()
    assert refused.value.highest_epoch == 7 and refused.value.code is ErrorCode.FENCED
    assert refused.value.transport_code == "operation-failed/epoch-fenced"
    assert "below 7" in str(refused.value)
    assert old.refusals == [("ocs-t", 7)] and new.refusals == []
    assert server.datastore.fence.highest == 7
    assert table.generation == first.generation == device.generation
    assert table.cross_connects == {XC(0, 8)}


def test_epoch_zero_is_not_fenced_and_a_higher_epoch_takes_over() -> None:
    with served_netconf_ocs() as (_, server, client, _):
        client.epoch = Epochs(4)
        g = client.apply(expected_generation=1, add=[XC(0, 8)]).generation
        client.epoch = Epochs(0)
        g = client.apply(expected_generation=g, add=[XC(1, 9)]).generation
        client.epoch = Epochs(9)
        g = client.apply(expected_generation=g, add=[XC(2, 10)]).generation
    assert g == 4 and server.datastore.fence.highest == 9


def test_generation_compare_and_set_reports_the_current_generation() -> None:
    with served_netconf_ocs() as (_, _, client, _):
        client.apply(expected_generation=1, add=[XC(0, 8)])
        client.apply(expected_generation=2, add=[XC(1, 9)])
        with pytest.raises(StaleGeneration) as stale:
            client.apply(expected_generation=2, add=[XC(2, 10)])
        assert stale.value.current_generation == 3
        assert XC(2, 10) not in client.cross_connects().cross_connects


def test_replay_answers_the_first_result_and_a_reused_id_with_another_body_is_refused() -> None:
    with served_netconf_ocs() as (device, _, client, _):
        first = client.apply(expected_generation=1, add=[XC(0, 8)], request_id="r1")
        again = client.apply(expected_generation=1, add=[XC(0, 8)], request_id="r1")
        with pytest.raises(InvalidRequest, match="different"):
            client.apply(expected_generation=1, add=[XC(1, 9)], request_id="r1")
    assert not first.replayed and again.replayed and again.generation == first.generation == 2
    assert device.generation == 2


def test_a_fence_shared_with_another_protocol_refuses_what_that_protocol_raised() -> None:
    from emulation.admission.fencing import EpochFence
    from emulation.clock import EmulatedClock
    from emulation.ocs_device import OcsDevice
    from emulation.standard.netconf import start_netconf_server
    from southbound.standard.netconf.driver import NetconfOcs
    from tests.support.netconf_support import PASSWORD, USERNAME, netconf_device

    device = OcsDevice("ocs-s", 16, EmulatedClock())
    shared = EpochFence(device.name)
    server = start_netconf_server(device, username=USERNAME, password=PASSWORD, fence=shared)
    client = NetconfOcs(netconf_device(server, name="ocs-s"))
    try:
        shared.admit(8)  # as the native servicer does for a gRPC apply at epoch 8
        client.epoch = Epochs(6)
        with pytest.raises(Fenced) as refused:
            client.apply(expected_generation=1, add=[XC(0, 8)])
    finally:
        client.close()
        server.stop()
        device.close()
    assert refused.value.highest_epoch == 8 and device.generation == 1
