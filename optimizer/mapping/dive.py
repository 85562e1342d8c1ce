"""Mapping a failure domain by an LP-guided dive, for Jupiter-shaped domains.

In Jupiter's shape every OCS of the domain joins each block's one north port to one south
port, and when the topology uses every port each OCS carries a *perfect* matching of the
blocks' north ports to their south ports (no block to itself). The domain's problem is
then: choose one such matching per OCS so that the pairs get their counts, keeping as
many of today's circuits as possible.

1. **Guide.** The LP relaxation of that problem, approximated by the volume algorithm
   (Barahona and Anbil, 2000): the pair counts are priced, each OCS then solves an
   assignment problem (``scipy.optimize.linear_sum_assignment``) and the average of those
   assignments approximates the LP's fractional solution. (HiGHS solves the same LP
   exactly, but takes about 25 s for one 64-block domain.)
2. **Dive.** The OCSes whose guide is most nearly integral are fixed first, a few at a
   time: each takes the perfect matching that agrees most with its guide and with today's
   circuits, among the pair units still to place. The guide is re-priced on what is left
   after every few OCSes.

The dive never gets stuck. What is left after any prefix of OCSes is a multigraph in which
every block has degree ``2 r`` (``r`` OCSes left): it has an Eulerian orientation (each
block ``r`` out, ``r`` in), that is an ``r``-regular bipartite multigraph from north copies
to south copies, which König's theorem splits into ``r`` perfect matchings. So a perfect
matching within the pair units left always exists, and every step finds one (penalising a
pair taken both ways beyond its count, and if that does not settle, choosing within the
Eulerian orientation, where one exists by the same theorem).

Polynomial: ``O((GUIDE_ROUNDS + OCSes / chunk x REPRICE_ROUNDS) x OCSes x blocks^3)``.
At 64 blocks (64 OCSes per domain) it takes about 2.5 s per domain (32,000 assignment
problems of 64 x 64, most of its time; measured with one core of two busy with other work)
and tears down 10-20% fewer circuits than the repair of :mod:`optimizer.mapping.repair`
(``benchmarks/RESULTS_toe.md``); :func:`optimizer.mapping.mapper.map_topology` keeps whichever
candidate keeps more.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from optimizer.mapping.ocs import current_orientation
from optimizer.mapping.ports import OcsPorts
from optimizer.mapping.regroup import resolve_fixed

#: Volume-algorithm rounds before the dive, and after every chunk of fixed OCSes.
GUIDE_ROUNDS = 300
REPRICE_ROUNDS = 80
#: The dive fixes this share of the domain's OCSes between two re-pricings (at least one).
CHUNK_SHARE = 1 / 6
#: Weight of today's circuit against the guide's value when an OCS is fixed.
KEEP_WEIGHT = 1.0
_AVERAGING = 0.05  # the volume algorithm's weight of the newest assignment
_FORBIDDEN = -1e6
_CONFLICT_TRIES = 100
#: The dive is skipped on domains bigger than this (OCSes x blocks^3, the assignment work of
#: one guide round): 4x a 64-block Jupiter domain (64 OCSes x 64 blocks, about 2.5 s), so a
#: domain's dive takes about 10 s at most.
MAX_DOMAIN_WORK = 4 * 64 * 64**3


#: :func:`guide_fixed`: the guide's rounds; the values from which it fixes an arc, tried in turn
#: while the arcs fixed leave no placement of the rest (a lower value leaves a smaller MIP); the
#: seconds one MIP may take at most; and the largest domain it runs on (OCSes x blocks^3: a
#: 32-block Jupiter domain of 64 OCSes, 1.5 s of guide there; at 64 blocks even 2,000 rounds
#: leave a guide that fixes too little or the wrong arcs).
FIX_ROUNDS = 1000
FIX_VALUES = (0.9, 0.99)
FIX_SECONDS = 6.0
FIX_MAX_WORK = 64 * 32**3


class DiveStuck(RuntimeError):
    """Internal error: a step found no perfect matching (the theorem says one exists)."""


def dive_applies(ocs_list: Sequence[OcsPorts], pairs: np.ndarray) -> bool:
    """Whether the domain has Jupiter's shape and the pair counts use every port: each block
    has one north and one south port on every OCS (or none on any), no ``any`` ports, and
    ``2 x OCSes`` circuits; and the domain is at most :data:`MAX_DOMAIN_WORK`."""
    if not ocs_list:
        return False
    n = pairs.shape[0]
    present = _present(ocs_list, n)
    if len(ocs_list) * int(present.sum()) ** 3 > MAX_DOMAIN_WORK:
        return False
    for o in ocs_list:
        for a in range(n):
            want = 1 if present[a] else 0
            if o.north_budget(a) != want or o.south_budget(a) != want or o.flexible_count(a):
                return False
    degree = np.asarray(pairs).sum(axis=1)
    return bool(np.array_equal(degree, np.where(present, 2 * len(ocs_list), 0)) and present.sum() >= 3)


def dive(ocs_list: Sequence[OcsPorts], pairs: np.ndarray, known_kept: int = 0) -> list[np.ndarray]:
    """Per-OCS directed counts (north block, south block) realising the symmetric ``pairs`` on
    a domain :func:`dive_applies` to. ``known_kept``: today's circuits some other mapping of
    the domain keeps (it steers the step size)."""
    n = pairs.shape[0]
    blocks = np.nonzero(_present(ocs_list, n))[0]
    m = len(blocks)
    index = np.ix_(blocks, blocks)
    orig = np.array([current_orientation([o], n)[index] for o in ocs_list], dtype=np.float64)
    residual = np.asarray(pairs, dtype=np.int64)[index].copy()
    guide = _Guide(m)
    left = list(range(len(ocs_list)))
    chosen: dict[int, np.ndarray] = {}
    chunk = max(1, round(len(ocs_list) * CHUNK_SHARE))
    rounds = GUIDE_ROUNDS
    while left:
        kept_so_far = sum(float((chosen[o] * orig[o]).sum()) for o in chosen)
        averaged = guide.run(orig[left], residual, rounds, known_kept - kept_so_far)
        rounds = REPRICE_ROUNDS
        integrality = -np.sort(averaged.reshape(len(left), -1), axis=1)[:, -m:].sum(axis=1)
        for k in np.argsort(integrality, kind="stable")[:chunk].tolist():
            o = left[k]
            matching = _perfect_matching(averaged[k] + KEEP_WEIGHT * orig[o], residual)
            chosen[o] = matching
            residual -= matching + matching.T
        left = [o for o in left if o not in chosen]
    out = []
    for o in range(len(ocs_list)):
        full = np.zeros((n, n), dtype=np.int64)
        full[index] = chosen[o]
        out.append(full)
    return out


def guide_fixes(ocs_list: Sequence[OcsPorts], pairs: np.ndarray) -> bool:
    """Whether :func:`guide_fixed` runs on the domain: :func:`dive_applies` and at most
    :data:`FIX_MAX_WORK`."""
    n = pairs.shape[0]
    work = len(ocs_list) * int(_present(ocs_list, n).sum()) ** 3
    return dive_applies(ocs_list, pairs) and work <= FIX_MAX_WORK


def guide_fixed(
    ocs_list: Sequence[OcsPorts], pairs: np.ndarray, known_kept: int, seconds: float
) -> list[np.ndarray] | None:
    """Per-OCS directed counts for a domain :func:`guide_fixes` applies to: the arcs the guide
    (:data:`FIX_ROUNDS` rounds of the volume algorithm, priced from the start) puts at
    :data:`FIX_VALUES` ``[0]`` or more are held and the rest is solved exactly
    (:func:`~optimizer.mapping.regroup.resolve_fixed`, within ``seconds`` and
    :data:`FIX_SECONDS`); if they leave no placement of the rest, the next value is tried. The guide nearly
    settles most of a 32-block domain, so what is left is a small MIP: on the dense benchmark
    domain it keeps all but 85 of today's circuits where the dive keeps all but 105 and the optimum
    all but 84 (``benchmarks/RESULTS_mapping.md``). None when the held arcs leave no placement
    of the rest at any value (the caller keeps its other candidates). ``known_kept``: today's circuits
    another mapping of the domain keeps (it steers the guide's step size)."""
    started = time.perf_counter()  # ``seconds`` covers the guide too
    n = pairs.shape[0]
    blocks = np.nonzero(_present(ocs_list, n))[0]
    index = np.ix_(blocks, blocks)
    orig = np.array([current_orientation([o], n)[index] for o in ocs_list], dtype=np.float64)
    residual = np.asarray(pairs, dtype=np.int64)[index]
    averaged = _Guide(len(blocks)).run(orig, residual, FIX_ROUNDS, float(known_kept))
    for value in FIX_VALUES:
        fixed = []
        for settled in averaged >= value:
            full = np.zeros((n, n), dtype=np.int64)
            full[index] = settled
            fixed.append(full)
        left = min(FIX_SECONDS, seconds - (time.perf_counter() - started))
        solved = resolve_fixed(ocs_list, fixed, np.asarray(pairs, dtype=np.int64), left)
        if solved is not None and np.array_equal(sum(c + c.T for c in solved), pairs):
            return solved
    return None


def _present(ocs_list: Sequence[OcsPorts], n: int) -> np.ndarray:
    """The blocks with ports in the domain (those with a north port on its first OCS)."""
    return np.array([ocs_list[0].north_budget(a) == 1 for a in range(n)])


class _Guide:
    """The volume algorithm's prices, kept from one re-pricing to the next."""

    def __init__(self, m: int) -> None:
        self.m = m
        self.prices = np.zeros((m, m))
        self.upper = np.triu_indices(m, 1)
        self.loops = np.eye(m, dtype=bool)

    def run(self, orig: np.ndarray, residual: np.ndarray, rounds: int, known_kept: float) -> np.ndarray:
        """The averaged assignments of the OCSes ``orig`` under prices for ``residual``."""
        upper = self.upper
        averaged: np.ndarray | None = None
        best, step_scale, since_best = np.inf, 0.1, 0
        for _ in range(rounds):
            assignments = np.zeros_like(orig)
            value = 0.0
            # every OCS's positive weights at once: no block joined to itself
            positive = np.maximum(orig + self.prices, 0.0)
            positive[:, self.loops] = 0.0
            for i in range(len(orig)):
                value += _assign(positive[i], assignments[i])
            bound = value - float((self.prices[upper] * residual[upper]).sum())
            if averaged is None:
                averaged = assignments
            else:
                averaged = _AVERAGING * assignments + (1 - _AVERAGING) * averaged
            placed = averaged.sum(axis=0)
            gradient = np.zeros_like(self.prices)
            gradient[upper] = (placed + placed.T)[upper] - residual[upper]
            if bound < best - 1e-9:
                best, since_best = bound, 0
            else:
                since_best += 1
                if since_best >= 10:
                    step_scale, since_best = step_scale * 0.7, 0
            norm = float((gradient**2).sum())
            if norm < 1e-9:
                break
            step = step_scale * max(bound - known_kept, 1.0) / norm
            self.prices -= step * (gradient + gradient.T)
        if averaged is None:
            return np.zeros_like(orig)
        return averaged


def _assign(positive: np.ndarray, out: np.ndarray) -> float:
    """The best partial assignment north -> south with the ``positive`` weights: its arcs of
    positive weight set to 1 in ``out`` (zeros), and its weight."""
    rows, cols = linear_sum_assignment(positive, maximize=True)
    chosen = positive[rows, cols]
    used = chosen > 1e-12
    out[rows[used], cols[used]] = 1.0
    return float(chosen.sum())


def _perfect_matching(weight: np.ndarray, residual: np.ndarray) -> np.ndarray:
    """The heaviest perfect matching north -> south within the pair units ``residual``
    (symmetric counts; a pair with one unit left may be used one way only)."""
    m = len(weight)
    allowed = (residual > 0) & ~np.eye(m, dtype=bool)
    penalty = np.zeros_like(weight)
    for _ in range(_CONFLICT_TRIES):
        matching = _assign_within(weight - penalty, allowed)
        if matching is None:
            break
        over = (matching + matching.T > residual) & (matching > 0)
        if not over.any():
            return matching
        a, b = np.argwhere(over)[0]
        penalty[a, b] += 1.0
    oriented = _eulerian_orientation(residual)
    matching = _assign_within(weight, oriented > 0)
    if matching is None:
        raise DiveStuck("internal error: no perfect matching within an Eulerian orientation")
    return matching


def _assign_within(weight: np.ndarray, allowed: np.ndarray) -> np.ndarray | None:
    """The heaviest perfect matching using ``allowed`` arcs only (None if there is none)."""
    cost = np.where(allowed, weight, _FORBIDDEN)
    rows, cols = linear_sum_assignment(cost, maximize=True)
    if not allowed[rows, cols].all():
        return None
    out = np.zeros(weight.shape, dtype=np.int64)
    out[rows, cols] = 1
    return out


def _eulerian_orientation(residual: np.ndarray) -> np.ndarray:
    """Directed counts with ``d + d.T == residual`` and every block's out-degree equal to its
    in-degree (closed walks: every degree is even)."""
    left = np.asarray(residual, dtype=np.int64).copy()
    directed = np.zeros_like(left)
    for start in range(len(left)):
        while left[start].any():
            here = start
            while True:
                there = int(np.nonzero(left[here])[0][0])
                left[here, there] -= 1
                left[there, here] -= 1
                directed[here, there] += 1
                here = there
                if here == start:
                    break
    return directed
