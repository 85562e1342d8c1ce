"""Moving weight units off links above the target onto paths with slack, in bulk.

The rounding MILP of :mod:`optimizer.te.linkfit` re-plans the groups crossing the hot
links jointly, but at 64 blocks it is too large to run, and the single-unit moves that
follow must lower the hottest link at every step. Neither helps where the tight links are
the ingress links of a hot destination (hotspot matrices): one entry of the hot pair is
``demand / 128`` (a fifth of an 800G link at 64 blocks), every link into the destination
is at the LP's MLU, so a hot unit fits nowhere, and the small pairs sharing its links
(often one member, so one weight unit, the whole pair) cannot split to make room.

This stage first gives the fine groups crossing links near the target their finest
weights (the whole table: a unit is then under half a percent of a link; the switch
budget permitting), then repeatedly takes the link furthest above the target and moves
as many units as fit, of one group, from a path through it onto another candidate path
of the same group (any of its paths, members or not) whose links stay within the target.
Every move lowers the hottest link without lifting any other link over the target, so
the total excess over the target falls at each step and the peak never rises.
"""

from __future__ import annotations

import numpy as np

from optimizer.te.paths import NO_LINK, CandidatePaths, LinkGraph, path_loads
from optimizer.te.wcmp import reduce_weights

_MAX_STEPS = 4_000  # bulk moves before the stage stops (each costs well under 1 ms at 64 blocks)
_NEAR = 0.97  # fine groups crossing links above this share of the target get their finest weights


def refill_fine(
    graph: LinkGraph,
    paths: CandidatePaths,
    demand_gbps: np.ndarray,
    fractions: np.ndarray,
    weights: np.ndarray,
    tables: np.ndarray,
    sources: np.ndarray,
    switch_budget: int,
    target_mlu: float,
    fixed: np.ndarray,
) -> np.ndarray:
    """``weights`` with each row not ``fixed`` that crosses a link above ``_NEAR`` of the
    target re-reduced from its ``fractions`` over its whole table, largest demands first
    while its switch has the entries to spare."""
    util = link_utilisation(graph, paths, demand_gbps, weights)
    near = np.append(util > target_mlu * _NEAR, False)
    crosses = paths.valid & (weights > 0) & (near[paths.first] | near[paths.second])
    totals = weights.sum(axis=1)
    rows = np.flatnonzero(crosses.any(axis=1) & ~fixed & (demand_gbps > 0) & (totals < tables))
    spare = switch_budget - np.bincount(sources, weights=totals, minlength=int(sources.max()) + 1)
    chosen = []
    for row in rows[np.argsort(-demand_gbps[rows], kind="stable")].tolist():
        extra = int(tables[row] - totals[row])
        if extra <= spare[sources[row]]:
            spare[sources[row]] -= extra
            chosen.append(row)
    refilled = weights.copy()
    taken = np.asarray(chosen, dtype=np.int64)
    for table in np.unique(tables[taken]).tolist():
        same = taken[tables[taken] == table]
        refilled[same] = reduce_weights(fractions[same], int(table), fill=True).weights
    return refilled


def move_to_slack(
    graph: LinkGraph,
    paths: CandidatePaths,
    demand_gbps: np.ndarray,
    weights: np.ndarray,
    target_mlu: float,
    frozen: np.ndarray,
) -> np.ndarray:
    """Bulk moves within groups off the link furthest above ``target_mlu`` onto paths whose
    links stay within it, until no link is above the target or none can be relieved.
    Group totals are kept, so tables and the switch budget still hold."""
    weights = weights.copy()
    caps = graph.capacity_gbps
    movable = paths.valid & ~frozen[:, None] & (demand_gbps > 0)[:, None]
    rows, vias = np.nonzero(movable)
    entry_links = np.concatenate([paths.first[rows, vias], paths.second[rows, vias]])
    entry_ids = np.concatenate([np.arange(len(rows)), np.arange(len(rows))])
    keep = entry_links != NO_LINK
    order = np.argsort(entry_links[keep], kind="stable")
    by_link = entry_ids[keep][order]
    starts = np.searchsorted(entry_links[keep][order], np.arange(graph.n_links + 1))
    unit = demand_gbps / np.maximum(weights.sum(axis=1), 1)
    limit = np.append(caps * target_mlu, np.inf)  # NO_LINK: never the binding hop
    load = np.append(link_utilisation(graph, paths, demand_gbps, weights) * caps, 0.0)
    for _ in range(_MAX_STEPS):
        over = (load[:-1] - limit[:-1]) / caps
        link = int(np.argmax(over))
        if over[link] <= 1e-9:
            break
        excess = load[link] - limit[link]
        entries = by_link[starts[link] : starts[link + 1]]
        entries = entries[weights[rows[entries], vias[entries]] > 0]
        k = rows[entries]
        avoids = movable[k] & (paths.first[k] != link) & (paths.second[k] != link)
        room = np.minimum(limit[paths.first[k]] - load[paths.first[k]],
                          limit[paths.second[k]] - load[paths.second[k]])
        room = np.where(avoids, np.maximum(room, 0.0), 0.0)
        step = unit[k]
        count = np.minimum(np.floor(room / step[:, None] * (1 + 1e-9)), weights[k, vias[entries]][:, None])
        count = np.minimum(count, np.ceil(excess / step - 1e-9)[:, None])
        gain = count * step[:, None]
        if not gain.size or gain.max() <= 0:
            break
        best, dest = divmod(int(np.argmax(gain)), gain.shape[1])
        row, source_via, units = int(k[best]), int(vias[entries[best]]), int(count[best, dest])
        weights[row, source_via] -= units
        weights[row, dest] += units
        for via, sign in ((source_via, -1.0), (dest, 1.0)):
            for hop in (paths.first[row, via], paths.second[row, via]):
                if hop != NO_LINK:
                    load[hop] += sign * units * unit[row]
    return weights


def link_utilisation(
    graph: LinkGraph, paths: CandidatePaths, demand_gbps: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """Each link's load over its capacity when every group splits by ``weights``."""
    totals = np.maximum(weights.sum(axis=1), 1)
    flow = demand_gbps[:, None] * weights / totals[:, None]
    util: np.ndarray = path_loads(graph, paths, flow) / graph.capacity_gbps
    return util
