"""The swaps the sequence search checks, ranked without building a topology for each.

A swap on one OCS re-pairs ``a - x`` and ``b - y`` into ``a - y`` and ``b - x``
(:mod:`optimizer.toe.swaps`). The search (:mod:`optimizer.toe.sequence`) ranks every distinct
swap by the *transit need* it removes (per pair, the direct demand over the direct capacity)
and drops those whose drain the hose floor proves unsafe. Both depend on the four pairs and
four blocks a swap touches only, so they are computed from those: a 64-block fabric of 64
uplinks has half a million swaps a stage, and a pair-count matrix per swap (as the search
once kept) took 20 GB. On large fabrics (over :data:`ALL_SWAPS_UP_TO` circuits) only the swaps
that give a circuit to a pair short of direct capacity are ranked. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from optimizer.fabric import Fabric, Side
from optimizer.topology import Circuit

PairKey = tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]
Swap = tuple[tuple[Circuit, Circuit], tuple[Circuit, Circuit]]  # (removed, added)

#: Up to this many circuits every distinct swap is ranked; above, only the swaps that give a
#: circuit to a pair whose demand exceeds its direct capacity.
ALL_SWAPS_UP_TO = 1000
_TOL = 1e-9


class SwapRanker:
    """Today's pair counts and what the ranking needs of them."""

    def __init__(
        self,
        fabric: Fabric,
        counts: np.ndarray,
        pair_demand: np.ndarray,
        speeds: np.ndarray,
        demand: np.ndarray,
        spine: np.ndarray,
    ) -> None:
        self.fabric = fabric
        self.index = {b: i for i, b in enumerate(fabric.block_names)}
        self.counts = counts
        self.pair_demand = pair_demand
        self.speeds = speeds
        self.demand = demand
        self.capacity = (counts * speeds).sum(axis=1) + spine

    def excess(self, i: int, j: int, count: float) -> float:
        """Direct demand of pair (i, j) over ``count`` circuits' capacity (0 when they carry it)."""
        return max(float(self.pair_demand[i, j] - count * self.speeds[i, j]), 0.0)

    def gain(self, gone: Iterable[tuple[int, int]], new: Iterable[tuple[int, int]]) -> float:
        """The transit need a swap removes (negative: it adds need)."""
        delta: dict[tuple[int, int], int] = {}
        for sign, pairs in ((-1, gone), (1, new)):
            for i, j in pairs:
                key = (i, j) if i < j else (j, i)
                delta[key] = delta.get(key, 0) + sign
        total = 0.0
        for (i, j), d in delta.items():
            c = float(self.counts[i, j])
            total += self.excess(i, j, c) - self.excess(i, j, c + d)
        return total

    def drain_floor(self, gone: Iterable[tuple[int, int]]) -> float:
        """The highest hose floor (demand over capacity) of the blocks a drain of ``gone`` touches."""
        cap: dict[int, float] = {}
        for i, j in gone:
            s = float(self.speeds[i, j])
            cap[i] = cap.get(i, float(self.capacity[i])) - s
            cap[j] = cap.get(j, float(self.capacity[j])) - s
        worst = 0.0
        for b, c in cap.items():
            d = float(self.demand[b])
            if d <= 0:
                continue
            worst = max(worst, d / c if c > 1e-12 else np.inf)
        return worst

    def ranked(self, state: Iterable[Circuit], limit: float) -> list[tuple[float, PairKey, Swap]]:
        """Every distinct swap whose drain the hose floor does not prove over ``limit``, as (gain,
        pair key, its first instance), the highest gain first (ties by key)."""
        fabric, index = self.fabric, self.index
        circuits = sorted(state)
        hot_only = len(circuits) > ALL_SWAPS_UP_TO
        by_ocs: dict[str, list[tuple[int, int, str, str, int, int]]] = {}
        for c in circuits:
            pa, pb = c.ends(fabric)
            if pb.side is Side.NORTH:
                pa, pb = pb, pa
            by_ocs.setdefault(c.ocs, []).append((pa.port, pb.port, pa.block, pb.block, index[pa.block],
                                                 index[pb.block]))
        short = self.pair_demand > self.counts * self.speeds + _TOL
        seen: set[PairKey] = set()
        out: list[tuple[float, PairKey, Swap]] = []
        for ocs in sorted(by_ocs):
            items = by_ocs[ocs]
            for i, (n1, s1, a, x, ia, ix) in enumerate(items):
                for n2, s2, b, y, ib, iy in items[i + 1:]:
                    if a == y or b == x:
                        continue
                    if hot_only and not (short[ia, iy] or short[ib, ix]):
                        continue
                    gone = tuple(sorted((_pair(a, x), _pair(b, y))))
                    new = tuple(sorted((_pair(a, y), _pair(b, x))))
                    if gone == new or (gone, new) in seen:
                        continue
                    seen.add((gone, new))
                    if self.drain_floor(((ia, ix), (ib, iy))) > limit * (1 + _TOL):
                        continue  # the drain is unsafe whatever the routing
                    gain = self.gain(((ia, ix), (ib, iy)), ((ia, iy), (ib, ix)))
                    swap = ((Circuit(ocs, n1, s1), Circuit(ocs, n2, s2)),
                            (Circuit(ocs, n1, s2), Circuit(ocs, n2, s1)))
                    out.append((gain, (gone, new), swap))
        out.sort(key=lambda r: (-r[0], r[1]))
        return out

    def counts_after(self, key: PairKey) -> tuple[np.ndarray, np.ndarray]:
        """The pair counts with a swap's two circuits drained, and once its new two are made."""
        gone, new = key
        drained = self.counts.copy()
        for a, b in gone:
            drained[self.index[a], self.index[b]] -= 1
            drained[self.index[b], self.index[a]] -= 1
        after = drained.copy()
        for a, b in new:
            after[self.index[a], self.index[b]] += 1
            after[self.index[b], self.index[a]] += 1
        return drained, after


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)
