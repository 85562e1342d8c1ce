#!/usr/bin/env python3
"""Slurm PrologSlurmctld / EpilogSlurmctld hook: announce a job's allocation to Heliostat.

At allocation (``prolog``) the hook turns the job's nodes into a Heliostat job file (the blocks
its nodes sit in, the accelerators per block, the model from the job's comment) and runs
``heliostat ctl job add``; at termination (``epilog``) ``heliostat ctl job remove``. The
controller then plans the fabric for the job's traffic (deploy/scheduler/README.md).

Which one runs: the first argument (``prolog`` or ``epilog``), else Slurm's
``SLURM_SCRIPT_CONTEXT`` (``prolog_slurmctld``, ``epilog_slurmctld``). It reads
``SLURM_JOB_ID``, ``SLURM_JOB_NODELIST`` (``gpu-b1-[001-004],gpu-b2-[001-004]``) and
``SLURM_JOB_COMMENT`` (``heliostat: parameters=7e10 tensor=8 pipeline=2 microbatches=8
activation_bytes=1e8 iteration_seconds=2 collective=ring``; a job without ``heliostat:`` in its
comment is not announced). Its settings are a JSON file (``--config``, default
``$HELIOSTAT_SLURM_CONFIG`` or ``/etc/heliostat/slurm-hook.json``)::

    {"heliostat": ["/opt/heliostat/.venv/bin/heliostat"],   # the command (argv) to run ctl with
     "address": "127.0.0.1:50051",                           # the controller's northbound API
     "gpus_per_node": 8,
     "blocks": [["gpu-b1-*", "b1"], ["gpu-b2-*", "b2"]],     # node name pattern (fnmatch) -> block
     "state_dir": "/var/lib/heliostat/slurm",                # where the job files are written
     "strict": false}                                        # true: a failure fails the prolog

Slurm requeues or holds a job whose PrologSlurmctld fails, so by default a problem is printed
(to slurmctld's log) and the hook exits 0: the job runs, the fabric is only not prepared for it.
Standard library only: it runs with the head node's python3.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

DEFAULT_CONFIG = "/etc/heliostat/slurm-hook.json"
COMMENT_TAG = "heliostat:"
#: Comment keys and the job file field each sets.
NUMBERS = {"parameters": "model", "bytes_per_parameter": "model", "iteration_seconds": "",
           "microbatches": "pipeline", "activation_bytes": "pipeline", "all_to_all_bytes": "experts"}
DEGREES = ("tensor", "pipeline", "expert")
CALL_TIMEOUT_S = 30.0


class HookError(Exception):
    """The allocation cannot be announced; the message says why."""


def expand_nodelist(text: str) -> list[str]:
    """Slurm's hostlist syntax: ``a[01-03,7],b`` -> a01 a02 a03 a7 b (several brackets: every
    combination, as Slurm does)."""
    names: list[str] = []
    for item in _split_top(text.strip()):
        names.extend(_expand_one(item))
    return names


def _split_top(text: str) -> list[str]:
    items, depth, current = [], 0, ""
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    if depth != 0:
        raise HookError(f"SLURM_JOB_NODELIST: unbalanced brackets in {text!r}")
    items.append(current)
    return [i for i in items if i]


def _expand_one(item: str) -> list[str]:
    match = re.search(r"\[([^\]]*)\]", item)
    if match is None:
        return [item]
    head, tail = item[: match.start()], item[match.end():]
    out = []
    for part in match.group(1).split(","):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise HookError(f"SLURM_JOB_NODELIST: bad range {part!r} in {item!r}")
        width = len(low)
        for n in range(int(low), int(high or low) + 1):
            out.extend(_expand_one(f"{head}{n:0{width}d}{tail}"))
    return out


def parse_comment(comment: str) -> dict[str, str] | None:
    """``key=value`` pairs after ``heliostat:`` in the job's comment; None without the tag."""
    at = comment.find(COMMENT_TAG)
    if at < 0:
        return None
    pairs: dict[str, str] = {}
    for word in comment[at + len(COMMENT_TAG):].split():
        key, sep, value = word.partition("=")
        if not sep:
            raise HookError(f"SLURM_JOB_COMMENT: {word!r} is not key=value")
        pairs[key] = value
    return pairs


def blocks_of(nodes: list[str], patterns: list[list[str]]) -> dict[str, int]:
    """Nodes per block, blocks in the order the allocation first reaches them."""
    counts: dict[str, int] = {}
    for node in nodes:
        block = next((b for pattern, b in patterns if fnmatch.fnmatchcase(node, pattern)), None)
        if block is None:
            raise HookError(f"node {node!r} matches no pattern of the hook's blocks")
        counts[block] = counts.get(block, 0) + 1
    return counts


def job_file(
    job_id: str, nodes: list[str], model: dict[str, str], settings: dict[str, Any]
) -> dict[str, Any]:
    """The Heliostat job file (optimizer/jobs/spec.py) of the allocation; the controller validates it."""
    per_node = int(settings.get("gpus_per_node", 8))
    counts = blocks_of(nodes, settings.get("blocks", []))
    if len(set(counts.values())) > 1:
        raise HookError(f"the allocation holds unequal node counts per block {counts}: a Heliostat job "
                        "places as many accelerators in each of its blocks")
    per_block = per_node * next(iter(counts.values()))
    unknown = sorted(set(model) - set(NUMBERS) - set(DEGREES) - {"collective"})
    if unknown:
        raise HookError(f"SLURM_JOB_COMMENT: unknown keys {unknown}")
    if "parameters" not in model:
        raise HookError("SLURM_JOB_COMMENT: heliostat: needs parameters=...")
    degrees = {k: int(model.get(k, per_node if k == "tensor" else 1)) for k in DEGREES}
    world = per_block * len(counts)
    split = degrees["tensor"] * degrees["pipeline"]
    if split <= 0 or world % split:
        raise HookError(f"tensor x pipeline = {split} does not divide the {world} accelerators allocated")
    data: dict[str, Any] = {
        "name": f"slurm-{job_id}",
        "model": {"parameters": float(model["parameters"])},
        "parallelism": {"data": world // split, **degrees},
        "placement": {"accelerators_per_block": per_block, "blocks": list(counts)},
        "collective": model.get("collective", "ring"),
        "iteration_seconds": float(model.get("iteration_seconds", 1.0)),
    }
    for key, section in NUMBERS.items():
        if key in model and section and key != "parameters":
            number = float(model[key])
            data.setdefault(section, {})[key] = int(number) if key == "microbatches" else number
    return data


def ctl(settings: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    command = settings.get("heliostat", ["heliostat"])
    argv = [*command, "ctl", "--address", str(settings.get("address", "127.0.0.1:50051")), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=CALL_TIMEOUT_S, check=False)


def prolog(env: dict[str, str], settings: dict[str, Any]) -> str:
    job_id = env.get("SLURM_JOB_ID") or ""
    if not job_id.isdigit():
        raise HookError(f"SLURM_JOB_ID: expected the job's number, got {job_id!r}")
    model = parse_comment(env.get("SLURM_JOB_COMMENT", ""))
    if model is None:
        return f"job {job_id}: no '{COMMENT_TAG}' in its comment; not announced"
    nodes = expand_nodelist(env.get("SLURM_JOB_NODELIST", ""))
    if not nodes:
        raise HookError("SLURM_JOB_NODELIST is empty")
    data = job_file(job_id, nodes, model, settings)
    folder = Path(settings.get("state_dir", "/var/lib/heliostat/slurm"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{data['name']}.yaml"  # JSON is YAML
    path.write_text(json.dumps(data, indent=1) + "\n")
    result = ctl(settings, "job", "add", str(path))
    if result.returncode != 0:
        raise HookError(f"heliostat ctl job add {path}: {result.stderr.strip() or result.stdout.strip()}")
    return result.stdout.strip()


def epilog(env: dict[str, str], settings: dict[str, Any]) -> str:
    job_id = env.get("SLURM_JOB_ID") or ""
    if parse_comment(env.get("SLURM_JOB_COMMENT", "")) is None:
        return f"job {job_id}: not announced; nothing to remove"
    name = f"slurm-{job_id}"
    result = ctl(settings, "job", "remove", name)
    folder = Path(settings.get("state_dir", "/var/lib/heliostat/slurm"))
    (folder / f"{name}.yaml").unlink(missing_ok=True)
    if result.returncode != 0 and "unknown_job" not in result.stderr:
        raise HookError(f"heliostat ctl job remove {name}: {result.stderr.strip() or result.stdout.strip()}")
    return result.stdout.strip() or f"job {name} was not announced"


def main(argv: list[str], env: dict[str, str]) -> int:
    args = list(argv)
    config = env.get("HELIOSTAT_SLURM_CONFIG", DEFAULT_CONFIG)
    if "--config" in args:
        at = args.index("--config")
        config = args[at + 1] if at + 1 < len(args) else ""
        del args[at:at + 2]
    context = args[0] if args else env.get("SLURM_SCRIPT_CONTEXT", "").removesuffix("_slurmctld")
    strict = False
    try:
        try:
            settings = json.loads(Path(config).read_text())
        except (OSError, ValueError) as exc:
            raise HookError(f"{config}: cannot read the hook's settings: {exc}") from exc
        strict = bool(settings.get("strict", False))
        if context == "prolog":
            message = prolog(env, settings)
        elif context == "epilog":
            message = epilog(env, settings)
        else:
            raise HookError(f"say prolog or epilog (argument or SLURM_SCRIPT_CONTEXT), got {context!r}")
    except (HookError, ValueError, subprocess.TimeoutExpired) as exc:
        print(f"heliostat slurm hook: {exc}", file=sys.stderr)
        return 1 if strict else 0
    print(f"heliostat slurm hook: {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], dict(os.environ)))
