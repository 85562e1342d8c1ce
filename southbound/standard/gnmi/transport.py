"""The gNMI transport's entry in the driver registry: ``gnmi`` for counters and drains.

One :class:`~southbound.standard.gnmi.driver.GnmiSwitch` per switch serves both (one
channel, one sampling stream). gNMI has no per-destination byte counters: when the device
also names a ``p4runtime`` endpoint, its ``egress_bytes`` are read from the ipv4_table's direct
counters over P4Runtime (:class:`~southbound.standard.p4rt.counters.DestinationCounters`);
otherwise they stay empty and the controller estimates the matrix from port counters alone.
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
    if device.endpoint("p4runtime") is None:
        return GnmiSwitch(device)
    from southbound.standard.p4rt.counters import DestinationCounters

    return GnmiSwitch(device, egress=DestinationCounters(device))


def register(registry: DriverRegistry) -> None:
    """Register the gNMI driver for counters and drains under the transport name ``gnmi``."""
    registry.register(COUNTERS, NAME, gnmi_switch)
    registry.register(DRAIN, NAME, gnmi_switch)
