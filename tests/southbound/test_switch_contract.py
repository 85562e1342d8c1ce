"""PacketSwitchService contract, over real loopback gRPC against the emulated block switch; the
group tests run over both group drivers (the native service and P4Runtime), the CounterReader
and PortDrainer parts over gNMI as well (``transport``: see tests/support/gnmi_support.py)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import grpc
import pytest
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from southbound.errors import ErrorCode, InvalidRequest, StaleGeneration
from tests.support.gnmi_support import SWITCH_TRANSPORTS, served_switch_over
from tests.support.p4rt_support import GROUP_DRIVERS, Served, served_groups
from tests.support.southbound_fixtures import served_switch

ServedGroups = Callable[..., AbstractContextManager[Served]]


@pytest.fixture(params=GROUP_DRIVERS)
def served(request: pytest.FixtureRequest) -> ServedGroups:
    """A served switch with its group driver, native or P4Runtime."""
    return served_groups(request.param)


@pytest.fixture(params=SWITCH_TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    """The transport a CounterReader / PortDrainer test runs over (native gRPC, gNMI)."""
    return str(request.param)


def test_device_info() -> None:
    with served_switch(num_ports=8, max_group_entries=16, table_capacity=40) as (_, _, c, _):
        info = c.device_info()
    assert (info.name, info.block, info.num_ports) == ("sw-a", "a", 8)
    assert info.port_speed_gbps == 100.0
    assert (info.max_group_entries, info.table_capacity, info.generation) == (16, 40, 1)


def test_ports_report_oper_status_and_lldp_peer(transport: str) -> None:
    with served_switch_over(transport, num_ports=6) as (_, _, client, links):
        links.disconnect("a", 5)
        ports = client.ports()
    assert [p.port for p in ports] == list(range(6))
    assert [(p.peer_block, p.peer_port) for p in ports[:5]] == [
        ("b", 0), ("c", 1), ("d", 2), ("b", 3), ("c", 4)
    ]
    assert all(p.oper_up for p in ports[:5])
    assert not ports[5].oper_up and ports[5].peer_block is None and ports[5].peer_port is None
    assert not any(p.drained for p in ports)


def test_set_groups_then_read_them_back(served: ServedGroups) -> None:
    with served() as (_, _, client, _):
        result = client.set_groups(
            expected_generation=1,
            source={"b": {"b": 3, "c": 1}, "d": {"d": 1}},
            transit={"b": {"b": 1}},
        )
        assert (result.generation, result.replayed, result.entries_used) == (2, False, 6)
        groups = client.groups()
    assert groups.generation == 2
    assert groups.source == {"b": {"b": 3, "c": 1}, "d": {"d": 1}}
    assert groups.transit == {"b": {"b": 1}}
    assert groups.entries_used == 6


def test_replace_false_upserts_and_deletes_per_destination(served: ServedGroups) -> None:
    with served() as (_, _, client, _):
        client.set_groups(expected_generation=1, source={"b": {"b": 1}, "c": {"c": 2}})
        client.set_groups(
            expected_generation=2, source={"d": {"b": 1, "d": 1}}, replace=False,
            delete_source=["b"],
        )
        groups = client.groups()
    assert groups.source == {"c": {"c": 2}, "d": {"b": 1, "d": 1}}
    assert groups.generation == 3


def test_deleting_the_group_of_an_unknown_block_is_refused(served: ServedGroups) -> None:
    with served() as (device, _, client, _):
        client.set_groups(expected_generation=1, source={"b": {"b": 1}})
        with pytest.raises(InvalidRequest, match="cannot delete group of unknown 'z'"):
            client.set_groups(expected_generation=2, replace=False, delete_source=["z"])
        assert client.groups().source == {"b": {"b": 1}} and device.generation == 2


def test_replayed_set_returns_first_result_without_reapplying(served: ServedGroups) -> None:
    with served() as (device, _, client, _):
        first = client.set_groups(expected_generation=1, source={"b": {"b": 1}}, request_id="g1")
        again = client.set_groups(expected_generation=1, source={"b": {"b": 1}}, request_id="g1")
    assert again.replayed and again.generation == first.generation == 2
    assert device.generation == 2


def test_stale_generation_is_refused(served: ServedGroups) -> None:
    with served() as (_, _, client, _):
        client.set_groups(expected_generation=1, source={"b": {"b": 1}})
        with pytest.raises(StaleGeneration) as info:
            client.set_groups(expected_generation=1, source={"c": {"c": 1}})
        assert info.value.current_generation == 2
        assert client.groups().source == {"b": {"b": 1}}


@pytest.mark.parametrize(
    ("source", "transit", "message"),
    [
        ({"b": {"b": 17}}, {}, "more than the 16 a group holds"),
        ({"b": {"b": 16}, "c": {"c": 16}, "d": {"d": 16}}, {}, "the table holds 40"),
        ({}, {"b": {"c": 1}}, "transit traffic may only go direct"),
        ({"z": {"b": 1}}, {}, "unknown destination block"),
        ({"a": {"b": 1}}, {}, "does not route to itself"),
        ({"b": {"a": 1}}, {}, "is not a neighbour block"),
        ({"b": {"zz": 1}}, {}, "is not a neighbour block"),
        ({"b": {"c": 0}}, {}, "no next hop with a positive weight"),
    ],
)
def test_malformed_groups_are_invalid_argument_and_change_nothing(
    served: ServedGroups, source: dict[str, dict[str, int]], transit: dict[str, dict[str, int]],
    message: str
) -> None:
    with served(max_group_entries=16, table_capacity=40) as (device, _, client, _):
        client.set_groups(expected_generation=1, source={"c": {"c": 2}})
        before = client.groups()
        with pytest.raises(InvalidRequest) as info:
            client.set_groups(expected_generation=2, source={"d": {"d": 1}, **source},
                              transit=transit)
        assert message in str(info.value)
        assert info.value.code is ErrorCode.INVALID
        assert info.value.transport_code in _refusal_codes(served is served_switch, message)
        assert client.groups() == before
        assert device.generation == 2


#: the transport codes a refusal may carry: the native service refuses INVALID_ARGUMENT; a P4
#: switch refuses a group past its budget RESOURCE_EXHAUSTED for that entity, and the driver
#: itself a destination with no IPv4 prefix (it cannot name it to the switch)
_P4_CODES = {"more than the 16 a group holds": (grpc.StatusCode.RESOURCE_EXHAUSTED,),
             "the table holds 40": (grpc.StatusCode.RESOURCE_EXHAUSTED,),
             "unknown destination block": (None,)}


def _refusal_codes(native: bool, message: str) -> tuple[grpc.StatusCode | None, ...]:
    if native:
        return (grpc.StatusCode.INVALID_ARGUMENT,)
    return _P4_CODES.get(message, (grpc.StatusCode.INVALID_ARGUMENT,))


def test_drain_and_undrain_ports(transport: str) -> None:
    with served_switch_over(transport) as (device, _, client, _):
        assert client.drain([1, 4]) == {1, 4}
        assert client.drain([4, 5]) == {1, 4, 5}
        assert [p.port for p in client.ports() if p.drained] == [1, 4, 5]
        assert not device.forwarding_state().installed[1] < 0  # membership kept, not used
        assert client.undrain([4, 1]) == {5}
        with pytest.raises(InvalidRequest, match="unknown port 8"):
            client.drain([0, 8])
        assert client.undrain([]) == {5}


def test_counters_start_at_zero_for_every_port_and_destination(transport: str) -> None:
    with served_switch_over(transport, num_ports=4) as (_, _, client, _):
        counters = client.counters()
    assert sorted(counters.ports) == [0, 1, 2, 3]
    assert all(c.tx_bytes == c.rx_bytes == c.tx_drops == 0 for c in counters.ports.values())
    assert counters.egress_bytes == {"b": 0, "c": 0, "d": 0}
    assert counters.no_route_drops == 0


def test_health_and_reflection_are_served() -> None:
    with served_switch() as (_, agent, client, _):
        assert client.is_serving()
        channel = grpc.insecure_channel(agent.address)
        try:
            services = set(ProtoReflectionDescriptorDatabase(channel).get_services())
        finally:
            channel.close()
    assert "heliostat.southbound.v1.PacketSwitchService" in services
    assert "grpc.health.v1.Health" in services
