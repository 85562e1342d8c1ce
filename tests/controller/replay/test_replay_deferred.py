"""A deferred ToE plan replayed (issue 30): a hot period, then a quiet one.

On a hot 8-block mixed 100G/200G fabric under a shift matrix at mesh MLU 0.9 the ToE's target
gains more than 10% but no way to it keeps the stage rule (a stage would drain circuits the
shift needs); the best safe sequence gains under the 10% threshold (under the ring it now
gains 11% and is applied at once). The daemon defers the target and
re-stages it at each ToE check: it must wait through the hot period and apply in the quiet one,
every stage within the stage rule on the traffic of the moment, and ``heliostat replay``
reports when it applied and what it gained.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from controller.commands.ctl.tables import status_text
from controller.config import ControllerConfig
from controller.daemon import Daemon
from controller.northbound.client import StatusReport
from controller.northbound.daemon_api import DaemonApi
from controller.replay.engine import ReplayEngine, ReplayResult
from controller.replay.report import replay_json, replay_table
from controller.replay.series import Series
from controller.replay.series_fabric import SeriesFabric
from optimizer.config import dump_fabric_yaml
from optimizer.topology import uniform_mesh
from tests.support.hot_fabrics import mesh_scaled, mixed_fabric, shift
from tests.support.shaped_series import INTERVAL, steps

FABRIC = mixed_fabric(8)
HOT, QUIET = 20, 20  # snapshots of each period
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _setup(tmp_path: Path, hot_load: float, quiet_load: float, ttl: float) -> tuple[Series, ControllerConfig]:
    fabric_file = tmp_path / "hot-8.yaml"
    fabric_file.write_text(dump_fabric_yaml(FABRIC))
    shape = mesh_scaled(FABRIC, shift(FABRIC), 1.0).gbps
    series = steps(FABRIC, [(shape * hot_load, HOT), (shape * quiet_load, QUIET)], "hot then quiet")
    base = ControllerConfig("<test>", fabric_file, tmp_path / "devices.yaml", tmp_path / "journal.db")
    return series, replace(
        base,
        intervals=replace(base.intervals, te_interval=INTERVAL, prediction_window=4 * INTERVAL,
                          toe_check_interval=4 * INTERVAL),
        thresholds=replace(base.thresholds, reconfig_gain=0.1, min_reconfig_interval=600.0,
                           deferred_plan_ttl=ttl),
        timeouts=replace(base.timeouts, toe_solve=30.0),
    )


def _replay(tmp_path: Path, hot_load: float, quiet_load: float, ttl: float = 1200.0) -> ReplayResult:
    series, config = _setup(tmp_path, hot_load, quiet_load, ttl)
    return ReplayEngine(config.fabric, FABRIC, series, config, toe=True).run()


@pytest.mark.slow
def test_the_deferred_plan_applies_in_the_quiet_window_and_never_in_the_hot_one(tmp_path: Path) -> None:
    result = _replay(tmp_path, 0.9, 0.45)
    quiet_from = HOT * INTERVAL
    outcomes = [(d.outcome, d.time) for d in result.deferred]
    deferred = [d for d in result.deferred if d.outcome == "deferred"]
    applied = [d for d in result.deferred if d.outcome == "applied"]
    assert deferred and deferred[0].time < quiet_from, outcomes
    assert deferred[0].stage_mlu > deferred[0].stage_limit  # why it waits: the stage does not fit
    assert len(applied) == 1 and applied[0].time >= quiet_from, outcomes
    assert all(d.outcome == "waiting" for d in result.deferred if deferred[0].time < d.time < applied[0].time)
    # nothing was reconfigured while hot; the one reconfiguration ran whole in the quiet window
    assert result.reconfigurations == 1 and result.reconfigurations_rolled_back == 0
    assert not any(s.reconfiguring for s in result.snapshots if s.time < quiet_from)
    assert result.stage_checks and all(c.kept and c.time >= quiet_from for c in result.stage_checks)
    assert result.blackholed_bytes == 0.0
    # what it gained: the quiet traffic on the new topology against the same traffic on the mesh
    gained = applied[0]
    assert gained.waited_s >= quiet_from - deferred[0].time - 1e-9
    assert gained.mlu_before is not None and gained.mlu_after is not None
    assert gained.mlu_after < gained.mlu_before * 0.95
    assert gained.target_mlu < gained.current_mlu * 0.9
    summary = replay_json(result)["summary"]["deferred_plans"]
    assert summary["deferred"] >= 1 and summary["applied"] == 1 and summary["expired"] == 0
    table = replay_table(result)
    assert "deferred plans:" in table and f"applied after waiting {gained.waited_s:.0f}s" in table
    last = np.array([s.mlu for s in result.snapshots[-5:] if s.mlu is not None])
    assert last.size and float(last.max()) < gained.mlu_before  # the quiet traffic stays cooler


@pytest.mark.slow
def test_a_load_that_never_leaves_room_lets_the_plan_expire_and_nothing_is_applied(tmp_path: Path) -> None:
    result = _replay(tmp_path, 0.9, 0.9, ttl=4 * INTERVAL * 2)
    outcomes = [d.outcome for d in result.deferred]
    assert "expired" in outcomes and "applied" not in outcomes, outcomes
    assert result.reconfigurations == 0 and not result.stage_checks


@pytest.mark.slow
def test_a_deferred_plan_shows_in_the_status_and_survives_a_restart(tmp_path: Path) -> None:
    """The daemon itself on in-memory devices driven by the series (as replay runs it), with a
    journal on disk: the deferred plan is in the status (API details, ``ctl status``), then
    a new daemon on the same journal starts with it and keeps checking it."""
    series, config = _setup(tmp_path, 0.9, 0.9, 1200.0)
    devices = SeriesFabric(FABRIC, series, uniform_mesh(FABRIC))
    daemon = Daemon(config, clock=devices.now, devices=devices, wait=devices.advance)
    daemon.start()
    try:
        for k in range(3):
            devices.advance_to(k * INTERVAL)
            assert daemon.cycle_safely()
        deferred = daemon.shared.deferred
        assert deferred is not None and deferred.since == INTERVAL
        status = DaemonApi(daemon).status()
        facts = status.details["deferred_plan"]
        assert facts["since"] == INTERVAL and facts["expires_at"] == INTERVAL + 1200.0
        assert facts["stage_mlu"] > facts["stage_limit"] and "would drain a circuit between" in facts["why"]
        text = status_text(StatusReport(status, ""), devices.now())
        row = next(line for line in text.splitlines() if line.startswith("deferred ToE plan"))
        assert f"since {INTERVAL:.0f} s ago" in row and facts["why"] in row
        assert daemon.metrics.toe_deferred_since._value.get() == INTERVAL
    finally:
        daemon.close()
    restarted = Daemon(config, clock=devices.now, devices=devices, wait=devices.advance)
    restarted.start()
    try:
        assert restarted.shared.deferred == deferred
        assert restarted.board.get("deferred_plan")["since"] == INTERVAL
        events: list[str] = []
        restarted.report.listener = lambda kind, details: events.append(str(details.get("deferred", "")))
        devices.advance_to(deferred.since + 4 * INTERVAL)  # the next ToE check: still no room
        assert restarted.cycle_safely()
        checked = restarted.shared.deferred
        assert checked is not None and checked.checks == deferred.checks + 1
        assert "waiting" in events
    finally:
        restarted.close()
