"""The NETCONF transport's entry in the driver registry: ``netconf`` for both OCS capabilities
(one :class:`~southbound.standard.netconf.driver.NetconfOcs` per OCS serves circuits and events)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from southbound.contracts import CIRCUITS, EVENTS
from southbound.devices import DeviceConfig
from southbound.standard.netconf.driver import NetconfOcs

if TYPE_CHECKING:
    from southbound.registry import DriverRegistry

NAME = "netconf"


def netconf_ocs(device: DeviceConfig) -> NetconfOcs:
    return NetconfOcs(device)


def register(registry: DriverRegistry) -> None:
    """Register the NETCONF driver for the OCS capabilities under the transport name ``netconf``."""
    registry.register(CIRCUITS, NAME, netconf_ocs)
    registry.register(EVENTS, NAME, netconf_ocs)
