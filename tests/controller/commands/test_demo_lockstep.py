"""The demo's lockstep clock: its deadlines are in the controller's time, with a real backstop.

A CI machine once took 100 s of real time for 40 s of the demo's script (the fabric stands
still while the controller works): the demo's ``--timeout`` counted real seconds and gave up
half way through the reconfiguration. The stand-ins below are the fabric's clock and a daemon
whose every cycle costs real time; the unit under test is ``Lockstep``.
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

from controller.commands.demo.lockstep import Lockstep


class _Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t


class _Fabric:
    def __init__(self) -> None:
        self.clock = _Clock()

    def step(self, seconds: float) -> None:
        self.clock.t += seconds


def _daemon(cycle_cost_s: float, interval_s: float) -> Any:
    """A daemon whose cycle takes ``cycle_cost_s`` of real time and no fabric time."""
    cycles: list[float] = []

    def cycle_safely() -> bool:
        time.sleep(cycle_cost_s)
        cycles.append(time.monotonic())
        return True

    return SimpleNamespace(
        cycle_safely=cycle_safely, cycles=cycles, drivers=None, stop_event=threading.Event(),
        config=SimpleNamespace(intervals=SimpleNamespace(te_interval=interval_s)),
        shared=SimpleNamespace(control=SimpleNamespace(reconfiguration=None)),
    )


def test_a_slow_machine_stretches_the_real_time_not_the_controllers_deadline() -> None:
    fabric = _Fabric()
    lockstep = Lockstep(fabric, speed=20.0)  # type: ignore[arg-type]
    daemon = _daemon(cycle_cost_s=0.02, interval_s=1.0)
    lockstep.attach(daemon)
    began = time.monotonic()
    stop_at = lockstep.now() + 5.0
    held = lockstep.run_until(lambda: False, stop_at)
    real = time.monotonic() - began
    assert held is False
    # 5 s of the controller's time, one cycle a second: 5 cycles, however long each took
    assert len(daemon.cycles) == 5
    assert lockstep.now() >= stop_at and (fabric.clock.t - 1000.0) == 5.0 * 20.0
    assert real < 5.0  # and far less real time: the demo runs as fast as the machine allows


def test_the_real_backstop_ends_a_run_whose_controller_time_hardly_moves() -> None:
    fabric = _Fabric()
    lockstep = Lockstep(fabric, speed=20.0)  # type: ignore[arg-type]
    daemon = _daemon(cycle_cost_s=0.05, interval_s=1e-4)  # cycles that move the clock by 0.1 ms
    lockstep.attach(daemon)
    lockstep.give_up_at = time.monotonic() + 0.5
    held = lockstep.run_until(lambda: False, lockstep.now() + 3600.0)
    assert held is False
    assert time.monotonic() >= lockstep.give_up_at
    assert lockstep.now() - lockstep.origin < 1.0  # the controller's deadline was far off


def test_the_condition_ends_the_run_before_either_deadline() -> None:
    fabric = _Fabric()
    lockstep = Lockstep(fabric, speed=10.0)  # type: ignore[arg-type]
    daemon = _daemon(cycle_cost_s=0.0, interval_s=2.0)
    lockstep.attach(daemon)
    assert lockstep.run_until(lambda: len(daemon.cycles) >= 3, lockstep.now() + 100.0)
    assert len(daemon.cycles) == 3
    assert abs((lockstep.now() - lockstep.origin) - 6.0) < 1e-6  # three 2 s intervals
