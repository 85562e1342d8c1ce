"""Driver registry: (transport, device kind) -> client factory.

The gRPC transport is the only one built in, and the only one Heliostat uses: the packet-level
fabric's OpenFlow agents (``emulation/openflow``) serve the same gRPC services, so the
controller drives them with these clients. A driver for another device API would register
its factories on the registry the controller uses::

    registry = default_registry()
    registry.register("vendor-x", "ocs", VendorXOcsClient)   # hypothetical
    client = registry.create(devices["ocs1"])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from southbound.devices import DeviceConfig
from southbound.grpc_native.ocs_client import OcsClient
from southbound.grpc_native.switch_client import SwitchClient

ClientFactory = Callable[[DeviceConfig], Any]


class UnknownTransport(LookupError):
    """No driver is registered for a device's transport and kind."""


class DriverRegistry:
    def __init__(self) -> None:
        self._factories: dict[tuple[str, str], ClientFactory] = {}

    def register(self, transport: str, kind: str, factory: ClientFactory) -> None:
        """Register (or replace) the factory for devices of ``kind`` over ``transport``."""
        self._factories[(transport, kind)] = factory

    def transports(self) -> set[str]:
        return {transport for transport, _ in self._factories}

    def create(self, device: DeviceConfig) -> Any:
        try:
            factory = self._factories[(device.transport, device.kind)]
        except KeyError:
            known = ", ".join(f"{t}/{k}" for t, k in sorted(self._factories)) or "none"
            raise UnknownTransport(
                f"device {device.name}: no driver for transport {device.transport!r} and kind "
                f"{device.kind!r} (registered: {known})"
            ) from None
        return factory(device)


def _grpc_ocs(device: DeviceConfig) -> OcsClient:
    return OcsClient(device.address, name=device.name, tls=device.tls, options=device.options)


def _grpc_switch(device: DeviceConfig) -> SwitchClient:
    return SwitchClient(device.address, name=device.name, tls=device.tls, options=device.options)


def default_registry() -> DriverRegistry:
    """A new registry with the gRPC drivers for every device kind (a spine switch speaks the
    packet-switch service, as a block does)."""
    registry = DriverRegistry()
    registry.register("grpc", "ocs", _grpc_ocs)
    registry.register("grpc", "block", _grpc_switch)
    registry.register("grpc", "spine", _grpc_switch)
    return registry
