"""Both fabric emulators offer one interface (emulation.backend.FabricBackend): the flow-level
one is driven through it for real; the packet-level one, which needs root, is checked
structurally and by the parts that run without a network."""

from __future__ import annotations

import inspect
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from emulation.backend import FabricBackend
from emulation.fabric import EmulatedFabric, FabricError
from emulation.mininet.fabric import PacketFabric, PacketFabricError
from southbound.devices import load_devices_file
from southbound.errors import DeviceUnavailable
from southbound.options import CallOptions, RetryPolicy
from southbound.registry import default_registry
from southbound.types import SwitchCounters
from tests.support import ROOT

FABRIC_4 = ROOT / "configs" / "fabric-4.yaml"
FAST = CallOptions(deadline_s=1.0, retry=RetryPolicy(max_attempts=1))


def _members(protocol: type) -> dict[str, inspect.Signature | None]:
    out: dict[str, inspect.Signature | None] = {}
    for name, value in vars(protocol).items():
        if name.startswith("_") and name not in ("__enter__", "__exit__"):
            continue
        if isinstance(value, property):
            out[name] = None
        elif callable(value):
            out[name] = inspect.signature(value)
    return out


@pytest.mark.parametrize("backend", [EmulatedFabric, PacketFabric])
def test_both_emulators_have_every_member_of_the_interface(backend: type) -> None:
    members = _members(FabricBackend)
    assert {"start", "stop", "devices_file", "fail_link", "restore_link", "kill_agents",
            "restart_agents", "counters"} <= set(members)
    for name, wanted in members.items():
        ours = inspect.getattr_static(backend, name)
        if wanted is None:
            assert isinstance(ours, property), f"{backend.__name__}.{name} is not a property"
            continue
        got = inspect.signature(ours)
        required = [p for p in got.parameters.values() if p.default is inspect.Parameter.empty]
        assert [p.name for p in required] == [p for p in wanted.parameters], f"{backend.__name__}.{name}{got}"
    assert "fabric" in FabricBackend.__annotations__


def _port_up(backend: FabricBackend, device: str, port: int) -> bool:
    devices = load_devices_file(backend.devices_file)
    with closing(default_registry().switch(devices[device])) as switch:
        return next(p.oper_up for p in switch.ports() if p.port == port)


def exercise(backend: FabricBackend) -> None:
    """The interface's verbs, as a backend-neutral test or demo would use them."""
    with backend:
        block = backend.fabric.block_names[0]
        devices = load_devices_file(backend.devices_file)
        assert set(devices) >= set(backend.fabric.block_names)
        counters = backend.counters(block)
        assert isinstance(counters, SwitchCounters) and set(counters.ports) >= {0}
        assert _port_up(backend, block, 0)
        backend.fail_link(block, 0)
        assert not _port_up(backend, block, 0)
        backend.restore_link(block, 0)
        assert _port_up(backend, block, 0)
        backend.kill_agents()
        with closing(default_registry().switch(devices[block])) as switch, pytest.raises(DeviceUnavailable):
            switch.ports()
        backend.restart_agents()
        assert _port_up(backend, block, 0)


def test_the_flow_level_fabric_runs_through_the_interface() -> None:
    fabric = EmulatedFabric.from_config(FABRIC_4)
    exercise(fabric)
    with pytest.raises(FabricError, match="no block or spine switch 'ocs1'"):
        fabric.counters("ocs1")


def test_the_flow_level_counters_are_what_the_device_api_reports() -> None:
    with EmulatedFabric.from_config(FABRIC_4) as fabric:
        fabric.set_demand(np.full((4, 4), 10.0) - np.diag([10.0] * 4))
        fabric.step(2.0)
        devices = load_devices_file(fabric.devices_file)
        with closing(default_registry().switch(devices["b1"])) as switch:
            assert fabric.counters("b1") == switch.counters()
        assert sum(p.tx_bytes for p in fabric.counters("b1").ports.values()) > 0


def test_the_packet_fabric_names_the_interface_it_would_cut(tmp_path: Path) -> None:
    fabric = PacketFabric.from_config(FABRIC_4, tmp_path)  # planned, not started
    with pytest.raises(PacketFabricError, match="ocs1 is an OCS"):
        fabric.fail_link("ocs1", 0)
    with pytest.raises(PacketFabricError, match="no device 'b9'"):
        fabric.fail_link("b9", 0)
    with pytest.raises(PacketFabricError, match=r"b1 has no fabric port 0 \(or the network is not up\)"):
        fabric.fail_link("b1", 0)
    bridge = fabric.plan.switch_of("b1")
    fabric.interfaces = [f"{bridge}-eth{p}" for p in range(1, 40)]
    assert fabric.interface_of("b1", 0).startswith(f"{bridge}-eth")
    assert fabric.interface_of("b1", 0) != fabric.interface_of("b1", 1)
    with pytest.raises(PacketFabricError, match="no device 'b1' is up"):
        fabric.counters("b1")
