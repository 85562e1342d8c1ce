"""deploy/scheduler/slurm_hook.py: run as slurmctld runs it (a fake Slurm environment: the
variables PrologSlurmctld and EpilogSlurmctld get) against a real daemon over emulated fabric-8;
and its node-list and job-file rules on their own."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from controller.daemon.jobs import JOBS_KEY
from optimizer.config import load_plannable_fabric
from optimizer.jobs import job_traffic, load_job
from optimizer.traffic import uniform_matrix
from tests.support import CONFIGS, ROOT
from tests.support.daemon_support import Running, controller_config, running_fabric, serving_daemon

HOOK = ROOT / "deploy" / "scheduler" / "slurm_hook.py"
FABRIC_FILE = CONFIGS / "fabric-8.yaml"
#: llm-dense.yaml's model, as a user writes it in the job's comment (sbatch --comment)
COMMENT = ("heliostat: parameters=7e10 tensor=8 pipeline=2 microbatches=8 activation_bytes=1e8 "
           "iteration_seconds=2")
#: 8 nodes of 8 GPUs in each of b1..b4: 64 accelerators per block, as llm-dense.yaml places them
NODELIST = "gpu-b1-[001-008],gpu-b2-[001-008],gpu-b3-[001-004,005-008],gpu-b4-[001-008]"


def load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("slurm_hook", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hook = load_hook()


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tmp = tmp_path_factory.mktemp("slurm")
    with running_fabric(FABRIC_FILE, tmp) as emulated:
        emulated.set_demand(uniform_matrix(emulated.fabric, load=0.05))
        config = controller_config(tmp, FABRIC_FILE, emulated.devices_file, toe_check_interval=3600.0,
                                   job_lead_time=900.0)
        with serving_daemon(config, tmp) as run:
            yield run


def settings(run: Running, tmp: Path, **changes: object) -> Path:
    data = {
        "heliostat": [sys.executable, "-m", "controller.cli"],
        "address": run.address,
        "gpus_per_node": 8,
        "blocks": [[f"gpu-b{i}-*", f"b{i}"] for i in range(1, 9)],
        "state_dir": str(tmp / "state"),
        **changes,
    }
    path = tmp / "slurm-hook.json"
    path.write_text(json.dumps(data))
    return path


def slurmctld(context: str, config: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    """The hook as slurmctld starts it: no argument, SLURM_* variables, no search path for
    the hook itself (its python is named in full)."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "HELIOSTAT_SLURM_CONFIG": str(config),
           "SLURM_SCRIPT_CONTEXT": f"{context}_slurmctld", "SLURM_JOB_USER": "alice",
           "SLURM_JOB_PARTITION": "gpu", **variables}
    return subprocess.run([sys.executable, str(HOOK)], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_the_prolog_announces_the_allocation_and_the_epilog_removes_it(
    running: Running, tmp_path: Path
) -> None:
    config = settings(running, tmp_path)
    job = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "train", "SLURM_JOB_NODELIST": NODELIST,
           "SLURM_JOB_COMMENT": COMMENT}
    started = slurmctld("prolog", config, **job)
    assert started.returncode == 0, started.stderr
    assert "slurm-4242 announced" in started.stdout, (started.stdout, started.stderr)
    listed = running.client.list_jobs()["jobs"]
    assert [j["name"] for j in listed] == ["slurm-4242"]
    announced = listed[0]
    assert announced["blocks"] == ["b1", "b2", "b3", "b4"] and announced["accelerators"] == 256
    assert announced["parallelism"] == {"data": 16, "tensor": 8, "pipeline": 2, "expert": 1}
    assert announced["phase"] == "running"  # the prolog runs at allocation: the job starts now
    # the traffic the controller plans for is llm-dense.yaml's: the same model and placement
    fabric = load_plannable_fabric(FABRIC_FILE)
    expected = job_traffic(load_job(CONFIGS / "jobs" / "llm-dense.yaml", fabric), fabric).mean()
    names = fabric.block_names
    for pair in announced["pairs"]:
        i, j = names.index(pair["src"]), names.index(pair["dst"])
        assert pair["gbps"] == pytest.approx(expected.gbps[i, j], rel=1e-6)
    assert len(announced["pairs"]) == int((expected.gbps > 0).sum())
    assert (tmp_path / "state" / "slurm-4242.yaml").exists()
    assert [j["name"] for j in running.journal.get_state(JOBS_KEY)] == ["slurm-4242"]

    ended = slurmctld("epilog", config, **job)
    assert ended.returncode == 0, ended.stderr
    assert running.client.list_jobs()["jobs"] == []
    assert running.journal.get_state(JOBS_KEY) == []
    assert not (tmp_path / "state" / "slurm-4242.yaml").exists()
    again = slurmctld("epilog", config, **job)  # an epilog run twice (a requeue) is no error
    assert again.returncode == 0 and "not announced" in again.stdout


def test_a_job_without_the_tag_is_left_alone(running: Running, tmp_path: Path) -> None:
    result = slurmctld("prolog", settings(running, tmp_path), SLURM_JOB_ID="7", SLURM_JOB_NODELIST=NODELIST,
                       SLURM_JOB_COMMENT="a plain comment")
    assert result.returncode == 0 and "not announced" in result.stdout
    assert running.client.list_jobs()["jobs"] == []


@pytest.mark.parametrize(
    ("nodes", "comment", "problem"),
    [
        ("cpu-[01-02]", COMMENT, "matches no pattern"),
        ("gpu-b1-[001-008],gpu-b2-[001-004]", COMMENT, "unequal node counts"),
        (NODELIST, "heliostat: tensor=8", "needs parameters"),
        (NODELIST, COMMENT.replace("parameters=7e10", "parameters=7e30"), "out_of_range"),
    ],
)
def test_a_bad_allocation_is_reported_and_fails_the_prolog_only_when_strict(
    running: Running, tmp_path: Path, nodes: str, comment: str, problem: str
) -> None:
    job = {"SLURM_JOB_ID": "99", "SLURM_JOB_NODELIST": nodes, "SLURM_JOB_COMMENT": comment}
    lenient = slurmctld("prolog", settings(running, tmp_path), **job)
    assert lenient.returncode == 0 and problem in lenient.stderr, lenient.stderr
    strict = slurmctld("prolog", settings(running, tmp_path, strict=True), **job)
    assert strict.returncode == 1 and problem in strict.stderr
    assert "Traceback" not in lenient.stderr + strict.stderr
    assert running.client.list_jobs()["jobs"] == []


def test_slurm_node_lists_expand_as_slurm_does() -> None:
    assert hook.expand_nodelist("n[1-3]") == ["n1", "n2", "n3"]
    expanded = ["gpu-008", "gpu-009", "gpu-010", "gpu-012", "login"]
    assert hook.expand_nodelist("gpu-[008-010,012],login") == expanded
    assert hook.expand_nodelist("r[1-2]-n[01-02]") == ["r1-n01", "r1-n02", "r2-n01", "r2-n02"]
    for bad in ("n[1-3", "n[a-b]"):
        with pytest.raises(hook.HookError, match="SLURM_JOB_NODELIST"):
            hook.expand_nodelist(bad)


def test_the_job_file_follows_the_allocation() -> None:
    nodes = hook.expand_nodelist("a[1-2],b[1-2]")
    data = hook.job_file("5", nodes, {"parameters": "1e9", "tensor": "4"},
                         {"gpus_per_node": 4, "blocks": [["a*", "b1"], ["b*", "b2"]]})
    assert data["placement"] == {"accelerators_per_block": 8, "blocks": ["b1", "b2"]}
    assert data["parallelism"] == {"data": 4, "tensor": 4, "pipeline": 1, "expert": 1}  # 16 / (4 x 1)
    assert data["name"] == "slurm-5" and data["model"] == {"parameters": 1e9}
    with pytest.raises(hook.HookError, match="unknown keys"):
        hook.job_file("5", nodes, {"parameters": "1e9", "colour": "red"}, {"blocks": [["*", "b1"]]})


def test_the_example_settings_name_every_key_the_hook_reads_and_blocks_of_the_fabric() -> None:
    example = json.loads((HOOK.parent / "slurm-hook.json").read_text())
    assert set(example) == {"heliostat", "address", "gpus_per_node", "blocks", "state_dir", "strict"}
    fabric = load_plannable_fabric(FABRIC_FILE)
    assert {block for _pattern, block in example["blocks"]} <= set(fabric.block_names)
    nodes = hook.expand_nodelist("gpu-b1-[01-02],gpu-b5-[01-02]")
    assert list(hook.blocks_of(nodes, example["blocks"])) == ["b1", "b5"]
