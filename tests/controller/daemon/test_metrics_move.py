"""Metrics that operators alert on exist from the start and follow what they report (issue 33)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
from prometheus_client import generate_latest

from controller import decision as dec
from controller.config import ControllerConfig
from controller.daemon import Daemon
from controller.metrics import RECONFIG_OUTCOMES, TOE_FAILURE_REASONS, ControllerMetrics
from controller.replay.series import Series
from controller.replay.series_fabric import SeriesFabric
from optimizer.topology import uniform_mesh
from optimizer.traffic import uniform_matrix
from tests.support import CONFIGS, shipped_fabric


def test_every_outcome_and_reason_is_exported_at_zero_from_the_start() -> None:
    text = generate_latest(ControllerMetrics(process=False).registry).decode()
    for outcome in RECONFIG_OUTCOMES:
        assert f'heliostat_reconfigurations_total{{outcome="{outcome}"}} 0.0' in text
    for reason in TOE_FAILURE_REASONS:
        assert f'heliostat_toe_failures_total{{reason="{reason}"}} 0.0' in text
    assert "heliostat_toe_paused 0.0" in text


def test_toe_paused_follows_ctl_pause_and_resume(tmp_path: Path) -> None:
    fabric = shipped_fabric("fabric-4")
    gbps = np.array([uniform_matrix(fabric, 0.3).gbps] * 4)
    series = Series(fabric.block_names, np.arange(4) * 30.0, gbps, "<test>")
    devices = SeriesFabric(fabric, series, uniform_mesh(fabric))
    config = ControllerConfig("<test>", CONFIGS / "fabric-4.yaml", tmp_path / "d.yaml", tmp_path / "j.db")
    config = replace(config, intervals=replace(config.intervals, te_interval=30.0))
    metrics = ControllerMetrics(process=False)
    daemon = Daemon(config, clock=devices.now, devices=devices, wait=devices.advance, metrics=metrics)
    daemon.start()
    try:
        daemon.cycle()
        assert metrics.toe_paused._value.get() == 0
        daemon.requests.put(dec.SetToePaused(True))
        devices.advance_to(30.0)
        daemon.cycle()
        assert metrics.toe_paused._value.get() == 1  # it stayed 0 while status said paused
        daemon.requests.put(dec.SetToePaused(False))
        devices.advance_to(60.0)
        daemon.cycle()
        assert metrics.toe_paused._value.get() == 0
    finally:
        daemon.close()
