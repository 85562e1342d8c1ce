"""The gRPC transport's entry in the driver registry: ``grpc`` for every capability.

One :class:`~southbound.grpc_native.ocs_client.OcsClient` serves both OCS capabilities and
one :class:`~southbound.grpc_native.switch_client.SwitchClient` every switch capability (a
spine switch speaks the packet-switch service, as a block does), over one channel each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from southbound.contracts import CIRCUITS, COUNTERS, DRAIN, EVENTS, GROUPS
from southbound.devices import DeviceConfig
from southbound.grpc_native.ocs_client import OcsClient
from southbound.grpc_native.switch_client import SwitchClient

if TYPE_CHECKING:
    from southbound.registry import DriverRegistry

NAME = "grpc"


def ocs_client(device: DeviceConfig) -> OcsClient:
    return OcsClient(device.address, name=device.name, tls=device.tls, options=device.options)


def switch_client(device: DeviceConfig) -> SwitchClient:
    return SwitchClient(device.address, name=device.name, tls=device.tls, options=device.options)


def register(registry: DriverRegistry) -> None:
    """Register the gRPC drivers for every capability under the transport name ``grpc``."""
    registry.register(CIRCUITS, NAME, ocs_client)
    registry.register(EVENTS, NAME, ocs_client)
    registry.register(GROUPS, NAME, switch_client)
    registry.register(COUNTERS, NAME, switch_client)
    registry.register(DRAIN, NAME, switch_client)
