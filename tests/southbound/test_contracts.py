"""The device contracts: a transport registered through the registry drives FabricDrivers
without gRPC; a devices file names a transport per capability; an unknown one is an error
naming the file and key; the gRPC clients satisfy the contracts."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.drivers import DevicesMismatch, FabricDrivers, PushFailed
from optimizer.config import load_fabric
from optimizer.errors import ConfigError
from optimizer.fabric import Fabric
from optimizer.topology import Circuit, uniform_mesh
from southbound import contracts
from southbound.contracts import (
    CIRCUITS,
    COUNTERS,
    EVENTS,
    GROUPS,
    OCS_CAPABILITIES,
    SWITCH_CAPABILITIES,
)
from southbound.devices import CapabilityRoute, DeviceConfig, load_devices_file, write_devices_file
from southbound.errors import ErrorCode, InvalidRequest, StaleGeneration
from southbound.fencing import NoElection
from southbound.grpc_native.ocs_client import OcsClient
from southbound.grpc_native.switch_client import SwitchClient
from southbound.registry import ComposedSwitch, DriverRegistry, UnknownTransport, default_registry
from southbound.types import (
    ApplyResult,
    CrossConnect,
    CrossConnectTable,
    GroupBudget,
    NextHopGroups,
    OcsEvent,
    OcsInfo,
    OcsPortStatus,
    PortCounters,
    SetGroupsResult,
    SwitchCounters,
    SwitchPort,
)
from tests.support import ROOT

FABRIC = ROOT / "configs" / "fabric-8.yaml"


class MemorySwitch:
    """A switch held in memory: every switch capability, compare-and-set on a generation."""

    def __init__(self, device: DeviceConfig) -> None:
        self.name, self.address = device.name, device.address
        self.generation = 1
        self.source: dict[str, dict[str, int]] = {}
        self.transit: dict[str, dict[str, int]] = {}
        self.drained: set[int] = set()
        self.closed = 0
        self.epoch: Any = NoElection()

    def groups(self, deadline_s: float | None = None) -> NextHopGroups:
        return NextHopGroups(self.generation, dict(self.source), dict(self.transit), 0)

    def budget(self) -> GroupBudget:
        return GroupBudget(128, 49_152)

    def set_groups(
        self,
        *,
        expected_generation: int,
        source: Mapping[str, Mapping[str, int]] | None = None,
        transit: Mapping[str, Mapping[str, int]] | None = None,
        replace: bool = True,
        delete_source: Iterable[str] = (),
        delete_transit: Iterable[str] = (),
        request_id: str | None = None,
    ) -> SetGroupsResult:
        if expected_generation != self.generation:
            raise StaleGeneration(self.name, "moved on", current_generation=self.generation)
        self.source = {d: dict(g) for d, g in (source or {}).items()}
        self.transit = {d: dict(g) for d, g in (transit or {}).items()}
        self.generation += 1
        return SetGroupsResult(self.generation, False, 0, request_id or "")

    def counters(self) -> SwitchCounters:
        return SwitchCounters(time_s=1.0, ports={0: PortCounters(0, tx_bytes=10)})

    def ports(self) -> list[SwitchPort]:
        return [SwitchPort(0, True, 0 in self.drained, 100.0, None, None)]

    def drain(self, ports: Iterable[int]) -> frozenset[int]:
        self.drained |= set(ports)
        return frozenset(self.drained)

    def undrain(self, ports: Iterable[int]) -> frozenset[int]:
        self.drained -= set(ports)
        return frozenset(self.drained)

    def close(self) -> None:
        self.closed += 1


class MemoryOcs:
    """An OCS held in memory: circuits and events."""

    def __init__(self, device: DeviceConfig, connects: Iterable[CrossConnect] = ()) -> None:
        self.name = device.name
        self.generation = 1
        self.connects = set(connects)
        self.closed = 0

    def device_info(self) -> OcsInfo:
        return OcsInfo(self.name, 64, "any", (), (), self.generation, 0.05, True)

    def cross_connects(self, deadline_s: float | None = None) -> CrossConnectTable:
        return CrossConnectTable(self.generation, frozenset(self.connects))

    def apply(
        self,
        *,
        expected_generation: int,
        add: Iterable[CrossConnect] = (),
        remove: Iterable[CrossConnect] = (),
        request_id: str | None = None,
    ) -> ApplyResult:
        if expected_generation != self.generation:
            raise StaleGeneration(self.name, "moved on")
        remove = set(remove)
        if not remove <= self.connects:
            raise InvalidRequest(self.name, "removes circuits it does not hold")
        self.connects = (self.connects - remove) | set(add)
        self.generation += 1
        return ApplyResult(self.generation, False, request_id or "")

    def port_status(self, ports: Iterable[int] = ()) -> list[OcsPortStatus]:
        return [OcsPortStatus(p, "any", True, -3.0, 0.0, None) for p in ports]

    def events(self, deadline_s: float = 3600.0) -> _NoEvents:
        return _NoEvents()

    def close(self) -> None:
        self.closed += 1


class _NoEvents:
    def __iter__(self) -> Iterator[OcsEvent]:
        return iter(())

    def cancel(self) -> None:
        return None


class MemoryTransport:
    """A registry transport "memory": its drivers, by device name, for the test to inspect."""

    def __init__(self, fabric: Fabric) -> None:
        self.switches: dict[str, MemorySwitch] = {}
        self.ocs: dict[str, MemoryOcs] = {}
        self._mesh = uniform_mesh(fabric)

    def switch(self, device: DeviceConfig) -> MemorySwitch:
        self.switches[device.name] = MemorySwitch(device)
        return self.switches[device.name]

    def optical(self, device: DeviceConfig) -> MemoryOcs:
        held = [CrossConnect(c.a, c.b) for c in self._mesh if c.ocs == device.name]
        self.ocs[device.name] = MemoryOcs(device, held)
        return self.ocs[device.name]

    def register(self, registry: DriverRegistry) -> None:
        for capability in SWITCH_CAPABILITIES:
            registry.register(capability, "memory", self.switch)
        for capability in OCS_CAPABILITIES:
            registry.register(capability, "memory", self.optical)


def _devices(fabric: Fabric, transport: str = "memory") -> dict[str, DeviceConfig]:
    names = [(b, "block") for b in fabric.block_names] + [(o.name, "ocs") for o in fabric.ocs]
    return {n: DeviceConfig(n, k, f"127.0.0.1:{i + 1}", transport=transport)
            for i, (n, k) in enumerate(names)}


def test_a_memory_transport_drives_the_fabric_drivers_without_grpc() -> None:
    fabric = load_fabric(FABRIC)
    registry = DriverRegistry()  # no gRPC transport in it at all
    memory = MemoryTransport(fabric)
    memory.register(registry)
    drivers = FabricDrivers(fabric, _devices(fabric), registry=registry, workers=2)
    try:
        b1, b2 = fabric.block_names[:2]
        assert drivers.switches[b1] is memory.switches[b1]  # one driver serves every capability
        poll = drivers.poll()
        assert not poll.errors
        assert poll.counters[b1].ports[0].tx_bytes == 10
        ocs = fabric.ocs[0].name
        assert poll.ocs[ocs].circuits == {Circuit(ocs, c.a, c.b) for c in memory.ocs[ocs].connects}

        generations = drivers.push_groups({b1: {b2: {b2: 3}}}, "te-1")
        assert generations == {b1: 2} and memory.switches[b1].source == {b2: {b2: 3}}
        drivers.drain({b1: [0, 1]})
        assert memory.switches[b1].drained == {0, 1}
        drivers.undrain({b1: [1]})
        assert memory.switches[b1].drained == {0}

        circuit = next(iter(poll.ocs[ocs].circuits))
        generation = drivers.apply_ocs(ocs, poll.ocs[ocs].generation, [], [circuit], "stage-1")
        assert generation == 2 and CrossConnect(circuit.a, circuit.b) not in memory.ocs[ocs].connects
        with pytest.raises(StaleGeneration):
            drivers.apply_ocs(ocs, 1, [], [], "stage-2")
    finally:
        drivers.close()
    assert memory.switches[b1].closed == 1 and memory.ocs[ocs].closed == 1


def test_a_push_refused_by_a_memory_device_is_reported_per_block() -> None:
    fabric = load_fabric(FABRIC)
    registry = DriverRegistry()
    memory = MemoryTransport(fabric)
    memory.register(registry)
    with_drivers = FabricDrivers(fabric, _devices(fabric), registry=registry, workers=2)
    b1, b2 = fabric.block_names[:2]

    def refuse(**_: Any) -> SetGroupsResult:
        raise InvalidRequest(b1, "table full")

    memory.switches[b1].set_groups = refuse  # type: ignore[method-assign]
    try:
        with pytest.raises(PushFailed) as info:
            with_drivers.push_groups({b1: {b2: {b2: 1}}, b2: {b1: {b1: 1}}}, "te-2")
        assert set(info.value.failures) == {b1} and "table full" in info.value.failures[b1]
        assert memory.switches[b2].source == {b1: {b1: 1}}
    finally:
        with_drivers.close()


def test_capabilities_from_different_transports_compose_into_one_switch() -> None:
    fabric = load_fabric(FABRIC)
    registry = DriverRegistry()
    memory, groups_only = MemoryTransport(fabric), MemoryTransport(fabric)
    memory.register(registry)
    registry.register(GROUPS, "p4-memory", groups_only.switch)
    device = DeviceConfig("b1", "block", "mem:1", transport="memory",
                          routes=(CapabilityRoute("groups", "p4-memory", "mem:9559"),))
    switch = registry.switch(device)
    assert isinstance(switch, ComposedSwitch)
    switch.set_groups(expected_generation=1, source={"b2": {"b2": 1}})
    assert groups_only.switches["b1"].source == {"b2": {"b2": 1}} and memory.switches["b1"].source == {}
    assert groups_only.switches["b1"].address == "mem:9559" and memory.switches["b1"].address == "mem:1"
    switch.drain([3])
    assert memory.switches["b1"].drained == {3}
    elector = NoElection()
    switch.epoch = elector  # the drivers' fencing reaches every part
    assert groups_only.switches["b1"].epoch is elector and memory.switches["b1"].epoch is elector
    switch.close()
    assert groups_only.switches["b1"].closed == 1 and memory.switches["b1"].closed == 1  # counters+drain: one


def _write(tmp_path: Path, devices: dict[str, Any], **top: Any) -> Path:
    path = tmp_path / "devices.yaml"
    path.write_text(yaml.safe_dump({"version": 1, **top, "devices": devices}))
    return path


def test_a_devices_file_names_a_transport_per_capability(tmp_path: Path) -> None:
    path = _write(tmp_path, {
        "b1": {"kind": "block", "address": "10.0.0.1:9000",
               "capabilities": {"groups": {"transport": "p4runtime", "address": "10.0.0.1:9559"},
                                "counters": "gnmi"}},
        "o1": {"kind": "ocs", "address": "10.0.0.9:830", "transport": "netconf"},
    }, prefixes={"b1": "10.1.0.0/24"})
    devices = load_devices_file(path)
    b1 = devices["b1"]
    assert b1.route("groups") == CapabilityRoute("groups", "p4runtime", "10.0.0.1:9559")
    assert b1.route("counters") == CapabilityRoute("counters", "gnmi", "10.0.0.1:9000")
    assert b1.route("drain") == CapabilityRoute("drain", "grpc", "10.0.0.1:9000")
    assert devices["o1"].route("circuits").transport == "netconf"
    out = tmp_path / "again.yaml"
    write_devices_file(out, devices)
    assert load_devices_file(out) == devices


@pytest.mark.parametrize(
    ("capabilities", "key", "problem"),
    [
        ({"colour": "grpc"}, "devices.b1.capabilities.colour", "unknown capability"),
        ({"circuits": "netconf"}, "devices.b1.capabilities.circuits", "a block has no circuits"),
        ({"groups": {"address": "h:1"}}, "devices.b1.capabilities.groups.transport", "required"),
        ({"groups": {"transport": "p4", "port": 1}}, "devices.b1.capabilities.groups.port", "unknown key"),
        ({"groups": {"transport": "p4", "address": "nohost"}}, "devices.b1.capabilities.groups.address",
         "host:port"),
    ],
)
def test_bad_capabilities_name_the_file_and_key(
    tmp_path: Path, capabilities: dict[str, Any], key: str, problem: str
) -> None:
    path = _write(tmp_path, {"b1": {"kind": "block", "address": "h:1", "capabilities": capabilities}})
    with pytest.raises(ConfigError) as info:
        load_devices_file(path)
    assert str(info.value).startswith(f"{path}: {key}:") and problem in str(info.value)


def test_an_unregistered_transport_is_an_error_naming_the_file_and_key(tmp_path: Path) -> None:
    fabric = load_fabric(FABRIC)
    entries: dict[str, Any] = {n: {"kind": d.kind, "address": "127.0.0.1:1"}
                               for n, d in _devices(fabric).items()}
    b1 = fabric.block_names[0]
    entries[b1]["capabilities"] = {"groups": "openflow"}
    devices = load_devices_file(_write(tmp_path, entries))
    registry = default_registry()
    with pytest.raises(UnknownTransport) as info:
        registry.check(devices)
    assert isinstance(info.value, ConfigError)
    assert str(info.value).startswith(f"{tmp_path / 'devices.yaml'}: devices.{b1}.capabilities.groups: ")
    assert ("no driver for transport 'openflow' and capability 'groups' (registered: grpc, "
            "p4runtime)") in str(info.value)
    with pytest.raises(DevicesMismatch, match=f"devices.{b1}.capabilities.groups"):
        FabricDrivers(fabric, devices, registry=registry)


@pytest.mark.parametrize(
    ("client", "protocol"),
    [(SwitchClient, contracts.PacketSwitch), (OcsClient, contracts.OpticalSwitch),
     (ComposedSwitch, contracts.PacketSwitch)],
)
def test_the_drivers_have_every_method_of_their_contract(client: type, protocol: type) -> None:
    wanted = {n for c in protocol.__mro__ if c.__module__ == contracts.__name__ for n in vars(c)
              if not n.startswith("_") and callable(vars(c)[n])}
    assert wanted >= {"close"}
    for name in wanted:
        ours = inspect.signature(getattr(protocol, name))
        theirs = inspect.signature(getattr(client, name))
        assert list(theirs.parameters) == list(ours.parameters), f"{client.__name__}.{name}"


def test_each_capability_belongs_to_its_kinds() -> None:
    assert contracts.CAPABILITIES == {"groups": ("block", "spine"), "counters": ("block", "spine"),
                                      "drain": ("block", "spine"), "circuits": ("ocs",), "events": ("ocs",)}
    assert {c.name for c in (GROUPS, COUNTERS, CIRCUITS, EVENTS)} <= set(contracts.CAPABILITIES)
    assert ErrorCode("fenced") is ErrorCode.FENCED


def test_config_check_reports_an_unregistered_transport(tmp_path: Path) -> None:
    from controller.commands.config_check import check_controller_config

    fabric = load_fabric(ROOT / "configs" / "fabric-4.yaml")
    devices = _devices(fabric, transport="grpc")
    devices["ocs1"] = DeviceConfig("ocs1", "ocs", "127.0.0.1:7", transport="p4runtime")
    write_devices_file(tmp_path / "devices.yaml", devices)
    config = tmp_path / "controller.yaml"
    config.write_text(yaml.safe_dump({"fabric": str(ROOT / "configs" / "fabric-4.yaml"),
                                      "devices": str(tmp_path / "devices.yaml"),
                                      "store": str(tmp_path / "journal.db")}))
    with pytest.raises(UnknownTransport, match=r"devices.yaml: devices.ocs1.transport: no driver for "
                                               r"transport 'p4runtime' and capability 'circuits'"):
        check_controller_config(config)


def test_a_device_whose_second_driver_fails_closes_the_first() -> None:
    fabric = load_fabric(FABRIC)
    registry = DriverRegistry()
    memory = MemoryTransport(fabric)
    memory.register(registry)

    def broken(device: DeviceConfig) -> MemorySwitch:
        raise OSError("no route to the P4Runtime server")

    registry.register(COUNTERS, "broken", broken)
    device = DeviceConfig("b1", "block", "127.0.0.1:1", transport="memory",
                          routes=(CapabilityRoute("counters", "broken", "127.0.0.1:2"),))
    with pytest.raises(OSError, match="no route"):
        registry.switch(device)
    assert memory.switches["b1"].closed == 1
