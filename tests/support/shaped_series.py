"""Series of traffic matrices shaped as a live fabric's traffic moves: steps that hold, ramps,
on/off bursts, a matrix that appears for one interval only.

Each builder returns a :class:`~controller.replay.series.Series` for ``heliostat replay``'s
engine. :func:`changes` says where the offered matrix moved (a step, each ramp increment, a
burst starting or ending) and :func:`settled_ratios` picks the snapshots the staleness rule of
issue 26 judges: those at least ``settle`` TE intervals after the last change.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from controller.replay.series import Series
from optimizer.fabric import Fabric
from optimizer.traffic import generate_matrix

INTERVAL = 30.0
#: A snapshot moved from the one before when the traffic moved by more than this share of its
#: volume (relative L1 distance): the noise the noisy series add stays well below it.
CHANGE = 0.05


def series_of(fabric: Fabric, matrices: Sequence[np.ndarray], name: str) -> Series:
    times = np.arange(len(matrices)) * INTERVAL
    return Series(fabric.block_names, times, np.array(matrices, dtype=np.float64), f"<{name}>")


def matrix(fabric: Fabric, kind: str, seed: int = 1, load: float = 0.5) -> np.ndarray:
    return np.asarray(generate_matrix(fabric, kind, seed=seed, load=load).gbps, dtype=np.float64)


def steps(fabric: Fabric, phases: Sequence[tuple[np.ndarray, int]], name: str) -> Series:
    """Each matrix held for its count of intervals, in turn."""
    return series_of(fabric, [m for m, count in phases for _ in range(count)], name)


def ramp(fabric: Fabric, start: np.ndarray, end: np.ndarray, hold: int, steps_: int, name: str) -> Series:
    """``start`` held, then ``steps_`` intervals moving linearly to ``end``, then ``end`` held."""
    moving = [start + (end - start) * (k / steps_) for k in range(1, steps_ + 1)]
    return series_of(fabric, [start] * hold + moving + [end] * hold, name)


def on_off(
    fabric: Fabric, base: np.ndarray, burst: np.ndarray, on: int, off: int, cycles: int, name: str
) -> Series:
    """``base`` throughout, with ``burst`` added for ``on`` intervals every ``on + off``."""
    out = [base] * off
    for _ in range(cycles):
        out += [base + burst] * on + [base] * off
    return series_of(fabric, out, name)


def noisy(series: Series, amplitude: float, seed: int = 7) -> Series:
    """Every pair scaled by an independent factor in [1 - amplitude, 1 + amplitude] per snapshot,
    as measured rates wobble around a demand that holds."""
    rng = np.random.default_rng(seed)
    factors = 1.0 + rng.uniform(-amplitude, amplitude, size=series.gbps.shape)
    return Series(series.blocks, series.times, series.gbps * factors, series.source + " noisy")


def changes(series: Series) -> list[int]:
    """Snapshots whose matrix moved by more than :data:`CHANGE` from the one before."""
    out = []
    for k in range(1, len(series)):
        before, now = series.gbps[k - 1], series.gbps[k]
        scale = max(float(np.abs(now).sum()), float(np.abs(before).sum()), 1e-12)
        if float(np.abs(now - before).sum()) / scale > CHANGE:
            out.append(k)
    return out


def settled_ratios(
    series: Series, ratios: Sequence[float | None], settle: int = 2
) -> list[tuple[int, float]]:
    """(snapshot, ratio) for every judged snapshot at least ``settle`` intervals after the last
    change (the first snapshot counts as one: nothing is in force before it)."""
    moved = [0, *changes(series)]
    out = []
    for k, ratio in enumerate(ratios):
        last = max(c for c in moved if c <= k)
        if ratio is not None and k >= last + settle:
            out.append((k, float(ratio)))
    return out


def shapes(fabric: Fabric) -> dict[str, Series]:
    """The shapes of issue 26 on one fabric: steps up and down between every generated kind,
    a load step, a one-interval blip, a ramp, on/off bursts, and a noisy step that holds."""
    uniform = matrix(fabric, "uniform")
    gravity = matrix(fabric, "gravity", seed=1)
    hotspot = matrix(fabric, "hotspot", seed=1)
    ring = matrix(fabric, "ring", seed=2)
    alltoall = matrix(fabric, "all-to-all", load=0.4)
    out = {
        "uniform-hotspot-gravity": steps(fabric, [(uniform, 6), (hotspot, 6), (gravity, 6)], "issue 26"),
        "ring-alltoall-hotspot": steps(fabric, [(ring, 6), (alltoall, 6), (hotspot, 6)], "kinds"),
        "load-up-down": steps(
            fabric,
            [
                (matrix(fabric, "gravity", 2, 0.2), 5),
                (matrix(fabric, "hotspot", 2, 0.7), 5),
                (matrix(fabric, "gravity", 2, 0.2), 5),
            ],
            "load",
        ),
        "blip": steps(fabric, [(gravity, 6), (hotspot, 1), (gravity, 6)], "blip"),
        "ramp": ramp(fabric, gravity, matrix(fabric, "hotspot", 3), 5, 4, "ramp"),
        "on-off": on_off(fabric, 0.5 * gravity, matrix(fabric, "hotspot", 4, 0.4), 3, 3, 3, "on/off"),
        "noisy-step": noisy(steps(fabric, [(gravity, 6), (ring, 6), (hotspot, 6)], "noisy"), 0.01),
    }
    return out

