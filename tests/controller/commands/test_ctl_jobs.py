"""``heliostat ctl job add | remove | list`` as subprocesses against a real daemon (emulated
fabric-8, real gRPC): the job reaches the daemon's journal, refusals exit 1 with the named
error, bad options name the option."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from controller.commands.ctl.jobs import jobs_table, parse_time
from controller.daemon.jobs import JOBS_KEY
from optimizer.errors import ConfigError
from optimizer.traffic import uniform_matrix
from tests.support import CONFIGS
from tests.support.cli_helpers import run_cli
from tests.support.daemon_support import Running, controller_config, running_fabric, serving_daemon

FABRIC_FILE = CONFIGS / "fabric-8.yaml"
JOB_FILE = CONFIGS / "jobs" / "llm-dense.yaml"


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tmp = tmp_path_factory.mktemp("ctl-jobs")
    with running_fabric(FABRIC_FILE, tmp) as emulated:
        emulated.set_demand(uniform_matrix(emulated.fabric, load=0.05))
        # lead time 60 s: a job an hour ahead is only announced (the daemon does not replan)
        config = controller_config(tmp, FABRIC_FILE, emulated.devices_file, toe_check_interval=3600.0,
                                   job_lead_time=60.0)
        with serving_daemon(config, tmp) as run:
            yield run


def ctl(run: Running, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("ctl", "--address", run.address, *args, timeout=60)


def test_parse_time_reads_iso_and_relative_seconds() -> None:
    assert parse_time("+90", "--start", 1000.0) == 1090.0
    eight = datetime(2026, 12, 3, 8, tzinfo=UTC).timestamp()
    assert parse_time("2026-12-03T08:00:00Z", "--start", 0.0) == eight
    assert parse_time("2026-12-03T09:00:00+01:00", "--start", 0.0) == eight
    assert parse_time("2026-12-03T08:00", "--start", 0.0) == eight  # no zone: UTC
    for bad in ("+soon", "+-5", "tomorrow"):
        with pytest.raises(ConfigError, match="--start"):
            parse_time(bad, "--start", 0.0)


def test_the_table_lists_each_job_with_its_phase() -> None:
    assert "no jobs announced" in jobs_table({"jobs": [], "lead_time_s": 900.0})
    job = {"name": "a", "phase": "due", "start": 0.0, "end": None, "blocks": ["b1", "b2"],
           "accelerators": 16, "gbps": 12.5, "comm_seconds": {"announced": 2.1, "now": None}}
    lines = jobs_table({"jobs": [job], "lead_time_s": 900.0}).splitlines()
    assert lines[0].split() == ["NAME", "PHASE", "START", "END", "BLOCKS", "ACCEL", "GBIT/S",
                                "COMM/IT-BEFORE", "COMM/IT-NOW"]
    assert lines[1].split() == ["a", "due", "1970-01-01", "00:00:00Z", "-", "b1,b2", "16", "12.5",
                                "2.100s", "-"]


def test_add_list_remove_through_the_cli(running: Running, tmp_path: Path) -> None:
    added = ctl(running, "job", "add", str(JOB_FILE), "--start", "+3600", "--end", "+7200",
                "--format", "json")
    assert added.returncode == 0, added.stderr
    job = json.loads(added.stdout)
    assert job["name"] == "llm-dense" and job["phase"] == "announced"
    assert job["end"] - job["start"] == pytest.approx(3600.0, abs=2.0)
    assert abs(job["start"] - (time.time() + 3600.0)) < 60.0
    journaled = running.journal.get_state(JOBS_KEY)
    assert [j["name"] for j in journaled] == ["llm-dense"]

    table = ctl(running, "job", "list")
    assert table.returncode == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if line.startswith("llm-dense"))
    assert row.split()[1] == "announced" and "b1,b2,b3,b4" in row
    listed = json.loads(ctl(running, "job", "list", "--format", "json").stdout)
    assert listed["lead_time_s"] == 60.0 and [j["name"] for j in listed["jobs"]] == ["llm-dense"]

    removed = ctl(running, "job", "remove", "llm-dense")
    assert removed.returncode == 0 and "removed" in removed.stdout
    assert running.journal.get_state(JOBS_KEY) == []
    again = ctl(running, "job", "remove", "llm-dense")
    assert again.returncode != 0 and "unknown_job" in again.stderr and "Traceback" not in again.stderr


@pytest.mark.parametrize(
    ("change", "problem", "named"),
    [
        (("placement", "blocks", ["b1", "b2", "b3", "b9"]), "unknown_block", "b9"),
        (("parallelism", "tensor", 16), "degrees", "accelerators"),
        (("model", "bytes_per_parameter", 64), "out_of_range", "model.bytes_per_parameter"),
    ],
)
def test_a_bad_job_exits_1_with_the_named_error(
    running: Running, tmp_path: Path, change: tuple[str, str, object], problem: str, named: str
) -> None:
    data = yaml.safe_load(JOB_FILE.read_text())
    section, key, value = change
    data[section][key] = value
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    result = ctl(running, "job", "add", str(path))
    assert result.returncode == 1, result.stdout
    assert f"{problem}: " in result.stderr and named in result.stderr
    assert "Traceback" not in result.stderr
    assert not running.journal.get_state(JOBS_KEY)


def test_bad_options_and_files_name_what_is_wrong(running: Running, tmp_path: Path) -> None:
    start = ctl(running, "job", "add", str(JOB_FILE), "--start", "next week")
    assert start.returncode != 0 and "--start" in start.stderr
    order = ctl(running, "job", "add", str(JOB_FILE), "--start", "+100", "--end", "+50")
    assert order.returncode != 0 and "--end" in order.stderr
    missing = ctl(running, "job", "add", str(tmp_path / "nope.yaml"))
    assert missing.returncode != 0 and "nope.yaml" in missing.stderr
    for result in (start, order, missing):
        assert "Traceback" not in result.stderr
