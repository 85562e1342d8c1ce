"""Block-to-block traffic matrices: parsing, writing and seeded generators.

Formats:

- CSV with the header ``src,dst,gbps`` (one row per pair; repeated pairs add up);
- JSON ``{"b1": {"b2": 40.0}}`` (source block -> destination block -> Gbit/s).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import numpy as np

from optimizer.errors import ConfigError, HeliostatError
from optimizer.fabric import Fabric
from optimizer.limits import MAX_DEMAND_GBPS, MAX_LOAD, MAX_SEED
from optimizer.schema import key_text, read_file, shown
from optimizer.schema import parse_json as schema_parse_json


@dataclass(frozen=True)
class TrafficMatrix:
    """D[a][b]: Gbit/s offered from block a to block b (zero diagonal, non-negative)."""

    blocks: tuple[str, ...]
    gbps: np.ndarray

    def __post_init__(self) -> None:
        arr = np.array(self.gbps, dtype=np.float64, copy=True)
        n = len(self.blocks)
        if arr.shape != (n, n):
            raise ValueError(f"matrix must be {n}x{n}, got {arr.shape}")
        if not np.isfinite(arr).all() or (arr < 0).any():
            raise ValueError("demands must be finite and >= 0")
        if np.diag(arr).any():
            raise ValueError("a block cannot send to itself")
        arr.setflags(write=False)
        object.__setattr__(self, "gbps", arr)

    @classmethod
    def zeros(cls, blocks: Iterable[str]) -> TrafficMatrix:
        names = tuple(blocks)
        return cls(names, np.zeros((len(names), len(names))))

    def demand(self, src: str, dst: str) -> float:
        return float(self.gbps[self.blocks.index(src), self.blocks.index(dst)])

    def total(self) -> float:
        return float(self.gbps.sum())

    def scaled(self, factor: float) -> TrafficMatrix:
        return TrafficMatrix(self.blocks, self.gbps * factor)

    def pairs(self) -> list[tuple[str, str, float]]:
        """(src, dst, gbps) for every non-zero demand, in block order."""
        rows, cols = np.nonzero(self.gbps)
        return [
            (self.blocks[i], self.blocks[j], float(self.gbps[i, j])) for i, j in zip(rows, cols, strict=True)
        ]

    def to_json(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for src, dst, g in self.pairs():
            out.setdefault(src, {})[dst] = round(g, 6)
        return out

    def to_csv(self) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["src", "dst", "gbps"])
        for src, dst, g in self.pairs():
            writer.writerow([src, dst, f"{g:.6g}"])
        return buf.getvalue()

# -- parsing -------------------------------------------------------------------------------


def load_matrix(path: str | Path, fabric: Fabric) -> TrafficMatrix:
    """Read a CSV or JSON matrix file; the format is chosen by the extension (or sniffed)."""
    source = str(path)
    text = read_file(path)
    suffix = Path(path).suffix.lower()
    if suffix == ".csv" or (suffix != ".json" and not text.lstrip().startswith("{")):
        return parse_csv(text, fabric, source)
    return parse_json(text, fabric, source)


def parse_csv(text: str, fabric: Fabric, source: str = "<csv>") -> TrafficMatrix:
    rows = read_csv_rows(text, source)
    if not rows or [c.strip() for c in rows[0]] != ["src", "dst", "gbps"]:
        raise ConfigError(source, "line 1", "expected the header 'src,dst,gbps'")
    arr = np.zeros((fabric.n_blocks, fabric.n_blocks))
    for lineno, row in enumerate(rows[1:], start=2):
        if not row or all(not c.strip() for c in row):
            continue
        where = f"line {lineno}"
        if len(row) != 3:
            raise ConfigError(source, where, f"expected 3 fields (src,dst,gbps), got {len(row)}")
        src, dst, value = (c.strip() for c in row)
        try:
            gbps = float(value)
        except ValueError:
            raise ConfigError(source, where, f"gbps {value!r} is not a number") from None
        _add(arr, fabric, src, dst, gbps, source, where)
    return TrafficMatrix(fabric.block_names, arr)


def read_csv_rows(text: str, source: str) -> list[list[str]]:
    """The rows of CSV text; malformed CSV (a stray quote or carriage return, a NUL) is a
    ConfigError naming the line."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        return list(reader)
    except csv.Error as exc:
        raise ConfigError(source, f"line {reader.line_num}", f"invalid CSV: {exc}") from None


def parse_json(text: str, fabric: Fabric, source: str = "<json>") -> TrafficMatrix:
    return matrix_from_json(schema_parse_json(text, source), fabric, source)


def matrix_from_json(data: object, fabric: Fabric, source: str = "<json>") -> TrafficMatrix:
    if not isinstance(data, Mapping):
        raise ConfigError(source, "<top>", "expected an object of {src: {dst: gbps}}")
    arr = np.zeros((fabric.n_blocks, fabric.n_blocks))
    for src, row in data.items():
        if not isinstance(row, Mapping):
            raise ConfigError(source, key_text(src), "expected an object of {dst: gbps}")
        for dst, value in row.items():
            key = f"{key_text(src)}.{key_text(dst)}"
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(source, key, f"expected a number, got {shown(value)}")
            try:
                gbps = float(value)
            except OverflowError:
                problem = f"demand must be a finite number, got {shown(value)}"
                raise ConfigError(source, key, problem) from None
            _add(arr, fabric, str(src), str(dst), gbps, source, key)
    return TrafficMatrix(fabric.block_names, arr)


def _add(arr: np.ndarray, fabric: Fabric, src: str, dst: str, gbps: float, source: str, where: str) -> None:
    for role, name in (("src", src), ("dst", dst)):
        if not fabric.has_block(name):
            raise ConfigError(source, where, f"unknown {role} block {shown(name)}")
    if src == dst:
        raise ConfigError(source, where, f"block {src!r} cannot send to itself")
    if math.isnan(gbps) or math.isinf(gbps):
        raise ConfigError(source, where, f"demand must be a finite number, got {gbps}")
    if gbps < 0:
        raise ConfigError(source, where, f"demand must be >= 0, got {gbps}")
    i, j = fabric.block_index(src), fabric.block_index(dst)
    total = arr[i, j] + gbps
    if total > MAX_DEMAND_GBPS:
        raise ConfigError(
            source, where, f"the demand {src}->{dst} adds up to {total:g} Gbit/s; at most {MAX_DEMAND_GBPS:g}"
        )
    arr[i, j] = total


def dump_matrix(tm: TrafficMatrix, fmt: str) -> str:
    if fmt == "csv":
        return tm.to_csv()
    return json.dumps(tm.to_json(), indent=1, sort_keys=True) + "\n"


# -- generators ----------------------------------------------------------------------------


class MatrixKind(StrEnum):
    UNIFORM = "uniform"
    GRAVITY = "gravity"
    HOTSPOT = "hotspot"
    RING = "ring"
    ALL_TO_ALL = "all-to-all"


def egress_capacity(fabric: Fabric) -> np.ndarray:
    """Each block's total uplink capacity in Gbit/s."""
    return np.array([b.uplinks * b.speed_gbps for b in fabric.blocks], dtype=np.float64)


def uniform_matrix(fabric: Fabric, load: float = 0.5) -> TrafficMatrix:
    """Every block sends ``load`` of its uplink capacity, split evenly over the others."""
    n = fabric.n_blocks
    cap = egress_capacity(fabric)
    arr = np.repeat((load * cap / max(n - 1, 1))[:, None], n, axis=1)
    np.fill_diagonal(arr, 0.0)
    return TrafficMatrix(fabric.block_names, arr)


def gravity_matrix(fabric: Fabric, seed: int, load: float = 0.5, skew: float = 1.0) -> TrafficMatrix:
    """D[a][b] proportional to w_a * w_b with log-normal block weights (sigma = ``skew``).

    Scaled so that the busiest block sends ``load`` of its uplink capacity, which keeps
    every matrix feasible on a fabric whose blocks are all joined.
    """
    rng = np.random.default_rng(seed)
    n = fabric.n_blocks
    weights = rng.lognormal(mean=0.0, sigma=skew, size=n)
    arr = np.outer(weights, weights)
    np.fill_diagonal(arr, 0.0)
    return _scale_to_load(fabric, arr, load)


def hotspot_matrix(
    fabric: Fabric, seed: int, load: float = 0.5, hot_pairs: int | None = None, hot_share: float = 0.6
) -> TrafficMatrix:
    """A light uniform background plus a few hot pairs carrying ``hot_share`` of the traffic."""
    rng = np.random.default_rng(seed)
    n = fabric.n_blocks
    hot_pairs = hot_pairs if hot_pairs is not None else max(1, n // 4)
    background = np.ones((n, n))
    np.fill_diagonal(background, 0.0)
    background *= (1.0 - hot_share) / background.sum()
    hot = np.zeros((n, n))
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    for k in rng.choice(len(pairs), size=min(hot_pairs, len(pairs)), replace=False):
        i, j = pairs[int(k)]
        hot[i, j] = 1.0
    hot *= hot_share / hot.sum()
    return _scale_to_load(fabric, background + hot, load)


def ring_matrix(fabric: Fabric, seed: int, load: float = 0.5, phase: int = 0) -> TrafficMatrix:
    """One phase of an ML ring collective: a random ring order, each block sends to the block
    ``phase + 1`` places after it (phase 0 is the neighbour exchange)."""
    rng = np.random.default_rng(seed)
    n = fabric.n_blocks
    order = rng.permutation(n)
    step = 1 + (phase % max(n - 1, 1))
    arr = np.zeros((n, n))
    for k in range(n):
        arr[order[k], order[(k + step) % n]] = 1.0
    return _scale_to_load(fabric, arr, load)


def paired_matrix(fabric: Fabric, seed: int, load: float = 0.5, background: float = 0.02) -> TrafficMatrix:
    """Blocks paired off at random, each pair exchanging both ways (as data-parallel jobs
    spanning two blocks do), over a light uniform ``background`` (relative to a pair's
    traffic): the mesh needs a transit hop for most of it, a topology joining the pairs does
    not. Its path LP is highly degenerate (see :mod:`optimizer.te.lp`)."""
    rng = np.random.default_rng(seed)
    n = fabric.n_blocks
    order = rng.permutation(n)
    arr = np.full((n, n), background)
    np.fill_diagonal(arr, 0.0)
    for k in range(0, n - 1, 2):
        a, b = order[k], order[k + 1]
        arr[a, b] = arr[b, a] = 1.0
    return _scale_to_load(fabric, arr, load)


def permutation_phases(fabric: Fabric, seed: int, phases: int, load: float = 0.5) -> list[TrafficMatrix]:
    """A sequence of ring phases, as a collective steps through its schedule."""
    return [ring_matrix(fabric, seed, load, phase) for phase in range(phases)]


def _scale_to_load(fabric: Fabric, arr: np.ndarray, load: float) -> TrafficMatrix:
    cap = egress_capacity(fabric)
    egress = arr.sum(axis=1)
    ingress = arr.sum(axis=0)
    ratio = np.maximum(egress, ingress) / cap
    peak = float(ratio.max())
    if peak <= 0:
        return TrafficMatrix(fabric.block_names, np.zeros_like(arr))
    return TrafficMatrix(fabric.block_names, arr * (load / peak))


def generate_matrix(
    fabric: Fabric, kind: MatrixKind | str, seed: int = 1, load: float = 0.5, phase: int = 0
) -> TrafficMatrix:
    """Raises ConfigError (source ``<generate>``) for a load outside [0, MAX_LOAD] or not
    finite, or a seed outside [0, MAX_SEED]."""
    if isinstance(load, bool) or not isinstance(load, int | float) or not 0 <= load <= MAX_LOAD:
        raise ConfigError("<generate>", "load", f"must be a number from 0 to {MAX_LOAD:g}, got {load!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ConfigError("<generate>", "seed", f"must be an integer from 0 to {MAX_SEED}, got {seed!r}")
    kind = MatrixKind(kind)
    if kind is MatrixKind.UNIFORM:
        return uniform_matrix(fabric, load)
    if kind is MatrixKind.GRAVITY:
        return gravity_matrix(fabric, seed, load)
    if kind is MatrixKind.HOTSPOT:
        return hotspot_matrix(fabric, seed, load)
    if kind is MatrixKind.RING:
        return ring_matrix(fabric, seed, load, phase)
    return uniform_matrix(fabric, load)  # all-to-all: every block to every other, evenly


# -- how far a matrix moved (the estimator's and the decisions' TE trigger) -----------------


class MatrixError(HeliostatError):
    """Two matrices that cannot be compared, or a bad floor."""


@dataclass(frozen=True, slots=True)
class MatrixChange:
    """How far a matrix moved from a reference, and the pair that moved most."""

    distance: float
    pair: tuple[str, str] | None


def matrix_change(
    new: TrafficMatrix, reference: TrafficMatrix | None, floor_gbps: float = 1.0
) -> MatrixChange:
    """max over pairs of ``|new - ref| / max(ref, floor_gbps)``; infinite with no reference.

    Relative to the reference so a threshold of 0.2 means "some pair moved by 20% of what
    was published". The floor keeps pairs below ``floor_gbps`` from counting as large
    relative changes.
    """
    if floor_gbps <= 0:
        raise MatrixError(f"floor_gbps must be > 0, got {floor_gbps}")
    if reference is None:
        return MatrixChange(math.inf, None)
    if new.blocks != reference.blocks:
        raise MatrixError("the matrices are over different blocks")
    rel = np.abs(new.gbps - reference.gbps) / np.maximum(reference.gbps, floor_gbps)
    if rel.size == 0:
        return MatrixChange(0.0, None)
    i, j = np.unravel_index(int(np.argmax(rel)), rel.shape)
    distance = float(rel[i, j])
    pair = (new.blocks[i], new.blocks[j]) if distance > 0 else None
    return MatrixChange(distance, pair)


def matrix_distance(new: TrafficMatrix, reference: TrafficMatrix | None, floor_gbps: float = 1.0) -> float:
    return matrix_change(new, reference, floor_gbps).distance
