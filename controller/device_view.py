"""What the devices reported, and the pure helpers over it (no gRPC, no I/O).

The daemon's decisions, the sensing loop and the TE loop read the fabric through these types:
:class:`OcsReading` and :class:`PollResult` (one poll), :data:`GroupTables` (the next-hop
groups pushed to the blocks) and :data:`PortsByBlock` (ports to drain or undrain), with the
helpers that turn circuits into the block ports they join. :mod:`controller.drivers` fills
them from the devices; everything else only reads them, so it can be tested without servers.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from optimizer.fabric import Fabric
from optimizer.topology import Circuit
from southbound.types import GroupBudget, SwitchCounters, SwitchPort

#: block -> {destination block: {via block: weight}} (a spine switch's entry holds its
#: transit groups: {destination block: {destination block: weight}})
GroupTables = dict[str, dict[str, dict[str, int]]]
#: block (or spine switch) -> its ports
PortsByBlock = dict[str, tuple[int, ...]]



@dataclass(frozen=True)
class OcsReading:
    """One OCS as polled: its generation, circuits (established and switching), power."""

    name: str
    generation: int
    circuits: frozenset[Circuit]  # established
    switching: frozenset[Circuit]
    powered: bool


@dataclass(frozen=True)
class PollResult:
    ocs: dict[str, OcsReading]
    counters: dict[str, SwitchCounters]
    errors: dict[str, str]  # device -> what went wrong
    ports: dict[str, list[SwitchPort]] = field(default_factory=dict)
    # the spine switches that have a device (a hybrid fabric's managed spine)
    spine_counters: dict[str, SwitchCounters] = field(default_factory=dict)
    spine_ports: dict[str, list[SwitchPort]] = field(default_factory=dict)

    @property
    def unreachable(self) -> frozenset[str]:
        return frozenset(self.errors)


def circuit_ends(fabric: Fabric, circuit: Circuit) -> tuple[tuple[str, int], tuple[str, int]]:
    """The two block ports ``(block, port)`` a circuit joins."""
    pa, pb = circuit.ends(fabric)
    return (pa.block, pa.block_port), (pb.block, pb.block_port)


def ports_of_circuits(fabric: Fabric, circuits: Iterable[Circuit]) -> PortsByBlock:
    out: dict[str, set[int]] = {}
    for c in circuits:
        for block, port in circuit_ends(fabric, c):
            out.setdefault(block, set()).add(port)
    return {b: tuple(sorted(ps)) for b, ps in sorted(out.items())}


def merge_ports(*groups: Mapping[str, Iterable[int]]) -> PortsByBlock:
    out: dict[str, set[int]] = {}
    for group in groups:
        for block, ports in group.items():
            out.setdefault(block, set()).update(ports)
    return {b: tuple(sorted(ps)) for b, ps in sorted(out.items()) if ps}


def ports_without(held: Mapping[str, Iterable[int]], freed: Mapping[str, Iterable[int]]) -> PortsByBlock:
    """``held`` less the ports in ``freed``; blocks left with no port are dropped."""
    gone = {(b, p) for b, plist in freed.items() for p in plist}
    out = {b: tuple(p for p in plist if (b, p) not in gone) for b, plist in held.items()}
    return {b: plist for b, plist in out.items() if plist}


class FabricPort(Protocol):
    """The verbs the daemon, the executor, TE and qualification use on the devices.

    :class:`controller.drivers.FabricDrivers` implements them over gRPC;
    ``heliostat replay`` implements them in memory (:mod:`controller.replay.series_fabric`),
    so that replay runs the daemon's own code. Every verb reports per-device failures as
    :class:`controller.drivers.FabricDrivers` does.
    """

    @property
    def ocs(self) -> Mapping[str, object]:
        """The OCS devices by name."""
        ...

    def poll(self, ocs_names: Iterable[str] | None = None) -> PollResult: ...

    def read_ocs(self, name: str) -> OcsReading: ...

    def counters(self, blocks: Iterable[str]) -> tuple[dict[str, SwitchCounters], dict[str, str]]: ...

    def switch_ports(self, blocks: Iterable[str]) -> tuple[dict[str, list[SwitchPort]], dict[str, str]]: ...

    def ocs_light(self, ocs: str, ports: Iterable[int]) -> dict[int, bool]: ...

    def push_groups(self, tables: GroupTables, request_prefix: str) -> dict[str, int]: ...

    def budgets(self) -> tuple[dict[str, GroupBudget], dict[str, str]]:
        """Each managed switch's declared group-table budget (and the switches that failed)."""
        ...

    def drain(self, ports: Mapping[str, Iterable[int]]) -> None: ...

    def undrain(self, ports: Mapping[str, Iterable[int]]) -> None: ...

    def apply_ocs(
        self,
        ocs: str,
        expected_generation: int,
        add: Iterable[Circuit],
        remove: Iterable[Circuit],
        request_id: str,
    ) -> int: ...

    def close(self) -> None: ...


PortEnd = tuple[str, int]  # (device, port)


def ends_see_each_other(
    seen: Mapping[PortEnd, SwitchPort], read: Container[str], ends: tuple[PortEnd, PortEnd]
) -> bool:
    """Whether a link's two ends are up and see each other (as LLDP reports): each end on a
    device that was read must be up with the other end as its peer; an end on a device that
    was not read (unreachable) does not take the link out."""
    for here, there in (ends, ends[::-1]):
        if here[0] not in read:
            continue
        port = seen.get(here)
        if port is None or not port.oper_up or (port.peer_block, port.peer_port) != there:
            return False
    return True
