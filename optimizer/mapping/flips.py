"""Local search: Kempe interchanges between two OCSes that bring circuits home."""

from __future__ import annotations

from optimizer.mapping.edges import NORTH, NOT_HOME, SOUTH, EdgeState

FLIP_PASSES = 1


class FlipMixin(EdgeState):
    """Flip steps of :class:`~optimizer.mapping.recolour.Recolouring`."""

    def _improve_by_flips(self) -> int:
        """Local search: swap OCSes alpha and beta on alternating cycles that bring more
        circuits home than they take away (Kempe interchanges). Only pairs of OCSes that
        hold a circuit whose home is the other one can gain. Returns the flips made."""
        flips = 0
        for _ in range(FLIP_PASSES):
            pairs: set[tuple[int, int]] = set()
            for e in self.edges:
                if e is not None and e.home != NOT_HOME and e.home != e.ocs:
                    pairs.add((min(e.ocs, e.home), max(e.ocs, e.home)))
            made = sum(self._flip_pair(alpha, beta) for alpha, beta in sorted(pairs))
            flips += made
            if not made:
                break
        return flips

    def _flip_pair(self, alpha: int, beta: int) -> int:
        """Flip every improving alternating component of the circuits on alpha and beta.

        At each port group the circuits on alpha and on beta are paired in a fixed order;
        a component follows these pairings. Only components holding a circuit whose home
        is alpha or beta can gain, so the walk starts from those.
        """
        cache: dict[tuple[int, int, int], list[int]] = {}

        def group(o: int, side: int, v: int) -> list[int]:
            key = (o, side, v)
            if key not in cache:
                cache[key] = sorted(self.at[o][side][v])
            return cache[key]

        def partner(eid: int, side: int) -> tuple[int | None, tuple[int, int] | None]:
            e = self._edge(eid)
            v = e.tail if side == NORTH else e.head
            mine, other = (alpha, beta) if e.ocs == alpha else (beta, alpha)
            index = group(mine, side, v).index(eid)
            theirs = group(other, side, v)
            return (theirs[index], None) if index < len(theirs) else (None, (side, v))

        starts = [eid for o in (alpha, beta) for v in range(self.n) for eid in self.at[o][NORTH][v]
                  if self._edge(eid).home in (alpha, beta) and self._edge(eid).home != o]
        seen: set[int] = set()
        flipped = 0
        for start in starts:
            if start in seen:
                continue
            component = [start]
            open_end: dict[tuple[int, int], tuple[int, int]] = {}
            seen.add(start)
            stack = [start]
            while stack:
                eid = stack.pop()
                for side in (NORTH, SOUTH):
                    other, end = partner(eid, side)
                    if other is None:
                        open_end[(eid, side)] = end  # type: ignore[assignment]
                    elif other not in seen:
                        seen.add(other)
                        component.append(other)
                        stack.append(other)
            gain = 0
            for eid in component:
                e = self._edge(eid)
                new = beta if e.ocs == alpha else alpha
                gain += (e.home == new) - (e.home == e.ocs)
            if gain <= 0 or not self._ends_fit(component, open_end, alpha, beta):
                continue
            for eid in component:
                e = self._edge(eid)
                self._move(eid, beta if e.ocs == alpha else alpha)
            cache.clear()
            flipped += 1
        return flipped

    def _ends_fit(
        self, component: list[int], open_end: dict[tuple[int, int], tuple[int, int]], alpha: int, beta: int
    ) -> bool:
        """A path (not a cycle) changes the counts at its ends: check the ports there."""
        change: dict[tuple[int, int, int], int] = {}
        for eid in component:
            e = self._edge(eid)
            src, dst = e.ocs, (beta if e.ocs == alpha else alpha)
            for side in (NORTH, SOUTH):
                if (eid, side) in open_end:
                    _, v = open_end[(eid, side)]
                    change[(dst, side, v)] = change.get((dst, side, v), 0) + 1
                    change[(src, side, v)] = change.get((src, side, v), 0) - 1
        return all(self._free(o, side, v) - by >= 0 for (o, side, v), by in change.items())
