"""A training job as its scheduler announces it: the job file (YAML), validated against a fabric.

The accepted form (``configs/jobs/`` holds examples; sizes are plain numbers, ``7.0e+10`` or
``70000000000``; YAML 1.1 also reads ``70e9`` as a string, which is accepted as the number)::

    name: llm-a                        # a name (letters, digits, - _ . :)
    model:
      parameters: 7.0e+10              # parameters of the model
      bytes_per_parameter: 2           # of a gradient (2: bf16)
    parallelism:                       # degrees; data x tensor x pipeline = accelerators placed
      data: 16
      tensor: 8                        # inside a block: it must divide accelerators_per_block
      pipeline: 4
      expert: 1                        # expert-parallel groups inside the data-parallel ones (divides data)
    placement:
      accelerators_per_block: 128
      blocks: [b1, b2, b3, b4]         # in rank order: block k holds ranks k*A .. (k+1)*A - 1
    collective: ring                   # the gradient all-reduce: ring, tree or hierarchical
    iteration_seconds: 1.5             # compute time of one iteration (forward and backward)
    pipeline:                          # optional: what consecutive stages send each other
      microbatches: 8
      activation_bytes: 2.0e+8         # per micro-batch, each way (forward activations, backward gradients)
    experts:                           # optional, with expert > 1
      all_to_all_bytes: 4.0e+9         # what one rank sends in its expert all-to-alls per iteration

Ranks are laid out Megatron's way: tensor fastest, then data, then pipeline; rank ``r`` runs
on block ``blocks[r // accelerators_per_block]``. Errors are :class:`ConfigError` naming the
file and the key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from optimizer import limits, schema
from optimizer.config import parse_yaml
from optimizer.errors import ConfigError
from optimizer.fabric import Fabric

#: Ranges a job file's numbers must fall in (a bigger number is a typo, not a job).
MAX_PARAMETERS = 1e14
MAX_BYTES_PER_PARAMETER = 16.0
MAX_DEGREE = 1 << 20
MAX_ACCELERATORS_PER_BLOCK = 65_536
MAX_ITERATION_SECONDS = 3600.0
MAX_MICROBATCHES = 100_000
MAX_TRANSFER_BYTES = 1e13
_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


class Collective(StrEnum):
    RING = "ring"  # one ring over the data-parallel group, in rank order
    TREE = "tree"  # reduce up and broadcast down a binary tree over the group, in rank order
    HIERARCHICAL = "hierarchical"  # reduce-scatter in each block, rings across blocks, all-gather


@dataclass(frozen=True)
class JobSpec:
    name: str
    parameters: float
    bytes_per_parameter: float
    data: int
    tensor: int
    pipeline: int
    expert: int
    accelerators_per_block: int
    blocks: tuple[str, ...]
    collective: Collective
    iteration_seconds: float
    microbatches: int = 0
    activation_bytes: float = 0.0
    all_to_all_bytes: float = 0.0
    source: str = "<job>"

    @property
    def world(self) -> int:
        return self.data * self.tensor * self.pipeline

    def rank(self, dp: int, tp: int, pp: int) -> int:
        return (pp * self.data + dp) * self.tensor + tp

    def block_of(self, rank: int) -> str:
        return self.blocks[rank // self.accelerators_per_block]

    @property
    def gradient_bytes(self) -> float:
        """The gradient buffer one data-parallel replica's rank all-reduces per iteration: its
        shard of the model (split over the tensor and pipeline ranks)."""
        return self.parameters * self.bytes_per_parameter / (self.tensor * self.pipeline)


def load_job(path: str | Path, fabric: Fabric) -> JobSpec:
    source = str(path)
    return parse_job(parse_yaml(schema.read_file(path, limits.MAX_YAML_FILE_BYTES), source), source, fabric)


def parse_job(data: object, source: str, fabric: Fabric) -> JobSpec:
    top = schema.mapping(data, source, "")
    schema.check_keys(
        top,
        source,
        "",
        (
            "name",
            "model",
            "parallelism",
            "placement",
            "collective",
            "iteration_seconds",
            "pipeline",
            "experts",
        ),
        ("name", "model", "parallelism", "placement", "iteration_seconds"),
    )
    name = schema.name(top["name"], source, "name")
    model = schema.mapping(top["model"], source, "model")
    schema.check_keys(model, source, "model", ("parameters", "bytes_per_parameter"), ("parameters",))
    parameters = _number(model["parameters"], source, "model.parameters", MAX_PARAMETERS)
    bpp = _number(
        model.get("bytes_per_parameter", 2), source, "model.bytes_per_parameter", MAX_BYTES_PER_PARAMETER
    )
    par = schema.mapping(top["parallelism"], source, "parallelism")
    schema.check_keys(par, source, "parallelism", ("data", "tensor", "pipeline", "expert"), ("data",))
    data_, tensor, pipeline, expert = (
        schema.integer(par.get(k, 1), source, f"parallelism.{k}", minimum=1, maximum=MAX_DEGREE)
        for k in ("data", "tensor", "pipeline", "expert")
    )
    placement = schema.mapping(top["placement"], source, "placement")
    schema.check_keys(
        placement,
        source,
        "placement",
        ("accelerators_per_block", "blocks"),
        ("accelerators_per_block", "blocks"),
    )
    per_block = schema.integer(
        placement["accelerators_per_block"],
        source,
        "placement.accelerators_per_block",
        minimum=1,
        maximum=MAX_ACCELERATORS_PER_BLOCK,
    )
    blocks = _blocks(placement["blocks"], source, fabric)
    collective = schema.choice(top.get("collective", "ring"), source, "collective", Collective)
    iteration = _number(top["iteration_seconds"], source, "iteration_seconds", MAX_ITERATION_SECONDS)
    microbatches, activation = _pipeline(top.get("pipeline"), source)
    all_to_all = _experts(top.get("experts"), source)
    job = JobSpec(
        name,
        parameters,
        bpp,
        data_,
        tensor,
        pipeline,
        expert,
        per_block,
        blocks,
        collective,
        iteration,
        microbatches,
        activation,
        all_to_all,
        source,
    )
    _check_shape(job)
    return job


def _number(value: object, source: str, key: str, maximum: float) -> float:
    """A positive number; a string in float syntax (YAML 1.1 reads ``70e9`` as one) is read as it."""
    if isinstance(value, str) and _FLOAT.fullmatch(value.strip()):
        value = float(value)
    return schema.number(value, source, key, positive=True, maximum=maximum)


def _blocks(value: object, source: str, fabric: Fabric) -> tuple[str, ...]:
    items = schema.sequence(value, source, "placement.blocks")
    if not items:
        raise ConfigError(source, "placement.blocks", "a job occupies at least one block")
    known = set(fabric.block_names)
    names: list[str] = []
    for i, item in enumerate(items):
        key = f"placement.blocks[{i}]"
        block = schema.name(item, source, key)
        if block not in known:
            raise ConfigError(source, key, f"no block {block!r} in fabric {fabric.name!r}")
        if block in names:
            raise ConfigError(source, key, f"block {block!r} is listed twice")
        names.append(block)
    return tuple(names)


def _pipeline(value: object, source: str) -> tuple[int, float]:
    if value is None:
        return 0, 0.0
    section: Mapping[str, Any] = schema.mapping(value, source, "pipeline")
    schema.check_keys(
        section,
        source,
        "pipeline",
        ("microbatches", "activation_bytes"),
        ("microbatches", "activation_bytes"),
    )
    microbatches = schema.integer(
        section["microbatches"], source, "pipeline.microbatches", minimum=1, maximum=MAX_MICROBATCHES
    )
    activation = _number(section["activation_bytes"], source, "pipeline.activation_bytes", MAX_TRANSFER_BYTES)
    return microbatches, activation


def _experts(value: object, source: str) -> float:
    if value is None:
        return 0.0
    section: Mapping[str, Any] = schema.mapping(value, source, "experts")
    schema.check_keys(section, source, "experts", ("all_to_all_bytes",), ("all_to_all_bytes",))
    return _number(section["all_to_all_bytes"], source, "experts.all_to_all_bytes", MAX_TRANSFER_BYTES)


def _check_shape(job: JobSpec) -> None:
    source = job.source
    placed = job.accelerators_per_block * len(job.blocks)
    if job.world != placed:
        raise ConfigError(
            source,
            "parallelism",
            f"data x tensor x pipeline = {job.data} x {job.tensor} x {job.pipeline} = {job.world}, but "
            f"the placement holds {job.accelerators_per_block} x {len(job.blocks)} blocks = {placed} "
            "accelerators",
        )
    if job.accelerators_per_block % job.tensor:
        raise ConfigError(
            source,
            "parallelism.tensor",
            f"{job.tensor} does not divide accelerators_per_block {job.accelerators_per_block}: "
            "tensor-parallel groups stay inside a block (their traffic is too fine-grained for the fabric)",
        )
    if job.data % job.expert:
        raise ConfigError(
            source, "parallelism.expert", f"{job.expert} does not divide the data-parallel degree {job.data}"
        )
    if job.pipeline > 1 and job.microbatches == 0:
        raise ConfigError(
            source,
            "pipeline",
            f"a job with {job.pipeline} pipeline stages needs the pipeline "
            "section (microbatches, activation_bytes)",
        )
    if job.expert > 1 and job.all_to_all_bytes == 0:
        raise ConfigError(
            source, "experts", f"a job with expert degree {job.expert} needs experts.all_to_all_bytes"
        )
    if job.collective is Collective.HIERARCHICAL:
        for pp in range(job.pipeline):  # (a tensor rank never moves a member to another block)
            counts: dict[str, int] = {}
            for dp in range(job.data):
                block = job.block_of(job.rank(dp, 0, pp))
                counts[block] = counts.get(block, 0) + 1
            if len(set(counts.values())) > 1:
                raise ConfigError(
                    source,
                    "collective",
                    f"hierarchical needs each block to hold as many members of a data-parallel group as the "
                    f"others (pipeline stage {pp}: {counts}); use ring or tree for this placement",
                )
