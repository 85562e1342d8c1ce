"""``heliostat demo --jobs`` (issue 31 item 5): jobs announced through AddJob, the fabric
reshaped before their start without blackholing a byte, and their communication time per
iteration lower after than before, in the summary and on the status page's jobs API."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from tests.support import ROOT
from tests.support.cli_helpers import run_cli
from tests.support.demo_process import served_demo

# the controller's seconds: the demo runs in lockstep (the fabric stands still while the ToE
# plans), so a loaded machine stretches the real time, not the lead the stages have (~2 s)
LEAD_S = 40


def _read(url: str) -> object:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _at(out: str, text: str) -> float:
    """The demo's clock (seconds) on the first progress line that contains ``text``."""
    found = re.search(r"^\[\s*([\d.]+)s\] .*" + re.escape(text), out, re.MULTILINE)
    assert found, f"no line with {text!r} in:\n{out[-4000:]}"
    return float(found.group(1))


def _seconds(cell: str) -> float:
    assert cell.endswith(" s"), cell
    return float(cell[:-2])


@pytest.mark.slow
def test_demo_jobs_reshapes_the_fabric_before_the_jobs_start_and_shortens_their_communication() -> None:
    with served_demo("--jobs", "--job-lead", str(LEAD_S), summary_within_s=240) as demo:
        out = demo.output
        assert demo.proc.poll() is None and "outcome: OK" in out, out[-4000:]
        assert "in lockstep with the controller" in out, out[:2000]
        # announced through the API, planned on the job trigger, applied before the start
        announced = _at(out, "AddJob llm-dense")
        assert "ToE (job): APPLY" in out, out[-4000:]
        done, start = _at(out, "reconfiguration done"), _at(out, "the job(s) start")
        assert announced < done < start, out[-4000:]
        assert start - announced == pytest.approx(LEAD_S, abs=2.0)
        changed = re.search(r"(\d+) circuits changed \(removed or added\)", out)
        assert changed and int(changed.group(1)) > 0, out[-4000:]
        assert "traffic lost (blackholed) from the announcement on: 0 bytes" in out
        # each job: communication time per iteration before (mesh) > at its start (reshaped)
        for name in ("llm-dense", "moe"):
            row = re.search(rf"^\s+{name}\s+(.+)$", out, re.MULTILINE)
            assert row, out[-4000:]
            cells = re.findall(r"\d+\.\d+ s|blackholed", row.group(1))
            assert "blackholed" not in cells and len(cells) == 5, row.group(0)
            before, at_start, _, daemon_before, daemon_now = map(_seconds, cells)
            assert at_start < before, row.group(0)
            assert daemon_before == pytest.approx(before, rel=1e-3)  # the daemon played the same mesh
            assert daemon_now < daemon_before, row.group(0)
        # the status page's jobs API: both running, their figures before and now
        page = re.search(r"status page: (http://127\.0\.0\.1:\d+/)", out)
        assert page, out
        jobs = _read(page.group(1) + "api/jobs")["jobs"]  # type: ignore[index]
        assert {j["name"]: j["phase"] for j in jobs} == {"llm-dense": "running", "moe": "running"}
        for job in jobs:
            comm = job["comm_seconds"]
            assert 0 < comm["now"] < comm["announced"], job
    assert demo.exit_code == 0, demo.output[-3000:]


def test_demo_jobs_refuses_bad_options_and_files_by_name() -> None:
    lead = run_cli("demo", "--jobs", "--job-lead", "0")
    assert lead.returncode == 2 and "--job-lead: must be > 0 seconds" in lead.stderr
    both = run_cli("demo", "--jobs", "--ha")
    assert both.returncode == 2 and "--jobs: not with --ha" in both.stderr
    missing = run_cli("demo", "--jobs", str(ROOT / "configs" / "jobs" / "no-such-job.yaml"))
    assert missing.returncode == 2 and "no-such-job.yaml" in missing.stderr
    # a job on blocks the demo's fabric does not have
    off_fabric = run_cli("demo", "--jobs", str(ROOT / "configs" / "jobs" / "fabric-16" / "moe.yaml"))
    assert off_fabric.returncode == 2 and "placement.blocks" in off_fabric.stderr, off_fabric.stderr
