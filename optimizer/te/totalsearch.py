"""A search over the totals of the coarse groups, when re-quantising each alone gets stuck.

:func:`optimizer.te.slackmove.requantise_coarse` gives each coarse group (one entry a large
slice of a link) its best total and split against the rest of the load. That is a best
response: where several hot pairs share links (a hotspot matrix on a 24-block fabric with
a spine), each can be at its best against the others while the links they share stay
above the target. A different total for one group changes its unit, and so which counts
fit under the target on every one of its links; the others then answer it.

For each coarse group crossing a link above the target (largest demands first), each total
within ``_SPAN`` of its current one and its whole table is tried: the group is
re-quantised at that total, the others and the bulk moves settle around it, and the best
trial is kept if it lowers the total excess over the target without raising the peak. The
search is bounded by a number of trials and of groups re-quantised over them (never by
time, so that a plan is deterministic).
"""

from __future__ import annotations

import numpy as np

from optimizer.te.bulkmoves import link_utilisation
from optimizer.te.repair_inputs import RepairInputs
from optimizer.te.slackmove import requantise_coarse, settle

_SPAN = 4  # totals tried on either side of a group's current one
_TRIALS = 40  # settled trials per search
_WORK = 200  # coarse groups re-quantised over all trials (a trial re-quantises every one crossing
# a hot link: a 64-block ring has 64, ~2 ms each; its search then costs ~0.5 s)
_SWEEPS = 3  # passes over the groups crossing hot links


def search_totals(
    inputs: RepairInputs, weights: np.ndarray, coarse: np.ndarray, frozen: np.ndarray
) -> np.ndarray:
    """``weights`` after the search (see the module); as good or better on (peak, excess)."""
    paths, demand_gbps, tables = inputs.paths, inputs.demand_gbps, inputs.tables
    target_mlu = inputs.target_mlu
    best = weights
    peak, excess = _measure(inputs, best)
    trials = work = 0
    for _ in range(_SWEEPS):
        if peak <= target_mlu * (1 + 1e-12) or trials >= _TRIALS:
            break
        improved = False
        util = np.append(link_utilisation(inputs.graph, paths, demand_gbps, best), 0.0)
        hot = util > target_mlu
        crosses = paths.valid & (best > 0) & (hot[paths.first] | hot[paths.second])
        rows = np.flatnonzero(crosses.any(axis=1) & coarse & (demand_gbps > 0))
        cost = len(rows) + 1  # groups one trial re-quantises, about
        for row in rows[np.argsort(-demand_gbps[rows], kind="stable")].tolist():
            current = int(best[row].sum())
            totals = sorted(set(range(max(1, current - _SPAN), current + _SPAN + 1)) | {int(tables[row])})
            only = np.zeros(len(best), dtype=bool)
            only[row] = True
            chosen: tuple[np.ndarray, float, float] | None = None
            for total in totals:
                if total == current or total > tables[row] or trials >= _TRIALS or work + cost > _WORK:
                    continue
                trials += 1
                work += cost
                trial = settle(inputs, requantise_coarse(inputs, best, only, total=total), coarse, frozen)
                trial_peak, trial_excess = _measure(inputs, trial)
                if trial_peak <= peak * (1 + 1e-12) and trial_excess < excess * (1 - 1e-9) and (
                    chosen is None or trial_excess < chosen[2]
                ):
                    chosen = (trial, trial_peak, trial_excess)
            if chosen is not None:
                best, peak, excess = chosen
                improved = True
            if peak <= target_mlu * (1 + 1e-12):
                break
        if not improved:
            break
    return best


def _measure(inputs: RepairInputs, weights: np.ndarray) -> tuple[float, float]:
    """The peak utilisation and the sum over links of the utilisation above the target."""
    util = link_utilisation(inputs.graph, inputs.paths, inputs.demand_gbps, weights)
    return float(util.max()), float(np.maximum(util - inputs.target_mlu, 0.0).sum())
