"""A series of traffic matrices over time: what ``heliostat replay`` feeds the controller.

Two formats:

- long CSV ``time,src,dst,gbps`` (time in seconds, non-decreasing; every row with one time is
  one snapshot, pairs not listed are 0; a pair listed twice in a snapshot adds up);
- the ``.hist`` format of the Meta pod traces (``../shared/data/meta-pod-traces``): one
  matrix a line, N*N numbers row-major (row = source), node ``i`` = the fabric's ``i``-th
  block; snapshots are ``interval_s`` apart and each number is multiplied by ``unit_gbps``.

Snapshot ``k`` is the matrix offered from its time until the next snapshot's (the last one
lasts as long as the one before it). Errors are :class:`~optimizer.errors.ConfigError` naming
the file and the row (``line 7``) and what is wrong with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optimizer.errors import ConfigError
from optimizer.fabric import Fabric
from optimizer.limits import MAX_DEMAND_GBPS, MAX_SERIES_FILE_BYTES
from optimizer.schema import read_file
from optimizer.traffic import TrafficMatrix, read_csv_rows

CSV_HEADER = ["time", "src", "dst", "gbps"]
#: Refuse series larger than this many snapshots x pairs (about 1.6 GB of float64).
MAX_CELLS = 200_000_000


@dataclass(frozen=True)
class Series:
    """Snapshots over the fabric's blocks: ``times[k]`` seconds, ``gbps[k]`` the matrix."""

    blocks: tuple[str, ...]
    times: np.ndarray  # [T] seconds, strictly increasing
    gbps: np.ndarray  # [T, n, n] Gbit/s, zero diagonal, >= 0
    source: str = "<series>"

    def __len__(self) -> int:
        return int(self.times.shape[0])

    def matrix(self, k: int) -> TrafficMatrix:
        return TrafficMatrix(self.blocks, self.gbps[k])

    def duration(self, k: int) -> float:
        """How long snapshot ``k`` is offered."""
        if k + 1 < len(self):
            return float(self.times[k + 1] - self.times[k])
        return float(self.times[k] - self.times[k - 1]) if k > 0 else 1.0

    def to_csv(self) -> str:
        """The long CSV :func:`parse_series_csv` reads: a row per pair with traffic, per snapshot
        (a snapshot with none gets one zero row, so that its time is there)."""
        lines = [",".join(CSV_HEADER)]
        n = len(self.blocks)
        for t, matrix in zip(self.times, self.gbps, strict=True):
            rows = [(i, j) for i in range(n) for j in range(n) if matrix[i, j] > 0]
            for i, j in rows or [(0, 1)]:
                lines.append(f"{t:.6f},{self.blocks[i]},{self.blocks[j]},{matrix[i, j]:.6f}")
        return "\n".join(lines) + "\n"

    def scaled(self, factor: float) -> Series:
        return Series(self.blocks, self.times, self.gbps * factor, self.source)

    def window(self, start: int, stop: int | None = None) -> Series:
        """Snapshots ``start:stop``, times unchanged."""
        return Series(self.blocks, self.times[start:stop], self.gbps[start:stop], self.source)


def load_series(
    path: str | Path, fabric: Fabric, *, interval_s: float = 1.0, unit_gbps: float = 1.0
) -> Series:
    """Read a series file; ``.hist`` by its extension, else the long CSV."""
    source = str(path)
    text = read_file(path, MAX_SERIES_FILE_BYTES)
    if Path(path).suffix.lower() == ".hist":
        return parse_hist(text, fabric, source, interval_s=interval_s, unit_gbps=unit_gbps)
    return parse_series_csv(text, fabric, source)


def parse_series_csv(text: str, fabric: Fabric, source: str = "<series>") -> Series:
    rows = iter(read_csv_rows(text, source))
    header = next(rows, None)
    if header is None or [c.strip() for c in header] != CSV_HEADER:
        raise ConfigError(source, "line 1", "expected the header 'time,src,dst,gbps'")
    n = fabric.n_blocks
    index = {b: i for i, b in enumerate(fabric.block_names)}
    times: list[float] = []
    matrices: list[np.ndarray] = []
    for lineno, row in enumerate(rows, start=2):
        if not row or all(not c.strip() for c in row):
            continue
        where = f"line {lineno}"
        if len(row) != 4:
            raise ConfigError(source, where, f"expected 4 fields (time,src,dst,gbps), got {len(row)}")
        time_s = _number(row[0], "time", source, where)
        gbps = _number(row[3], "gbps", source, where)
        if gbps < 0:
            raise ConfigError(source, where, f"gbps must be >= 0, got {row[3].strip()}")
        src, dst = row[1].strip(), row[2].strip()
        for role, name in (("src", src), ("dst", dst)):
            if name not in index:
                raise ConfigError(source, where, f"unknown {role} block {name!r}")
        if src == dst:
            raise ConfigError(source, where, f"block {src!r} cannot send to itself")
        if times and time_s < times[-1]:
            raise ConfigError(source, where, f"time goes back: {time_s:g} after {times[-1]:g}")
        if not times or time_s > times[-1]:
            if (len(times) + 1) * n * n > MAX_CELLS:
                raise ConfigError(source, where, f"more than {MAX_CELLS:,} snapshot cells")
            times.append(time_s)
            matrices.append(np.zeros((n, n)))
        matrices[-1][index[src], index[dst]] += gbps
        if not matrices[-1][index[src], index[dst]] <= MAX_DEMAND_GBPS:
            problem = f"the demand {src}->{dst} at time {time_s:g} is over {MAX_DEMAND_GBPS:g} Gbit/s"
            raise ConfigError(source, where, problem)
    if not times:
        raise ConfigError(source, "", "the series has no snapshot")
    return Series(fabric.block_names, np.array(times), np.array(matrices), source)


def parse_hist(
    text: str, fabric: Fabric, source: str = "<hist>", *, interval_s: float = 1.0, unit_gbps: float = 1.0
) -> Series:
    """The ``.hist`` format: one N*N matrix a line, snapshots ``interval_s`` apart."""
    if not (math.isfinite(interval_s) and interval_s > 0):
        raise ConfigError(source, "interval", f"must be a positive number of seconds, got {interval_s!r}")
    if not (math.isfinite(unit_gbps) and unit_gbps > 0):
        raise ConfigError(source, "unit", f"must be a positive number of Gbit/s, got {unit_gbps!r}")
    n = fabric.n_blocks
    matrices: list[np.ndarray] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        where = f"line {lineno}"
        if len(fields) != n * n:
            raise ConfigError(
                source, where, f"expected {n * n} numbers ({n} blocks squared), got {len(fields)}"
            )
        if (len(matrices) + 1) * n * n > MAX_CELLS:
            raise ConfigError(source, where, f"more than {MAX_CELLS:,} snapshot cells")
        try:
            values = np.array([float(f) for f in fields]).reshape(n, n)
        except ValueError:
            bad = next(f for f in fields if not _is_float(f))
            raise ConfigError(source, where, f"{bad!r} is not a number") from None
        if not np.isfinite(values).all():
            raise ConfigError(source, where, "values must be finite (no NaN or infinity)")
        if (values < 0).any():
            raise ConfigError(source, where, "values must be >= 0")
        if (values * unit_gbps > MAX_DEMAND_GBPS).any():
            raise ConfigError(source, where, f"a demand is over {MAX_DEMAND_GBPS:g} Gbit/s")
        if np.diag(values).any():
            raise ConfigError(source, where, "a block cannot send to itself (non-zero diagonal)")
        matrices.append(values * unit_gbps)
    if not matrices:
        raise ConfigError(source, "", "the series has no snapshot")
    times = np.arange(len(matrices), dtype=np.float64) * interval_s
    return Series(fabric.block_names, times, np.array(matrices), source)


def _number(value: str, what: str, source: str, where: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(source, where, f"{what} {value.strip()!r} is not a number") from None
    if not math.isfinite(number):
        raise ConfigError(source, where, f"{what} must be finite, got {value.strip()}")
    return number


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
