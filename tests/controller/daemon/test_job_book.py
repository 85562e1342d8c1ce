"""The JobBook (controller/daemon/jobs.py) on a real SQLite journal: named refusals, durable
before kept (a full disk refuses and keeps nothing), read back by a new term, and when a job
becomes due."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from controller.daemon.jobs import JOBS_KEY, MAX_AHEAD_S, JobBook, JobProblem, JobRejected, parse_announcement
from controller.decision import JOB_TRIGGER, toe_verdict
from controller.reconfig.journal import Journal, JournalError
from controller.reconfig.toe_run import ToePlanner
from optimizer.config import load_plannable_fabric
from optimizer.errors import HeliostatError
from optimizer.policy import ReconfigurePolicy
from optimizer.topology import uniform_mesh
from optimizer.traffic import uniform_matrix
from tests.support import CONFIGS

FABRIC_8 = load_plannable_fabric(CONFIGS / "fabric-8.yaml")
FABRIC_4 = load_plannable_fabric(CONFIGS / "fabric-4.yaml")
JOB = (CONFIGS / "jobs" / "llm-dense.yaml").read_text()  # on b1..b4 of fabric-8
NOW = 1_000_000.0


def edited(path: str, value: object, name: str | None = None) -> str:
    data = yaml.safe_load(JOB)
    section, _, key = path.partition(".")
    if key:
        data[section][key] = value
    else:
        data[section] = value
    if name is not None:
        data["name"] = name
    return yaml.safe_dump(data)


@pytest.mark.parametrize(
    ("path", "value", "problem", "key"),
    [
        ("placement.blocks", ["b1", "b2", "b3", "b9"], JobProblem.UNKNOWN_BLOCK, "placement.blocks[3]"),
        ("parallelism.data", 32, JobProblem.DEGREES, "parallelism"),
        ("parallelism.tensor", 128, JobProblem.DEGREES, "parallelism"),
        ("model.parameters", 1e15, JobProblem.OUT_OF_RANGE, "model.parameters"),
        ("iteration_seconds", 0, JobProblem.OUT_OF_RANGE, "iteration_seconds"),
        ("collective", "star", JobProblem.INVALID, "collective"),
    ],
)
def test_a_bad_job_is_refused_with_its_problem_named(path: str, value: object, problem: JobProblem,
                                                     key: str) -> None:
    with pytest.raises(JobRejected) as refused:
        parse_announcement(edited(path, value), "job file", FABRIC_8)
    assert refused.value.problem is problem
    assert str(refused.value).startswith(f"{problem.value}: job file: {key}")


def test_a_job_is_journaled_and_a_new_term_reads_it_back(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.db") as journal:
        book = JobBook(FABRIC_8, 900.0)
        assert book.attach(journal) == []
        job = book.add(JOB, NOW + 600, NOW + 7200, NOW)
        assert job.name == "llm-dense" and job.spec.world == 256
        assert journal.get_state(JOBS_KEY) == [job.record()]
        later = JobBook(FABRIC_8, 900.0)
        later.attach(journal)
        (restored,) = later.jobs()
        assert (restored.name, restored.start, restored.end, restored.text) == ("llm-dense", NOW + 600,
                                                                               NOW + 7200, JOB)
        assert (restored.traffic.gbps == job.traffic.gbps).all()


def test_a_journaled_job_that_no_longer_fits_is_dropped_by_name(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.db") as journal:
        book = JobBook(FABRIC_8, 900.0)
        book.attach(journal)
        book.add(edited("placement.blocks", ["b5", "b6", "b7", "b8"], name="far"), NOW, None, NOW)
        book.add(JOB, NOW, None, NOW)
        smaller = JobBook(FABRIC_4, 900.0)  # b1..b4 only
        assert smaller.attach(journal) == ["far"]
        assert [j.name for j in smaller.jobs()] == ["llm-dense"]


def test_duplicates_times_and_unknown_names(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.db") as journal:
        book = JobBook(FABRIC_8, 900.0)
        with pytest.raises(HeliostatError, match="starting"):
            book.add(JOB, NOW, None, NOW)  # no journal yet
        book.attach(journal)
        first = book.add(JOB, NOW + 60, None, NOW)
        assert book.add(JOB, NOW + 60, None, NOW + 5) is first  # the same announcement: no change
        for start, end, problem in ((NOW + 61, None, JobProblem.DUPLICATE),
                                    (NOW + 2 * MAX_AHEAD_S, None, JobProblem.TIMES),
                                    (NOW + 60, NOW + 30, JobProblem.TIMES)):
            with pytest.raises(JobRejected) as refused:
                book.add(JOB, start, end, NOW)
            assert refused.value.problem is problem
        with pytest.raises(JobRejected) as unknown:
            book.remove("nope")
        assert unknown.value.problem is JobProblem.UNKNOWN_JOB
        book.remove("llm-dense")
        assert book.jobs() == [] and journal.get_state(JOBS_KEY) == []


def test_a_job_is_planned_for_from_the_lead_time_and_the_loop_hears_of_it_once(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.db") as journal:
        book = JobBook(FABRIC_8, 900.0)
        book.attach(journal)
        book.add(JOB, NOW + 1000, NOW + 2000, NOW)
        assert book.newly_planned(NOW) == [] and book.demand(None, NOW) is None
        assert book.newly_planned(NOW + 100) == ["llm-dense"]  # 1000 s ahead, 900 s lead
        assert book.newly_planned(NOW + 200) == []  # once
        demand = book.demand(None, NOW + 200)
        assert demand is not None and demand.blocks == FABRIC_8.block_names
        assert float(demand.gbps[0, 1]) == pytest.approx(float(book.jobs()[0].traffic.gbps[0, 1]))
        assert book.planned(NOW + 1500) == ["llm-dense"]  # running
        assert book.planned(NOW + 2000) == []  # ended


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for the journal needs root (CI runs as root)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_job_the_journal_cannot_take_is_refused_and_not_kept(small_disk: Path) -> None:
    with Journal(small_disk / "j.db") as journal:
        book = JobBook(FABRIC_8, 900.0)
        book.attach(journal)
        filler = small_disk / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            while True:
                os.write(fd, b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == 28, exc
        finally:
            os.close(fd)
        with pytest.raises(JournalError):
            book.add(JOB, NOW, None, NOW)
        assert book.jobs() == []
        filler.unlink()
        book.add(JOB, NOW, None, NOW)
        assert [j["name"] for j in journal.get_state(JOBS_KEY)] == ["llm-dense"]


def test_a_job_trigger_skips_the_interval_but_not_the_gain() -> None:
    policy = ReconfigurePolicy(min_gain=0.1, min_interval_s=3600.0)
    just_changed = NOW - 60.0
    applied = toe_verdict(JOB_TRIGGER, 0.8, 0.5, 12, NOW, just_changed, policy)
    assert applied.apply  # 37.5 % gain, one minute after the last change: the job cannot wait
    assert not toe_verdict("auto", 0.8, 0.5, 12, NOW, just_changed, policy).apply  # auto waits
    same = toe_verdict(JOB_TRIGGER, 0.25, 0.25, 16, NOW, None, policy)
    assert not same.apply and "threshold" in same.reason  # an operator's would apply this churn
    assert toe_verdict("operator", 0.25, 0.25, 16, NOW, None, policy).apply
    assert not toe_verdict(JOB_TRIGGER, 0.8, 0.5, 0, NOW, None, policy).apply  # nothing changes


def test_a_book_for_bursts_plans_for_each_pair_s_peak_phase_not_the_average(tmp_path: Path) -> None:
    from optimizer.jobs import job_traffic

    modelled = job_traffic(parse_announcement(JOB, "job file", FABRIC_8), FABRIC_8)
    with Journal(tmp_path / "j.db") as journal:
        averages, bursts = JobBook(FABRIC_8, 900.0), JobBook(FABRIC_8, 900.0, bursts=True)
        for book in (averages, bursts):
            book.attach(journal)
            book.add(JOB, NOW + 600, None, NOW)
            book.remove("llm-dense")
            book.add(JOB, NOW + 600, None, NOW)
        assert (averages.jobs()[0].traffic.gbps == modelled.mean().gbps).all()
        assert (bursts.jobs()[0].traffic.gbps == modelled.peak().gbps).all()
        assert bursts.jobs()[0].traffic.total() > 2 * averages.jobs()[0].traffic.total()
        due = bursts.demand(None, NOW + 100)
        assert due is not None and (due.gbps == modelled.peak().gbps).all()


def test_a_job_trigger_plans_nothing_when_the_bound_shows_no_topology_clears_the_gain() -> None:
    # the verdict holds a job's plan to the policy's gain: under the LP's bound nothing would
    # clear it, so nothing is mapped or staged (at 64 blocks most of a minute); an operator's
    # request still plans for shorter paths alone
    policy = ReconfigurePolicy(min_gain=0.1, min_interval_s=3600.0)
    demand = uniform_matrix(FABRIC_8, load=0.3)  # the mesh is the best topology for it
    mesh = uniform_mesh(FABRIC_8)
    planner = ToePlanner(FABRIC_8, 0.8)
    job = planner.propose(JOB_TRIGGER, demand, mesh, NOW, None, policy)
    assert not job.verdict.apply and job.verdict.reason.startswith("nothing to gain"), job.verdict
    assert job.changed == 0 and job.plan.stages == ()
    operator = planner.propose("operator", demand, mesh, NOW, None, policy)
    assert not operator.verdict.reason.startswith("nothing to gain"), operator.verdict
