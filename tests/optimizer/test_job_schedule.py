"""The schedule ``heliostat replay --jobs`` plays (issue 31 item 3): what it offers when, and
its named errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from optimizer.errors import ConfigError
from optimizer.jobs import job_traffic, load_job
from optimizer.jobs.schedule import load_schedule
from tests.support import CONFIGS, shipped_fabric

FABRIC_16 = shipped_fabric("fabric-16")


def test_the_shipped_schedule_offers_each_job_s_average_while_it_runs() -> None:
    schedule = load_schedule(CONFIGS / "jobs" / "schedules" / "mix-16.yaml", FABRIC_16)
    assert [j.name for j in schedule.jobs] == ["dense-ring", "pipeline", "moe", "hierarchical"]
    ring = load_job(CONFIGS / "jobs" / "fabric-16" / "dense-ring.yaml", FABRIC_16)
    blocks = FABRIC_16.block_names
    background = schedule.background(blocks).gbps
    assert np.allclose(schedule.offered(0.0, blocks), background)
    alone = schedule.offered(600.0, blocks) - background
    assert np.allclose(alone, job_traffic(ring, FABRIC_16).mean().gbps)
    assert schedule.events()[:3] == [0.0, 600.0, 1800.0] and schedule.events()[-1] == schedule.end
    assert [j.name for j in schedule.running(5000.0)] == ["dense-ring", "pipeline", "moe", "hierarchical"]
    assert [j.name for j in schedule.running(5400.0)] == ["pipeline", "moe", "hierarchical"]


def write(tmp_path: Path, body: str) -> Path:
    job = (CONFIGS / "jobs" / "fabric-16" / "dense-ring.yaml").read_text()
    (tmp_path / "ring.yaml").write_text(job)
    path = tmp_path / "schedule.yaml"
    path.write_text(body)
    return path


@pytest.mark.parametrize(
    ("body", "key", "problem"),
    [
        ("jobs: []", "jobs", "at least one job"),
        ("jobs:\n  - {job: ring.yaml, start: 10, end: 5}", "jobs[0].end", "before it starts"),
        ("jobs:\n  - {job: nope.yaml, start: 0, end: 5}", "jobs[0].job", "no job file"),
        ("jobs:\n  - {job: ring.yaml, start: -1, end: 5}", "jobs[0].start", ">= 0"),
        ("jobs:\n  - {job: ring.yaml, end: 5}", "jobs[0].start", "missing"),
        (
            "jobs:\n  - {job: ring.yaml, start: 0, end: 5}\n  - {job: ring.yaml, start: 1, end: 5}",
            "jobs[1].job",
            "already scheduled",
        ),
        ("end: 3\njobs:\n  - {job: ring.yaml, start: 0, end: 5}", "end", "before the last job"),
        ("background_gbps: -1\njobs:\n  - {job: ring.yaml, start: 0, end: 5}", "background_gbps", ">= 0"),
    ],
)
def test_a_bad_schedule_is_refused_naming_the_key(tmp_path: Path, body: str, key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_schedule(write(tmp_path, body), FABRIC_16)
    assert caught.value.key == key and problem in caught.value.problem


def test_the_replay_ends_after_the_last_job_unless_told(tmp_path: Path) -> None:
    schedule = load_schedule(write(tmp_path, "jobs:\n  - {job: ring.yaml, start: 0, end: 100}"), FABRIC_16)
    assert schedule.end == 100 + 900
