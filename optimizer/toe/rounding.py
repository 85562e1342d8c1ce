"""Rounding a fractional logical topology to circuit counts the OCS layer can realise.

Why the port budget is the only constraint (for striped wiring): each block has ``k`` ports
on every OCS, ``k/2`` north and ``k/2`` south. Orient every circuit of an integer symmetric
L north-to-south with an Euler orientation (pairs with an odd count are oriented around
cycles), so each block sends and receives at most ``ceil(deg/2) <= uplinks/2`` circuits;
an equitable edge colouring of that bipartite multigraph over the OCSes then gives every
block at most ``k/2`` circuits on each side of each OCS. So any L whose row sums fit
the ports can be wired, except on ``sides: any`` OCSes with an odd share ``k``, where odd
cycles can strand a port: there only ``k - 1`` ports per OCS count towards the budget.
"""

from __future__ import annotations

import numpy as np

from optimizer.errors import InfeasibleError
from optimizer.fabric import Fabric, OcsSides

_EPS = 1e-6
_KEEP_BONUS = 0.5  # fractional parts count this much more where today's circuit exists


def port_budget(fabric: Fabric) -> np.ndarray:
    """Per block, how many circuits its OCS ports can carry under the fabric's wiring."""
    n_ocs = len(fabric.ocs)
    budget = np.zeros(fabric.n_blocks, dtype=np.int64)
    for i, block in enumerate(fabric.blocks):
        share = block.uplinks // n_ocs
        for ocs in fabric.ocs:
            usable = share if ocs.sides is OcsSides.SPLIT or share % 2 == 0 else share - 1
            budget[i] += usable
    return budget


def removed_count(current: np.ndarray, target: np.ndarray) -> int:
    """Circuits that must go: the sum over block pairs of max(0, current - target)."""
    iu = np.triu_indices(current.shape[0], 1)
    return int(np.maximum(current[iu] - target[iu], 0).sum())


def round_topology(
    relaxed: np.ndarray,
    budget: np.ndarray,
    current: np.ndarray,
    demand: np.ndarray,
    max_removed: int | None = None,
) -> np.ndarray:
    """An integer symmetric L near ``relaxed`` with row sums within ``budget``.

    Floors every pair, adds one circuit to pairs in order of their fractional part while
    both ends have a free port, fills ports still free (pairs losing today's circuits
    first, then by demand per circuit), and finally, if more than ``max_removed`` of
    today's circuits would go, puts back today's circuits, freeing ports from pairs that
    gained circuits.
    """
    n = relaxed.shape[0]
    sym = (relaxed + relaxed.T) / 2
    counts = np.floor(np.maximum(sym, 0) + _EPS).astype(np.int64)
    np.fill_diagonal(counts, 0)
    counts = _trim_to_budget(counts, budget, sym)
    iu, ju = np.triu_indices(n, 1)
    frac = (sym - counts)[iu, ju]
    pair_demand = (demand + demand.T)[iu, ju]
    # rounding up where today's topology already has the circuit avoids a change
    keeps = (current[iu, ju] > counts[iu, ju]) & (frac > _EPS)
    order = np.lexsort((-pair_demand, -(frac + _KEEP_BONUS * keeps)))
    spare = budget - counts.sum(axis=1)
    for q in order:
        if frac[q] <= _EPS:
            continue
        i, j = iu[q], ju[q]
        if spare[i] > 0 and spare[j] > 0:
            counts[i, j] += 1
            counts[j, i] += 1
            spare[i] -= 1
            spare[j] -= 1
    floor = np.floor(np.maximum(sym, 0) + _EPS).astype(np.int64)
    counts = _fill_free_ports(counts, budget, current, demand, keep=np.minimum(floor, counts))
    if max_removed is not None:
        counts = _restore_current(counts, budget, current, sym, max_removed)
        keep = np.minimum(np.maximum(floor, current), counts)
        counts = _fill_free_ports(counts, budget, current, demand, keep=keep)
    return counts


def _trim_to_budget(counts: np.ndarray, budget: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Guard against solver tolerance: drop circuits from blocks over budget (most over target)."""
    counts = counts.copy()
    for i in range(counts.shape[0]):
        while counts[i].sum() > budget[i]:
            over = np.where(counts[i] > 0, counts[i] - target[i], -np.inf)
            j = int(np.argmax(over))
            counts[i, j] -= 1
            counts[j, i] -= 1
    return counts


def _fill_free_ports(
    counts: np.ndarray, budget: np.ndarray, current: np.ndarray, demand: np.ndarray, keep: np.ndarray
) -> np.ndarray:
    """Join blocks that still have free ports: extra circuits never lower throughput.

    A block left alone with two free ports is spliced into a circuit of a pair above ``keep``.
    """
    counts = counts.copy()
    pair_demand = demand + demand.T
    n = counts.shape[0]
    off_diag = ~np.eye(n, dtype=bool)
    while True:
        spare = budget - counts.sum(axis=1)
        open_ = spare > 0
        ok = open_[:, None] & open_[None, :] & off_diag
        if not ok.any():
            lonely = int(np.argmax(open_))
            if open_.sum() == 1 and spare[lonely] >= 2 and _splice(counts, lonely, demand, keep):
                continue
            return counts
        restores = current > counts
        # restoring today's circuits first (it avoids a change), then demand per circuit
        score = np.where(restores, 1e18, 0.0) + pair_demand / (counts + 1.0)
        score = np.where(ok, score, -np.inf)
        i, j = np.unravel_index(int(np.argmax(score)), score.shape)
        add = int(min(spare[i], spare[j])) if restores[i, j] else 1
        if restores[i, j]:
            add = min(add, int(current[i, j] - counts[i, j]))
        counts[i, j] += add
        counts[j, i] += add


def _splice(counts: np.ndarray, a: int, demand: np.ndarray, keep: np.ndarray) -> bool:
    """Block ``a`` alone has two free ports: replace a circuit x-y by a-x and a-y.

    The pair given up is the one with the least demand per circuit among those above
    ``keep`` and not involving ``a``. Returns False (nothing done) when there is none.
    """
    pair = least_loaded_pair(counts, a, demand, counts > keep)
    if pair is None:
        return False
    splice(counts, a, pair)
    return True


def least_loaded_pair(
    counts: np.ndarray, a: int, demand: np.ndarray, eligible: np.ndarray
) -> tuple[int, int] | None:
    """The pair x < y among ``eligible`` (a boolean matrix), neither of them ``a``, with the
    least demand per circuit; None when there is none."""
    n = counts.shape[0]
    pair_demand = demand + demand.T
    per_circuit = np.where(eligible, pair_demand / np.maximum(counts, 1), np.inf)
    per_circuit[a, :] = np.inf
    per_circuit[:, a] = np.inf
    per_circuit[np.tril_indices(n)] = np.inf
    if not np.isfinite(per_circuit).any():
        return None
    x, y = np.unravel_index(int(np.argmin(per_circuit)), per_circuit.shape)
    return int(x), int(y)


def splice(counts: np.ndarray, a: int, pair: tuple[int, int]) -> None:
    """In place: replace one circuit x-y by a-x and a-y (``a`` gets two ports' worth)."""
    x, y = pair
    counts[x, y] -= 1
    counts[y, x] -= 1
    for end in (x, y):
        counts[a, end] += 1
        counts[end, a] += 1


def _restore_current(
    counts: np.ndarray, budget: np.ndarray, current: np.ndarray, target: np.ndarray, max_removed: int
) -> np.ndarray:
    """Put today's circuits back until at most ``max_removed`` are removed.

    A pair below today's count gets a circuit back; a port it needs is freed from a pair
    of that block above today's count (the one furthest above its relaxed value), which
    removes none of today's circuits. A block with no such pair has a free port already.
    """
    counts = counts.copy()
    while removed_count(current, counts) > max_removed:
        deficit = np.triu(current - counts, 1)
        i, j = np.unravel_index(int(np.argmax(deficit)), deficit.shape)
        for end in (i, j):
            if counts[end].sum() < budget[end]:
                continue
            surplus = counts[end] - current[end]
            candidates = np.where(surplus > 0, counts[end] - target[end], -np.inf)
            if not np.isfinite(candidates).any():
                raise InfeasibleError("today's circuits do not fit the port budget; cannot keep them")
            x = int(np.argmax(candidates))
            counts[end, x] -= 1
            counts[x, end] -= 1
        counts[i, j] += 1
        counts[j, i] += 1
    return counts
