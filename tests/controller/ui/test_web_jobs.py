"""Jobs on the status page (issue 31): ``GET /api/jobs`` and, only with ``listen.web_jobs``,
``POST /api/jobs`` / ``DELETE /api/jobs/NAME`` on a real daemon (emulated fabric-8)."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller.config import ListenAddress, controller_config_from_dict
from controller.daemon.jobs import JOBS_KEY
from controller.northbound.daemon_api import DaemonApi
from controller.ui.web import start_web, static_file
from optimizer.errors import ConfigError
from optimizer.jobs import job_traffic, load_job
from optimizer.jobs.routed import comm_seconds
from optimizer.traffic import uniform_matrix
from tests.support import CONFIGS
from tests.support.daemon_support import Running, controller_config, running_fabric, serving_daemon

FABRIC_FILE = CONFIGS / "fabric-8.yaml"
JOB_TEXT = (CONFIGS / "jobs" / "llm-dense.yaml").read_text()


@dataclass
class Pages:
    run: Running
    writable: str  # listen.web_jobs: true
    read_only: str


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pages]:
    tmp = tmp_path_factory.mktemp("web-jobs")
    with running_fabric(FABRIC_FILE, tmp) as emulated:
        emulated.set_demand(uniform_matrix(emulated.fabric, load=0.05))
        config = controller_config(tmp, FABRIC_FILE, emulated.devices_file, toe_check_interval=3600.0,
                                   job_lead_time=60.0)
        with serving_daemon(config, tmp) as run:
            api = DaemonApi(run.daemon)
            writable = start_web(api, ListenAddress("127.0.0.1", 0), jobs_writes=True)
            read_only = start_web(api, ListenAddress("127.0.0.1", 0))
            try:
                yield Pages(run, writable.url, read_only.url)
            finally:
                writable.stop()
                read_only.stop()


def call(url: str, method: str = "GET", body: object = None,
         kind: str = "application/json") -> tuple[int, dict]:
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": kind})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_jobs_are_posted_listed_and_deleted_when_the_page_takes_them(pages: Pages) -> None:
    status, answer = call(pages.writable + "api/jobs")
    assert status == 200 and answer["jobs"] == [] and answer["lead_time_s"] == 60.0
    start = time.time() + 3600.0
    status, job = call(pages.writable + "api/jobs", "POST", {"job_yaml": JOB_TEXT, "start": start})
    assert status == 201, job
    assert job["name"] == "llm-dense" and job["phase"] == "announced" and job["start"] == start
    assert [j["name"] for j in pages.run.journal.get_state(JOBS_KEY)] == ["llm-dense"]
    # both pages list it, and it is the job the gRPC API lists
    for url in (pages.writable, pages.read_only):
        status, answer = call(url + "api/jobs")
        assert status == 200 and [j["name"] for j in answer["jobs"]] == ["llm-dense"]
    assert pages.run.client.list_jobs()["jobs"][0]["pairs"] == answer["jobs"][0]["pairs"]
    status, answer = call(pages.writable + "api/jobs/llm-dense", "DELETE")
    assert status == 200 and "removed" in answer["message"]
    assert pages.run.journal.get_state(JOBS_KEY) == []
    status, answer = call(pages.writable + "api/jobs/llm-dense", "DELETE")
    assert status == 404 and answer["message"].startswith("unknown_job: ")


@pytest.mark.parametrize(
    ("body", "kind", "named"),
    [
        ({"job_yaml": JOB_TEXT.replace("b4]", "b77]")}, "application/json", "unknown_block: "),
        ({"job_yaml": JOB_TEXT.replace("data: 16", "data: 4")}, "application/json", "degrees: "),
        ({"job_yaml": JOB_TEXT}, "text/plain", "Content-Type"),
        ({"job_yaml": JOB_TEXT, "start": "soon"}, "application/json", "start"),
        ({"job": JOB_TEXT}, "application/json", "unknown keys"),
        (b"{not json", "application/json", "invalid JSON"),
    ],
)
def test_a_bad_post_is_400_naming_the_problem(pages: Pages, body: object, kind: str, named: str) -> None:
    status, answer = call(pages.writable + "api/jobs", "POST", body, kind)
    assert status == 400 and named in answer["message"], answer
    assert not pages.run.journal.get_state(JOBS_KEY)


def test_a_job_shows_its_communication_time_per_iteration_when_announced_and_now(pages: Pages) -> None:
    announcement = {"job_yaml": JOB_TEXT, "start": time.time() + 3600.0}
    status, job = call(pages.writable + "api/jobs", "POST", announcement)
    assert status == 201, job
    try:
        daemon = pages.run.daemon
        routing = daemon.routing_in_force()
        modelled = job_traffic(load_job(CONFIGS / "jobs" / "llm-dense.yaml", daemon.fabric), daemon.fabric)
        expected = comm_seconds(daemon.fabric, [modelled], routing.circuits, routing.tables, routing.drained)
        assert expected is not None
        before = job["comm_seconds"]["announced"]
        # played on the routing in force when announced (the uniform mesh)
        assert before == pytest.approx(expected["llm-dense"], rel=1e-5) and before > 0
        status, listed = call(pages.read_only + "api/jobs")
        assert status == 200
        shown = listed["jobs"][0]["comm_seconds"]
        assert shown["announced"] == pytest.approx(before) and shown["now"] > 0
        assert listed["jobs"][0]["iteration_seconds"] == 2.0
        assert pages.run.client.list_jobs()["jobs"][0]["comm_seconds"]["announced"] == pytest.approx(before)
    finally:
        call(pages.writable + "api/jobs/llm-dense", "DELETE")


def test_without_web_jobs_the_page_stays_read_only(pages: Pages) -> None:
    status, answer = call(pages.read_only + "api/jobs", "POST", {"job_yaml": JOB_TEXT})
    assert status == 405 and "read-only" in answer["message"]
    status, _ = call(pages.read_only + "api/jobs/llm-dense", "DELETE")
    assert status == 405
    status, _ = call(pages.writable + "api/status", "POST", {})
    assert status == 405  # only /api/jobs takes writes
    assert not pages.run.journal.get_state(JOBS_KEY)


def test_the_page_has_a_jobs_card_fed_by_api_jobs() -> None:
    assert b'id="jobs"' in static_file("index.html")
    assert b'getJson("api/jobs")' in static_file("app.js")
    assert b"comm_seconds" in static_file("app.js") and b"comm/iter before" in static_file("index.html")


def test_listen_web_jobs_is_off_unless_set_and_must_be_a_boolean(tmp_path: Path) -> None:
    base = {"fabric": str(FABRIC_FILE), "devices": "d.yaml", "store": "j.db"}
    assert controller_config_from_dict(base).listen.web_jobs is False
    on = controller_config_from_dict({**base, "listen": {"web_jobs": True}})
    assert on.listen.web_jobs is True
    with pytest.raises(ConfigError, match=r"listen\.web_jobs"):
        controller_config_from_dict({**base, "listen": {"web_jobs": "yes"}})
    assert controller_config_from_dict(base).intervals.job_lead_time == 900.0
    with pytest.raises(ConfigError, match=r"intervals\.job_lead_time"):
        controller_config_from_dict({**base, "intervals": {"job_lead_time": -5}})


@pytest.mark.browser
def test_chromium_shows_the_announced_job_on_the_page(pages: Pages, tmp_path: Path) -> None:
    from tests.controller.ui.test_browser import CHROMIUM, _chromium

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (sudo .ci/install-browser.sh installs Debian's)")
    status, job = call(pages.writable + "api/jobs", "POST", {"job_yaml": JOB_TEXT, "start": time.time() + 30})
    assert status == 201, job
    try:
        dom = _chromium(tmp_path / "profile", "--dump-dom", pages.read_only)
    finally:
        call(pages.writable + "api/jobs/llm-dense", "DELETE")
    row = re.search(r'<tr class="job-due">(.*?)</tr>', dom)
    assert row, dom[dom.find('id="jobs"'):][:2000]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row.group(1))
    assert cells[0] == "llm-dense" and cells[1] == "due" and cells[4] == "b1,b2,b3,b4"
    assert float(cells[5]) == pytest.approx(job["gbps"], abs=0.05)
    assert cells[6] == f"{job['comm_seconds']['announced']:.3f} s"  # comm/iteration before
    assert cells[7].endswith(" s")  # ... and on the routing in force now
    assert "(planned for 1 min ahead)" in dom  # lead time 60 s
