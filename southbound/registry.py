"""Driver registry: (capability, transport) -> a factory of that capability's protocol.

A transport registers one factory per capability it serves (:mod:`southbound.contracts`);
the controller asks for a whole device (:meth:`DriverRegistry.switch`, :meth:`DriverRegistry.ocs`)
and gets one object that satisfies :class:`~southbound.contracts.PacketSwitch` or
:class:`~southbound.contracts.OpticalSwitch`, whatever transports serve its parts::

    registry = default_registry()                              # the gRPC transport
    registry.register(GROUPS, "p4runtime", P4GroupWriter)      # hypothetical
    registry.check(devices)                                    # every named transport exists
    switch = registry.switch(devices["b1"])                    # a PacketSwitch

One factory registered for several capabilities makes one driver per device for all of
them (one connection: that is how the gRPC clients serve a whole device). A device whose
capabilities all come from one driver gets that driver itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast

from optimizer.errors import ConfigError
from southbound.closing import ClosesOnExit
from southbound.contracts import (
    CIRCUITS,
    COUNTERS,
    DRAIN,
    EVENTS,
    GROUPS,
    OCS_CAPABILITIES,
    SWITCH_CAPABILITIES,
    C,
    Capability,
    CircuitSwitch,
    Closeable,
    CounterReader,
    EventStream,
    GroupWriter,
    OcsEvents,
    OpticalSwitch,
    PacketSwitch,
    PortDrainer,
)
from southbound.devices import DeviceConfig
from southbound.fencing import NO_ELECTION, EpochSource
from southbound.grpc_native import transport as grpc_transport
from southbound.types import (
    ApplyResult,
    CrossConnect,
    CrossConnectTable,
    GroupBudget,
    NextHopGroups,
    OcsInfo,
    OcsPortStatus,
    SetGroupsResult,
    SwitchCounters,
    SwitchPort,
)

Factory = Callable[[DeviceConfig], C]


class UnknownTransport(ConfigError, LookupError):
    """No driver is registered for a capability's transport; names the file and the key."""


class DriverRegistry:
    def __init__(self) -> None:
        self._factories: dict[tuple[str, str], Callable[[DeviceConfig], Closeable]] = {}

    def register(self, capability: Capability[C], transport: str, factory: Factory[C]) -> None:
        """Register (or replace) the factory of ``capability`` over ``transport``."""
        self._factories[(capability.name, transport)] = factory

    def transports(self) -> set[str]:
        return {transport for _, transport in self._factories}

    def check(self, devices: Mapping[str, DeviceConfig]) -> None:
        """Raise UnknownTransport for the first capability whose transport has no driver."""
        for device in devices.values():
            for capability in _capabilities(device):
                self._factory(capability, device)

    def switch(self, device: DeviceConfig) -> PacketSwitch:
        """The driver of a block or spine switch."""
        made = _Made(self, device)
        with made.closed_on_error():
            groups, counters, drain = made(GROUPS), made(COUNTERS), made(DRAIN)
        if _one_object(groups, counters, drain):
            return cast(PacketSwitch, groups)
        return ComposedSwitch(groups, counters, drain)

    def ocs(self, device: DeviceConfig) -> OpticalSwitch:
        """The driver of an OCS."""
        made = _Made(self, device)
        with made.closed_on_error():
            circuits, events = made(CIRCUITS), made(EVENTS)
        if _one_object(circuits, events):
            return cast(OpticalSwitch, circuits)
        return ComposedOcs(circuits, events)

    def create(self, device: DeviceConfig) -> PacketSwitch | OpticalSwitch:
        """The driver of ``device``, by its kind."""
        return self.ocs(device) if device.kind == "ocs" else self.switch(device)

    def _factory(
        self, capability: Capability[Any], device: DeviceConfig
    ) -> Callable[[DeviceConfig], Closeable]:
        route = device.route(capability.name)
        try:
            return self._factories[(capability.name, route.transport)]
        except KeyError:
            known = sorted(t for c, t in self._factories if c == capability.name)
            raise UnknownTransport(
                device.source,
                device.route_key(capability.name),
                f"no driver for transport {route.transport!r} and capability {capability.name!r} "
                f"(registered: {', '.join(known) or 'none'})",
            ) from None


def _capabilities(device: DeviceConfig) -> tuple[Capability[Any], ...]:
    return OCS_CAPABILITIES if device.kind == "ocs" else SWITCH_CAPABILITIES


class _Made:
    """Drivers made for one device: a factory met again at the same address is reused."""

    def __init__(self, registry: DriverRegistry, device: DeviceConfig) -> None:
        self._registry = registry
        self._device = device
        self._made: dict[tuple[Callable[[DeviceConfig], Closeable], str], Closeable] = {}
        for capability in _capabilities(device):  # all or nothing: check before connecting
            registry._factory(capability, device)

    def __call__(self, capability: Capability[C]) -> C:
        factory = self._registry._factory(capability, self._device)
        route = self._device.route(capability.name)
        key = (factory, route.address)  # equal bound methods are one factory
        if key not in self._made:
            self._made[key] = factory(self._device.for_route(route))
        return cast(C, self._made[key])

    @contextmanager
    def closed_on_error(self) -> Iterator[None]:
        """Close what was made when making the rest fails."""
        try:
            yield
        except BaseException:
            for driver in self._made.values():
                driver.close()
            raise


class _Composed(ClosesOnExit):
    """Parts that may be one object or several: closed once each; ``epoch`` reaches them all."""

    def __init__(self, *parts: Closeable) -> None:
        self._parts = list({id(p): p for p in parts}.values())
        self._epoch: EpochSource = NO_ELECTION

    @property
    def epoch(self) -> EpochSource:
        return self._epoch

    @epoch.setter
    def epoch(self, source: EpochSource) -> None:
        self._epoch = source
        for part in self._parts:
            if hasattr(part, "epoch"):
                part.epoch = source

    def close(self) -> None:
        for part in self._parts:
            part.close()


class ComposedSwitch(_Composed):
    """A PacketSwitch whose capabilities are served by different drivers."""

    def __init__(self, groups: GroupWriter, counters: CounterReader, drain: PortDrainer) -> None:
        super().__init__(groups, counters, drain)
        self._groups, self._counters, self._drain = groups, counters, drain

    def groups(self, deadline_s: float | None = None) -> NextHopGroups:
        return self._groups.groups(deadline_s)

    def budget(self) -> GroupBudget:
        return self._groups.budget()

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
        return self._groups.set_groups(
            expected_generation=expected_generation, source=source, transit=transit, replace=replace,
            delete_source=delete_source, delete_transit=delete_transit, request_id=request_id,
        )

    def counters(self) -> SwitchCounters:
        return self._counters.counters()

    def ports(self) -> list[SwitchPort]:
        return self._counters.ports()

    def drain(self, ports: Iterable[int]) -> frozenset[int]:
        return self._drain.drain(ports)

    def undrain(self, ports: Iterable[int]) -> frozenset[int]:
        return self._drain.undrain(ports)


class ComposedOcs(_Composed):
    """An OpticalSwitch whose circuits and events are served by different drivers."""

    def __init__(self, circuits: CircuitSwitch, events: OcsEvents) -> None:
        super().__init__(circuits, events)
        self._circuits, self._events = circuits, events

    def device_info(self) -> OcsInfo:
        return self._circuits.device_info()

    def cross_connects(self, deadline_s: float | None = None) -> CrossConnectTable:
        return self._circuits.cross_connects(deadline_s)

    def apply(
        self,
        *,
        expected_generation: int,
        add: Iterable[CrossConnect] = (),
        remove: Iterable[CrossConnect] = (),
        request_id: str | None = None,
    ) -> ApplyResult:
        return self._circuits.apply(
            expected_generation=expected_generation, add=add, remove=remove, request_id=request_id
        )

    def port_status(self, ports: Iterable[int] = ()) -> list[OcsPortStatus]:
        return self._circuits.port_status(ports)

    def events(self, deadline_s: float = 3600.0) -> EventStream:
        return self._events.events(deadline_s)


def default_registry() -> DriverRegistry:
    """A new registry with every built-in transport: the native gRPC one (``grpc``) for every
    capability (one OcsClient per OCS, one SwitchClient per block or spine switch), and the
    standard protocols: ``p4runtime`` for groups, ``gnmi`` for counters and drains, ``netconf``
    for circuits and events (:mod:`southbound.standard`)."""
    from southbound.standard.gnmi import transport as gnmi_transport
    from southbound.standard.netconf import transport as netconf_transport
    from southbound.standard.p4rt import transport as p4rt_transport

    registry = DriverRegistry()
    grpc_transport.register(registry)
    p4rt_transport.register(registry)
    gnmi_transport.register(registry)
    netconf_transport.register(registry)
    return registry


def _one_object(*drivers: object) -> bool:
    """Whether the drivers of several capabilities are one object (one transport serving them all)."""
    return all(d is drivers[0] for d in drivers)
