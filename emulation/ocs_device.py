"""An emulated optical circuit switch: cross-connect table, switching time, light levels,
power loss, and events. Pure state (no gRPC); thread-safe."""

from __future__ import annotations

import enum
import logging
import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from emulation.admission.idempotency import ReplayCache, request_digest
from emulation.clock import EmulatedClock
from emulation.errors import ApplyAborted, GenerationMismatch, MalformedRequest, NoPower, ReplyLost
from southbound.types import CrossConnect, OcsEvent

log = logging.getLogger(__name__)

DARK_DBM = -40.0
DEFAULT_SWITCHING_TIME_S = 0.050


class ApplyFault(enum.Enum):
    """Faults the next apply can be made to hit (test hooks)."""

    ROLLBACK = "rollback"  # fails after part of the batch, restores the old state, ABORTED
    REPLY_LOST = "reply_lost"  # applies everything, then errors before answering (INTERNAL)


@dataclass(frozen=True)
class CrossConnectEntry:
    connect: CrossConnect
    ready_at: float  # emulated time the mirrors settle

    def switching(self, now: float) -> bool:
        return now < self.ready_at


class CircuitRealiser(Protocol):
    """An optical data plane an OCS model drives (the packet-level fabric's OpenFlow bridge;
    the flow-level fabric has none: its data plane reads :meth:`OcsDevice.optical_arrays`).

    ``realise`` runs under the model's lock before an apply commits, with the circuits to
    take down and those to light at once (the new ones when the mirrors move instantly,
    none otherwise): raising :class:`~emulation.errors.ApplyAborted` aborts the apply, the
    model unchanged. ``committed`` follows, still under the lock, with the new circuits."""

    def realise(self, remove: set[CrossConnect], add: set[CrossConnect]) -> None: ...

    def committed(self, added: set[CrossConnect]) -> None: ...


class ServedOcs(Protocol):
    """What the OCS servicer serves: an OcsDevice, or one realised by a bridge
    (:class:`emulation.openflow.ocs.OpenFlowOcs`)."""

    @property
    def name(self) -> str: ...
    @property
    def radix(self) -> int: ...
    @property
    def sides(self) -> str: ...
    @property
    def generation(self) -> int: ...
    @property
    def switching_time_s(self) -> float: ...
    @property
    def powered(self) -> bool: ...

    def cross_connects(self) -> tuple[int, list[tuple[CrossConnect, bool]]]: ...

    def apply(
        self,
        request_id: str,
        expected_generation: int,
        remove: Iterable[tuple[int, int]],
        add: Iterable[tuple[int, int]],
    ) -> tuple[int, bool]: ...

    def port_status(self, ports: Iterable[int] = ()) -> list[dict[str, object]]: ...

    def subscribe(self) -> queue.SimpleQueue[OcsEvent]: ...

    def unsubscribe(self, q: queue.SimpleQueue[OcsEvent]) -> None: ...


class OcsDevice:
    """State of one OCS. ``sides`` is "split" (north ports 0..radix/2-1, south the rest) or
    "any". ``fibres_lit``: whether light comes in at every port from the start (else each
    port is dark until :meth:`set_fibre`). ``realiser``, when given, is programmed before
    every apply commits (see CircuitRealiser)."""

    def __init__(
        self,
        name: str,
        radix: int,
        clock: EmulatedClock,
        *,
        sides: str = "split",
        switching_time_s: float = DEFAULT_SWITCHING_TIME_S,
        tx_power_dbm: float = 0.0,
        seed: int = 0,
        fibres_lit: bool = True,
        realiser: CircuitRealiser | None = None,
    ) -> None:
        if sides not in ("split", "any"):
            raise ValueError(f"sides must be 'split' or 'any', got {sides!r}")
        if radix < 2:
            raise ValueError("an OCS needs at least 2 ports")
        self.name = name
        self.radix = radix
        self.sides = sides
        self.switching_time_s = switching_time_s
        self.clock = clock
        self._lock = threading.RLock()
        self._peer = np.full(radix, -1, dtype=np.int64)
        self._entries: dict[CrossConnect, CrossConnectEntry] = {}
        self._pending: set[CrossConnect] = set()  # not yet announced as up
        self.generation = 1
        self.powered = True
        rng = np.random.default_rng(seed)
        # Per-port losses, fixed for the device's life: fibre in, and through the mirrors.
        self._fibre_loss_db = rng.uniform(0.2, 0.8, radix)
        self._insertion_loss_db = rng.uniform(1.0, 2.5, radix)
        self._tx_power_dbm = tx_power_dbm
        self._fibre_ok = np.full(radix, fibres_lit, dtype=bool)
        self.realiser = realiser
        self._replays: ReplayCache[int] = ReplayCache()
        self._fault: ApplyFault | None = None
        self._sequence = 0
        self._subscribers: list[queue.SimpleQueue[OcsEvent]] = []
        self._change_listeners: list[Callable[[OcsDevice], None]] = []
        self._unsubscribe_clock = clock.subscribe(self.tick)

    # -- reading ------------------------------------------------------------------------
    def side_of(self, port: int) -> str:
        if self.sides == "any":
            return "any"
        return "north" if port < self.radix // 2 else "south"

    def cross_connects(self) -> tuple[int, list[tuple[CrossConnect, bool]]]:
        """(generation, [(cross-connect, switching?)]) sorted by ports."""
        now = self.clock.now()
        with self._lock:
            items = [(c, e.switching(now)) for c, e in sorted(self._entries.items())]
            return self.generation, items

    def established(self, now: float | None = None) -> list[CrossConnect]:
        now = self.clock.now() if now is None else now
        with self._lock:
            if not self.powered:
                return []
            return [c for c, e in self._entries.items() if not e.switching(now)]

    def port_status(self, ports: Iterable[int] = ()) -> list[dict[str, object]]:
        wanted = list(ports) or list(range(self.radix))
        self._check_ports(wanted)
        now = self.clock.now()
        with self._lock:
            light_in = np.where(
                self._fibre_ok, self._tx_power_dbm - self._fibre_loss_db, DARK_DBM
            )
            status = []
            for port in wanted:
                peer = int(self._peer[port])
                lit_out = DARK_DBM
                connected = None
                if peer >= 0:
                    connected = peer
                    entry = self._entries[CrossConnect(port, peer)]
                    if self.powered and not entry.switching(now) and self._fibre_ok[peer]:
                        lit_out = float(light_in[peer] - self._insertion_loss_db[port])
                rx = float(light_in[port])
                status.append(
                    {
                        "port": port,
                        "side": self.side_of(port),
                        "rx_power_dbm": rx,
                        "tx_power_dbm": lit_out,
                        "oper_up": rx > DARK_DBM and lit_out > DARK_DBM,
                        "connected_port": connected,
                    }
                )
            return status

    def optical_arrays(self, now: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(peer, switching, fibre_ok) per port at ``now``; no peers while unpowered."""
        with self._lock:
            peer = self._peer.copy() if self.powered else np.full(self.radix, -1, np.int64)
            switching = np.zeros(self.radix, dtype=bool)
            for c, e in self._entries.items():
                if e.switching(now):
                    switching[[c.a, c.b]] = True
            return peer, switching, self._fibre_ok.copy()

    def next_ready_time(self, now: float) -> float | None:
        """When the next switching circuit settles, if any is switching at ``now``."""
        with self._lock:
            pending = [e.ready_at for e in self._entries.values() if e.ready_at > now]
        return min(pending) if pending else None

    # -- changing -----------------------------------------------------------------------
    def apply(
        self,
        request_id: str,
        expected_generation: int,
        remove: Iterable[tuple[int, int]],
        add: Iterable[tuple[int, int]],
    ) -> tuple[int, bool]:
        """Remove then add, all or nothing. Returns (generation, replayed)."""
        removing = [CrossConnect(a, b) for a, b in remove]
        adding = [CrossConnect(a, b) for a, b in add]
        digest = request_digest({"remove": sorted((c.a, c.b) for c in removing),
                                 "add": sorted((c.a, c.b) for c in adding)})
        with self._lock:
            cached = self._replays.get(request_id, expected_generation, digest)
            if cached is not None:
                return cached, True
            if not self.powered:
                raise NoPower("the device has no power")
            if expected_generation != self.generation:
                raise GenerationMismatch(
                    f"expected generation {expected_generation} but the device is at "
                    f"{self.generation}",
                    self.generation,
                )
            self._validate(removing, adding)
            added = set(adding) - set(removing)
            if self.realiser is not None:
                self.realiser.realise(set(removing) - set(adding), set() if self.switching_time_s else added)
            fault, self._fault = self._fault, None
            snapshot = (self._peer.copy(), dict(self._entries), set(self._pending))
            now = self.clock.now()
            for c in removing:
                self._disconnect(c)
            for i, c in enumerate(adding):
                if fault is ApplyFault.ROLLBACK and i >= len(adding) // 2:
                    self._peer, self._entries, self._pending = snapshot
                    raise ApplyAborted(
                        f"mirror for ports {c.a}-{c.b} failed to move after "
                        f"{i} of {len(adding)} adds; rolled back to generation {self.generation}",
                        self.generation,
                    )
                self._connect(c, now + self.switching_time_s)
            self.generation += 1
            self._replays.put(request_id, expected_generation, self.generation, digest)
            for c in removing:
                if c not in adding:
                    self._emit("circuit_down", connect=c, reason="removed")
            self.tick(now)
            if self.realiser is not None:
                self.realiser.committed(added)
        self._notify_change()
        if fault is ApplyFault.REPLY_LOST:
            raise ReplyLost(f"agent failed after applying generation "
                            f"{self.generation}")
        return self.generation, False

    def _validate(self, remove: list[CrossConnect], add: list[CrossConnect]) -> None:
        self._check_ports([p for c in (*remove, *add) for p in (c.a, c.b)])
        removed_ports: set[int] = set()
        for c in remove:
            if self._peer[c.a] != c.b:
                raise MalformedRequest(f"no cross-connect {c.a}-{c.b} to remove")
            if c.a in removed_ports:
                raise MalformedRequest(f"cross-connect {c.a}-{c.b} removed twice")
            removed_ports.update((c.a, c.b))
        taken: set[int] = set()
        for c in add:
            if c.a == c.b:
                raise MalformedRequest(f"cross-connect {c.a}-{c.b} joins a port "
                                       "to itself")
            for port in (c.a, c.b):
                if port in taken:
                    raise MalformedRequest(f"port {port} is used twice in the batch")
                if self._peer[port] >= 0 and port not in removed_ports:
                    raise MalformedRequest(
                        f"port {port} is already in a circuit with port "
                        f"{int(self._peer[port])}"
                    )
                taken.add(port)
            if self.sides == "split" and self.side_of(c.a) == self.side_of(c.b):
                raise MalformedRequest(
                    f"ports {c.a} and {c.b} are both on the {self.side_of(c.a)} "
                    "side; a circuit joins a north and a south port"
                )

    def _check_ports(self, ports: Iterable[int]) -> None:
        for port in ports:
            if not 0 <= port < self.radix:
                raise MalformedRequest(
                    f"unknown port {port} (ports are 0..{self.radix - 1})"
                )

    def _connect(self, c: CrossConnect, ready_at: float) -> None:
        self._peer[c.a], self._peer[c.b] = c.b, c.a
        self._entries[c] = CrossConnectEntry(c, ready_at)
        self._pending.add(c)

    def _disconnect(self, c: CrossConnect) -> None:
        self._peer[[c.a, c.b]] = -1
        self._entries.pop(c, None)
        self._pending.discard(c)

    def preload(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Start with these circuits established (a fabric's initial state); no events."""
        connects = [CrossConnect(a, b) for a, b in pairs]
        with self._lock:
            self._validate([], connects)
            for c in connects:
                self._connect(c, float("-inf"))
                self._pending.discard(c)
        self._notify_change()

    def adopt(self, connects: Iterable[CrossConnect], generation: int | None) -> None:
        """Take ``connects`` as established circuits (announced up) at ``generation`` (the
        next one when None), unrealised: what a restarted agent found its bridge holding."""
        with self._lock:
            for c in connects:
                self._connect(c, self.clock.now())
            self.generation = generation if generation is not None else self.generation + 1
            self.tick(self.clock.now())

    def settled(self, connects: Iterable[CrossConnect], now: float) -> set[CrossConnect]:
        """Those of ``connects`` still held whose mirrors have stopped moving by ``now``."""
        with self._lock:
            return {c for c in connects if c in self._entries and not self._entries[c].switching(now)}

    def drop(self, connects: Iterable[CrossConnect], reason: str) -> None:
        """Take ``connects`` down (a new generation), each with a circuit_down event."""
        connects = sorted(connects)
        with self._lock:
            for c in connects:
                self._disconnect(c)
            self.generation += 1
            for c in connects:
                self._emit("circuit_down", connect=c, reason=reason)
        self._notify_change()

    def fibre_ok(self, port: int) -> bool:
        """Whether light comes in at ``port``."""
        return bool(self._fibre_ok[port])

    def lose_power(self) -> int:
        """Power loss: every circuit is gone. Returns how many were lost."""
        with self._lock:
            lost = len(self._entries)
            self._peer[:] = -1
            self._entries.clear()
            self._pending.clear()
            self.powered = False
            self.generation += 1
            self._emit("power_loss", circuits_lost=lost)
        log.info("%s lost power, %d circuits gone", self.name, lost)
        self._notify_change()
        return lost

    def restore_power(self) -> None:
        with self._lock:
            if self.powered:
                return
            self.powered = True
            self.generation += 1
            self._emit("power_restored")
        self._notify_change()

    def set_fibre(self, port: int, ok: bool) -> None:
        """Cut (or mend) the fibre at ``port``: no light comes in. An established circuit
        on the port goes down (or comes back up) with an event."""
        self._check_ports([port])
        with self._lock:
            changed = bool(self._fibre_ok[port]) != ok
            self._fibre_ok[port] = ok
            peer = int(self._peer[port])
            if changed and peer >= 0 and self.powered:
                connect = CrossConnect(port, peer)
                if not self._entries[connect].switching(self.clock.now()):
                    if ok and self._fibre_ok[peer]:
                        self._emit("circuit_up", connect=connect)
                    elif not ok:
                        self._emit("circuit_down", connect=connect,
                                   reason=f"loss of light on port {port}")
        self._notify_change()

    def inject_apply_fault(self, fault: ApplyFault) -> None:
        """The next apply hits ``fault`` (test hook)."""
        with self._lock:
            self._fault = fault

    # -- time and events ----------------------------------------------------------------
    def tick(self, now: float) -> None:
        """Announce circuits that finished switching by ``now``."""
        changed = False
        with self._lock:
            if not self.powered or not self._pending:
                return
            for c in sorted(self._pending):
                if not self._entries[c].switching(now):
                    self._pending.discard(c)
                    self._emit("circuit_up", connect=c)
                    changed = True
        if changed:
            self._notify_change()

    def subscribe(self) -> queue.SimpleQueue[OcsEvent]:
        q: queue.SimpleQueue[OcsEvent] = queue.SimpleQueue()
        with self._lock:
            self._subscribers.append(q)
        return q

    def unsubscribe(self, q: queue.SimpleQueue[OcsEvent]) -> None:
        with self._lock:
            if q in self._subscribers:
                self._subscribers.remove(q)

    def on_change(self, listener: Callable[[OcsDevice], None]) -> None:
        """Call ``listener(device)`` after every change of circuits, power or fibre."""
        self._change_listeners.append(listener)

    def _emit(self, kind: str, connect: CrossConnect | None = None, reason: str = "",
              circuits_lost: int = 0) -> None:
        self._sequence += 1
        event = OcsEvent(self._sequence, self.clock.now(), self.generation, kind, connect,
                         reason, circuits_lost)
        for q in self._subscribers:
            q.put(event)

    def _notify_change(self) -> None:
        for listener in self._change_listeners:
            listener(self)

    def close(self) -> None:
        self._unsubscribe_clock()
