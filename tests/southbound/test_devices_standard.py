"""The devices file names the standard protocols' endpoints (P4Runtime, gNMI, NETCONF) under the
protocols' own keys; each capability then takes the protocol that serves it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from optimizer.errors import ConfigError
from southbound.devices import dump_devices, load_devices_file, parse_devices, write_devices_file


def _file(tmp_path: Path, devices: dict[str, Any], **top: Any) -> Path:
    path = tmp_path / "devices.yaml"
    path.write_text(yaml.safe_dump({"version": 1, **top, "devices": devices}))
    return path


STANDARD = {
    "a00": {"kind": "block", "p4runtime": "127.0.0.1:9559", "gnmi": "127.0.0.1:9339"},
    "ocs0": {"kind": "ocs", "netconf": {"address": "127.0.0.1:830", "username": "heliostat",
                                        "password": "s3cret",
                                        "host_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 ocs0"}},
}


def test_each_capability_takes_the_standard_protocol_that_serves_it(tmp_path: Path) -> None:
    devices = load_devices_file(_file(tmp_path, STANDARD, prefixes={"a00": "10.0.0.0/24"}))
    block, ocs = devices["a00"], devices["ocs0"]
    routes = {c: (block.route(c).transport, block.route(c).address) for c in ("groups", "counters", "drain")}
    assert routes == {"groups": ("p4runtime", "127.0.0.1:9559"), "counters": ("gnmi", "127.0.0.1:9339"),
                      "drain": ("gnmi", "127.0.0.1:9339")}
    assert {ocs.route(c).transport for c in ("circuits", "events")} == {"netconf"}
    login = ocs.endpoint("netconf")
    assert login is not None and (login.username, login.password) == ("heliostat", "s3cret")
    assert "s3cret" not in repr(login)  # never in logs
    assert block.prefix_of("a00") == "10.0.0.0/24" and block.prefix_of("a01") is None
    # the driver of one capability sees that transport's address, and keeps the rest
    seen = block.for_route(block.route("groups"))
    assert (seen.address, seen.endpoint("gnmi"), seen.prefixes) == (
        "127.0.0.1:9559", block.endpoint("gnmi"), block.prefixes)


def test_a_named_transport_uses_its_endpoint_and_grpc_stays_at_the_address(tmp_path: Path) -> None:
    mixed = {"b": {"kind": "block", "address": "127.0.0.1:7000", "p4runtime": "127.0.0.1:9559",
                   "capabilities": {"counters": "grpc"}}}
    device = load_devices_file(_file(tmp_path, mixed, prefixes={"b": "10.0.0.0/24"}))["b"]
    assert device.route("groups").address == "127.0.0.1:9559"
    counters = device.route("counters")
    assert (counters.transport, counters.address) == ("grpc", "127.0.0.1:7000")
    assert device.route("drain").transport == "grpc"  # no gnmi endpoint: the native service


def test_the_file_round_trips(tmp_path: Path) -> None:
    devices = load_devices_file(_file(tmp_path, STANDARD, prefixes={"a00": "10.0.0.0/24"}))
    again = parse_devices(dump_devices(devices), source="again")
    assert again == devices


def test_a_file_holding_a_netconf_password_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    devices = load_devices_file(_file(tmp_path, STANDARD, prefixes={"a00": "10.0.0.0/24"}))
    written = tmp_path / "written.yaml"
    write_devices_file(written, devices)
    assert written.stat().st_mode & 0o777 == 0o600
    assert load_devices_file(written) == {n: replace(d, source=str(written)) for n, d in devices.items()}


@pytest.mark.parametrize(
    ("devices", "top", "key", "problem"),
    [
        ({"o": {"kind": "ocs", "p4runtime": "h:1"}}, {}, "devices.o.p4runtime", "does not speak p4runtime"),
        ({"b": {"kind": "block", "netconf": {"address": "h:1", "username": "u", "password": "p"}}}, {},
         "devices.b.netconf", "does not speak netconf"),
        ({"o": {"kind": "ocs", "netconf": "h:830"}}, {}, "devices.o.netconf.username", "required"),
        ({"o": {"kind": "ocs", "netconf": {"address": "h:830", "username": "u"}}}, {},
         "devices.o.netconf.password", "a password or a key_file"),
        ({"b": {"kind": "block", "gnmi": {"address": "h:1", "password": "x"}}}, {},
         "devices.b.gnmi.password", "unknown key"),
        ({"b": {"kind": "block", "p4runtime": {"address": "h:1", "device_id": 0}}}, {},
         "devices.b.p4runtime.device_id", ">= 1"),
        ({"b": {"kind": "block"}}, {}, "devices.b.address", "required"),
        ({"b": {"kind": "block", "p4runtime": "h:1"}}, {}, "devices.b.transport", "no address"),
        ({"b": {"kind": "block", "address": "h:1"}}, {"prefixes": {"a": "10.0.0.0/16", "c": "10.0.3.0/24"}},
         "prefixes.c", "overlaps a's 10.0.0.0/16"),
        ({"b": {"kind": "block", "address": "h:1"}}, {"prefixes": {"a": "10.0.0.1/24"}}, "prefixes.a",
         "host bits set"),
        ({"b": {"kind": "block", "address": "h:2", "p4runtime": "h:1"}}, {}, "prefixes",
         "b writes its groups over P4Runtime"),
        ({"o": {"kind": "ocs", "netconf": {"address": "h:830", "username": "u", "password": "p",
                                           "host_key": "AAAAC3NzaC1lZDI1NTE5"}}}, {},
         "devices.o.netconf.host_key", "expected '<key type> <base64>'"),
        ({"o": {"kind": "ocs", "netconf": {"address": "h:830", "username": "u", "password": "p",
                                           "host_key": "ssh-ed25519 not*base64"}}}, {},
         "devices.o.netconf.host_key", "not base64"),
        ({"b": {"kind": "block", "address": "h:2", "gnmi": {"address": "h:1", "sample_interval_s": 0}}}, {},
         "devices.b.gnmi.sample_interval_s", "must be >= 0.01"),
    ],
)
def test_bad_endpoints_and_prefixes_name_the_key(
    tmp_path: Path, devices: dict[str, Any], top: dict[str, Any], key: str, problem: str
) -> None:
    path = _file(tmp_path, devices, **top)
    with pytest.raises(ConfigError, match=problem) as caught:
        load_devices_file(path)
    assert f"{path}: {key}:" in str(caught.value)
