"""The devices ``heliostat replay`` drives: held in memory, their traffic taken from a series.

:class:`SeriesFabric` implements the verbs of :class:`~controller.device_view.FabricPort`
the way the real devices behave, so the daemon's own code runs on it unchanged:

- OCSes hold circuits, generation-checked; an apply takes effect at once (a replay measures
  routing, not mirror settling); every circuit is up, with the right peers, and lit;
- blocks hold the groups the controller pushed (generation-checked) and their drained ports;
- counters grow as the series says: each block's egress bytes per destination are the
  offered matrix, and each port's transmitted bytes are the matrix routed by the groups in
  force (:mod:`controller.replay.routing`), spread over the trunk's undrained members.

Time is simulated: :meth:`advance` moves it (the counters integrate the snapshot in force
over each interval) and :meth:`now` reads it; the daemon gets both as its clock and its
executor's wait. Every change of groups, drains or circuits is kept with its time, so the
replay knows the routing in force at every snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from controller.device_view import GroupTables, OcsReading, PollResult, circuit_ends
from controller.replay.routing import TrunkLoads, routed_loads, trunk_members
from controller.replay.series import Series
from optimizer.errors import HeliostatError
from optimizer.fabric import Fabric
from optimizer.topology import Circuit
from southbound.errors import InvalidRequest, StaleGeneration
from southbound.types import GroupBudget, PortCounters, SwitchCounters, SwitchPort

BYTES_PER_GBIT = 1e9 / 8


@dataclass(frozen=True)
class RoutingState:
    """The forwarding state in force from ``time`` on."""

    time: float
    tables: GroupTables
    circuits: frozenset[Circuit]
    drained: frozenset[tuple[str, int]]


class SeriesFabric:
    """In-memory OCSes and blocks whose traffic is the series (see the module docstring)."""

    def __init__(self, fabric: Fabric, series: Series, circuits: Iterable[Circuit]) -> None:
        if series.blocks != fabric.block_names:
            raise HeliostatError("the series and the fabric name different blocks")
        self.fabric = fabric
        self.series = series
        self._now = float(series.times[0])
        self._circuits: dict[str, set[Circuit]] = {o.name: set() for o in fabric.ocs}
        for c in circuits:
            self._circuits[c.ocs].add(c)
        self._ocs_generation = {o.name: 1 for o in fabric.ocs}
        self._tables: GroupTables = {b: {} for b in fabric.block_names}
        self._group_generation = dict.fromkeys(fabric.block_names, 1)
        self._drained: set[tuple[str, int]] = set()
        n = fabric.n_blocks
        self._egress = np.zeros((n, n))  # bytes, cumulative
        self._tx: dict[tuple[str, int], float] = {}
        self._loads: TrunkLoads | None = None  # of the snapshot in force, under today's routing
        self._loads_key: int | None = None
        self._members: dict[tuple[str, str], list[int]] = {}
        self.history: list[RoutingState] = []
        self.blackholed_bytes = 0.0
        self._changed()

    # -- time ------------------------------------------------------------------------------

    def now(self) -> float:
        return self._now

    def snapshot_at(self, time: float) -> int:
        """The index of the snapshot offered at ``time``."""
        return max(int(np.searchsorted(self.series.times, time, side="right")) - 1, 0)

    def advance(self, seconds: float) -> bool:
        """Move time on by ``seconds``, counting the bytes the series offers meanwhile.
        Returns False (the executor's wait: not stopping)."""
        end = self._now + max(seconds, 0.0)
        times = self.series.times
        while self._now < end - 1e-12:
            k = self.snapshot_at(self._now)
            boundary = float(times[k + 1]) if k + 1 < len(times) else end
            step_end = min(end, boundary) if boundary > self._now else end
            self._count(k, step_end - self._now)
            self._now = step_end
        self._now = max(self._now, end)
        return False

    def advance_to(self, time: float) -> None:
        if time > self._now:
            self.advance(time - self._now)

    def _count(self, k: int, dt: float) -> None:
        demand = self.series.gbps[k]
        self._egress += demand * dt * BYTES_PER_GBIT
        loads = self._loads_of(k)
        blocks = self.fabric.block_names
        for (a, b), ports in self._members.items():
            load = loads.load[blocks.index(a), blocks.index(b)]
            if load <= 0 or not ports:
                continue
            share = load * dt * BYTES_PER_GBIT / len(ports)
            for p in ports:
                self._tx[(a, p)] = self._tx.get((a, p), 0.0) + share
        self.blackholed_bytes += loads.blackholed_gbps() * dt * BYTES_PER_GBIT

    def _loads_of(self, k: int) -> TrunkLoads:
        if self._loads is None or self._loads_key != k:
            self._loads = routed_loads(self.fabric, self._tables, self.series.gbps[k], self._members)
            self._loads_key = k
        return self._loads

    def _changed(self) -> None:
        circuits = frozenset().union(*self._circuits.values())
        self._members = trunk_members(self.fabric, circuits, self._drained)
        self._loads = None
        state = RoutingState(
            self._now,
            {b: {d: dict(h) for d, h in g.items()} for b, g in self._tables.items()},
            circuits,
            frozenset(self._drained),
        )
        if self.history and self.history[-1].time == self._now:
            self.history[-1] = state
        else:
            self.history.append(state)

    # -- FabricPort: reading ------------------------------------------------------------------

    @property
    def ocs(self) -> Mapping[str, object]:
        return self._circuits

    def read_ocs(self, name: str) -> OcsReading:
        return OcsReading(
            name, self._ocs_generation[name], frozenset(self._circuits[name]), frozenset(), True
        )

    def poll(self, ocs_names: Iterable[str] | None = None) -> PollResult:
        names = list(self._circuits) if ocs_names is None else list(ocs_names)
        blocks = self.fabric.block_names
        counters, _ = self.counters(blocks)
        ports, _ = self.switch_ports(blocks)
        return PollResult({n: self.read_ocs(n) for n in names}, counters, {}, ports)

    def counters(self, blocks: Iterable[str]) -> tuple[dict[str, SwitchCounters], dict[str, str]]:
        names = self.fabric.block_names
        out = {}
        for b in blocks:
            i = names.index(b)
            egress = {d: int(self._egress[i, j]) for j, d in enumerate(names) if j != i}
            ports = {
                p: PortCounters(p, tx_bytes=int(self._tx.get((b, p), 0.0)))
                for p in range(self.fabric.block(b).uplinks)
            }
            out[b] = SwitchCounters(self._now, ports, egress)
        return out, {}

    def switch_ports(self, blocks: Iterable[str]) -> tuple[dict[str, list[SwitchPort]], dict[str, str]]:
        peers: dict[tuple[str, int], tuple[str, int]] = {}
        for circuits in self._circuits.values():
            for c in circuits:
                end_a, end_b = circuit_ends(self.fabric, c)
                peers[end_a], peers[end_b] = end_b, end_a
        out = {}
        for b in blocks:
            block = self.fabric.block(b)
            out[b] = [
                SwitchPort(
                    p,
                    (b, p) in peers,
                    (b, p) in self._drained,
                    block.speed_gbps,
                    peers[(b, p)][0] if (b, p) in peers else None,
                    peers[(b, p)][1] if (b, p) in peers else None,
                )
                for p in range(block.uplinks)
            ]
        return out, {}

    def ocs_light(self, ocs: str, ports: Iterable[int]) -> dict[int, bool]:
        lit = {p for c in self._circuits[ocs] for p in (c.a, c.b)}
        return {p: p in lit for p in ports}

    # -- FabricPort: writing ------------------------------------------------------------------

    def budgets(self) -> tuple[dict[str, GroupBudget], dict[str, str]]:
        """Replay's switches declare no budget: TE keeps the policy's."""
        return {}, {}

    def push_groups(self, tables: GroupTables, request_prefix: str) -> dict[str, int]:
        generations = {}
        for block, groups in tables.items():
            self._tables[block] = {d: dict(h) for d, h in groups.items()}
            self._group_generation[block] += 1
            generations[block] = self._group_generation[block]
        self._changed()
        return generations

    def drain(self, ports: Mapping[str, Iterable[int]]) -> None:
        self._drained.update((b, p) for b, plist in ports.items() for p in plist)
        self._changed()

    def undrain(self, ports: Mapping[str, Iterable[int]]) -> None:
        self._drained.difference_update((b, p) for b, plist in ports.items() for p in plist)
        self._changed()

    def apply_ocs(
        self,
        ocs: str,
        expected_generation: int,
        add: Iterable[Circuit],
        remove: Iterable[Circuit],
        request_id: str,
    ) -> int:
        if expected_generation != self._ocs_generation[ocs]:
            raise StaleGeneration(
                ocs,
                f"generation {self._ocs_generation[ocs]}, expected {expected_generation}",
                current_generation=self._ocs_generation[ocs],
            )
        held = self._circuits[ocs]
        remove, add = set(remove), set(add)
        if not remove <= held:
            raise InvalidRequest(ocs, f"removes circuits it does not hold: {sorted(remove - held)[:3]}")
        used = {p for c in held - remove for p in (c.a, c.b)}
        if any(p in used for c in add for p in (c.a, c.b)):
            raise InvalidRequest(ocs, "adds a circuit on a port in use")
        self._circuits[ocs] = (held - remove) | add
        self._ocs_generation[ocs] += 1
        self._changed()
        return self._ocs_generation[ocs]

    def close(self) -> None:
        return None
