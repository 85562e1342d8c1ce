"""A short chaos soak (benchmarks/soak.py, 54 s of events) in the test suite: every kind of
fault and operator action at least once on a running ``heliostat run``, and no invariant broken."""

from __future__ import annotations

import pytest

from benchmarks.soak import KINDS, SoakSettings, report_markdown, soak
from tests.support.daemon_support import CONFIGS


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_a_short_soak_survives_every_fault_and_keeps_every_invariant() -> None:
    settings = SoakSettings(fabric=CONFIGS / "fabric-4.yaml", minutes=0.9, seed=7, every=2.5)
    report = soak(settings)
    summary = report_markdown(report, "the test machine")
    assert report.ok, summary
    for kind in KINDS:  # the first len(KINDS) events are each kind once
        assert report.injected[kind] >= 1, summary
        assert report.survived[kind] == report.injected[kind], summary  # every fault undone, and lived
    assert report.daemon_starts == 1 + report.injected["daemon_kill"]
    assert report.blackholed_outside == 0
