"""The P4Runtime transport's entry in the driver registry: ``p4runtime`` for the groups.

(Counters and drains of a standard switch are gNMI's; :class:`~.counters.DestinationCounters`
is the per-destination part the gNMI counter driver reads over P4Runtime.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from southbound.contracts import GROUPS
from southbound.devices import DeviceConfig
from southbound.standard.p4rt.driver import P4GroupWriter

if TYPE_CHECKING:
    from southbound.registry import DriverRegistry

NAME = "p4runtime"


def group_writer(device: DeviceConfig) -> P4GroupWriter:
    return P4GroupWriter(device)


def register(registry: DriverRegistry) -> None:
    """Register the P4Runtime group driver under the transport name ``p4runtime``."""
    registry.register(GROUPS, NAME, group_writer)
