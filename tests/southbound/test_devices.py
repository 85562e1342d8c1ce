"""The devices file loader and the driver registry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from optimizer.errors import ConfigError
from southbound.contracts import SWITCH_CAPABILITIES
from southbound.devices import DeviceConfig, load_devices_file, write_devices_file
from southbound.grpc_native.ocs_client import OcsClient
from southbound.grpc_native.switch_client import SwitchClient
from southbound.registry import DriverRegistry, UnknownTransport, default_registry
from tests.support.southbound_fixtures import served_ocs


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "devices.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_loads_devices_with_defaults_and_overrides(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("x")
    path = _write(
        tmp_path,
        {
            "version": 1,
            "defaults": {"deadline_s": 2.5, "max_attempts": 2, "tls": {"ca_cert": "ca.pem"}},
            "devices": {
                "ocs-0": {"kind": "ocs", "address": "127.0.0.1:4000"},
                "blk-a": {"kind": "block", "address": "127.0.0.1:4001", "tls": None,
                          "deadline_s": 1},
            },
        },
    )
    devices = load_devices_file(path)
    assert set(devices) == {"ocs-0", "blk-a"}
    ocs = devices["ocs-0"]
    assert (ocs.kind, ocs.address, ocs.transport) == ("ocs", "127.0.0.1:4000", "grpc")
    assert ocs.options.deadline_s == 2.5 and ocs.options.retry.max_attempts == 2
    assert ocs.tls is not None and ocs.tls.ca_cert == tmp_path / "ca.pem"
    assert devices["blk-a"].tls is None and devices["blk-a"].options.deadline_s == 1.0


@pytest.mark.parametrize(
    ("data", "key", "problem"),
    [
        ({"devices": {"x": {"kind": "router", "address": "h:1"}}}, "devices.x.kind", "one of"),
        ({"devices": {"x": {"kind": "ocs", "address": "nohost"}}}, "devices.x.address", "host:port"),
        ({"devices": {"x": {"kind": "ocs", "address": "h:1", "colour": 1}}}, "devices.x.colour",
         "unknown key"),
        ({"devices": {"x": {"kind": "ocs", "address": "h:1", "deadline_s": -1}}},
         "devices.x.deadline_s", "must be > 0"),
        ({"devices": {"x": {"kind": "ocs", "address": "h:1", "max_attempts": 0}}},
         "devices.x.max_attempts", ">= 1"),
        ({"devices": {"x": {"kind": "ocs", "address": "h:1", "tls": {"ca_cert": "nope.pem"}}}},
         "devices.x.tls.ca_cert", "no such file"),
        ({"devices": {"x": {"kind": "ocs", "address": "h:1", "tls": {"client_cert": "c"}}}},
         "devices.x.tls.ca_cert", "required"),
        ({"devices": {}}, "devices", "non-empty"),
        ({"devices": {"x": {"kind": "ocs", "address": "h:1"}}, "extra": 1}, "extra", "unknown key"),
        ({"version": 2, "devices": {"x": {"kind": "ocs", "address": "h:1"}}}, "version",
         "unsupported"),
        ({"defaults": {"address": "h:1"}, "devices": {"x": {"kind": "ocs", "address": "h:1"}}},
         "defaults.address", "unknown key"),
    ],
)
def test_invalid_files_name_the_file_and_the_key(
    tmp_path: Path, data: object, key: str, problem: str
) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(ConfigError) as info:
        load_devices_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {key}:"), message
    assert problem in message


def test_unreadable_and_unparsable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_devices_file(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("devices: [unclosed")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_devices_file(bad)


def test_written_file_reads_back(tmp_path: Path) -> None:
    devices = {
        "o": DeviceConfig("o", "ocs", "127.0.0.1:1"),
        "b": DeviceConfig("b", "block", "127.0.0.1:2", transport="openflow"),
    }
    path = tmp_path / "out.yaml"
    write_devices_file(path, devices)
    assert load_devices_file(path) == devices


def test_registry_makes_grpc_clients_that_talk_to_the_device(tmp_path: Path) -> None:
    with served_ocs() as (_, agent, _, _):
        path = _write(tmp_path, {"devices": {
            "ocs-t": {"kind": "ocs", "address": agent.address},
            "blk": {"kind": "block", "address": "127.0.0.1:1"},
        }})
        devices = load_devices_file(path)
        registry = default_registry()
        with registry.create(devices["ocs-t"]) as client:
            assert isinstance(client, OcsClient)
            assert client.device_info().radix == 16
        switch = registry.create(devices["blk"])
        assert isinstance(switch, SwitchClient)
        switch.close()


def test_registry_plugs_in_another_transport_and_reports_missing_ones() -> None:
    registry = DriverRegistry()
    made: list[str] = []

    def openflow(device: DeviceConfig) -> Any:
        made.append(device.name)
        return "of-client"

    for capability in SWITCH_CAPABILITIES:
        registry.register(capability, "openflow", openflow)
    device = DeviceConfig("blk", "block", "127.0.0.1:6653", transport="openflow")
    assert registry.switch(device) == "of-client" and made == ["blk"]  # one driver for all three
    assert registry.transports() == {"openflow"}
    with pytest.raises(UnknownTransport, match="no driver for transport 'grpc' and capability 'circuits'"):
        registry.create(DeviceConfig("o", "ocs", "127.0.0.1:1"))


def test_written_tls_paths_are_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from southbound.tls import TlsConfig

    certs = tmp_path / "certs"
    certs.mkdir()
    for name in ("ca.pem", "c.pem", "c.key"):
        (certs / name).write_text("x")
    monkeypatch.chdir(tmp_path)
    tls = TlsConfig(Path("certs/ca.pem"), Path("certs/c.pem"), Path("certs/c.key"), "dev")
    out = tmp_path / "elsewhere"
    out.mkdir()
    write_devices_file(out / "d.yaml", {"o": DeviceConfig("o", "ocs", "127.0.0.1:1", tls=tls)})
    loaded = load_devices_file(out / "d.yaml")["o"].tls
    assert loaded is not None
    assert loaded.ca_cert == certs / "ca.pem" and loaded.client_key == certs / "c.key"
    assert loaded.server_name == "dev"
