"""Stages that re-pair several circuits at once: what one swap at a time cannot reach (issue 30).

On a hot fabric with every uplink in use the sequence search (:mod:`optimizer.toe.sequence`)
changes circuits by swaps of two circuits of one OCS. A stage may do more: re-pair three
circuits of one OCS (a rotation: ``a - x, b - y, c - z`` become ``a - y, b - z, c - x``), or
run two swaps (of one OCS, or of two OCSes of one failure domain) in one drain. Where the
MLU is set by several hot pairs at once, such a stage lowers it where no single swap does, and
its drain can still be safe: on hot-16 under the shift matrix at stage limit 0.8 the planner's
swaps stop after one step, where stages of two swaps go further
(``benchmarks/hot/lookahead.py``).

The stages are found from the drains that are safe, cheapest check first. Draining never
lowers the min-MLU, so a set of circuits can be drained safely only if each of them, and each
two of them, can: (1) every block pair's one-circuit drain is checked (the hose floor, then TE);
(2) groups of two and three circuits of one OCS made of circuits that pass (1) are re-paired
every way their ports allow and ranked by the transit need they remove
(:class:`~optimizer.toe.swap_rank.SwapRanker`); (3) in that order, a group's two-circuit
drains (cached per pair of block pairs), then its whole drain, then the MLU after are checked
by TE; (4) the best moves found are combined two at a time within a failure domain, the
combined drain checked whole. The move with the lowest MLU after wins. Only on fabrics of up
to :data:`MAX_CIRCUITS` circuits (the one-circuit drains cost a TE check per block pair).
Pure: no I/O, the only clock the budget's.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from optimizer.budget import TimeBudget
from optimizer.fabric import Fabric, Side
from optimizer.toe.swap_rank import SwapRanker
from optimizer.topology import Circuit

#: Fabrics of more circuits than this are searched by single swaps only.
MAX_CIRCUITS = 1000
#: Circuits of one OCS a group re-pairs, at most.
MAX_GROUP = 3
#: Groups of one size whose drain and MLU after are checked by TE per stage, at most (without a
#: budget; with one, up to ten times more, the budget bounds it); and how many more are checked
#: once one lowering the MLU is found.
MAX_GROUP_CHECKS = 400
ENOUGH_GROUP_CHECKS = 16
#: Moves (the best by MLU after) combined two at a time within a failure domain.
COMBINE_BEST = 8
_TOL = 1e-9
_GAIN = 1e-6

Pair = tuple[int, int]
#: A re-pairing roughly ranked: (MLU change, minus transit gain, order, group, permutation).
Rough = tuple[float, float, int, tuple[Circuit, ...], tuple[int, ...]]


@dataclass(frozen=True)
class Move:
    """One stage: ``removed`` drained, then ``added`` made (one failure domain)."""

    removed: tuple[Circuit, ...]
    added: tuple[Circuit, ...]
    gain: float  # transit need removed
    drained: float  # MLU with ``removed`` drained
    after: float  # MLU once ``added`` is made
    counts: np.ndarray  # pair counts after


class MultiStageSearch:
    """The best multi-circuit stage from one topology (see the module docstring)."""

    def __init__(
        self,
        fabric: Fabric,
        state: set[Circuit] | frozenset[Circuit],
        ranker: SwapRanker,
        mlu_of: Callable[[np.ndarray], float],
        limit: float,
        mlu_now: float,
        budget: TimeBudget | None = None,
        *,
        drain_of: Callable[[np.ndarray], float] | None = None,
    ) -> None:
        self.fabric, self.ranker, self.mlu_of = fabric, ranker, mlu_of
        #: the drained MLU the stage rule checks against ``limit`` (default ``mlu_of``)
        self.drain_of = drain_of or mlu_of
        self.limit, self.mlu_now, self.budget = limit, mlu_now, budget
        index = ranker.index
        self.ends: dict[Circuit, tuple[int, int, int, int]] = {}  # north port, south port, blocks
        self.by_ocs: dict[str, list[Circuit]] = {}
        for c in sorted(state):
            pa, pb = c.ends(fabric)
            if pb.side is Side.NORTH:
                pa, pb = pb, pa
            self.ends[c] = (pa.port, pb.port, index[pa.block], index[pb.block])
            self.by_ocs.setdefault(c.ocs, []).append(c)
        self._verdicts: dict[tuple[Pair, ...], bool] = {}

    def _spent(self) -> bool:
        return self.budget is not None and self.budget.expired()

    def _pair(self, c: Circuit) -> Pair:
        _, _, i, j = self.ends[c]
        return (i, j) if i < j else (j, i)

    def _drained_counts(self, gone: tuple[Pair, ...]) -> np.ndarray:
        counts = self.ranker.counts.copy()
        for i, j in gone:
            counts[i, j] -= 1
            counts[j, i] -= 1
        return counts

    def safe_drain(self, gone: tuple[Pair, ...]) -> bool:
        """Whether draining one circuit of each pair in ``gone`` keeps the MLU within the limit."""
        key = tuple(sorted(gone))
        if key not in self._verdicts:
            if self.ranker.drain_floor(key) > self.limit * (1 + _TOL):
                self._verdicts[key] = False
            else:
                self._verdicts[key] = self.drain_of(self._drained_counts(key)) <= self.limit + _TOL
        return self._verdicts[key]

    def best(self) -> Move | None:
        """The safe move with the lowest MLU after (ties: the larger transit gain), or None when
        no move checked lowers the MLU or, keeping it, lowers the transit need."""
        safe = self._single_safe()
        found: list[Move] = []
        for size in range(2, MAX_GROUP + 1):  # swaps first, then rotations: each size its own checks
            if self._spent():
                break
            ranked = self._roughly_ranked(size, safe)
            if ranked is not None:
                found.extend(self._checked_best(ranked))
        found.extend(self._combined(found))
        return min(found, key=lambda m: (m.after, -m.gain), default=None)

    def _checked_best(self, ranked: Iterable[Rough]) -> list[Move]:
        """The acceptable moves among the best-ranked re-pairings: checked in order until
        :data:`ENOUGH_GROUP_CHECKS` after the first that lowers the MLU (at most
        :data:`MAX_GROUP_CHECKS`)."""
        found: list[Move] = []
        most = MAX_GROUP_CHECKS * (1 if self.budget is None else 10)
        seen: set[tuple[tuple[Pair, ...], tuple[Pair, ...]]] = set()
        first_at: int | None = None
        checks = 0
        for _, _, _, group, perm in ranked:
            if self._spent() or checks >= most:
                break
            if first_at is not None and checks >= first_at + ENOUGH_GROUP_CHECKS:
                break
            gone = tuple(sorted(self._pair(c) for c in group))
            added, new = self._repaired(group, perm)
            if (gone, new) in seen:
                continue
            seen.add((gone, new))
            if any(self._verdicts.get(two) is False for two in itertools.combinations(gone, 2)):
                continue  # two of them alone drain over the limit
            if self.ranker.drain_floor(gone) > self.limit * (1 + _TOL):
                continue
            checks += 1
            move = self._checked(group, added, gone, new, self.ranker.gain(gone, new))
            if move is not None:
                found.append(move)
                if first_at is None and move.after < self.mlu_now * (1 - _GAIN):
                    first_at = checks
        return found

    def _checked(
        self,
        removed: tuple[Circuit, ...],
        added: tuple[Circuit, ...],
        gone: tuple[Pair, ...],
        new: tuple[Pair, ...],
        gain: float,
    ) -> Move | None:
        drained_counts = self._drained_counts(gone)
        drained = self.drain_of(drained_counts)
        if drained > self.limit + _TOL:
            if len(gone) > 2:  # learn which two fail, to pass over the groups holding them
                for two in itertools.combinations(gone, 2):
                    if self._spent() or not self.safe_drain(two):
                        break
            return None
        after_counts = drained_counts
        for i, j in new:
            after_counts[i, j] += 1
            after_counts[j, i] += 1
        after = self.mlu_of(after_counts)
        if after > self.mlu_now * (1 + _TOL) or (gain <= _TOL and after >= self.mlu_now * (1 - _GAIN)):
            return None
        return Move(removed, added, gain, drained, after, after_counts)

    def _single_safe(self) -> set[Circuit]:
        """The circuits whose drain alone keeps the MLU within the limit."""
        return {c for c in self.ends if not self._spent() and self.safe_drain((self._pair(c),))}

    def _roughly_ranked(self, size: int, safe: set[Circuit]) -> Iterator[Rough] | None:
        """Every re-pairing of ``size`` circuits of one OCS that each pass their one-circuit
        drain, in two rankings taken in turn: the drains that raise the MLU least first (each
        pair's one-circuit drain by TE, summed) and the largest transit gain first (each pair's
        change counted on its own: exact where the pairs differ, as they mostly do). None when
        there is none."""
        counts, pd, speeds = self.ranker.counts, self.ranker.pair_demand, self.ranker.speeds
        excess = np.maximum(pd - counts * speeds, 0.0)
        cost = np.maximum(pd - (counts - 1) * speeds, 0.0) - excess  # need added by one drained
        benefit = excess - np.maximum(pd - (counts + 1) * speeds, 0.0)  # need removed by one made
        raise_ = np.zeros_like(excess)  # MLU raised by one circuit of the pair drained
        for (i, j), mlu in self._marginal(-1, {self._pair(c) for c in safe}).items():
            raise_[i, j] = raise_[j, i] = mlu
        perms = [p for p in itertools.permutations(range(size)) if all(k != q for k, q in enumerate(p))]
        worse, gain, rows, how = [], [], [], []
        for ocs in sorted(self.by_ocs):
            items = [c for c in self.by_ocs[ocs] if c in safe]
            if len(items) < size:
                continue
            north = np.array([self.ends[c][2] for c in items])
            south = np.array([self.ends[c][3] for c in items])
            circuits = np.empty(len(items), dtype=object)
            circuits[:] = items
            idx = np.array(list(itertools.combinations(range(len(items)), size)))
            a, x = north[idx], south[idx]
            lost, up = cost[a, x].sum(axis=1), raise_[a, x].sum(axis=1)
            for k, perm in enumerate(perms):
                xp = x[:, list(perm)]
                ok = (a != xp).all(axis=1)
                worse.append(np.round(up[ok], 4))
                gain.append(benefit[a, xp].sum(axis=1)[ok] - lost[ok])
                rows.append(circuits[idx[ok]])
                how.append(np.full(int(ok.sum()), k))
        if not rows or not sum(len(r) for r in rows):
            return None
        w, g, group, which = (np.concatenate(v) for v in (worse, gain, rows, how))
        order = np.arange(len(w))
        slack_first = np.lexsort((order, -g, w))
        gain_first = np.lexsort((order, w, -g))

        def rough(n: int) -> Rough:
            return float(w[n]), -float(g[n]), n, tuple(group[n]), perms[int(which[n])]

        return (rough(int(n)) for n in _interleaved(slack_first, gain_first))

    def _marginal(self, delta: int, pairs: set[Pair]) -> dict[Pair, float]:
        """Per pair, how much one circuit more (``delta`` 1) or less (-1) on it alone lowers (1)
        or raises (-1) the MLU, by TE; 0 for the pairs the budget leaves unchecked."""
        out: dict[Pair, float] = {}
        for i, j in sorted(pairs):
            if self._spent():
                break
            counts = self.ranker.counts.copy()
            counts[i, j] += delta
            counts[j, i] += delta
            out[(i, j)] = max(delta * (self.mlu_now - self.mlu_of(counts)), 0.0)
        return out

    def _repaired(
        self, group: tuple[Circuit, ...], perm: tuple[int, ...]
    ) -> tuple[tuple[Circuit, ...], tuple[Pair, ...]]:
        """The group's north ports joined to its south ports in ``perm``'s order: (the new
        circuits, their pairs)."""
        ends = [self.ends[c] for c in group]
        added = tuple(Circuit(group[0].ocs, ends[k][0], ends[q][1]) for k, q in enumerate(perm))
        pairs = ((ends[k][2], ends[q][3]) for k, q in enumerate(perm))
        return added, tuple(sorted((i, j) if i < j else (j, i) for i, j in pairs))

    def _combined(self, found: list[Move]) -> list[Move]:
        """The best moves joined two at a time: disjoint circuits, one failure domain, the joined
        drain checked whole."""
        best = sorted(found, key=lambda m: (m.after, -m.gain))[:COMBINE_BEST]
        out: list[Move] = []
        for m1, m2 in itertools.combinations(best, 2):
            if self._spent():
                break
            domains = {self.fabric.ocs_named(m.removed[0].ocs).domain for m in (m1, m2)}
            if len(domains) > 1:
                continue
            if set(m1.removed) & set(m2.removed):
                continue
            gone = tuple(sorted(self._pair(c) for c in m1.removed + m2.removed))
            new = tuple(sorted(self._pair_of_new(c) for c in m1.added + m2.added))
            gain = self.ranker.gain(gone, new)
            move = self._checked(m1.removed + m2.removed, m1.added + m2.added, gone, new, gain)
            if move is not None:
                out.append(move)
        return out

    def _pair_of_new(self, c: Circuit) -> Pair:
        pa, pb = c.ends(self.fabric)
        i, j = self.ranker.index[pa.block], self.ranker.index[pb.block]
        return (i, j) if i < j else (j, i)



def _interleaved(first: np.ndarray, second: np.ndarray) -> Iterator[int]:
    """Two rankings of the same items taken in turn, each item once."""
    seen: set[int] = set()
    for pair in zip(first.tolist(), second.tolist(), strict=True):
        for n in pair:
            if n not in seen:
                seen.add(n)
                yield n
