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
budget permitting) and re-quantises each coarse group crossing a link above the target
against the rest of the load (its best total and split over all its paths). Then it
repeatedly takes the link furthest above the target and moves as many units as fit, of
one group, from a path through it onto another candidate path of the same group (any of
its paths, members or not) whose links stay within the target. Every move lowers the
hottest link without lifting any other link over the target, so the total excess over
the target falls at each step and the peak never rises.
"""

from __future__ import annotations

import numpy as np

from optimizer.te.bulkmoves import link_utilisation, move_to_slack
from optimizer.te.paths import NO_LINK, path_loads
from optimizer.te.repair_inputs import RepairInputs
from optimizer.te.wcmp import reduce_weights

_BISECTIONS = 44  # halvings of the peak interval: below 1e-12 of a link
_SIZE_SPAN = 8  # a coarse group's totals tried on either side of its current one (and its table)
_NEAR = 0.97  # fine groups crossing links above this share of the target get their finest weights


def refill_fine(
    inputs: RepairInputs, fractions: np.ndarray, weights: np.ndarray, fixed: np.ndarray
) -> np.ndarray:
    """``weights`` with each row not ``fixed`` that crosses a link above ``_NEAR`` of the
    target re-reduced from its ``fractions`` over its whole table, largest demands first
    while its switch has the entries to spare."""
    paths, demand_gbps, tables, sources = inputs.paths, inputs.demand_gbps, inputs.tables, inputs.sources
    util = link_utilisation(inputs.graph, paths, demand_gbps, weights)
    near = np.append(util > inputs.target_mlu * _NEAR, False)
    crosses = paths.valid & (weights > 0) & (near[paths.first] | near[paths.second])
    totals = weights.sum(axis=1)
    rows = np.flatnonzero(crosses.any(axis=1) & ~fixed & (demand_gbps > 0) & (totals < tables))
    spare = inputs.switch_budget - np.bincount(sources, weights=totals, minlength=int(sources.max()) + 1)
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


def requantise_coarse(
    inputs: RepairInputs, weights: np.ndarray, coarse: np.ndarray, total: int | None = None
) -> np.ndarray:
    """``weights`` with each ``coarse`` row crossing a link above the target re-quantised
    alone, every other row's load fixed (largest demands first): over all its candidate
    paths and every total within ``_SIZE_SPAN`` of its current one and its whole table (as
    the switch has entries to spare), the weights whose hottest link is the least loaded (see
    :func:`_least_peak_split`). A row takes its new weights only if they lower the excess
    over the target on its links without raising the hottest of them.

    With ``total``, every ``coarse`` row is re-quantised at that total (if its table and
    switch allow it) and takes the result whatever it does: a step of :func:`search_totals`."""
    paths, demand_gbps, tables, sources = inputs.paths, inputs.demand_gbps, inputs.tables, inputs.sources
    target_mlu = inputs.target_mlu
    weights = weights.copy()
    caps = inputs.graph.capacity_gbps
    padded_caps = np.append(caps, 1.0)
    load = np.append(link_utilisation(inputs.graph, paths, demand_gbps, weights) * caps, -np.inf)
    hot = np.append(load[:-1] > caps * target_mlu, False)
    totals = weights.sum(axis=1)
    crosses = paths.valid & (weights > 0) & (hot[paths.first] | hot[paths.second])
    rows = np.flatnonzero((crosses.any(axis=1) | (total is not None)) & coarse & (demand_gbps > 0))
    spare = inputs.switch_budget - np.bincount(sources, weights=totals, minlength=int(sources.max()) + 1)
    for row in rows[np.argsort(-demand_gbps[rows], kind="stable")].tolist():
        current = int(totals[row])
        if current < 1:
            continue
        largest = int(min(tables[row], current + max(spare[sources[row]], 0)))
        vias = np.flatnonzero(paths.valid[row])
        first, second = paths.first[row, vias], paths.second[row, vias]
        old = weights[row, vias]
        rest = load.copy()
        old_flow = old * demand_gbps[row] / current
        np.subtract.at(rest, first, old_flow)
        np.subtract.at(rest, second, np.where(second != NO_LINK, old_flow, 0.0))
        if total is None:
            near = np.arange(max(1, current - _SIZE_SPAN), min(largest, current + _SIZE_SPAN) + 1)
            sizes = np.union1d(near, [largest])
        elif total <= largest:
            sizes = np.array([total])
        else:
            continue
        split = _least_peak_split(rest[first], rest[second], padded_caps[first], padded_caps[second],
                                  demand_gbps[row] / sizes, sizes, old_flow)
        if split is None:
            continue
        counts, unit = split
        trial = rest.copy()
        new_flow = counts * unit
        np.add.at(trial, first, new_flow)
        np.add.at(trial, second, np.where(second != NO_LINK, new_flow, 0.0))
        touched = np.unique(np.concatenate([first, second[second != NO_LINK]]))
        before, after = load[touched] / caps[touched], trial[touched] / caps[touched]
        excess_before = np.maximum(before - target_mlu, 0.0).sum()
        excess_after = np.maximum(after - target_mlu, 0.0).sum()
        improves = after.max() <= before.max() * (1 + 1e-12) and excess_after < excess_before * (1 - 1e-9)
        if total is not None or improves:
            weights[row, vias] = counts
            load = trial
            spare[sources[row]] -= int(counts.sum()) - current
    return weights


def round_against_plan(
    inputs: RepairInputs, fractions: np.ndarray, weights: np.ndarray, coarse: np.ndarray
) -> np.ndarray:
    """``weights`` with each ``coarse`` row replaced by its least-peak weights (totals within
    ``_SIZE_SPAN`` of its current one and its table) against the *planned* load of every
    other row (the continuous split ``fractions``): a rounding consistent across the coarse
    groups, for where they are most of the load (paired blocks, rings) and each one's best
    answer to the others' rounded weights stays far from the plan."""
    paths, demand_gbps, tables, sources = inputs.paths, inputs.demand_gbps, inputs.tables, inputs.sources
    weights = weights.copy()
    caps = inputs.graph.capacity_gbps
    padded_caps = np.append(caps, 1.0)
    sums = fractions.sum(axis=1, keepdims=True)
    planned = demand_gbps[:, None] * np.divide(fractions, sums, out=np.zeros_like(fractions), where=sums > 0)
    load = np.append(path_loads(inputs.graph, paths, planned), -np.inf)
    totals = weights.sum(axis=1)
    spare = inputs.switch_budget - np.bincount(sources, weights=totals, minlength=int(sources.max()) + 1)
    rows = np.flatnonzero(coarse & (demand_gbps > 0) & (totals > 0))
    for row in rows[np.argsort(-demand_gbps[rows], kind="stable")].tolist():
        current = int(totals[row])
        largest = int(min(tables[row], current + max(spare[sources[row]], 0)))
        vias = np.flatnonzero(paths.valid[row])
        first, second = paths.first[row, vias], paths.second[row, vias]
        rest = load.copy()
        np.subtract.at(rest, first, planned[row, vias])
        np.subtract.at(rest, second, np.where(second != NO_LINK, planned[row, vias], 0.0))
        near = np.arange(max(1, current - _SIZE_SPAN), min(largest, current + _SIZE_SPAN) + 1)
        sizes = np.union1d(near, [largest])
        split = _least_peak_split(rest[first], rest[second], padded_caps[first], padded_caps[second],
                                  demand_gbps[row] / sizes, sizes, planned[row, vias], finest=True)
        if split is None:
            continue
        weights[row] = 0
        weights[row, vias] = split[0]
        spare[sources[row]] -= int(split[0].sum()) - current
    return weights


def _least_peak_split(
    rest_first: np.ndarray,
    rest_second: np.ndarray,
    cap_first: np.ndarray,
    cap_second: np.ndarray,
    units: np.ndarray,
    sizes: np.ndarray,
    preferred: np.ndarray,
    finest: bool = False,
) -> tuple[np.ndarray, float] | None:
    """Units per path (and the unit) of the total in ``sizes`` whose peak is the least
    (None if the loads are not finite).

    Path p holding k units of ``units[s]`` peaks at ``max((rest + k u) / cap)`` over its two
    links, so under a peak P it holds ``floor(min((P cap - rest) / u))`` units; the least P
    under which the paths hold ``sizes[s]`` units is found by bisection for every total
    at once; of totals tied for the least, the smallest (with ``finest``, the largest: the
    finest units, which follow a plan most closely). Ties at the optimum lose their
    extra units from the path whose last unit peaks highest, then from the one furthest
    above its ``preferred`` flow (Gbit/s).
    """
    def held(peak: np.ndarray, unit: np.ndarray) -> np.ndarray:
        room = np.minimum((peak[:, None] * cap_first - rest_first) / unit[:, None],
                          (peak[:, None] * cap_second - rest_second) / unit[:, None])
        counts: np.ndarray = np.floor(np.maximum(room, 0.0) * (1 + 1e-12))
        return counts

    low = np.zeros(len(sizes))
    whole = float(units[0] * sizes[0])  # the demand: every total's units add up to it
    high = np.full(len(sizes), max(float(((rest_first + whole) / cap_first).max()),
                                   float(((rest_second + whole) / cap_second).max())))
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2
        enough = held(middle, units).sum(axis=1) >= sizes
        high = np.where(enough, middle, high)
        low = np.where(enough, low, middle)
    tied = np.flatnonzero(high <= high.min() * (1 + 1e-9))
    choice = int(tied[-1] if finest else tied[0])
    unit = float(units[choice])
    # Just above the least peak, so that every path tied at it holds its unit (then trimmed).
    fitted = held(high[choice : choice + 1] * (1 + 1e-9), units[choice : choice + 1])[0]
    if not np.isfinite(high[choice]) or not np.isfinite(fitted).all() or fitted.sum() < sizes[choice]:
        return None
    counts = np.minimum(fitted, sizes[choice]).astype(np.int64)
    while counts.sum() > sizes[choice]:
        last = np.maximum((rest_first + counts * unit) / cap_first,
                          (rest_second + counts * unit) / cap_second)
        last = np.where(counts > 0, last, -np.inf)
        tied = np.flatnonzero(last >= last.max() * (1 - 1e-9))
        counts[int(tied[np.argmax(counts[tied] * unit - preferred[tied])])] -= 1
    return counts, unit


def settle(inputs: RepairInputs, weights: np.ndarray, coarse: np.ndarray, frozen: np.ndarray) -> np.ndarray:
    """The coarse rows re-quantised against the rest, then the bulk moves."""
    weights = requantise_coarse(inputs, weights, coarse)
    return move_to_slack(inputs.graph, inputs.paths, inputs.demand_gbps, weights, inputs.target_mlu, frozen)
