"""``heliostat replay --jobs`` (issue 31 item 3): a schedule of jobs under the uniform mesh,
reactive ToE and job-aware ToE, on fabric-8 with the two shipped jobs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from controller.replay.job_policies import schedule_series
from optimizer.jobs.schedule import load_schedule
from tests.support import CONFIGS, shipped_fabric
from tests.support.cli_helpers import run_cli

FABRIC_FILE = CONFIGS / "fabric-8.yaml"
TOE_INTERVAL = 300
LEAD = 600


def files(tmp_path: Path) -> tuple[Path, Path]:
    jobs = CONFIGS / "jobs"
    schedule = tmp_path / "schedule.yaml"
    schedule.write_text(
        "background_gbps: 1.0\nend: 2400\njobs:\n"
        f"  - {{job: {jobs / 'llm-dense.yaml'}, start: 300, end: 1800}}\n"
        f"  - {{job: {jobs / 'moe.yaml'}, start: 900, end: 2100}}\n"
    )
    config = tmp_path / "controller.yaml"
    config.write_text(
        f"fabric: {FABRIC_FILE}\ndevices: {tmp_path / 'unused'}\nstore: {tmp_path / 'unused.db'}\n"
        f"intervals:\n  toe_check_interval: {TOE_INTERVAL}\n  prediction_window: 600\n"
        f"  job_lead_time: {LEAD}\nthresholds:\n  min_reconfig_interval: 300\n"
    )
    return schedule, config


def test_the_series_offers_each_job_s_average_from_its_start_to_its_end(tmp_path: Path) -> None:
    fabric = shipped_fabric("fabric-8")
    schedule = load_schedule(files(tmp_path)[0], fabric)
    series = schedule_series(schedule, fabric, 300.0)
    assert {300.0, 900.0, 1800.0, 2100.0} <= set(series.times.tolist())
    assert series.times[-1] + series.duration(len(series) - 1) == pytest.approx(schedule.end)
    for t, matrix in zip(series.times, series.gbps, strict=True):
        running = sum((j.traffic.mean().gbps for j in schedule.running(t)), np.zeros_like(matrix))
        assert np.allclose(matrix, running + schedule.background(fabric.block_names).gbps)


@pytest.mark.slow
def test_job_aware_toe_is_ready_before_the_job_and_shortens_its_communication(tmp_path: Path) -> None:
    schedule, config = files(tmp_path)
    out = tmp_path / "jobs.json"
    args = ["replay", "--jobs", str(schedule), "--fabric", str(FABRIC_FILE), "--config", str(config)]
    run_cli(*args, "--format", "json", "--out", str(out), check=True, timeout=600)
    report = json.loads(out.read_text())
    by_policy = {p["policy"]: p for p in report["policies"]}
    assert list(by_policy) == ["mesh", "reactive", "job-aware"]
    mesh, reactive, aware = by_policy["mesh"], by_policy["reactive"], by_policy["job-aware"]
    assert mesh["reconfigurations"] == 0 and all(j["reached_s"] is None for j in mesh["jobs"])
    for policy in by_policy.values():
        assert policy["blackholed_segments"] == 0 and policy["blackholed_bytes"] == 0
        assert policy["stages_kept"] == policy["stages"]
        assert all(j["comm_seconds"] > 0 and j["iterations"] > 100 for j in policy["jobs"])
    dense = {p: next(j for j in by_policy[p]["jobs"] if j["name"] == "llm-dense") for p in by_policy}
    # announced LEAD s ahead, the job-aware ToE has its topology before the job's first byte;
    # the reactive one only after it has measured the traffic
    assert -LEAD <= dense["job-aware"]["reached_s"] < 0
    assert dense["reactive"]["reached_s"] >= 0
    assert aware["mean_comm_seconds"] < mesh["mean_comm_seconds"]
    assert aware["mean_comm_seconds"] <= reactive["mean_comm_seconds"]
    # the daemon planned on each arrival it was told of, and its planning was timed
    job_plans = [p for p in aware["plans"] if p["trigger"] == "job"]
    for due in (0.0, 900.0 - LEAD):  # llm-dense is due from the start, moe from 300 s
        assert any(due <= p["at"] <= due + 30.0 for p in job_plans), (due, job_plans)
    assert all(p["seconds"] > 0 for p in job_plans)
    assert not [p for p in reactive["plans"] if p["trigger"] == "job"] and not mesh["plans"]


@pytest.mark.parametrize(
    ("extra", "flag", "problem"),
    [
        (["--series", "x.csv"], "--series", "one of --series and --jobs"),
        (["--policies", "mesh,psychic"], "--policies", "unknown policy 'psychic'"),
        (["--policies", "mesh,mesh"], "--policies", "named twice"),
    ],
)
def test_bad_arguments_are_refused_naming_the_flag(
    tmp_path: Path, extra: list[str], flag: str, problem: str
) -> None:
    schedule, config = files(tmp_path)
    args = ["replay", "--jobs", str(schedule), "--fabric", str(FABRIC_FILE), "--config", str(config)]
    got = run_cli(*args, *extra)
    assert got.returncode != 0
    assert flag in got.stderr and problem in got.stderr
