"""The demo's lockstep clock: the daemon's loop and the emulated fabric take turns.

Run side by side in real time, a fabric whose clock runs 20 times real time moves on by a
second of traffic for every 50 ms the controller takes between two reads it pairs (a gNMI
sample and the P4Runtime byte counters read as it arrives). The measured matrices then
wobble by a few percent from run to run, and with them the ToE's plan and its stages: the
demo differed run to run with the same seed (issue 33).

In lockstep the fabric stands still while the controller works. The loop here runs one daemon
cycle, then moves the fabric's clock on to the next cycle; the executor's sleeps between its
checks move it too (``Daemon(wait=...)``, as ``heliostat replay`` does with its simulated
clock). After each move it waits until every switch's counters the controller reads are as of
the fabric's new time, so a cycle reads what the fabric did, whole. The controller's clock is
the fabric's, scaled back to real seconds: the intervals of ``controller-demo.yaml`` keep
their meaning. Same seed, same inputs, same plan.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from controller import decision as dec
from controller.commands.emulator import EmulatedFabric
from controller.daemon import Daemon
from controller.reconfig.executor import ExecutorInterrupted

log = logging.getLogger(__name__)

#: how long (real seconds) to wait for the switches' counters to reach the fabric's time
#: before a cycle goes ahead without them (a switch down, or a machine far too loaded)
SYNC_TIMEOUT_S = 10.0


class Lockstep:
    """The demo's clock: ``now()`` for the daemon, ``wait(seconds)`` for its executor, and
    ``run_until(condition)`` in place of ``Daemon.run``.

    ``speed`` is emulated seconds per controller second. ``pace``: never run ahead of real
    time (for a person watching the status page); without it the demo runs as fast as the
    machine allows."""

    def __init__(self, fabric: EmulatedFabric, speed: float, *, pace: bool = False) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be positive, got {speed}")
        self.fabric = fabric
        self.speed = speed
        self.pace = pace
        self.origin = time.time()
        self.real_origin = time.monotonic()
        self.emulated_origin = fabric.clock.now()
        self.daemon: Daemon | None = None
        self.stop = threading.Event()
        #: called after each move of the fabric's clock, counters in sync (the demo's peak MLU)
        self.after_move: list[Callable[[], None]] = []
        self.cycles = 0
        self.unsynced = 0  # moves after which some counters never reached the fabric's time
        #: a backstop in real (monotonic) time for ``run_until``: a machine so loaded that the
        #: controller's time hardly moves must not keep the demo going for ever
        self.give_up_at = float("inf")
        self._due: float | None = None

    def attach(self, daemon: Daemon) -> None:
        self.daemon = daemon

    # -- the daemon's clock and sleeps ---------------------------------------------------
    def now(self) -> float:
        """The controller's time: the fabric's, in real seconds since the demo began."""
        return self.origin + (self.fabric.clock.now() - self.emulated_origin) / self.speed

    def wait(self, seconds: float) -> bool:
        """The executor's sleep: moves the fabric on; True when the daemon is stopping."""
        self.move(seconds)
        return self.stop.is_set() or (self.daemon is not None and self.daemon.stop_event.is_set())

    def move(self, seconds: float) -> None:
        """Move the fabric on by ``seconds`` of controller time, then wait for the counters."""
        if seconds > 0:
            self.fabric.step(seconds * self.speed)
        if self.pace:
            ahead = (self.now() - self.origin) - (time.monotonic() - self.real_origin)
            if ahead > 0:
                self.stop.wait(ahead)
        self._sync()
        for hook in self.after_move:
            hook()

    def _sync(self) -> None:
        """Until every switch's counters are as of the fabric's time (gNMI streams its samples
        on its own schedule; the gRPC service answers at once)."""
        daemon = self.daemon
        if daemon is None or daemon.drivers is None:
            return
        target = self.fabric.clock.now() - 1e-6
        blocks = daemon.fabric.block_names
        deadline = time.monotonic() + SYNC_TIMEOUT_S
        while not self.stop.is_set():
            counters, errors = daemon.drivers.counters(blocks)
            if not errors and all(c.time_s >= target for c in counters.values()):
                return
            if time.monotonic() >= deadline:
                self.unsynced += 1
                late = sorted(set(errors) | {b for b, c in counters.items() if c.time_s < target})
                log.warning("lockstep: counters of %s not as of t=%.1f s after %.0f s; going on",
                            ", ".join(late), target, SYNC_TIMEOUT_S)
                return
            time.sleep(0.01)

    # -- the loop ------------------------------------------------------------------------
    def cycle(self) -> None:
        """One daemon cycle, then the fabric's clock on to the next one's time."""
        daemon = self.daemon
        if daemon is None:
            raise RuntimeError("Lockstep.attach(daemon) first")
        interval = daemon.config.intervals.te_interval
        started = self.now()
        if self._due is None:
            self._due = started
        try:
            healthy = daemon.cycle_safely()
        except ExecutorInterrupted:
            self.stop.set()
            return
        self.cycles += 1
        now = self.now()
        reconfiguring = healthy and daemon.shared.control.reconfiguration is not None
        self._due = dec.next_cycle_at(self._due, interval, now, reconfiguring, started=started)
        if self._due > now:
            self.move(self._due - now)

    def run_until(self, condition: Callable[[], bool], stop_at: float) -> bool:
        """Cycle until ``condition()`` (checked between cycles), or the controller's time
        reaches ``stop_at`` (``now()``: a slow machine stretches the real time the demo takes,
        not what happens in it), or ``give_up_at`` (real), or ``stop``; True when the
        condition held."""
        while not self.stop.is_set():
            if condition():
                return True
            if self.now() >= stop_at or time.monotonic() >= self.give_up_at:
                break
            self.cycle()
        return bool(condition())

    def run_for(self, seconds: float, stop_at: float) -> None:
        """Cycle for ``seconds`` of controller time."""
        until = self.now() + seconds
        self.run_until(lambda: self.now() >= until - 1e-9, stop_at)
