"""The daemon's view of the devices: one driver per device, and the few verbs the loop uses.

The drivers are the device contracts of :mod:`southbound.contracts` (a PacketSwitch per block
or spine switch, an OpticalSwitch per OCS), made by the driver registry from the devices
file: whichever transports serve them, nothing here changes.

This module is the I/O edge between the pure decisions and the southbound drivers: it polls
OCS circuit tables and block counters (in parallel), pushes next-hop groups with generation
checks, and drains or undrains block ports. Every verb reports per-device failures instead
of raising, so one device that is down never stops the loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from controller.device_view import GroupTables, OcsReading, PollResult
from optimizer.errors import HeliostatError
from optimizer.fabric import Fabric
from optimizer.topology import Circuit
from southbound.contracts import Closeable, OpticalSwitch, PacketSwitch
from southbound.devices import DeviceConfig
from southbound.errors import SouthboundError, StaleGeneration
from southbound.fencing import EpochSource
from southbound.registry import DriverRegistry, UnknownTransport, default_registry
from southbound.types import CrossConnect, GroupBudget, SwitchCounters, SwitchPort

log = logging.getLogger(__name__)

T = TypeVar("T")
C = TypeVar("C", bound=Closeable)

class DevicesMismatch(HeliostatError):
    """The devices file does not cover the fabric (a block or OCS has no device)."""


class PushFailed(HeliostatError):
    """Some blocks did not take their groups (the others did)."""

    def __init__(self, failures: Mapping[str, str]) -> None:
        self.failures = dict(failures)
        detail = "; ".join(f"{b}: {e}" for b, e in sorted(self.failures.items()))
        super().__init__(f"group push failed on {len(self.failures)} block(s): {detail}")


class FabricDrivers:
    """Clients for every block switch and OCS of a fabric. Thread-safe for concurrent calls."""

    def __init__(
        self,
        fabric: Fabric,
        devices: Mapping[str, DeviceConfig],
        registry: DriverRegistry | None = None,
        workers: int = 16,
        epoch: EpochSource | None = None,
    ) -> None:
        """``epoch``: the HA elector, whose epoch every mutating call carries (None: epoch 0)."""
        self.fabric = fabric
        self._epoch = epoch
        registry = self._registry = registry or default_registry()
        missing = [b for b in fabric.block_names if b not in devices]
        missing += [o.name for o in fabric.ocs if o.name not in devices]
        if missing:
            raise DevicesMismatch(f"the devices file has no entry for {', '.join(missing)}")
        self.switches: dict[str, PacketSwitch] = {}
        self.ocs: dict[str, OpticalSwitch] = {}
        self._configs: dict[str, DeviceConfig] = {n: devices[n] for n in [*fabric.block_names,
                                                                         *(o.name for o in fabric.ocs)]}
        # Spine switches with a device: polled, steered and drained. One without an entry is
        # a static spine (its links are judged from the blocks' side alone).
        self.spines: dict[str, PacketSwitch] = {}
        try:
            for block in fabric.block_names:
                self._check_kind(devices[block], "block")
                self.switches[block] = registry.switch(devices[block])
            for o in fabric.ocs:
                self._check_kind(devices[o.name], "ocs")
                self.ocs[o.name] = registry.ocs(devices[o.name])
            for spine in fabric.spine:
                if spine.name in devices:
                    self._check_kind(devices[spine.name], "spine")
                    self.spines[spine.name] = registry.switch(devices[spine.name])
                    self._configs[spine.name] = devices[spine.name]
            unmanaged = [s.name for s in fabric.spine if s.name not in self.spines]
            if unmanaged:
                log.warning("spine switches %s have no device: static, not steered or drained",
                            ", ".join(unmanaged))
        except UnknownTransport as exc:
            self.close()
            raise DevicesMismatch(str(exc)) from exc
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="southbound")
        for client in [*self.switches.values(), *self.ocs.values(), *self.spines.values()]:
            self._fence(client)

    def _fence(self, client: T) -> T:
        """Put the elector's epoch on ``client``'s mutating calls (a client of another transport
        without an ``epoch`` attribute is left as it is)."""
        if self._epoch is not None and hasattr(client, "epoch"):
            client.epoch = self._epoch
        return client

    def replace_devices(self, devices: Mapping[str, DeviceConfig]) -> list[str]:
        """Reconnect the devices whose entry changed (a new address, TLS or options); the
        others keep their clients. Returns the devices reconnected. A devices file that no
        longer covers the fabric raises DevicesMismatch and changes nothing."""
        registry = self._registry
        missing = [n for n in [*self.switches, *self.ocs] if n not in devices]
        if missing:
            raise DevicesMismatch(f"the devices file has no entry for {', '.join(missing)}")
        changed: list[str] = []
        self._reconnect(self.switches, registry.switch, "block", devices, changed)
        self._reconnect(self.ocs, registry.ocs, "ocs", devices, changed)
        # a spine switch left out of the file keeps its driver
        self._reconnect(self.spines, registry.switch, "spine", devices, changed)
        return changed

    def _reconnect(
        self,
        table: dict[str, C],
        make: Callable[[DeviceConfig], C],
        kind: str,
        devices: Mapping[str, DeviceConfig],
        changed: list[str],
    ) -> None:
        for name, driver in list(table.items()):
            device = devices.get(name)
            if device is None or self._configs.get(name) == device:
                continue
            self._check_kind(device, kind)
            try:
                table[name] = self._fence(make(device))
            except UnknownTransport as exc:
                raise DevicesMismatch(str(exc)) from exc
            self._configs[name] = device
            driver.close()
            changed.append(name)

    @staticmethod
    def _check_kind(device: DeviceConfig, kind: str) -> None:
        if device.kind != kind:
            raise DevicesMismatch(f"device {device.name} is a {device.kind}, the fabric needs a {kind}")

    def close(self) -> None:
        for client in [*self.switches.values(), *self.ocs.values(), *self.spines.values()]:
            client.close()
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _each(self, names: Iterable[str], call: Callable[[str], T]) -> tuple[dict[str, T], dict[str, str]]:
        """Run ``call(name)`` for every name in parallel; (results, errors)."""
        names = list(names)
        futures = {name: self._pool.submit(call, name) for name in names}
        results: dict[str, T] = {}
        errors: dict[str, str] = {}
        for name, future in futures.items():
            try:
                results[name] = future.result()
            except (SouthboundError, HeliostatError) as exc:
                errors[name] = str(exc)
        return results, errors

    # -- reading -------------------------------------------------------------------------

    def read_ocs(self, name: str) -> OcsReading:
        client = self.ocs[name]
        table = client.cross_connects()
        established = frozenset(Circuit(name, c.a, c.b) for c in table.established)
        switching = frozenset(Circuit(name, c.a, c.b) for c in table.switching)
        powered = True
        if not table.cross_connects:  # an OCS without power holds no circuits: ask only then
            powered = client.device_info().powered
        return OcsReading(name, table.generation, established, switching, powered)

    def poll(self, ocs_names: Iterable[str] | None = None) -> PollResult:
        """Every OCS's circuits, every block's counters and port states."""
        names = list(self.ocs) if ocs_names is None else list(ocs_names)
        ocs, ocs_errors = self._each(names, self.read_ocs)
        counters, counter_errors = self._each(self.switches, lambda b: self.switches[b].counters())
        ports, port_errors = self._each(self.switches, lambda b: self.switches[b].ports())
        spine_counters, spine_counter_errors = self._each(self.spines, lambda s: self.spines[s].counters())
        spine_ports, spine_port_errors = self._each(self.spines, lambda s: self.spines[s].ports())
        errors = {**port_errors, **ocs_errors, **counter_errors, **spine_port_errors, **spine_counter_errors}
        return PollResult(ocs, counters, errors, ports, spine_counters, spine_ports)

    def counters(self, blocks: Iterable[str]) -> tuple[dict[str, SwitchCounters], dict[str, str]]:
        return self._each(blocks, lambda b: self.switches[b].counters())

    def switch_ports(self, blocks: Iterable[str]) -> tuple[dict[str, list[SwitchPort]], dict[str, str]]:
        return self._each(blocks, lambda b: self.switches[b].ports())

    def budgets(self) -> tuple[dict[str, GroupBudget], dict[str, str]]:
        """Each block's and managed spine switch's declared group-table budget."""
        return self._each([*self.switches, *self.spines], lambda name: self._switch(name).budget())

    def ocs_light(self, ocs: str, ports: Iterable[int]) -> dict[int, bool]:
        """Whether each OCS port is lit both ways (light levels, when the device reports them)."""
        return {s.port: s.oper_up for s in self.ocs[ocs].port_status(ports)}

    # -- writing -------------------------------------------------------------------------

    def push_groups(self, tables: GroupTables, request_prefix: str) -> dict[str, int]:
        """Replace every listed block's source groups (generation-checked, one retry on a race);
        a listed spine switch's table replaces its transit groups (a spine has no others).

        Returns the new generation per block; raises PushFailed naming the blocks that failed
        (the others hold their new groups).
        """

        def push(block: str) -> int:
            client = self._switch(block)
            spine = block in self.spines
            for attempt in range(2):
                generation = client.groups().generation
                try:
                    result = client.set_groups(
                        expected_generation=generation,
                        source={} if spine else tables[block],
                        transit=tables[block] if spine else {},
                        replace=True,
                        request_id=f"{request_prefix}-{block}-g{generation}",
                    )
                    return result.generation
                except StaleGeneration:
                    if attempt:
                        raise
                    log.info("%s: generation moved during the push, retrying", block)
            raise PushFailed({block: "unreachable"})  # pragma: no cover

        results, errors = self._each(tables, push)
        if errors:
            raise PushFailed(errors)
        return results

    def drain(self, ports: Mapping[str, Iterable[int]]) -> None:
        self._ports_call(ports, lambda client, p: client.drain(p), "drain")

    def undrain(self, ports: Mapping[str, Iterable[int]]) -> None:
        self._ports_call(ports, lambda client, p: client.undrain(p), "undrain")

    def _ports_call(
        self, ports: Mapping[str, Iterable[int]], call: Callable[[PacketSwitch, list[int]], Any], what: str
    ) -> None:
        wanted = {b: list(p) for b, p in ports.items() if list(p)}
        _, errors = self._each(wanted, lambda b: call(self._switch(b), wanted[b]))
        if errors:
            detail = "; ".join(f"{b}: {e}" for b, e in sorted(errors.items()))
            raise DriverError(f"{what} failed: {detail}")

    def _switch(self, name: str) -> PacketSwitch:
        """A block's client, or a spine switch's (ports to drain may name either)."""
        client = self.switches.get(name) or self.spines.get(name)
        if client is None:
            raise DriverError(f"no switch device named {name!r}")
        return client

    def apply_ocs(
        self,
        ocs: str,
        expected_generation: int,
        add: Iterable[Circuit],
        remove: Iterable[Circuit],
        request_id: str,
    ) -> int:
        result = self.ocs[ocs].apply(
            expected_generation=expected_generation,
            add=[CrossConnect(c.a, c.b) for c in add],
            remove=[CrossConnect(c.a, c.b) for c in remove],
            request_id=request_id,
        )
        if result.replayed:
            log.info("%s: apply %s was already applied (replayed)", ocs, request_id)
        return result.generation


class DriverError(HeliostatError):
    """A verb failed on some devices; the message names them."""
