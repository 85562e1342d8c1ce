"""The link repair's rounding MILP is bounded by work, not time: the weights the controller
pushes are a function of its inputs, however loaded the machine is."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
import pytest
from highspy import cb
from highspy._core import _Highs

import optimizer.te.linkmilp as linkmilp
from optimizer.fabric import Fabric
from optimizer.te import TeResult, solve_te
from optimizer.traffic import TrafficMatrix, gravity_matrix
from tests.optimizer.te.test_linkfit import at_load, hot_fabric

OLD_TIME_LIMIT = 1.5  # seconds: the wall-clock limit the MILP had before it was bounded by work
PAUSE = 0.05  # seconds the "slowed machine" loses at each of HiGHS's checks of its limits


def milp_case() -> tuple[Fabric, TrafficMatrix]:
    """hot 32 +spine, seed 2, skewed at 0.9: the staging falls short, so the MILP runs (four of
    them, 0.1-1.3 s each on a quiet machine; its quantised MLU varied run to run under load)."""
    fabric = hot_fabric(32, spine=True, seed=2)
    return fabric, at_load(fabric, gravity_matrix(fabric, 2, 0.5, skew=2.0), 0.9)


def weights(result: TeResult) -> dict[tuple[str, str], dict[str, int]]:
    return {(g.src, g.dst): {h.via: h.weight for h in g.next_hops} for g in result.groups}


class _Recorder:
    """Wraps the MILP's HiGHS: records each run's nodes and how often HiGHS checked its
    limits, and with ``pause`` sleeps at each check, so that its wall clock runs as on a
    machine slowed by other work while the solver does exactly the same work."""

    def __init__(self, pause: float) -> None:
        self.pause = pause
        self.runs: list[tuple[int, int]] = []  # (nodes, limit checks) of each MILP

    def factory(self) -> _Highs:
        recorder = self

        class Highs(_Highs):  # type: ignore[misc]
            def run(self) -> Any:
                checks = [0]

                def check(*_: Any) -> None:
                    checks[0] += 1
                    time.sleep(recorder.pause)

                self.setCallback(check, None)
                self.startCallback(cb.HighsCallbackType.kCallbackMipInterrupt)
                status = super().run()
                recorder.runs.append((self.getInfo().mip_node_count, checks[0]))
                return status

        return Highs()


def solve_recorded(monkeypatch: pytest.MonkeyPatch, pause: float) -> tuple[TeResult, _Recorder]:
    recorder = _Recorder(pause)
    with monkeypatch.context() as patch:
        patch.setattr(linkmilp, "_Highs", recorder.factory)
        fabric, tm = milp_case()
        return solve_te(fabric, None, tm), recorder


@pytest.mark.slow
def test_weights_do_not_depend_on_the_machines_load(monkeypatch: pytest.MonkeyPatch) -> None:
    # The wall-clock backstop is a safety net with its own test (below); here it must not cut,
    # or a machine loaded by other tests (the pauses add seconds to real slowness) would make
    # this test about the backstop: it once cut at 10 s under load 5.
    monkeypatch.setattr(linkmilp, "_MILP_BACKSTOP_SECONDS", 600.0)
    quiet, quiet_runs = solve_recorded(monkeypatch, 0.0)
    slowed, slowed_runs = solve_recorded(monkeypatch, PAUSE)
    assert quiet_runs.runs, "the case no longer reaches the rounding MILP: pick another"
    assert weights(slowed) == weights(quiet)
    assert slowed.mlu_quantized == quiet.mlu_quantized
    # Every MILP did the same work (nodes, and checks of its limits)...
    assert slowed_runs.runs == quiet_runs.runs
    # ...though the pauses alone made one of them outlast the old time limit.
    assert max(checks for _, checks in slowed_runs.runs) * PAUSE > OLD_TIME_LIMIT


@pytest.mark.slow
def test_the_wall_clock_backstop_warns_when_it_cuts(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(linkmilp, "_MILP_BACKSTOP_SECONDS", 0.2)
    with caplog.at_level(logging.WARNING, logger="optimizer.te.linkmilp"):
        result, recorder = solve_recorded(monkeypatch, PAUSE)
    cut = [r for r in caplog.records if "wall-clock backstop" in r.getMessage()]
    assert cut and all(r.levelno == logging.WARNING for r in cut)
    assert "depend on the machine's load" in cut[0].getMessage()
    assert np.isfinite(result.mlu_quantized)  # the repair still returns its best weights
    assert recorder.runs
