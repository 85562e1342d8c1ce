"""Each announced job's communication time per iteration in the daemon's job status
(controller/daemon/job_comm.py): the figure when announced stays, the one now follows the
routing in force; a blackholing routing gives None; an ended job has no current figure."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.daemon.job_comm import JobCommTimes, RoutingInForce, routing_in_force
from controller.daemon.jobs import JobBook
from controller.reconfig.journal import Journal
from optimizer.config import load_plannable_fabric
from optimizer.jobs import job_traffic
from optimizer.jobs.routed import comm_seconds
from optimizer.topology import uniform_mesh
from tests.support import CONFIGS

FABRIC = load_plannable_fabric(CONFIGS / "fabric-8.yaml")
JOB_TEXT = (CONFIGS / "jobs" / "llm-dense.yaml").read_text()
MESH = frozenset(uniform_mesh(FABRIC))
NOW = 1_000_000.0
LEAD = 60.0


@pytest.fixture
def book(tmp_path: Path) -> JobBook:
    book = JobBook(FABRIC, LEAD)
    book.attach(Journal(tmp_path / "journal.db"))
    return book


def test_the_figure_when_announced_stays_and_the_current_one_follows_the_routing(book: JobBook) -> None:
    times = JobCommTimes(FABRIC, LEAD)
    job = book.add(JOB_TEXT, NOW + 30, None, NOW)
    mesh = routing_in_force(MESH, None, ())
    before = times.note_announced(job, book.jobs(), mesh, NOW)
    expected = comm_seconds(FABRIC, [job_traffic(job.spec, FABRIC)], MESH, {})
    assert expected is not None and before == pytest.approx(expected["llm-dense"])
    assert before is not None and before > 0
    # the same routing: now is the figure when announced
    assert times.figures(book.jobs(), mesh, NOW + 1)["llm-dense"] == {"announced": round(before, 6),
                                                                      "now": round(before, 6)}
    # half of b1's and b2's ports drained: less capacity between the job's blocks, a longer time
    ends = [c.ends(FABRIC) for c in MESH]
    drained = {b: sorted({e.block_port for pair in ends for e in pair if e.block == b})[::2]
               for b in ("b1", "b2")}
    narrower = routing_in_force(MESH, None, (drained,))
    assert narrower.drained and narrower.key() != mesh.key()
    figures = times.figures(book.jobs(), narrower, NOW + 2)["llm-dense"]
    assert figures["announced"] == round(before, 6)
    assert figures["now"] > before


def test_a_routing_into_a_trunk_without_circuits_gives_no_figure(book: JobBook) -> None:
    times = JobCommTimes(FABRIC, LEAD)
    job = book.add(JOB_TEXT, NOW + 30, None, NOW)
    # b1 sends its traffic for b2 through b3, and b1 has no circuit to b3 left
    cut = frozenset(c for c in MESH if set(c.blocks(FABRIC)) != {"b1", "b3"})
    routing = RoutingInForce(cut, {"b1": {"b2": {"b3": 1}}})
    assert times.note_announced(job, book.jobs(), routing, NOW) is None
    assert times.figures(book.jobs(), routing, NOW)["llm-dense"] == {"announced": None, "now": None}


def test_an_ended_job_keeps_its_figure_when_announced_and_has_none_now(book: JobBook) -> None:
    times = JobCommTimes(FABRIC, LEAD)
    job = book.add(JOB_TEXT, NOW + 30, NOW + 90, NOW)
    mesh = routing_in_force(MESH, None, ())
    before = times.note_announced(job, book.jobs(), mesh, NOW)
    got = times.figures(book.jobs(), mesh, NOW + 120)["llm-dense"]
    assert before is not None and got == {"announced": round(before, 6), "now": None}
    book.remove("llm-dense")
    assert times.figures(book.jobs(), mesh, NOW + 121) == {}
