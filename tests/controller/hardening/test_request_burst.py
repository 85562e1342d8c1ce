"""Operator bursts do not stall the loop: polling and TE keep their schedule however many
requests arrive (issue 16: 20 pause calls 0.1 s apart used to blind the controller for 18.7 s).

A real daemon loop runs in a thread against the emulated fabric over gRPC; the only
instrument is a counter around the drivers' ``poll`` (the real one is called).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from controller import decision as dec
from controller.config import load_controller_config
from controller.daemon import Daemon
from controller.dry_runs import DryRunFailed, DryRunner
from controller.northbound.api import ApiError, ApiErrorCode
from controller.northbound.daemon_api import DaemonApi
from optimizer.traffic import uniform_matrix
from tests.support.daemon_support import CONFIGS, controller_config, running_fabric, wait_for

FABRIC_FILE = CONFIGS / "fabric-4.yaml"
INTERVAL = 0.5


# -- the rule ------------------------------------------------------------------------------


def test_a_request_wake_keeps_the_scheduled_cycle() -> None:
    # due at 10; a request woke the loop at 9.2 and its cycle ended at 9.3
    assert dec.next_cycle_at(10.0, 1.0, 9.3, False, started=9.2) == 10.0
    # any number of early wakes: the schedule never moves
    due = 10.0
    for k in range(50):
        due = dec.next_cycle_at(due, 1.0, 9.0 + k * 0.01 + 0.005, False, started=9.0 + k * 0.01)
    assert due == 10.0


def test_the_scheduled_cycle_moves_the_schedule_one_interval() -> None:
    assert dec.next_cycle_at(10.0, 1.0, 10.2, False, started=10.0) == 11.0
    assert dec.next_cycle_at(10.0, 1.0, 10.2, False) == 11.0  # replay: cycles start when due
    # a cycle longer than the interval is not made up for by a burst
    assert dec.next_cycle_at(10.0, 1.0, 12.5, False, started=10.0) == 12.5


def test_an_early_cycle_that_overran_the_due_time_runs_the_scheduled_one_now() -> None:
    assert dec.next_cycle_at(10.0, 1.0, 10.4, False, started=9.9) == 10.0  # <= now: at once


def test_reconfiguring_runs_the_next_stage_right_away() -> None:
    assert dec.next_cycle_at(10.0, 1.0, 9.3, True, started=9.2) == 9.3


# -- the loop ------------------------------------------------------------------------------


class PollClock:
    """Times of the real drivers' polls."""

    def __init__(self, daemon: Daemon) -> None:
        self.times: list[float] = []
        drivers = daemon.drivers
        assert drivers is not None
        real = drivers.poll

        def poll():  # the real poll, timed
            self.times.append(time.monotonic())
            return real()

        drivers.poll = poll  # type: ignore[method-assign]

    def longest_gap(self, since: float, until: float) -> float:
        times = [since, *(t for t in self.times if since <= t <= until), until]
        return max(b - a for a, b in itertools.pairwise(times))


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[tuple[Daemon, DaemonApi, PollClock]]:
    with running_fabric(FABRIC_FILE, tmp_path, speed=10.0, tick_s=0.25) as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, 0.3))
        config = load_controller_config(
            controller_config(tmp_path, FABRIC_FILE, fabric.devices_file, te_interval=INTERVAL,
                              toe_check_interval=600.0)
        )
        daemon = Daemon(config)
        daemon.start()
        polls = PollClock(daemon)
        thread = threading.Thread(target=daemon.run, daemon=True)
        thread.start()
        try:
            yield daemon, DaemonApi(daemon, dry_run_wait_s=60.0), polls
        finally:
            daemon.stop()
            thread.join(timeout=30)
            daemon.close()


@pytest.mark.slow
def test_a_burst_of_pause_requests_does_not_delay_polling(loop) -> None:
    daemon, api, polls = loop
    wait_for(lambda: len(polls.times) >= 3, 20, what="the loop polling")
    start = time.monotonic()
    for k in range(20):
        (api.pause_toe if k % 2 == 0 else api.resume_toe)()
        time.sleep(0.1)
    burst_end = time.monotonic()
    # Before the fix every request pushed the schedule one interval: the first poll after
    # this burst came ~8 s later (20 intervals less the burst).
    first_after = wait_for(
        lambda: next((t for t in polls.times if t > burst_end), None), 20, what="a poll after the burst"
    )
    delay = first_after - burst_end
    assert delay < 2 * INTERVAL, f"first poll {delay:.2f} s after the burst"
    time.sleep(3 * INTERVAL)
    gap = polls.longest_gap(start, time.monotonic())
    assert gap < 2 * INTERVAL, f"no poll for {gap:.2f} s around a burst of 20 requests"
    assert daemon.state.toe_paused is False  # the last request (resume) was carried out


@pytest.mark.slow
def test_dry_runs_plan_beside_the_loop_and_are_bounded(loop) -> None:
    daemon, api, polls = loop
    wait_for(lambda: daemon.matrix is not None and daemon.board.get("te_runs") > 0, 30, what="TE")
    start = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: _dry_run(api), range(8)))
    end = time.monotonic()
    planned = [r for r in results if not isinstance(r, ApiError)]
    refused = [r for r in results if isinstance(r, ApiError)]
    assert planned, results
    assert refused, "8 dry runs at once were all queued"
    assert all(r.dry_run and r.plan is not None for r in planned)
    # Past the waiting limit a dry run is refused at once, with the reason, not queued.
    assert all(e.code is ApiErrorCode.UNAVAILABLE and "dry run" in e.message for e in refused)
    assert len(planned) + len(refused) == 8
    gap = polls.longest_gap(start, end)
    print(f"dry runs took {end - start:.2f} s; longest poll gap {gap:.2f} s")
    assert gap < 3 * INTERVAL + 1.0, f"no poll for {gap:.2f} s while dry runs planned"


def _dry_run(api: DaemonApi):
    try:
        return api.trigger_toe(dry_run=True)
    except ApiError as exc:
        return exc


def test_dry_runs_waiting_while_a_plan_runs_share_the_next_plan() -> None:
    release = threading.Event()
    calls: list[int] = []

    def plan() -> int:
        calls.append(len(calls))
        release.wait(10)
        return len(calls)

    runner = DryRunner(plan)
    first: Future = Future()
    runner.submit(first)
    wait_for(lambda: calls, 5, what="the first plan")
    later = [Future() for _ in range(5)]
    for f in later:
        runner.submit(f)  # returns at once: the caller (the loop) never waits for a plan
    release.set()
    assert first.result(5) == 1
    assert [f.result(5) for f in later] == [2] * 5  # one more plan answered all five
    assert len(calls) == 2
    runner.close()
    refused: Future = Future()
    runner.submit(refused)
    with pytest.raises(DryRunFailed):
        refused.result(1)
