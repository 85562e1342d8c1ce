"""Inserting a circuit: directly where both ends have room, else along a Kempe chain."""

from __future__ import annotations

import heapq
from typing import cast

import numpy as np

from optimizer.mapping.edges import NORTH, NOT_HOME, SOUTH, DropValue, EdgeState, Plan, RecolouringStuck

State = tuple[int, int, int, int]  # (OCS, side, block, the OCS the previous move came from or -1)
Moves = tuple["Moves | None", tuple[str, int, int]]  # (the moves before, ("move", edge, to OCS))
Link = Moves | tuple[str, Moves] | None  # None at a start, ("end", moves) for a finished chain

MAX_EXPANSIONS = 20000
STEP_PENALTY = 0.001


class ChainMixin(EdgeState):
    """Insertion steps of :class:`~optimizer.mapping.recolour.Recolouring`."""

    rng: np.random.Generator

    def _insert_cheapest_first(self, pending: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Insert what fits into free ports first, then what needs one drop, then two;
        go back to free ports after every sweep that placed something. Returns the rest."""
        remaining = pending
        while remaining:
            progressed = False
            for level in (0, 1, 2):
                still = [p for p in remaining if not self._insert(*p, allow_chain=False, max_drops=level)]
                progressed = len(still) < len(remaining)
                remaining = still
                if progressed:
                    break
            if not progressed:
                break
        return remaining

    def _insert(self, a: int, b: int, allow_chain: bool, max_drops: int = 2) -> bool:
        best: Plan | None = None
        half_open: list[tuple[int, int, int, int]] = []  # (ocs, tail, head, blocked side)
        room = self.in_domain[self.dom_array, a, b] < self.limit[self.dom_array, a, b]
        north_ok = self._avail_mask(NORTH, a)
        south_ok = self._avail_mask(SOUTH, b)
        for o in np.nonzero(room & north_ok & south_ok)[0].tolist():
            plan = self._direct_plan(o, a, b)
            if plan is None or len(plan.drops) > max_drops:
                continue
            if best is None or plan.cost < best.cost:
                best = plan
        if best is None and allow_chain:
            for o in np.nonzero(room & (north_ok ^ south_ok))[0].tolist():
                half_open.append((o, a, b, SOUTH if north_ok[o] else NORTH))
        if best is None and allow_chain:
            best = self._best_chain(half_open)
        if best is None:
            return False
        for d in best.drops:
            self._drop(d)
        for eid, to in best.moves:
            self._move(eid, to)
        self._add(best.tail, best.head, best.ocs, NOT_HOME)
        return True

    def _force(self, a: int, b: int) -> list[tuple[int, int]]:
        """Place a-b by taking out the circuits in its way; they become circuits to insert."""
        options: list[tuple[int, int, int, int]] = []
        for o in range(self.n_ocs):
            if self.in_domain[self.dom[o], a, b] >= self.limit[self.dom[o], a, b]:
                continue
            for tail, head in ((a, b),):
                blocked = int(not self._available(o, NORTH, tail)) + int(not self._available(o, SOUTH, head))
                options.append((blocked, int(self.rng.integers(1 << 30)), o, tail * self.n + head))
        if not options:
            raise RecolouringStuck(f"no domain has room for another circuit between blocks #{a} and #{b}")
        _, _, o, code = min(options)
        tail, head = divmod(code, self.n)
        evicted: list[tuple[int, int]] = []
        for side, block in ((NORTH, tail), (SOUTH, head)):
            if self._free(o, side, block) > 0:
                continue
            d = self._droppable(o, side, block, set(), {})
            if d is None:
                d = self._pick_to_move(o, side, block, set())
                if d is None:
                    raise RecolouringStuck("internal error: a full port group without circuits")
                e = self._edge(d)
                evicted.append((e.tail, e.head))
            self._drop(d)
        self._add(tail, head, o, NOT_HOME)
        return evicted

    def _direct_plan(self, o: int, tail: int, head: int, prefer: DropValue | None = None) -> Plan | None:
        drops: list[int] = []
        spent: dict[tuple[int, int], int] = {}
        for side, block in ((NORTH, tail), (SOUTH, head)):
            if self._free(o, side, block) > 0:
                continue
            d = self._droppable(o, side, block, set(drops), spent, prefer)
            if d is None:
                return None
            drops.append(d)
            e = self._edge(d)
            pair = self._key(e.tail, e.head)
            spent[pair] = spent.get(pair, 0) + 1
        return Plan(sum(self._drop_cost(d) for d in drops), o, tail, head, [], drops)

    def _best_chain(self, half_open: list[tuple[int, int, int, int]]) -> Plan | None:
        """Cheapest chain of moves (Dijkstra over overflowing port groups) for any start.

        A state ``(o, side, v, came_from)``: port group ``(o, side, v)`` holds one circuit
        too many. A move takes one of its circuits to an OCS where ``v`` has room on that
        side (a free or droppable port, or the OCS the previous move left: it freed one);
        the circuit's far end ``w`` may then overflow there, the next state. A chain ends
        when ``w`` has a free or droppable port. Each found chain is checked on the real
        counts before it is used; a failing one is skipped for the next best.
        """
        heap: list[tuple[float, int, tuple[State, Link, tuple[int, int, int, int]]]] = []
        counter = 0
        for alpha, tail, head, blocked in half_open:
            open_side = NORTH if blocked == SOUTH else SOUTH
            open_block = tail if open_side == NORTH else head
            cost = 0.0
            if self._free(alpha, open_side, open_block) <= 0:
                d = self._droppable(alpha, open_side, open_block, set(), {})
                if d is None:
                    continue
                cost = self._drop_cost(d)
            blk = head if blocked == SOUTH else tail
            start: State = (alpha, blocked, blk, -1)
            heapq.heappush(heap, (max(cost, 0.0), counter, (start, None, (alpha, tail, head, blocked))))
            counter += 1
        settled: set[tuple[int, int, int, int]] = set()
        room_cache: dict[tuple[int, int], list[int]] = {}
        expansions = 0
        while heap and expansions < MAX_EXPANSIONS:
            cost, _, (state, link, origin) = heapq.heappop(heap)
            if link is not None and link[0] == "end":
                plan = self._check_chain(origin, cast("tuple[str, Moves]", link))  # an "end" link
                if plan is not None:
                    return plan
                continue
            if state in settled:
                continue
            settled.add(state)
            expansions += 1
            o, side, v, came_from = state
            other = SOUTH if side == NORTH else NORTH
            key = (side, v)
            if key not in room_cache:
                room_cache[key] = np.nonzero(self._avail_mask(side, v))[0].tolist()
            targets = list(room_cache[key])
            if came_from >= 0 and came_from not in targets:
                targets.append(came_from)
            for eid in self.at[o][side][v]:
                e = self._edge(eid)
                w = e.head if side == NORTH else e.tail
                pair = self._key(e.tail, e.head)
                for o2 in targets:
                    if o2 == o:
                        continue
                    d2 = self.dom[o2]
                    if d2 != self.dom[o] and self.in_domain[d2][pair] >= self.limit[d2][pair]:
                        continue
                    step = max(0.0, 1.0 if e.home == o else (-1.0 if e.home == o2 else 0.0)) + STEP_PENALTY
                    moves: Moves = (cast("Moves | None", link), ("move", eid, o2))  # not an "end" link
                    if self._available(o2, other, w):
                        heapq.heappush(heap, (cost + step, counter, (state, ("end", moves), origin)))
                    else:
                        heapq.heappush(heap, (cost + step, counter, ((o2, other, w, o), moves, origin)))
                    counter += 1
        return None

    def _check_chain(self, origin: tuple[int, int, int, int], link: tuple[str, Moves]) -> Plan | None:
        """Turn a found chain into a plan, checking ports and pair limits on the real counts."""
        alpha, tail, head, _blocked = origin
        steps: list[tuple[int, int]] = []
        node: Moves | None = link[1]
        while node is not None:
            node, (_, eid, to) = node
            steps.append((eid, to))
        steps.reverse()
        if len({eid for eid, _ in steps}) != len(steps):
            return None
        port_delta: dict[tuple[int, int, int], int] = {}
        pair_delta: dict[tuple[int, int, int], int] = {}
        cost = 0.0

        def shift(o: int, side: int, v: int, by: int) -> None:
            port_delta[(o, side, v)] = port_delta.get((o, side, v), 0) + by

        shift(alpha, NORTH, tail, -1)
        shift(alpha, SOUTH, head, -1)
        key = (self.dom[alpha], *self._key(tail, head))
        pair_delta[key] = pair_delta.get(key, 0) + 1
        for eid, to in steps:
            e = self._edge(eid)
            shift(e.ocs, NORTH, e.tail, +1)
            shift(e.ocs, SOUTH, e.head, +1)
            shift(to, NORTH, e.tail, -1)
            shift(to, SOUTH, e.head, -1)
            pair = self._key(e.tail, e.head)
            for dom, by in ((self.dom[e.ocs], -1), (self.dom[to], +1)):
                pair_delta[(dom, *pair)] = pair_delta.get((dom, *pair), 0) + by
            cost += (1.0 if e.home == e.ocs else (-1.0 if e.home == to else 0.0)) + STEP_PENALTY
        taken = {eid for eid, _ in steps}
        spent: dict[tuple[int, int], int] = {}
        drops: list[int] = []
        for (o, side, v), by in sorted(port_delta.items()):
            need = -(self._free(o, side, v) + by)
            for _ in range(max(need, 0)):
                d = self._droppable(o, side, v, taken, spent)
                if d is None:
                    return None
                e = self._edge(d)
                taken.add(d)
                pair = self._key(e.tail, e.head)
                spent[pair] = spent.get(pair, 0) + 1
                drops.append(d)
                cost += self._drop_cost(d)
                shift(o, NORTH, e.tail, +1)
                shift(o, SOUTH, e.head, +1)
                pair_delta[(self.dom[o], *pair)] = pair_delta.get((self.dom[o], *pair), 0) - 1
        for (o, side, v), by in port_delta.items():
            if self._free(o, side, v) + by < 0:
                return None
        for (d, a, b), by in pair_delta.items():
            if by > 0 and self.in_domain[d, a, b] + by > self.limit[d, a, b]:
                return None
        return Plan(cost, alpha, tail, head, steps, drops)
