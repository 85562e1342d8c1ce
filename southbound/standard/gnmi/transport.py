"""The gNMI transport's entry in the driver registry: ``gnmi`` for counters and drains.

One :class:`~southbound.standard.gnmi.driver.GnmiSwitch` per switch serves both (one
channel, one sampling stream). Its ``egress_bytes`` stay empty here: the per-destination
bytes come from the P4Runtime counters, which the wiring passes as ``egress``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from southbound.contracts import COUNTERS, DRAIN
from southbound.devices import DeviceConfig
from southbound.standard.gnmi.driver import GnmiSwitch

if TYPE_CHECKING:
    from southbound.registry import DriverRegistry

NAME = "gnmi"


def gnmi_switch(device: DeviceConfig) -> GnmiSwitch:
    return GnmiSwitch(device)


def register(registry: DriverRegistry) -> None:
    """Register the gNMI driver for counters and drains under the transport name ``gnmi``."""
    registry.register(COUNTERS, NAME, gnmi_switch)
    registry.register(DRAIN, NAME, gnmi_switch)
