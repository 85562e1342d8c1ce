"""GnmiSwitch's transport: TLS as the native client has it, PROTO and JSON_IETF streams, a
target that stops serving, a spine switch, and how refusals map to the errors family."""

from __future__ import annotations

import dataclasses
import threading

import grpc
import numpy as np
import pytest

from emulation.clock import EmulatedClock
from emulation.spine_device import SpineDevice
from emulation.standard.gnmi.target import gnmi_agent, start_gnmi_target
from emulation.switch_device import StaticLinks
from southbound.errors import DeviceError, DeviceUnavailable, ErrorCode, Fenced, SouthboundError
from southbound.standard.gnmi.driver import GnmiSwitch, _fenced, speed_gbps
from southbound.tls import ServerTlsConfig, TlsConfig
from tests.support.gnmi_support import gnmi_config, wired_block
from tests.support.southbound_fixtures import wait_for
from tests.support.tls_ca import SERVER_NAME, Pki, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_mutual_tls_like_the_native_client(pki: Pki) -> None:
    device, _ = wired_block(4)
    agent = start_gnmi_target(device, ServerTlsConfig(pki.server_cert, pki.server_key, client_ca=pki.ca_cert))
    try:
        good = TlsConfig(pki.ca_cert, pki.client_cert, pki.client_key, SERVER_NAME)
        with GnmiSwitch(dataclasses.replace(gnmi_config("sw-a", agent.address), tls=good),
                        sample_interval_s=0.05) as client:
            assert len(client.ports()) == 4
            assert sorted(client.counters().ports) == [0, 1, 2, 3]
        no_cert = TlsConfig(pki.ca_cert, server_name=SERVER_NAME)
        with GnmiSwitch(dataclasses.replace(gnmi_config("sw-a", agent.address), tls=no_cert)) as client, \
                pytest.raises(DeviceUnavailable):
            client.ports()
    finally:
        agent.stop()


@pytest.mark.parametrize("encoding", ["proto", "json_ietf"])
def test_counters_stream_in_either_encoding(encoding: str) -> None:
    device, _ = wired_block(3)
    device.preset_counter("tx_bytes", np.array([2**64 - 1, 7, 2**40], dtype=np.uint64))
    agent = start_gnmi_target(device)
    try:
        config = gnmi_config("sw-a", agent.address)
        with GnmiSwitch(config, encoding=encoding, sample_interval_s=0.05) as client:
            reading = client.counters()
    finally:
        agent.stop()
    assert [reading.ports[p].tx_bytes for p in range(3)] == [2**64 - 1, 7, 2**40]


def test_a_target_that_stops_serving_breaks_the_stream_until_it_serves_again() -> None:
    device, _ = wired_block(4)
    serving = threading.Event()
    serving.set()
    agent, target = gnmi_agent(device, serving=serving.is_set, sample_interval_s=0.05)
    agent.start()
    try:
        with GnmiSwitch(gnmi_config("sw-a", agent.address), sample_interval_s=0.05) as client:
            client.counters()
            serving.clear()
            wait_for(lambda: _fails(client), 5.0, "the stream to end UNAVAILABLE")
            assert target.streams_ended >= 1
            serving.set()
            wait_for(lambda: not _fails(client), 10.0, "the stream to come back")
    finally:
        agent.stop()


def _fails(client: GnmiSwitch) -> bool:
    try:
        client.counters()
    except DeviceUnavailable:
        return True
    return False


def test_a_spine_switch_over_gnmi() -> None:
    blocks = ("a", "b", "c")
    links = StaticLinks(("a", "b", "c", "sp"), 8)
    for port, block in enumerate(blocks):
        links.connect("sp", port, block, 7)
    spine = SpineDevice("sp", blocks, 4, 400.0, EmulatedClock(), links)
    agent = start_gnmi_target(spine)
    try:
        with GnmiSwitch(gnmi_config("sp", agent.address, kind="spine")) as client:
            ports = client.ports()
            assert client.drain([1]) == {1}
    finally:
        agent.stop()
    assert [(p.peer_block, p.peer_port, p.speed_gbps) for p in ports] == [
        ("a", 7, 400.0), ("b", 7, 400.0), ("c", 7, 400.0), (None, None, 400.0)]
    assert bool(spine.forwarding_state().drained[1])


def test_refusals_map_to_the_errors_family() -> None:
    def error(status: grpc.StatusCode, message: str) -> SouthboundError:
        return DeviceError("sw", message, ErrorCode.INTERNAL, status)

    denied = _fenced(error(grpc.StatusCode.PERMISSION_DENIED, "election_id 3 ... the highest seen, 9: x"), 2)
    assert isinstance(denied, Fenced) and denied.highest_epoch == 8
    vague = _fenced(error(grpc.StatusCode.PERMISSION_DENIED, "not master"), 2)
    assert vague is not None and vague.highest_epoch == 3  # above ours, at least
    other = _fenced(error(grpc.StatusCode.FAILED_PRECONDITION, "election id 4 is stale"), 1)
    assert isinstance(other, Fenced)
    assert _fenced(error(grpc.StatusCode.FAILED_PRECONDITION, "busy"), 1) is None
    assert _fenced(error(grpc.StatusCode.NOT_FOUND, "no interface"), 1) is None
    assert (speed_gbps("openconfig-if-ethernet:SPEED_400GB"), speed_gbps("SPEED_2500MB"),
            speed_gbps("SPEED_UNKNOWN")) == (400.0, 2.5, 0.0)


def test_bad_driver_settings_are_named() -> None:
    config = gnmi_config("sw-a", "127.0.0.1:1")
    with pytest.raises(ValueError, match="drain_leaf"):
        GnmiSwitch(config, drain_leaf="mtu")
    with pytest.raises(ValueError, match="encoding"):
        GnmiSwitch(config, encoding="ascii")
    with pytest.raises(ValueError, match="sample_interval_s"):
        GnmiSwitch(config, sample_interval_s=0)
