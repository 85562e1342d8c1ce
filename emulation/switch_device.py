"""An emulated block switch: ports and their peers, WCMP next-hop groups (source and
transit tables) of bounded size, drains and monotonic counters. Pure state; thread-safe.

Forwarding model: a next hop "via block K" spreads its share equally over the *installed*
members of trunk K: the undrained ports whose peer was K when the groups were last set
(or the port was last undrained). A member whose link has since gone down, or now leads
elsewhere, blackholes what it is given until the controller reprograms or drains it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypedDict

import numpy as np

from emulation.admission.idempotency import ReplayCache, request_digest
from emulation.clock import EmulatedClock
from emulation.counters import PORT_COUNTERS, CounterArray
from emulation.errors import GenerationMismatch, MalformedRequest

log = logging.getLogger(__name__)

DEFAULT_MAX_GROUP_ENTRIES = 128
DEFAULT_TABLE_CAPACITY = 16384
DEFAULT_PACKET_BYTES = 1000.0

Table = dict[str, dict[str, int]]


class PortRow(TypedDict):
    """One port as a switch device reports it (see :class:`southbound.types.SwitchPort`)."""

    port: int
    oper_up: bool
    drained: bool
    speed_gbps: float
    peer: tuple[str, int] | None  # (peer block or spine, its port) from LLDP


@dataclass(frozen=True)
class LinkState:
    """What a switch sees on its ports now: the peer node (block or spine switch, as an
    index into the switch's ``nodes``) and its port; -1 when the link is not up, so no
    LLDP neighbour is heard."""

    peer_node: np.ndarray  # int64 per port
    peer_port: np.ndarray  # int64 per port

    @property
    def oper_up(self) -> np.ndarray:
        return self.peer_node >= 0


class LinkProvider(Protocol):
    def link_state(self, block: str) -> LinkState: ...


class StaticLinks:
    """A LinkProvider whose peers are set by hand (standalone devices, unit tests)."""

    def __init__(self, blocks: Sequence[str], num_ports: int) -> None:
        self._blocks = list(blocks)
        self._states = {
            b: LinkState(np.full(num_ports, -1, np.int64), np.full(num_ports, -1, np.int64))
            for b in blocks
        }

    def connect(self, block: str, port: int, peer_block: str, peer_port: int) -> None:
        self._states[block].peer_node[port] = self._blocks.index(peer_block)
        self._states[block].peer_port[port] = peer_port
        self._states[peer_block].peer_node[peer_port] = self._blocks.index(block)
        self._states[peer_block].peer_port[peer_port] = port

    def disconnect(self, block: str, port: int) -> None:
        state = self._states[block]
        peer, peer_port = int(state.peer_node[port]), int(state.peer_port[port])
        state.peer_node[port] = state.peer_port[port] = -1
        if peer >= 0:
            far = self._states[self._blocks[peer]]
            far.peer_node[peer_port] = far.peer_port[peer_port] = -1

    def link_state(self, block: str) -> LinkState:
        s = self._states[block]
        return LinkState(s.peer_node.copy(), s.peer_port.copy())


@dataclass(frozen=True)
class ForwardingState:
    """A switch's forwarding state as the data plane needs it (copies)."""

    source: np.ndarray  # [dest block, via node] fractions; rows sum to 1
    transit: np.ndarray  # [dest block, via node] fractions; rows sum to 1
    installed: np.ndarray  # per port: installed trunk (node index) or -1
    drained: np.ndarray  # per port bool


@dataclass(frozen=True)
class SwitchTables:
    """What a switch forwards by: its groups, every port's installed trunk (node index, -1
    none) and its drains. A realiser programs a data plane from these."""

    source: Table
    transit: Table
    installed: np.ndarray
    drained: np.ndarray


class Realiser(Protocol):
    """A data plane a switch model drives (the OpenFlow bridge of the packet-level fabric;
    the flow-level fabric has none: its data plane reads :meth:`BlockSwitch.forwarding_state`).

    The model calls ``realise`` under its lock with the tables a change would commit, before
    committing it: raising :class:`~emulation.errors.ApplyAborted` aborts the change (the model
    is unchanged). ``committed`` follows, still under the lock, once the change holds (or a
    replay was answered: ``replayed``)."""

    def realise(self, tables: SwitchTables) -> None: ...

    def committed(self, replayed: bool) -> None: ...


class ServedSwitch(Protocol):
    """What the packet-switch servicer serves: a switch model (BlockSwitch, SpineDevice), or a
    model realised by a bridge (:class:`emulation.openflow.block.OpenFlowBlockSwitch`)."""

    @property
    def name(self) -> str: ...
    @property
    def block(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def nodes(self) -> tuple[str, ...]: ...
    @property
    def num_ports(self) -> int: ...
    @property
    def speed_gbps(self) -> float: ...
    @property
    def max_group_entries(self) -> int: ...
    @property
    def table_capacity(self) -> int: ...
    @property
    def generation(self) -> int: ...

    def ports(self) -> list[PortRow]: ...

    def groups(self) -> tuple[int, Table, Table, int]: ...

    def set_groups(
        self,
        request_id: str,
        expected_generation: int,
        source: Mapping[str, Mapping[str, int]],
        transit: Mapping[str, Mapping[str, int]],
        *,
        replace: bool,
        delete_source: Iterable[str] = (),
        delete_transit: Iterable[str] = (),
    ) -> tuple[int, bool, int]: ...

    def drain(self, ports: Iterable[int]) -> list[int]: ...

    def undrain(self, ports: Iterable[int]) -> list[int]: ...

    def counters(self) -> dict[str, object]: ...


class BlockSwitch:
    """State of one aggregation block switch. ``blocks`` are the fabric's blocks (the
    destinations); ``spines`` its static spine switches, which are next hops too.
    ``realiser``, when given, is programmed before every change commits (see Realiser)."""

    #: "block", or "spine" for :class:`emulation.spine_device.SpineDevice`
    role = "block"

    def __init__(
        self,
        name: str,
        block: str,
        blocks: Sequence[str],
        num_ports: int,
        speed_gbps: float,
        clock: EmulatedClock,
        links: LinkProvider,
        *,
        spines: Sequence[str] = (),
        max_group_entries: int = DEFAULT_MAX_GROUP_ENTRIES,
        table_capacity: int = DEFAULT_TABLE_CAPACITY,
        packet_bytes: float = DEFAULT_PACKET_BYTES,
        realiser: Realiser | None = None,
    ) -> None:
        if block not in blocks and self.role == "block":
            raise ValueError(f"block {block!r} is not among the fabric's blocks")
        self.name = name
        self.block = block
        self.blocks = tuple(blocks)
        self.nodes = self.blocks + tuple(spines)
        self.block_index = self.blocks.index(block) if block in self.blocks else -1
        self.num_ports = num_ports
        self.speed_gbps = speed_gbps
        self.max_group_entries = max_group_entries
        self.table_capacity = table_capacity
        self.packet_bytes = packet_bytes
        self.clock = clock
        self._links = links
        self._index = {b: i for i, b in enumerate(self.nodes)}
        self._lock = threading.RLock()
        self.generation = 1
        self._source: Table = {}
        self._transit: Table = {}
        self._split_cache: tuple[np.ndarray, np.ndarray] | None = None
        self._drained = np.zeros(num_ports, dtype=bool)
        self._installed = np.full(num_ports, -1, dtype=np.int64)
        self._replays: ReplayCache[tuple[int, int]] = ReplayCache()
        n = len(self.blocks)
        self._ports = CounterArray((len(PORT_COUNTERS), num_ports))
        self._egress = CounterArray(n)
        self._no_route = CounterArray(1)
        self._counted_until: float | None = None  # emulated time the counters are complete to
        self.realiser = realiser

    # -- ports --------------------------------------------------------------------------
    def link_state(self) -> LinkState:
        return self._links.link_state(self.block)

    def ports(self) -> list[PortRow]:
        links = self.link_state()
        with self._lock:
            drained = self._drained.copy()
        out: list[PortRow] = []
        for port in range(self.num_ports):
            peer = int(links.peer_node[port])
            out.append(
                {
                    "port": port,
                    "oper_up": peer >= 0,
                    "drained": bool(drained[port]),
                    "speed_gbps": self.speed_gbps,
                    "peer": (self.nodes[peer], int(links.peer_port[port])) if peer >= 0 else None,
                }
            )
        return out

    def install_current_peers(self, ports: Iterable[int] | None = None) -> None:
        """Make the current LLDP peers the trunk members (all ports, or those given)."""
        links = self.link_state()
        with self._lock:
            if ports is None:
                self._installed = links.peer_node.copy()
            else:
                idx = np.fromiter(ports, dtype=np.int64)
                self._installed[idx] = links.peer_node[idx]

    def drain(self, ports: Iterable[int]) -> list[int]:
        idx = self._checked_ports(ports)
        with self._lock:
            drained = self._drained.copy()
            drained[idx] = True
            self._realise(SwitchTables(self._source, self._transit, self._installed, drained))
            self._drained = drained
            self._committed(replayed=False)
            return [int(p) for p in np.flatnonzero(self._drained)]

    def undrain(self, ports: Iterable[int]) -> list[int]:
        idx = self._checked_ports(ports)
        with self._lock:
            drained, installed = self._drained.copy(), self._installed.copy()
            drained[idx] = False
            installed[idx] = self.link_state().peer_node[idx]  # the current peers join
            self._realise(SwitchTables(self._source, self._transit, installed, drained))
            self._drained, self._installed = drained, installed
            self._committed(replayed=False)
            return [int(p) for p in np.flatnonzero(self._drained)]

    def _checked_ports(self, ports: Iterable[int]) -> np.ndarray:
        idx = np.fromiter(ports, dtype=np.int64)
        bad = idx[(idx < 0) | (idx >= self.num_ports)]
        if bad.size:
            raise MalformedRequest(
                f"unknown port {int(bad[0])} (ports are 0..{self.num_ports - 1})"
            )
        return idx

    # -- groups -------------------------------------------------------------------------
    def groups(self) -> tuple[int, Table, Table, int]:
        with self._lock:
            source = {d: dict(g) for d, g in self._source.items()}
            transit = {d: dict(g) for d, g in self._transit.items()}
            return self.generation, source, transit, _entries(self._source, self._transit)

    def set_groups(
        self,
        request_id: str,
        expected_generation: int,
        source: Mapping[str, Mapping[str, int]],
        transit: Mapping[str, Mapping[str, int]],
        *,
        replace: bool,
        delete_source: Iterable[str] = (),
        delete_transit: Iterable[str] = (),
    ) -> tuple[int, bool, int]:
        """Returns (generation, replayed, entries used); all or nothing."""
        delete_source, delete_transit = list(delete_source), list(delete_transit)
        digest = request_digest({
            "source": {d: dict(g) for d, g in source.items()},
            "transit": {d: dict(g) for d, g in transit.items()},
            "replace": replace,
            "delete_source": sorted(delete_source),
            "delete_transit": sorted(delete_transit),
        })
        with self._lock:
            cached = self._replays.get(request_id, expected_generation, digest)
            if cached is not None:
                self._committed(replayed=True)
                return cached[0], True, cached[1]
            if expected_generation != self.generation:
                raise GenerationMismatch(
                    f"expected generation {expected_generation} but the device is at "
                    f"{self.generation}",
                    self.generation,
                )
            new_source = self._validated(source, transit_table=False)
            new_transit = self._validated(transit, transit_table=True)
            if not replace:
                new_source = self._merged(self._source, new_source, delete_source)
                new_transit = self._merged(self._transit, new_transit, delete_transit)
            used = _entries(new_source, new_transit)
            if used > self.table_capacity:
                raise MalformedRequest(
                    f"the groups need {used} entries but the table holds "
                    f"{self.table_capacity}"
                )
            installed = self.link_state().peer_node  # the current peers become the members
            self._realise(SwitchTables(new_source, new_transit, installed, self._drained))
            self._source, self._transit, self._installed = new_source, new_transit, installed.copy()
            self._split_cache = None
            self.generation += 1
            self._replays.put(request_id, expected_generation, (self.generation, used), digest)
            self._committed(replayed=False)
            return self.generation, False, used

    def _realise(self, tables: SwitchTables) -> None:
        if self.realiser is not None:
            self.realiser.realise(tables)

    def _committed(self, replayed: bool) -> None:
        if self.realiser is not None:
            self.realiser.committed(replayed)

    def tables(self) -> SwitchTables:
        """The committed tables (copies)."""
        with self._lock:
            return SwitchTables({d: dict(g) for d, g in self._source.items()},
                                {d: dict(g) for d, g in self._transit.items()},
                                self._installed.copy(), self._drained.copy())

    def adopt(self, tables: SwitchTables, generation: int | None = None) -> None:
        """Take ``tables`` (and ``generation``) as the committed state, unrealised: what a
        restarted agent found its data plane forwarding by."""
        with self._lock:
            self._source = {d: dict(g) for d, g in tables.source.items()}
            self._transit = {d: dict(g) for d, g in tables.transit.items()}
            self._installed, self._drained = tables.installed.copy(), tables.drained.copy()
            self._split_cache = None
            if generation is not None:
                self.generation = generation

    def _validated(self, table: Mapping[str, Mapping[str, int]], transit_table: bool) -> Table:
        which = "transit" if transit_table else "source"
        out: Table = {}
        for dest, hops in table.items():
            where = f"{which} group for {dest!r}"
            if dest not in self.blocks:
                raise MalformedRequest(f"{where}: unknown destination block")
            if dest == self.block:
                raise MalformedRequest(f"{where}: a block does not route to itself")
            group: dict[str, int] = {}
            for via, weight in hops.items():
                if via not in self._index or via == self.block:
                    raise MalformedRequest(
                        f"{where}: next hop {via!r} is not a neighbour block or spine"
                    )
                if weight < 0:
                    raise MalformedRequest(f"{where}: negative weight for {via!r}")
                if transit_table and via != dest:
                    raise MalformedRequest(
                        f"{where}: transit traffic may only go direct, not via {via!r}"
                    )
                if weight:
                    group[via] = int(weight)
            if not group:
                raise MalformedRequest(f"{where}: no next hop with a positive weight")
            size = sum(group.values())
            if size > self.max_group_entries:
                raise MalformedRequest(
                    f"{where}: weights need {size} entries, more than the "
                    f"{self.max_group_entries} a group holds"
                )
            out[dest] = group
        return out

    def _merged(self, old: Table, new: Table, delete: Iterable[str]) -> Table:
        merged = {d: dict(g) for d, g in old.items()}
        for dest in delete:
            if dest not in self.blocks:
                raise MalformedRequest(f"cannot delete group of unknown {dest!r}")
            merged.pop(dest, None)
        merged.update(new)
        return merged

    def forwarding_state(self) -> ForwardingState:
        shape = (len(self.blocks), len(self.nodes))
        with self._lock:
            if self._split_cache is None:
                self._split_cache = (
                    _fractions(self._source, self._index, shape),
                    _fractions(self._transit, self._index, shape),
                )
            source, transit = self._split_cache
            return ForwardingState(source.copy(), transit.copy(), self._installed.copy(),
                                   self._drained.copy())

    # -- counters -----------------------------------------------------------------------
    def add_traffic(
        self,
        tx: np.ndarray,
        rx: np.ndarray,
        tx_drop: np.ndarray,
        egress: np.ndarray,
        no_route: float,
        rx_drop: np.ndarray | None = None,
        as_of: float | None = None,
    ) -> None:
        """Add bytes (all >= 0) to the counters; called by the data plane."""
        size = self.packet_bytes
        rx_drop = np.zeros(self.num_ports) if rx_drop is None else rx_drop
        # rows in PORT_COUNTERS order; drops in packets, then in bytes
        amounts = np.stack([tx, rx, tx / size, rx / size, tx_drop / size, rx_drop / size,
                            tx_drop, rx_drop])
        with self._lock:
            self._ports.add(amounts)
            self._egress.add(egress)
            self._no_route.add(no_route)
            if as_of is not None:
                self._counted_until = as_of

    def preset_counter(self, name: str, values: np.ndarray | int) -> None:
        """Set a port counter's totals (test hook: start near the 64-bit wrap)."""
        row = PORT_COUNTERS.index(name)
        with self._lock:
            self._ports.set_row(row, values)

    def counters(self) -> dict[str, object]:
        """Port counters (uint64 arrays by name), egress bytes per destination block, time."""
        with self._lock:
            totals = self._ports.values()
            out: dict[str, object] = dict(zip(PORT_COUNTERS, totals, strict=True))
            egress = self._egress.values()
            no_route = int(self._no_route.values()[0])
            counted_until = self._counted_until
        # The end of the traffic counted so far: a step's bytes are added before the clock
        # moves past it, so clock.now() would lag them by up to one step.
        out["time_s"] = counted_until if counted_until is not None else self.clock.now()
        out["egress"] = {
            b: int(v) for b, v in zip(self.blocks, egress, strict=True) if b != self.block
        }
        out["no_route_drops"] = no_route
        return out


def _entries(source: Table, transit: Table) -> int:
    return sum(sum(g.values()) for g in source.values()) + sum(
        sum(g.values()) for g in transit.values()
    )


def _fractions(table: Table, index: Mapping[str, int], shape: tuple[int, int]) -> np.ndarray:
    """[dest block, via node] split fractions; destinations without a group go direct."""
    out = np.eye(*shape)
    for dest, group in table.items():
        d = index[dest]
        out[d, :] = 0.0
        total = sum(group.values())
        for via, weight in group.items():
            out[d, index[via]] = weight / total
    return out
