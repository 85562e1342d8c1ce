"""GnmiSwitch against the emulated gNMI target over loopback: counters that move with the
traffic, ports with LLDP peers, drains that take ports out of the device's groups, fencing by
master arbitration, and a sampling stream that survives an agent restart."""

from __future__ import annotations

import time

import numpy as np
import pytest

from emulation.counters import switch_counters
from emulation.standard.gnmi.target import gnmi_agent
from southbound.devices import parse_devices
from southbound.errors import DeviceUnavailable, Fenced, InvalidRequest
from southbound.grpc_native import transport as grpc_transport
from southbound.registry import ComposedSwitch, DriverRegistry
from southbound.standard.gnmi import transport as gnmi_transport
from southbound.standard.gnmi.driver import GnmiSwitch
from southbound.types import SwitchCounters
from tests.support.gnmi_support import DeviceEgress, gnmi_config, served_gnmi_switch
from tests.support.southbound_fixtures import served_switch, wait_for


class Epochs:
    """An epoch source that records refusals."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.refusals: list[tuple[str, int]] = []

    def current_epoch(self) -> int:
        return self.epoch

    def refused(self, device: str, highest_epoch: int) -> None:
        self.refusals.append((device, highest_epoch))


def _traffic(device: object, num_ports: int, scale: float, as_of: float) -> None:
    tx = np.arange(1, num_ports + 1) * 1000.0 * scale
    rx = np.arange(1, num_ports + 1) * 3000.0 * scale
    drops = np.full(num_ports, 2000.0 * scale)
    device.add_traffic(tx, rx, drops, np.array([0.0, 10 * scale, 20 * scale, 30 * scale]), 0.0,  # type: ignore[attr-defined]
                       rx_drop=drops / 2, as_of=as_of)


def _matches_device(reading: SwitchCounters, device: object) -> bool:
    truth = switch_counters(device.counters())  # type: ignore[attr-defined]
    fields = ("tx_bytes", "rx_bytes", "tx_packets", "rx_packets", "tx_drops", "rx_drops")
    return reading.time_s == truth.time_s and all(
        getattr(reading.ports[p], f) == getattr(truth.ports[p], f) for p in truth.ports for f in fields)


def test_counters_move_as_traffic_flows() -> None:
    with served_gnmi_switch(num_ports=6) as (device, _, client, _):
        first = client.counters()
        assert sorted(first.ports) == list(range(6)) and first.time_s == 0.0
        assert all(c.tx_bytes == c.rx_bytes == 0 for c in first.ports.values())
        for step in (1, 2, 3):
            _traffic(device, 6, scale=step, as_of=float(step))
            wait_for(lambda: _matches_device(client.counters(), device), 5.0, f"sample {step}")
        last = client.counters()
    assert last.time_s == 3.0
    assert last.ports[2].tx_bytes == 3 * 1000 * (1 + 2 + 3)
    assert last.ports[0].rx_drops == 6  # 1000 + 2000 + 3000 bytes of 1000-byte packets
    assert last.egress_bytes == {"b": 60, "c": 120, "d": 180}  # from the egress source


def test_ports_report_oper_status_speed_and_lldp_peers() -> None:
    with served_gnmi_switch(num_ports=6) as (_, _, client, links):
        links.disconnect("a", 5)
        ports = client.ports()
    assert [p.port for p in ports] == list(range(6))
    assert [(p.peer_block, p.peer_port) for p in ports[:5]] == [
        ("b", 0), ("c", 1), ("d", 2), ("b", 3), ("c", 4)]
    assert all(p.oper_up and p.speed_gbps == 100.0 for p in ports[:5])
    assert not ports[5].oper_up and ports[5].peer_block is None


def test_drain_by_forwarding_viable_keeps_the_link_and_leaves_the_groups() -> None:
    with served_gnmi_switch(num_ports=6) as (device, _, client, _):
        device.set_groups("g", 1, {"b": {"b": 1}}, {}, replace=True)
        assert client.drain([0, 3]) == {0, 3}
        assert list(np.flatnonzero(device.forwarding_state().drained)) == [0, 3]
        ports = {p.port: p for p in client.ports()}
        assert ports[0].drained and ports[0].oper_up and ports[0].peer_block == "b"
        assert client.undrain([0]) == {3}
        assert list(np.flatnonzero(device.forwarding_state().drained)) == [3]
        assert device.forwarding_state().installed[0] == device.nodes.index("b")


def test_drain_by_admin_state_takes_the_link_down() -> None:
    with served_gnmi_switch(num_ports=4, drain_leaf="enabled") as (device, _, client, _):
        assert client.drain([2]) == {2}
        port = {p.port: p for p in client.ports()}[2]
        assert port.drained and not port.oper_up and port.peer_block is None
        assert bool(device.forwarding_state().drained[2])
        assert client.undrain([2]) == frozenset()
        assert {p.port: p for p in client.ports()}[2].oper_up


def test_unknown_port_is_an_invalid_request_and_changes_nothing() -> None:
    with served_gnmi_switch(num_ports=4) as (device, _, client, _):
        with pytest.raises(InvalidRequest, match="unknown port 9"):
            client.drain([1, 9])
        assert not device.forwarding_state().drained.any()


def test_a_stale_election_id_is_fenced() -> None:
    with served_gnmi_switch(num_ports=4) as (device, agent, leader, _):
        leader.epoch = Epochs(7)
        leader.drain([1])
        old = GnmiSwitch(gnmi_config("sw-a", agent.address))
        try:
            old.epoch = stale = Epochs(3)
            with pytest.raises(Fenced) as info:
                old.undrain([1])
            assert info.value.highest_epoch == 7
            assert stale.refusals == [("sw-a", 7)]
            stale.epoch = 0  # no election: election id 1, below too
            with pytest.raises(Fenced):
                old.drain([2])
        finally:
            old.close()
        assert list(np.flatnonzero(device.forwarding_state().drained)) == [1]


def test_the_stream_reconnects_after_the_agent_restarts() -> None:
    with served_gnmi_switch(num_ports=4) as (device, agent, client, _):
        client.counters()
        agent.stop()
        wait_for(lambda: _unavailable(client), 5.0, "the stream to break")
        _traffic(device, 4, scale=1, as_of=5.0)  # the device keeps counting while its agent is down
        agent.start()
        wait_for(lambda: _matches_device(_or_none(client), device), 10.0, "the stream to come back")
        assert client.sampler.streams_opened >= 2


def _unavailable(client: GnmiSwitch) -> bool:
    try:
        client.counters()
    except DeviceUnavailable:
        return True
    return False


def _or_none(client: GnmiSwitch) -> SwitchCounters:
    try:
        return client.counters()
    except DeviceUnavailable:
        return SwitchCounters(time_s=-1.0)


def test_counters_of_a_device_never_up_fail_within_the_deadline() -> None:
    client = GnmiSwitch(gnmi_config("nobody", "127.0.0.1:1"), sample_interval_s=0.05)
    try:
        started = time.monotonic()
        with pytest.raises(DeviceUnavailable):
            client.counters()
        assert time.monotonic() - started < client.options.deadline_s + 1.0
    finally:
        client.close()
        client.close()  # idempotent


def test_close_closes_the_egress_source_once() -> None:
    with served_gnmi_switch(num_ports=2) as (device, agent, _, _):
        egress = DeviceEgress(device)
        client = GnmiSwitch(gnmi_config("sw-a", agent.address), egress=egress)
        client.close()
        client.close()
    assert egress.closed


def test_registry_composes_gnmi_counters_and_drains_with_native_groups() -> None:
    with served_switch(num_ports=4) as (device, native, _, _):
        gnmi, target = gnmi_agent(device)
        gnmi.start()
        try:
            devices = parse_devices({"devices": {"sw-a": {
                "kind": "block", "address": native.address, "gnmi": gnmi.address}}})
            registry = DriverRegistry()
            grpc_transport.register(registry)
            gnmi_transport.register(registry)
            switch = registry.switch(devices["sw-a"])
            try:
                assert isinstance(switch, ComposedSwitch)
                switch.epoch = Epochs(2)
                assert switch.drain([3]) == {3}
                assert bool(device.forwarding_state().drained[3])
                assert target.arbiter.highest("heliostat") == 3  # epoch 2 reached the gNMI part
                assert sorted(switch.counters().ports) == [0, 1, 2, 3]
                assert switch.groups().generation == 1  # over the native service
            finally:
                switch.close()
        finally:
            gnmi.stop()
