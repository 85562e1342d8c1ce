"""NetconfOcs beyond the shared contract: the registry entry from a devices file, key login,
a lost notification session, and configuration errors naming the key."""

from __future__ import annotations

import threading
from pathlib import Path

import paramiko
import pytest

from emulation.clock import EmulatedClock
from emulation.ocs_device import OcsDevice
from emulation.standard.netconf import start_netconf_server
from optimizer.errors import ConfigError
from southbound.devices import DeviceConfig, Endpoint, parse_devices
from southbound.errors import DeviceError, DeviceUnavailable, ErrorCode
from southbound.registry import DriverRegistry
from southbound.standard.netconf import transport
from southbound.standard.netconf.driver import NetconfOcs
from southbound.types import CrossConnect as XC
from southbound.types import OcsEvent
from tests.support.netconf_support import PASSWORD, USERNAME, served_netconf_ocs
from tests.support.southbound_fixtures import FAST


def test_a_devices_file_entry_with_a_netconf_endpoint_gets_the_netconf_driver() -> None:
    with served_netconf_ocs() as (device, server, _, _):
        devices = parse_devices({"version": 1, "devices": {"ocs-n": {
            "kind": "ocs", "netconf": {"address": server.address, "username": USERNAME,
                                       "password": PASSWORD}}}})
        registry = DriverRegistry()
        transport.register(registry)
        registry.check(devices)
        ocs = registry.ocs(devices["ocs-n"])
        try:
            assert isinstance(ocs, NetconfOcs)
            assert ocs.device_info().name == device.name
            assert ocs.apply(expected_generation=1, add=[XC(0, 8)]).generation == 2
        finally:
            ocs.close()
    assert device.generation == 2


def test_login_with_a_key_file(tmp_path: Path) -> None:
    key = paramiko.ECDSAKey.generate()
    key_file = tmp_path / "id_ecdsa"
    key.write_private_key_file(str(key_file))
    device = OcsDevice("ocs-k", 8, EmulatedClock())
    server = start_netconf_server(device, username=USERNAME, password="unused-" + PASSWORD,
                                  authorized_key=paramiko.ECDSAKey(data=key.asbytes()))
    config = DeviceConfig(name="ocs-k", kind="ocs", address="", transport="netconf", options=FAST,
                          endpoints=(Endpoint("netconf", server.address, USERNAME, key_file=key_file),))
    client = NetconfOcs(config)
    try:
        assert client.device_info().radix == 8
    finally:
        client.close()
        server.stop()
        device.close()


def test_a_pinned_host_key_admits_its_device_and_refuses_another() -> None:
    device = OcsDevice("ocs-h", 8, EmulatedClock())
    server = start_netconf_server(device, username=USERNAME, password=PASSWORD)
    own = f"{server.host_key.get_name()} {server.host_key.get_base64()}"
    other = paramiko.ECDSAKey.generate()
    impostor = f"{other.get_name()} {other.get_base64()}"

    def client(host_key: str) -> NetconfOcs:
        login = Endpoint("netconf", server.address, USERNAME, PASSWORD, host_key=host_key)
        return NetconfOcs(DeviceConfig(name="ocs-h", kind="ocs", address="", transport="netconf",
                                       options=FAST, endpoints=(login,)))
    try:
        with client(own) as good:
            assert good.device_info().radix == 8
        with client(impostor) as bad, pytest.raises(DeviceError) as refused:
            bad.device_info()
        assert refused.value.code is ErrorCode.DENIED and "host key" in refused.value.message
        assert device.generation == 1  # nothing was sent to it
    finally:
        server.stop()
        device.close()


def test_event_stream_raises_unavailable_when_the_server_goes_away() -> None:
    with served_netconf_ocs(switching_time_s=0.0) as (_, server, client, _):
        stream = client.events()
        events: list[OcsEvent] = []
        failures: list[Exception] = []

        def read() -> None:
            try:
                events.extend(stream)
            except DeviceUnavailable as exc:
                failures.append(exc)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        client.apply(expected_generation=1, add=[XC(0, 8)])
        server.stop()
        reader.join(10)
        server.start()
    assert not reader.is_alive()
    assert len(failures) == 1 and "lost" in str(failures[0])


def test_a_device_without_a_netconf_login_is_a_config_error_naming_the_key() -> None:
    bare = DeviceConfig(name="ocs-x", kind="ocs", address="127.0.0.1:1", source="devices.yaml")
    with pytest.raises(ConfigError, match=r"devices.yaml: devices.ocs-x.netconf: .*no netconf endpoint"):
        NetconfOcs(bare)
    no_secret = DeviceConfig(name="ocs-x", kind="ocs", address="", source="devices.yaml",
                             endpoints=(Endpoint("netconf", "127.0.0.1:1", USERNAME),))
    with pytest.raises(ConfigError, match="password or key_file"):
        NetconfOcs(no_secret)


def test_the_driver_has_every_method_of_the_optical_switch_contract() -> None:
    import inspect

    from southbound import contracts

    protocol = contracts.OpticalSwitch
    wanted = {n for c in protocol.__mro__ if c.__module__ == contracts.__name__ for n in vars(c)
              if not n.startswith("_") and callable(vars(c)[n])}
    assert {"apply", "events", "port_status", "close"} <= wanted
    for name in wanted:
        ours = inspect.signature(getattr(protocol, name))
        theirs = inspect.signature(getattr(NetconfOcs, name))
        assert list(theirs.parameters) == list(ours.parameters), name


def test_a_reply_without_the_module_state_is_a_device_error() -> None:
    from southbound.errors import DeviceError, ErrorCode

    with served_netconf_ocs() as (_, server, client, _):
        server.datastore.fill = lambda data, subtree, config_only: None  # type: ignore[method-assign]
        with pytest.raises(DeviceError) as unreadable:
            client.cross_connects()
    assert unreadable.value.code is ErrorCode.INTERNAL and "fence-state" in str(unreadable.value)
