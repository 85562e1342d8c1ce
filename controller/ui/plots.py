"""The pictures ``heliostat plan``, ``toe`` and ``replay`` draw with ``--plot FILE.png``, in one
style: the traffic matrix and the logical topology as block x block heatmaps, link
utilisation as a heatmap and as the links sorted by it, the MLU where the eye looks first.

matplotlib (Agg, no display) is imported when a picture is drawn, not with this module. A path
that cannot be written is a :class:`~optimizer.errors.ConfigError` naming it; the commands
check ``--plot`` with :func:`check_plot_path` before they plan, so a typo costs no solve.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from optimizer.errors import ConfigError

if TYPE_CHECKING:
    from optimizer.te import TeResult
    from optimizer.toe import ReconfigurationPlan
    from optimizer.topology import Topology
    from optimizer.traffic import TrafficMatrix

DPI = 110
#: The colours every picture uses (replay's time series included).
MAIN = "#1f77b4"
ALERT = "#d62728"
MUTED = "grey"
DEMAND_MAP = "Blues"
TOPOLOGY_MAP = "Greens"
UTILISATION_MAP = "YlOrRd"
#: Cells get their number written in them up to this many blocks.
ANNOTATE_UP_TO = 16


def check_plot_path(value: str, source: str = "<command line>", key: str = "--plot") -> Path:
    """The PNG path ``value`` if it can be written: a ``.png`` name in an existing, writable
    directory (not a directory itself). Raises ConfigError naming ``key`` otherwise."""
    path = Path(value)
    if path.suffix.lower() != ".png":
        raise ConfigError(source, key, f"must name a .png file, got {value!r}")
    if path.is_dir():
        raise ConfigError(source, key, f"{value!r} is a directory; name a .png file in it")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(source, key, f"the directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ConfigError(source, key, f"{value!r} cannot be written (permission denied)")
    return path


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> None:
    """Lay out, write ``path`` and close the figure; a write that fails is a ConfigError."""
    plt = pyplot()
    try:
        fig.tight_layout()
        fig.savefig(path, dpi=DPI)
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot write file: {exc.strerror or exc}") from exc
    finally:
        plt.close(fig)


def block_heatmap(
    ax: Any,
    values: np.ndarray,
    blocks: Sequence[str],
    title: str,
    cmap: str,
    label: str,
    *,
    vmin: float = 0.0,
    vmax: float | None = None,
    fmt: str = "{:.0f}",
) -> None:
    """``values[i][j]`` for blocks i (rows) and j (columns), with a colour bar; the diagonal
    (a block to itself) is blank."""
    shown = np.array(values, dtype=float)
    n = len(blocks)
    np.fill_diagonal(shown, np.nan)
    top = vmax if vmax is not None else (np.nanmax(shown) if n > 1 and np.isfinite(shown).any() else 1.0)
    image = ax.imshow(shown, cmap=cmap, vmin=vmin, vmax=max(float(top), vmin + 1e-9), interpolation="nearest")
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label=label)
    ax.set_title(title)
    if n <= 40:
        ax.set_xticks(range(n), blocks, rotation=90, fontsize=8 if n > 16 else 9)
        ax.set_yticks(range(n), blocks, fontsize=8 if n > 16 else 9)
    else:
        ax.set_xlabel(f"{n} blocks (to)")
        ax.set_ylabel("from")
    if n <= ANNOTATE_UP_TO:
        for i in range(n):
            for j in range(n):
                if i != j and values[i][j]:
                    dark = (values[i][j] - vmin) / max(float(top) - vmin, 1e-9) > 0.6
                    ax.text(j, i, fmt.format(values[i][j]), ha="center", va="center", fontsize=7,
                            color="white" if dark else "black")


def _count_range(*topologies: Topology) -> tuple[float, float]:
    """The colour range of circuit counts: from one below the fewest a pair has, so that a
    mesh's 4s and 5s do not look alike."""
    off = [t.counts[~np.eye(len(t.blocks), dtype=bool)] for t in topologies if len(t.blocks) > 1]
    if not off:
        return 0.0, 1.0
    values = np.concatenate(off)
    return float(max(values.min() - 1, 0)), float(max(values.max(), 1))


def utilisation_matrix(result: TeResult) -> np.ndarray:
    """Per block pair, the utilisation of the link from the row's block to the column's
    (0 where there is none); spine trunks are left out (:func:`sorted_utilisation` shows them)."""
    blocks = result.topology.blocks
    index = {b: i for i, b in enumerate(blocks)}
    out = np.zeros((len(blocks), len(blocks)))
    for link in result.links:
        if link.src in index and link.dst in index:
            out[index[link.src], index[link.dst]] = link.utilisation
    return out


def sorted_utilisation(
    ax: Any, results: Iterable[tuple[str, TeResult, str]], threshold: float | None
) -> None:
    """Every link's utilisation (integer weights), busiest first, one line per routing."""
    for label, result, colour in results:
        values = np.sort(np.array([link.utilisation for link in result.links]))[::-1]
        ax.plot(np.arange(1, len(values) + 1), values, color=colour, lw=1.2,
                label=f"{label}: MLU {result.mlu_quantized:.3f}")
    ax.axhline(1.0, color=MUTED, lw=0.6, ls="--")
    if threshold is not None:
        ax.axhline(threshold, color=ALERT, lw=0.8, ls=":", label=f"stage limit {threshold:g}")
    ax.set_xlabel("links, busiest first")
    ax.set_ylabel("utilisation")
    ax.set_ylim(bottom=0)
    ax.set_title("link utilisation")
    ax.legend(loc="upper right", fontsize=8)


def plot_te(path: Path, matrix: TrafficMatrix, result: TeResult) -> None:
    """``heliostat plan --plot``: the matrix, the topology routed over, link utilisation."""
    plt = pyplot()
    blocks = result.topology.blocks
    fig, axes = plt.subplots(1, 4, figsize=(21, 5), gridspec_kw={"width_ratios": [1, 1, 1, 1.1]})
    block_heatmap(axes[0], matrix.gbps, blocks, "traffic matrix", DEMAND_MAP, "Gbit/s")
    low, high = _count_range(result.topology)
    block_heatmap(axes[1], result.topology.counts, blocks, "logical topology", TOPOLOGY_MAP, "circuits",
                  vmin=low, vmax=high)
    util = utilisation_matrix(result)
    block_heatmap(axes[2], util, blocks, "link utilisation (from row to column)", UTILISATION_MAP,
                  "utilisation", vmax=max(1.0, float(util.max())), fmt="{:.2f}")
    sorted_utilisation(axes[3], [("TE", result, MAIN)], None)
    fig.suptitle(
        f"{result.fabric}: {result.total_demand_gbps:.0f} Gbit/s, MLU {result.mlu:.3f} (LP), "
        f"{result.mlu_quantized:.3f} (integer weights); uniform-mesh ECMP {result.baseline_mlu:.3f}"
    )
    save_figure(fig, path)


def plot_toe(path: Path, matrices: Sequence[TrafficMatrix], plan: ReconfigurationPlan) -> None:
    """``heliostat toe --plot``: the (peak of the) matrices, the topology before and after the
    stages, and link utilisation on the topology reached."""
    plt = pyplot()
    before: Topology = plan.toe.current
    after = plan.staging.final_topology
    blocks = after.blocks
    peak = np.max(np.stack([m.gbps for m in matrices]), axis=0)
    fig, axes = plt.subplots(1, 5, figsize=(26, 5), gridspec_kw={"width_ratios": [1, 1, 1, 1, 1.1]})
    title = "traffic matrix" if len(matrices) == 1 else f"traffic: peak of {len(matrices)} matrices"
    block_heatmap(axes[0], peak, blocks, title, DEMAND_MAP, "Gbit/s")
    low, high = _count_range(before, after)
    block_heatmap(axes[1], before.counts, blocks, "topology before", TOPOLOGY_MAP, "circuits",
                  vmin=low, vmax=high)
    block_heatmap(axes[2], after.counts, blocks, "topology after the stages", TOPOLOGY_MAP, "circuits",
                  vmin=low, vmax=high)
    util = utilisation_matrix(plan.routing)
    block_heatmap(axes[3], util, blocks, "link utilisation after", UTILISATION_MAP, "utilisation",
                  vmax=max(1.0, float(util.max())), fmt="{:.2f}")
    sorted_utilisation(axes[4], [("after", plan.routing, MAIN)], plan.staging.threshold)
    staging = plan.staging
    removed = sum(len(s.remove) for s in staging.stages)
    added = sum(len(s.add) for s in staging.stages)
    fig.suptitle(
        f"{plan.fabric.name}: MLU of the predicted demand {plan.toe.current_mlu:.3f} -> "
        f"{staging.final_mlu:.3f}{'' if staging.complete else ' (a step)'}; {removed} circuits "
        f"removed and {added} added in {len(staging.stages)} stages"
    )
    save_figure(fig, path)
