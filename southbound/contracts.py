"""The device contracts: what the controller asks of a device, one small protocol per
capability, in plain types (:mod:`southbound.types`) and errors (:mod:`southbound.errors`).

A transport (``southbound/grpc_native`` is the built-in one) fulfils one or more
capabilities and registers a factory for each with :class:`~southbound.registry.DriverRegistry`;
the controller sees only these protocols. A block or spine switch is a :class:`PacketSwitch`
(groups, counters, drains), an OCS an :class:`OpticalSwitch` (circuits, events); the devices
file may name a different transport per capability (:data:`CAPABILITIES`).

Every call raises a :class:`~southbound.errors.SouthboundError` (never a transport's own
exception); mutating calls carry the leadership epoch of ``epoch`` when the driver has that
attribute (see :mod:`southbound.fencing`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from southbound.types import (
    ApplyResult,
    CrossConnect,
    CrossConnectTable,
    GroupBudget,
    NextHopGroups,
    OcsEvent,
    OcsInfo,
    OcsPortStatus,
    SetGroupsResult,
    SwitchCounters,
    SwitchPort,
)


class Closeable(Protocol):
    def close(self) -> None:
        """Release the connection (idempotent)."""
        ...


class GroupWriter(Closeable, Protocol):
    """Writes a switch's WCMP next-hop groups, compare-and-set on its generation and idempotent
    per ``request_id``: a retry with the same id gets the first answer (``replayed``)."""

    def groups(self, deadline_s: float | None = None) -> NextHopGroups: ...

    def budget(self) -> GroupBudget:
        """The switch's declared group-table budget (read from the device)."""
        ...

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
        """Raises StaleGeneration or InvalidRequest (nothing changed) or ApplyFailed (with the
        outcome read back)."""
        ...


class CounterReader(Closeable, Protocol):
    """Reads a switch's monotonic counters and its ports (oper state, drain, LLDP peer)."""

    def counters(self) -> SwitchCounters: ...

    def ports(self) -> list[SwitchPort]: ...


class PortDrainer(Closeable, Protocol):
    """Takes a switch's ports out of (and back into) its groups."""

    def drain(self, ports: Iterable[int]) -> frozenset[int]:
        """Returns every drained port."""
        ...

    def undrain(self, ports: Iterable[int]) -> frozenset[int]:
        """Returns every port still drained."""
        ...


class PacketSwitch(GroupWriter, CounterReader, PortDrainer, Protocol):
    """A block or spine switch: every switch capability."""


class EventStream(Protocol):
    """OCS events until ``cancel()``; a lost device raises DeviceUnavailable from the iteration."""

    def __iter__(self) -> Iterator[OcsEvent]: ...

    def cancel(self) -> None: ...


class CircuitSwitch(Closeable, Protocol):
    """Switches an OCS's circuits and reads its state."""

    def device_info(self) -> OcsInfo: ...

    def cross_connects(self, deadline_s: float | None = None) -> CrossConnectTable: ...

    def apply(
        self,
        *,
        expected_generation: int,
        add: Iterable[CrossConnect] = (),
        remove: Iterable[CrossConnect] = (),
        request_id: str | None = None,
    ) -> ApplyResult:
        """Remove then add atomically; errors as :meth:`GroupWriter.set_groups`."""
        ...

    def port_status(self, ports: Iterable[int] = ()) -> list[OcsPortStatus]: ...


class OcsEvents(Closeable, Protocol):
    """Streams an OCS's events (circuit up/down, power loss/restored)."""

    def events(self, deadline_s: float = 3600.0) -> EventStream: ...


class OpticalSwitch(CircuitSwitch, OcsEvents, Protocol):
    """An optical circuit switch: every OCS capability."""


C = TypeVar("C", bound=Closeable)


@dataclass(frozen=True)
class Capability(Generic[C]):
    """A name for one protocol, as the devices file and the registry spell it."""

    name: str
    kinds: tuple[str, ...]  # the device kinds that have it


GROUPS: Capability[GroupWriter] = Capability("groups", ("block", "spine"))
COUNTERS: Capability[CounterReader] = Capability("counters", ("block", "spine"))
DRAIN: Capability[PortDrainer] = Capability("drain", ("block", "spine"))
CIRCUITS: Capability[CircuitSwitch] = Capability("circuits", ("ocs",))
EVENTS: Capability[OcsEvents] = Capability("events", ("ocs",))

SWITCH_CAPABILITIES = (GROUPS, COUNTERS, DRAIN)
OCS_CAPABILITIES = (CIRCUITS, EVENTS)
#: capability name -> the device kinds that have it
CAPABILITIES: dict[str, tuple[str, ...]] = {
    c.name: c.kinds for c in (*SWITCH_CAPABILITIES, *OCS_CAPABILITIES)
}
