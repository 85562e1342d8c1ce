"""Moving today's circuits to the target with few changes: Kempe-chain recolouring.

Think of every circuit as an edge from the north copy of one block to the south copy of
another, coloured by the OCS it is on. An OCS holds, per block, at most as many out-edges
as the block has north ports there and as many in-edges as it has south ports. Today's
circuits are a valid colouring. The target differs from them by *surplus* circuits
(pairs that shrink) and *deficit* circuits (pairs that grow); the lower bound on changes
is the total surplus.

1. Circuits that sit in a failure domain holding more of their pair than
   :func:`~optimizer.mapping_domains.pair_domain_limit` allows are dropped there (from
   the surplus when the pair shrinks anyway).
2. Each deficit circuit a-b is inserted, in either orientation, on an OCS whose domain
   has room for the pair and where both ends have a free port or a port held by a surplus
   circuit (which is then dropped: it had to go anyway). Such an insertion costs nothing
   beyond the lower bound.
3. When no OCS has both ends available, a Kempe chain makes room: the blocking circuit at
   one end moves to an OCS beta where that end is free, the circuit it collides with there
   moves back, and so on until a free or droppable port ends the chain. Of the chains
   tried, the one moving the fewest of today's circuits away from their OCS wins.
4. The surplus circuits left over are dropped, circuits already moved first.

Every step keeps every OCS within its ports and every domain within its pair limits, so
the result is always valid. Each insertion is polynomial: a scan of the OCSes and at most
``CHAIN_CANDIDATES^2`` chains of at most ``2 * blocks * ports-per-side`` steps. When no
chain exists (very tight fabrics) :class:`RecolouringStuck` is raised and the caller
falls back to the flow-based construction.
"""

from __future__ import annotations

import heapq
import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optimizer.errors import InfeasibleError
from optimizer.mapping_ports import OcsPorts

log = logging.getLogger(__name__)

NORTH, SOUTH = 0, 1
NOT_HOME = -1
CHAIN_CANDIDATES = 24
MAX_EXPANSIONS = 20000
MAX_FORCED_PLACEMENTS_PER_CIRCUIT = 4
DROP_PENALTY = 0.01
STEP_PENALTY = 0.001


class RecolouringStuck(InfeasibleError):
    """No chain could make room for a circuit; the caller may try another construction."""


@dataclass
class _Edge:
    tail: int  # block on the north side
    head: int  # block on the south side
    ocs: int
    home: int  # the OCS it is on today, or NOT_HOME for a new circuit


@dataclass
class _Plan:
    cost: float
    ocs: int
    tail: int
    head: int
    moves: list[tuple[int, int]]  # (edge id, to OCS)
    drops: list[int]


def _pair(a: int, b: int) -> tuple[int, int]:
    """The key of a circuit's demand: the directed arc (north block, south block)."""
    return (a, b)


class Recolouring:
    """All circuits of the fabric as coloured edges, changed one circuit at a time."""

    def __init__(
        self,
        ocs_list: Sequence[OcsPorts],
        target: np.ndarray,
        domain_limit: np.ndarray,
        domain_index: Sequence[int],
        rng: np.random.Generator,
    ) -> None:
        self.n = target.shape[0]
        self.n_ocs = len(ocs_list)
        self.target = target
        self.limit = domain_limit  # (domains, n, n)
        self.dom = list(domain_index)  # OCS position -> domain position
        self.rng = rng
        self.cap = np.zeros((self.n_ocs, 2, self.n), dtype=np.int64)
        for i, o in enumerate(ocs_list):
            for b in range(self.n):
                self.cap[i, NORTH, b] = o.north_budget(b)
                self.cap[i, SOUTH, b] = o.south_budget(b)
        self.used = np.zeros_like(self.cap)
        self.edges: list[_Edge | None] = []
        self.at: list[list[list[set[int]]]] = [
            [[set() for _ in range(self.n)] for _ in range(2)] for _ in range(self.n_ocs)
        ]
        self.by_pair: dict[tuple[int, int], set[int]] = {}
        self.in_domain = np.zeros_like(domain_limit)
        for i, o in enumerate(ocs_list):
            for (a, b), circuits in o.current.items():
                for _ in circuits:
                    self._add(a, b, i, home=i)

    # -- bookkeeping ------------------------------------------------------------------------
    def _add(self, a: int, b: int, ocs: int, home: int) -> int:
        eid = len(self.edges)
        self.edges.append(_Edge(a, b, ocs, home))
        self._place(eid, a, b, ocs, +1)
        self.by_pair.setdefault(_pair(a, b), set()).add(eid)
        return eid

    def _place(self, eid: int, a: int, b: int, ocs: int, sign: int) -> None:
        if sign > 0:
            self.at[ocs][NORTH][a].add(eid)
            self.at[ocs][SOUTH][b].add(eid)
        else:
            self.at[ocs][NORTH][a].discard(eid)
            self.at[ocs][SOUTH][b].discard(eid)
        self.used[ocs, NORTH, a] += sign
        self.used[ocs, SOUTH, b] += sign
        d = self.dom[ocs]
        self.in_domain[d, a, b] += sign

    def _drop(self, eid: int) -> None:
        e = self._edge(eid)
        self._place(eid, e.tail, e.head, e.ocs, -1)
        self.by_pair[_pair(e.tail, e.head)].discard(eid)
        self.edges[eid] = None

    def _move(self, eid: int, to: int) -> None:
        e = self._edge(eid)
        self._place(eid, e.tail, e.head, e.ocs, -1)
        e.ocs = to
        self._place(eid, e.tail, e.head, to, +1)

    def _edge(self, eid: int) -> _Edge:
        e = self.edges[eid]
        if e is None:
            raise RecolouringStuck("internal error: a dropped circuit was used again")
        return e

    def _surplus(self, pair: tuple[int, int]) -> int:
        return len(self.by_pair.get(pair, ())) - int(self.target[pair])

    def _free(self, ocs: int, side: int, block: int) -> int:
        return int(self.cap[ocs, side, block] - self.used[ocs, side, block])

    def _droppable(self, ocs: int, side: int, block: int, taken: set[int], spent: dict) -> int | None:
        """A circuit in this port group whose pair still has surplus (moved ones first)."""
        best: int | None = None
        for eid in self.at[ocs][side][block]:
            if eid in taken:
                continue
            e = self._edge(eid)
            pair = _pair(e.tail, e.head)
            if self._surplus(pair) - spent.get(pair, 0) <= 0:
                continue
            if e.ocs != e.home:
                return eid
            if best is None:
                best = eid
        return best

    def _drop_cost(self, eid: int) -> float:
        e = self._edge(eid)
        return (-1.0 if e.ocs != e.home else 0.0) + DROP_PENALTY

    # -- the algorithm ----------------------------------------------------------------------
    def run(self) -> list[np.ndarray]:
        self._drop_over_domain_limit()
        pending: list[tuple[int, int]] = []
        iu, ju = np.nonzero(self.target)
        for a, b in zip(iu.tolist(), ju.tolist(), strict=True):
            pending.extend([(a, b)] * max(-self._surplus((a, b)), 0))
        order = self.rng.permutation(len(pending))
        pending = [pending[i] for i in order]
        hard = deque(p for p in pending if not self._insert(*p, allow_chain=False))
        chains = len(hard)
        forced = 0
        while hard:
            a, b = hard.popleft()
            if self._insert(a, b, allow_chain=True):
                continue
            forced += 1
            if forced > MAX_FORCED_PLACEMENTS_PER_CIRCUIT * (len(pending) + 1):
                raise RecolouringStuck(f"no OCS or chain has room for a circuit between block indices {a}, {b}")
            hard.extend(self._force(a, b))
        self._drop_leftover_surplus()
        log.debug("recolouring: %d insertions, %d needed a chain, %d forced", len(pending), chains, forced)
        return self._counts()

    def _drop_over_domain_limit(self) -> None:
        for d in range(self.limit.shape[0]):
            over = np.argwhere(self.in_domain[d] > self.limit[d])
            for a, b in over.tolist():
                extra = int(self.in_domain[d, a, b] - self.limit[d, a, b])
                here = [eid for eid in self.by_pair[(a, b)] if self.dom[self._edge(eid).ocs] == d]
                for eid in here[:extra]:
                    self._drop(eid)

    def _insert(self, a: int, b: int, allow_chain: bool) -> bool:
        best: _Plan | None = None
        half_open: list[tuple[int, int, int, int]] = []  # (ocs, tail, head, blocked side)
        for o in range(self.n_ocs):
            if self.in_domain[self.dom[o], a, b] >= self.limit[self.dom[o], a, b]:
                continue
            for tail, head in ((a, b),):
                plan = self._direct_plan(o, tail, head)
                if plan is None:
                    if allow_chain:
                        blocked = self._one_blocked_side(o, tail, head)
                        if blocked is not None:
                            half_open.append((o, tail, head, blocked))
                    continue
                if best is None or plan.cost < best.cost:
                    best = plan
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
            raise RecolouringStuck(f"no failure domain has room for another circuit between block indices {a}, {b}")
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

    def _direct_plan(self, o: int, tail: int, head: int) -> _Plan | None:
        drops: list[int] = []
        spent: dict[tuple[int, int], int] = {}
        for side, block in ((NORTH, tail), (SOUTH, head)):
            if self._free(o, side, block) > 0:
                continue
            d = self._droppable(o, side, block, set(drops), spent)
            if d is None:
                return None
            drops.append(d)
            e = self._edge(d)
            pair = _pair(e.tail, e.head)
            spent[pair] = spent.get(pair, 0) + 1
        return _Plan(sum(self._drop_cost(d) for d in drops), o, tail, head, [], drops)

    def _available(self, o: int, side: int, block: int) -> bool:
        return self._free(o, side, block) > 0 or self._droppable(o, side, block, set(), {}) is not None

    def _one_blocked_side(self, o: int, tail: int, head: int) -> int | None:
        north_ok = self._available(o, NORTH, tail)
        south_ok = self._available(o, SOUTH, head)
        if north_ok and not south_ok:
            return SOUTH
        if south_ok and not north_ok:
            return NORTH
        return None

    def _best_chain(self, half_open: list[tuple[int, int, int, int]]) -> _Plan | None:
        """Cheapest chain of moves (Dijkstra over overflowing port groups) for any start.

        A state ``(o, side, v, came_from)``: port group ``(o, side, v)`` holds one circuit
        too many. A move takes one of its circuits to an OCS where ``v`` has room on that
        side (a free or droppable port, or the OCS the previous move left: it freed one);
        the circuit's far end ``w`` may then overflow there, the next state. A chain ends
        when ``w`` has a free or droppable port. Each found chain is checked on the real
        counts before it is used; a failing one is skipped for the next best.
        """
        heap: list[tuple[float, int, tuple]] = []
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
            start = (alpha, blocked, blk, -1)
            heapq.heappush(heap, (max(cost, 0.0), counter, (start, None, (alpha, tail, head, blocked))))
            counter += 1
        settled: set[tuple[int, int, int, int]] = set()
        room_cache: dict[tuple[int, int], list[int]] = {}
        expansions = 0
        while heap and expansions < MAX_EXPANSIONS:
            cost, _, (state, link, origin) = heapq.heappop(heap)
            if link is not None and link[0] == "end":
                plan = self._check_chain(origin, link)
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
                room_cache[key] = [x for x in range(self.n_ocs) if self._available(x, side, v)]
            targets = list(room_cache[key])
            if came_from >= 0 and came_from not in targets:
                targets.append(came_from)
            for eid in self.at[o][side][v]:
                e = self._edge(eid)
                w = e.head if side == NORTH else e.tail
                pair = _pair(e.tail, e.head)
                for o2 in targets:
                    if o2 == o:
                        continue
                    if self.dom[o2] != self.dom[o] and self.in_domain[self.dom[o2]][pair] >= self.limit[self.dom[o2]][pair]:
                        continue
                    step = max(0.0, 1.0 if e.home == o else (-1.0 if e.home == o2 else 0.0)) + STEP_PENALTY
                    moves = (link, ("move", eid, o2))
                    if self._available(o2, other, w):
                        heapq.heappush(heap, (cost + step, counter, (state, ("end", moves), origin)))
                    else:
                        heapq.heappush(heap, (cost + step, counter, ((o2, other, w, o), moves, origin)))
                    counter += 1
        return None

    def _check_chain(self, origin: tuple[int, int, int, int], link: tuple) -> _Plan | None:
        """Turn a found chain into a plan, checking ports and pair limits on the real counts."""
        alpha, tail, head, blocked = origin
        steps: list[tuple[int, int]] = []
        node = link[1]
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
        key = (self.dom[alpha], *_pair(tail, head))
        pair_delta[key] = pair_delta.get(key, 0) + 1
        for eid, to in steps:
            e = self._edge(eid)
            shift(e.ocs, NORTH, e.tail, +1)
            shift(e.ocs, SOUTH, e.head, +1)
            shift(to, NORTH, e.tail, -1)
            shift(to, SOUTH, e.head, -1)
            pair = _pair(e.tail, e.head)
            for d, by in ((self.dom[e.ocs], -1), (self.dom[to], +1)):
                pair_delta[(d, *pair)] = pair_delta.get((d, *pair), 0) + by
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
                pair = _pair(e.tail, e.head)
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
        return _Plan(cost, alpha, tail, head, steps, drops)

    def _pick_to_move(self, o: int, side: int, v: int, taken: set[int]) -> int | None:
        best: int | None = None
        for eid in self.at[o][side][v]:
            if eid in taken:
                continue
            if self._edge(eid).home != o:
                return eid
            if best is None:
                best = eid
        return best

    def _drop_leftover_surplus(self) -> None:
        for pair, eids in self.by_pair.items():
            extra = self._surplus(pair)
            if extra <= 0:
                continue
            ordered = sorted(eids, key=lambda i: 0 if self._edge(i).ocs != self._edge(i).home else 1)
            for eid in ordered[:extra]:
                self._drop(eid)

    def _counts(self) -> list[np.ndarray]:
        out = [np.zeros((self.n, self.n), dtype=np.int64) for _ in range(self.n_ocs)]
        for e in self.edges:
            if e is not None:
                out[e.ocs][e.tail, e.head] += 1
        for o in range(self.n_ocs):
            if (out[o].sum(axis=1) > self.cap[o, NORTH]).any() or (out[o].sum(axis=0) > self.cap[o, SOUTH]).any():
                raise RecolouringStuck("internal error: recolouring overfilled an OCS")
        return out


def recolour(
    ocs_list: Sequence[OcsPorts],
    target: np.ndarray,
    domain_limit: np.ndarray | None = None,
    domain_index: Sequence[int] | None = None,
    seed: int = 0,
) -> list[np.ndarray]:
    """Per OCS of ``ocs_list``, the directed counts (north block, south block) realising
    the symmetric ``target`` with few changes. Without ``domain_limit`` (per domain
    position, n x n) and ``domain_index`` (OCS position -> domain position) all the OCSes
    form one domain with no pair limit. Raises RecolouringStuck when it cannot."""
    if domain_limit is None or domain_index is None:
        domain_limit = target[None, :, :].copy()
        domain_index = [0] * len(ocs_list)
    return Recolouring(ocs_list, target, domain_limit, domain_index, np.random.default_rng(seed)).run()
