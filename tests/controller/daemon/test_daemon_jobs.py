"""Announced jobs on a real daemon over the emulated fabric-8, through its real gRPC API
(issue 31, item 2): a job is accepted, journaled, planned for (and applied, staged) before it
starts, kept across a restart; bad ones are refused with named errors."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from controller.daemon.jobs import JOBS_KEY
from controller.daemon.reconfiguration import PLANNED_DEMAND_KEY
from controller.northbound.api import ApiError, ApiErrorCode
from controller.reconfig.journal import IntentState
from optimizer.config import load_plannable_fabric
from optimizer.jobs import job_traffic, load_job
from optimizer.traffic import uniform_matrix
from tests.support import CONFIGS
from tests.support.daemon_support import Running, controller_config, running_fabric, serving_daemon, wait_for

FABRIC_FILE = CONFIGS / "fabric-8.yaml"
JOB_FILE = CONFIGS / "jobs" / "llm-dense.yaml"
LEAD_S = 900.0


def config_with_lead(tmp: Path, devices: Path) -> Path:
    return controller_config(tmp, FABRIC_FILE, devices, toe_check_interval=3600.0,
                             min_reconfig_interval=3600.0, job_lead_time=LEAD_S)


def bad_job(**changes: object) -> str:
    data = yaml.safe_load(JOB_FILE.read_text())
    for key, value in changes.items():
        section, _, field = key.partition(".")
        data[section][field] = value
    return yaml.safe_dump(data)


@pytest.mark.slow
def test_an_announced_job_is_planned_for_before_it_starts_journaled_and_kept_across_a_restart(
    tmp_path: Path,
) -> None:
    fabric = load_plannable_fabric(FABRIC_FILE)
    expected = job_traffic(load_job(JOB_FILE, fabric), fabric).mean()
    names = fabric.block_names
    job_pairs = [(names[i], names[j]) for i, j in zip(*np.nonzero(expected.gbps), strict=True)]
    with running_fabric(FABRIC_FILE, tmp_path) as emulated:
        emulated.set_demand(uniform_matrix(emulated.fabric, load=0.05))
        config = config_with_lead(tmp_path, emulated.devices_file)
        with serving_daemon(config, tmp_path) as run:
            # refused, each with its named error, and nothing journaled
            refusals = {
                "unknown_block": bad_job(**{"placement.blocks": ["b1", "b2", "b3", "b99"]}),
                "degrees": bad_job(**{"parallelism.data": 8}),
                "out_of_range": bad_job(**{"model.parameters": 1e20}),
            }
            for problem, text in refusals.items():
                with pytest.raises(ApiError) as refused:
                    run.client.add_job(text, time.time() + 60)
                assert refused.value.code is ApiErrorCode.INVALID_ARGUMENT
                assert refused.value.message.startswith(f"{problem}: "), refused.value.message
            assert "b99" in str(_refusal(run, refusals["unknown_block"]))
            assert run.journal.get_state(JOBS_KEY) is None
            assert run.client.list_jobs()["jobs"] == []

            # the daemon's first automatic ToE check has run (the next is an hour away): the plan
            # below is the job's own, not that check's taking the job in when it came first
            wait_for(lambda: run.client.status().last_toe_time is not None, 60,
                     what="the daemon's first ToE check")

            # accepted ten minutes ahead: due (within the 15 min lead time), journaled
            start = time.time() + 600.0
            job = run.client.add_job(JOB_FILE.read_text(), start)
            assert job["name"] == "llm-dense" and job["phase"] == "due"
            assert job["accelerators"] == 256 and job["blocks"] == ["b1", "b2", "b3", "b4"]
            journaled = run.journal.get_state(JOBS_KEY)
            assert [j["name"] for j in journaled] == ["llm-dense"] and journaled[0]["start"] == start
            # the same announcement again is no error (a scheduler's retry); another with its name is
            assert run.client.add_job(JOB_FILE.read_text(), start)["start"] == start
            with pytest.raises(ApiError, match=r"^invalid_argument: duplicate: "):
                run.client.add_job(JOB_FILE.read_text(), start + 5)

            # ToE plans for the job's pairs at once (not at its hourly check), and applies it,
            # staged, before the job starts
            plan = wait_for(lambda: (p := run.journal.get_state("last_plan")) and p.get("jobs") and p,
                            120, what="a ToE plan for the announced job")
            assert plan["jobs"] == ["llm-dense"] and plan["trigger"] == "job"
            demand = run.journal.get_matrix_state(PLANNED_DEMAND_KEY)
            assert demand is not None
            for src, dst in job_pairs:
                i, j = names.index(src), names.index(dst)
                assert demand.gbps[i, j] >= expected.gbps[i, j] - 1e-6, (src, dst)
            others = [(i, j) for i in range(8) for j in range(8) if i != j and expected.gbps[i, j] == 0]
            assert max(demand.gbps[i, j] for i, j in others) < min(expected.gbps[expected.gbps > 0])
            assert plan["verdict"]["apply"], plan["verdict"]
            intent = wait_for(
                lambda: (i := run.journal.reconfigurations(1)) and not i[0].in_progress and i[0],
                240, what="the job's reconfiguration to end",
            )
            assert intent.trigger == "job" and intent.state is IntentState.DONE, intent.reason
            assert intent.finished is not None and intent.finished < start
            assert len(intent.plan.stages) >= 1
            assert emulated.stats().blackholed_bytes == 0

        # a restarted daemon reads the job back and plans for it (the topology already serves
        # it: nothing to apply); removing it is journaled
        restarted = time.time()
        with serving_daemon(config, tmp_path) as run:
            plan = wait_for(lambda: (p := run.journal.get_state("last_plan")) and p["planned_at"] > restarted
                            and p, 60, what="the restarted daemon's plan")
            assert plan["trigger"] == "job" and plan["jobs"] == ["llm-dense"]
            assert not plan["verdict"]["apply"], plan["verdict"]
            assert len(run.journal.reconfigurations(10)) == 1  # still the one before the restart
            listed = run.client.list_jobs()
            assert [j["name"] for j in listed["jobs"]] == ["llm-dense"]
            assert listed["jobs"][0]["start"] == pytest.approx(start)
            assert listed["lead_time_s"] == LEAD_S
            demand = run.daemon.shared.planning_demand(time.time())
            assert demand is not None
            for src, dst in job_pairs:
                i, j = names.index(src), names.index(dst)
                assert demand.gbps[i, j] >= expected.gbps[i, j] - 1e-6, (src, dst)
            message = run.client.remove_job("llm-dense")
            assert "removed" in message
            assert run.journal.get_state(JOBS_KEY) == []
            with pytest.raises(ApiError) as unknown:
                run.client.remove_job("llm-dense")
            assert unknown.value.code is ApiErrorCode.NOT_FOUND
            assert unknown.value.message.startswith("unknown_job: ")

            # while ToE is paused a job becoming due plans nothing; on resume it is planned for
            run.client.pause_toe()
            wait_for(lambda: run.daemon.state.toe_paused, 30, what="ToE paused")
            other = bad_job(**{"placement.blocks": ["b5", "b6", "b7", "b8"]}).replace("llm-dense", "second")
            run.client.add_job(other, time.time() + 300)
            polls = lambda: len(run.daemon.recorder.samples(720))  # noqa: E731 (one sample a cycle)
            seen = polls()
            wait_for(lambda: polls() >= seen + 3, 60, what="three more cycles")
            last = run.journal.get_state("last_plan")
            assert last["jobs"] == ["llm-dense"], last["reason"]  # the plan before the pause
            run.client.resume_toe()
            plan = wait_for(lambda: (p := run.journal.get_state("last_plan")) and p["jobs"] == ["second"]
                            and p, 120, what="a plan for the second job once ToE resumed")
            assert plan["trigger"] == "job"


def _refusal(run: Running, text: str) -> ApiError:
    try:
        run.client.add_job(text)
    except ApiError as exc:
        return exc
    raise AssertionError("the job was accepted")
