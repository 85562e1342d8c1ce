"""Mapping a failure domain by an LP-guided dive, for Jupiter-shaped domains.

In Jupiter's shape every OCS of the domain joins each block's one north port to one south
port, and when the topology uses every port each OCS carries a *perfect* matching of the
blocks' north ports to their south ports (no block to itself). The domain's problem is
then: choose one such matching per OCS so that the pairs get their counts, keeping as
many of today's circuits as possible.

1. **Guide.** The LP relaxation of that problem regularised by entropy (each kept circuit
   is worth ``1``, the entropy ``SINKHORN_EPSILON``), solved by iterative Bregman
   projections (Sinkhorn scaling; Cuturi 2013, Benamou et al. 2015): start from
   ``e^(1/epsilon)`` on today's circuits and ``1`` on every other allowed arc, then scale
   in turn every OCS's north rows to 1, its south columns to 1, and every pair's arcs over
   all OCSes to the pair's count. Each projection is one numpy operation over the whole
   domain, so a 64-block domain's LP (252,032 arcs) is approximated in about a second, to
   within 1% of its optimum (HiGHS's simplex needs minutes, its first-order PDLP 80 s:
   ``benchmarks/RESULTS_mapping.md``).
2. **Dive.** The OCSes whose guide is most nearly integral are fixed first,
   :data:`DIVE_CHUNK` at a time: each takes the perfect matching that agrees most with its
   guide, among the pair units still to place. What is left is solved again from the last
   guide, today's circuits that are still possible taking their starting weight back.

The dive never gets stuck. What is left after any prefix of OCSes is a multigraph in which
every block has degree ``2 r`` (``r`` OCSes left): it has an Eulerian orientation (each
block ``r`` out, ``r`` in), that is an ``r``-regular bipartite multigraph from north copies
to south copies, which König's theorem splits into ``r`` perfect matchings. So a perfect
matching within the pair units left always exists, and every step finds one (penalising a
pair taken both ways beyond its count, and if that does not settle, choosing within the
Eulerian orientation, where one exists by the same theorem).

Polynomial: ``O((SINKHORN_ROUNDS + OCSes / DIVE_CHUNK x RESOLVE_ROUNDS) x OCSes x blocks^2)``
plus one assignment problem per OCS. At 64 blocks (64 OCSes per domain) it takes about 3.5 s
per domain and tears down about 17% fewer circuits than the dive it replaced, which priced
the pairs by the volume algorithm; :func:`optimizer.mapping.mapper.map_topology` keeps
whichever candidate keeps more.

On domains up to 32 blocks (:data:`VOLUME_MAX_WORK`) the mapping dives by :func:`volume_dive`
instead, and :func:`guide_fixed` fixes arcs by its guide: the volume algorithm (Barahona and
Anbil, 2000), where the pair counts are priced, each OCS solves an assignment problem and the
average of those assignments approximates the LP's solution. There an exact finish runs after
the dive, and it ends better from that candidate (see :func:`volume_dive`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from optimizer.mapping.ocs import current_orientation
from optimizer.mapping.ports import OcsPorts
from optimizer.mapping.regroup import resolve_fixed

#: The dive's guide: the entropy's weight against one kept circuit, the Sinkhorn rounds of
#: the first solve and of each solve after a chunk of OCSes is fixed, and the chunk's size.
#: Measured on the ToE benchmark's 64-block domains (``benchmarks/RESULTS_mapping.md``): a
#: larger epsilon or chunk keeps fewer circuits, a smaller one takes longer for no gain.
SINKHORN_EPSILON = 0.02
SINKHORN_ROUNDS = 1500
RESOLVE_ROUNDS = 300
DIVE_CHUNK = 2
_FLOOR = 1e-12  # an allowed arc's least weight between two solves (keeps it in play)
_TINY = 1e-100  # the least sum a Sinkhorn projection divides by
#: :func:`volume_dive`: the volume algorithm's rounds before the dive and after every chunk of
#: fixed OCSes, and the chunk (a share of the domain's OCSes).
GUIDE_ROUNDS = 300
REPRICE_ROUNDS = 80
VOLUME_CHUNK_SHARE = 1 / 6
_AVERAGING = 0.05  # the volume algorithm's weight of the newest assignment
_FORBIDDEN = -1e6
_CONFLICT_TRIES = 100
#: The dive is skipped on domains bigger than this (OCSes x blocks^3): 4x a 64-block Jupiter
#: domain (64 OCSes x 64 blocks, about 3.5 s), so a domain's dive takes about 15 s at most.
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
#: The largest domain the mapping dives into by :func:`volume_dive` (OCSes x blocks^3): where
#: the guide-fixed MIP runs, and below.
VOLUME_MAX_WORK = FIX_MAX_WORK


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
    if _work(ocs_list, n) > MAX_DOMAIN_WORK:
        return False
    for o in ocs_list:
        for a in range(n):
            want = 1 if present[a] else 0
            if o.north_budget(a) != want or o.south_budget(a) != want or o.flexible_count(a):
                return False
    degree = np.asarray(pairs).sum(axis=1)
    return bool(np.array_equal(degree, np.where(present, 2 * len(ocs_list), 0)) and present.sum() >= 3)


def dive(ocs_list: Sequence[OcsPorts], pairs: np.ndarray) -> list[np.ndarray]:
    """Per-OCS directed counts (north block, south block) realising the symmetric ``pairs`` on
    a domain :func:`dive_applies` to, guided by the entropic LP (Sinkhorn scaling)."""
    domain = _Domain(ocs_list, pairs)
    start = np.where(domain.orig > 0, np.exp(1.0 / SINKHORN_EPSILON), 1.0)
    guide = np.where(_allowed(domain.residual), start, 0.0)
    rounds = SINKHORN_ROUNDS
    while domain.left:
        guide = _sinkhorn(guide, domain.residual, rounds)
        rounds = RESOLVE_ROUNDS
        rest = domain.fix_most_integral(guide, guide, DIVE_CHUNK)
        guide = np.where(_allowed(domain.residual), np.maximum(guide[rest], _FLOOR * start[domain.left]), 0.0)
    return domain.per_ocs()


def volume_dive(ocs_list: Sequence[OcsPorts], pairs: np.ndarray, known_kept: int = 0) -> list[np.ndarray]:
    """The same dive guided by the volume algorithm, re-priced after every
    :data:`VOLUME_CHUNK_SHARE` of the OCSes. On its own it keeps fewer circuits than
    :func:`dive` (25-35% more torn down on 16-32-block domains), but the mapping uses it instead
    on domains up to :data:`VOLUME_MAX_WORK` (:func:`volume_dive_applies`), where an exact finish
    runs after the candidates (the guide-fixed MIP, the exact re-solve, the regrouping pass) and
    ends better from it: on the ToE benchmark's 32-block step 1, 673 removed against 688 with the
    entropic dive as a candidate too (the guide-fixed MIP's guide is steered by the best
    candidate's count), and 35 against 39 on a sparse 16-block fabric. ``known_kept``: today's
    circuits some other mapping of the domain keeps (it steers the step size)."""
    domain = _Domain(ocs_list, pairs)
    guide = _Guide(domain.m)
    chunk = max(1, round(len(ocs_list) * VOLUME_CHUNK_SHARE))
    rounds = GUIDE_ROUNDS
    while domain.left:
        kept_so_far = sum(float((domain.chosen[o] * domain.orig[o]).sum()) for o in domain.chosen)
        averaged = guide.run(domain.orig[domain.left], domain.residual, rounds, known_kept - kept_so_far)
        rounds = REPRICE_ROUNDS
        domain.fix_most_integral(averaged, averaged + domain.orig[domain.left], chunk)
    return domain.per_ocs()


def volume_dive_applies(ocs_list: Sequence[OcsPorts], pairs: np.ndarray) -> bool:
    """Whether the mapping dives by :func:`volume_dive` rather than :func:`dive`:
    :func:`dive_applies` and at most :data:`VOLUME_MAX_WORK`."""
    return dive_applies(ocs_list, pairs) and _work(ocs_list, pairs.shape[0]) <= VOLUME_MAX_WORK


class _Domain:
    """A dive's state: the domain's blocks, today's arcs per OCS, the pair units left to
    place, the OCSes left and the matchings chosen."""

    def __init__(self, ocs_list: Sequence[OcsPorts], pairs: np.ndarray) -> None:
        self.n = pairs.shape[0]
        blocks = np.nonzero(_present(ocs_list, self.n))[0]
        self.m = len(blocks)
        self.index = np.ix_(blocks, blocks)
        today = [current_orientation([o], self.n)[self.index] for o in ocs_list]
        self.orig = np.array(today, dtype=np.float64)
        self.residual = np.asarray(pairs, dtype=np.int64)[self.index].copy()
        self.left = list(range(len(ocs_list)))
        self.chosen: dict[int, np.ndarray] = {}

    def fix_most_integral(self, guide: np.ndarray, weight: np.ndarray, count: int) -> list[int]:
        """Fix the ``count`` OCSes left whose ``guide`` is most nearly integral, each to its
        heaviest perfect matching by ``weight`` within the units left; returns the positions
        (in the OCSes left before) of the OCSes still left."""
        integrality = -np.sort(guide.reshape(len(self.left), -1), axis=1)[:, -self.m:].sum(axis=1)
        fixed = np.argsort(integrality, kind="stable")[:count].tolist()
        for k in fixed:
            matching = _perfect_matching(weight[k], self.residual)
            self.chosen[self.left[k]] = matching
            self.residual -= matching + matching.T
        rest = [k for k in range(len(self.left)) if k not in fixed]
        self.left = [self.left[k] for k in rest]
        return rest

    def per_ocs(self) -> list[np.ndarray]:
        """The chosen matchings, every OCS's, over all the fabric's blocks."""
        return [self.full(self.chosen[o]) for o in range(len(self.chosen))]

    def full(self, counts: np.ndarray) -> np.ndarray:
        """Directed counts over the domain's blocks, over all the fabric's blocks."""
        out = np.zeros((self.n, self.n), dtype=np.int64)
        out[self.index] = counts
        return out


def _allowed(residual: np.ndarray) -> np.ndarray:
    """The arcs an OCS may still take: a pair with units left, not a block to itself."""
    return ((residual > 0) & ~np.eye(len(residual), dtype=bool))[None]


def _sinkhorn(guide: np.ndarray, residual: np.ndarray, rounds: int) -> np.ndarray:
    """``rounds`` of iterative Bregman projections of the per-OCS arc weights ``guide`` onto
    the domain's constraints: each OCS's north rows and south columns sum to 1, and each
    pair's arcs over every OCS, both ways, to its units in ``residual`` (in place)."""
    wanted = residual.astype(np.float64)
    for _ in range(rounds):
        guide /= np.maximum(guide.sum(axis=2, keepdims=True), _TINY)
        guide /= np.maximum(guide.sum(axis=1, keepdims=True), _TINY)
        placed = guide.sum(axis=0)
        placed = placed + placed.T
        # (a sum that underflowed is scaled as if it were _TINY: finite, so no 0 x inf)
        scale = np.divide(wanted, np.maximum(placed, _TINY), out=np.zeros_like(wanted), where=placed > 0)
        guide *= scale[None]
    return guide


def guide_fixes(ocs_list: Sequence[OcsPorts], pairs: np.ndarray) -> bool:
    """Whether :func:`guide_fixed` runs on the domain: :func:`dive_applies` and at most
    :data:`FIX_MAX_WORK`."""
    return dive_applies(ocs_list, pairs) and _work(ocs_list, pairs.shape[0]) <= FIX_MAX_WORK


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
    domain = _Domain(ocs_list, pairs)
    averaged = _Guide(domain.m).run(domain.orig, domain.residual, FIX_ROUNDS, float(known_kept))
    for value in FIX_VALUES:
        fixed = [domain.full(settled) for settled in averaged >= value]
        left = min(FIX_SECONDS, seconds - (time.perf_counter() - started))
        solved = resolve_fixed(ocs_list, fixed, np.asarray(pairs, dtype=np.int64), left)
        if solved is not None and np.array_equal(sum(c + c.T for c in solved), pairs):
            return solved
    return None


def _work(ocs_list: Sequence[OcsPorts], n: int) -> int:
    """A domain's size as the dives and the guide-fixed MIP bound it: OCSes x blocks^3 (the
    assignment work of one volume-algorithm round)."""
    return len(ocs_list) * int(_present(ocs_list, n).sum()) ** 3


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
