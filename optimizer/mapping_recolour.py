"""Moving today's circuits to the target with few changes: exchanges, then Kempe chains.

Think of every circuit as an edge from the north copy of one block to the south copy of
another, coloured by the OCS it is on. An OCS holds, per block, at most as many out-edges
as the block has north ports there and as many in-edges as it has south ports; ports of
one block and side on one OCS are interchangeable. Today's circuits are a valid
colouring. The target differs from them by *surplus* circuits (pairs that shrink) and
*deficit* circuits (pairs that grow); the lower bound on changes is the total surplus.
Inside one failure domain (the caller splits the pairs over the domains first):

1. **Exchange plan** (pairs still unoriented). An LP chooses, per OCS, surplus circuits
   to drop and deficit circuits (either orientation) to add so that every OCS keeps every
   block within its ports on each side: such exchanges cost nothing beyond the lower
   bound. It is solved on batches of ``EXCHANGE_BATCH`` OCSes (interior point) and
   rounded greedily, largest values first, each addition checked on the real counts.
2. **Swap cycles**: per OCS, an assignment problem (tails of droppable circuits and free
   north ports x heads and free south ports) finds further exchanges.
3. The remaining pairs are **oriented** (min-cost flow agreeing with what is in place).
4. Each remaining deficit circuit is inserted where both ends have a free or droppable
   port (free ports first), else along the cheapest **Kempe chain** (Dijkstra over
   overflowing port groups: the blocking circuit moves to an OCS where its end has room,
   the one it collides with there moves on, ...), counting the circuits moved away from
   their OCS. If no chain exists the circuits in the way are taken out and re-inserted.
5. Surplus circuits left over are dropped (moved ones first), and a local search swaps
   OCSes alpha/beta on alternating components that bring more circuits home (Kempe
   interchanges).

Every step keeps every OCS within its ports, so the result is always valid. Everything is
polynomial: LPs, assignment problems, and shortest-path searches over
``OCSes x 2 x blocks`` port groups. :class:`RecolouringStuck` asks the caller to fall
back to the flow-based construction.
"""

from __future__ import annotations

import heapq
import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment, linprog

from optimizer.errors import InfeasibleError
from optimizer.mapping_ports import OcsPorts

log = logging.getLogger(__name__)

NORTH, SOUTH = 0, 1
NOT_HOME = -1
MAX_EXPANSIONS = 20000
MAX_FORCED_PLACEMENTS_PER_CIRCUIT = 4
SWAP_PASSES = 3
EXCHANGE_ROUNDS = 1
USE_EXCHANGE_LP = True
EXCHANGE_LP_METHOD = "highs-ipm"
EXCHANGE_OCS_PER_ARC = 16
EXCHANGE_BATCH = 16
EXCHANGE_MAX_COLUMNS = 8000
FLIP_PASSES = 1
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
        self.directed = True
        self.use_exchange_plan = USE_EXCHANGE_LP
        self.orient_rest: Callable[[np.ndarray], np.ndarray] | None = None
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
        self.dom_array = np.asarray(self.dom, dtype=np.int64)
        # Per port group, the circuits whose arc has surplus (could be dropped), kept up
        # to date arc by arc so that "is there a free or droppable port" is one lookup.
        self.surplus_groups = np.zeros_like(self.cap)
        self._arc_contribution: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
        for i, o in enumerate(ocs_list):
            for (a, b), circuits in o.current.items():
                for _ in circuits:
                    self._add(a, b, i, home=i)

    # -- bookkeeping ------------------------------------------------------------------------
    def _key(self, a: int, b: int) -> tuple[int, int]:
        """The demand a circuit counts towards: its arc, or (undirected mode) its pair."""
        return (a, b) if self.directed or a < b else (b, a)

    def directed_counts(self) -> np.ndarray:
        counts = np.zeros((self.n, self.n), dtype=np.int64)
        for e in self.edges:
            if e is not None:
                counts[e.tail, e.head] += 1
        return counts

    def _switch_to_directed(self, target: np.ndarray) -> None:
        """From pair demand to arc demand (once the orientation is chosen)."""
        self.directed = True
        self.target = target
        self.by_pair = {}
        for eid, e in enumerate(self.edges):
            if e is not None:
                self.by_pair.setdefault((e.tail, e.head), set()).add(eid)
        self.surplus_groups[...] = 0
        self._arc_contribution = {}
        for key in list(self.by_pair):
            self._refresh_arc(key)

    def _add(self, a: int, b: int, ocs: int, home: int) -> int:
        eid = len(self.edges)
        self.edges.append(_Edge(a, b, ocs, home))
        self._place(eid, a, b, ocs, +1)
        self.by_pair.setdefault(self._key(a, b), set()).add(eid)
        self._refresh_arc((a, b))
        return eid

    def _refresh_arc(self, arc: tuple[int, int]) -> None:
        for o, t, h in self._arc_contribution.pop(arc, ()):
            self.surplus_groups[o, NORTH, t] -= 1
            self.surplus_groups[o, SOUTH, h] -= 1
        if self._surplus(arc) > 0:
            groups = []
            for eid in self.by_pair[arc]:
                e = self._edge(eid)
                self.surplus_groups[e.ocs, NORTH, e.tail] += 1
                self.surplus_groups[e.ocs, SOUTH, e.head] += 1
                groups.append((e.ocs, e.tail, e.head))
            self._arc_contribution[arc] = groups

    def _avail_mask(self, side: int, block: int) -> np.ndarray:
        """Per OCS: has ``block`` a free or droppable port on ``side``?"""
        free = self.cap[:, side, block] > self.used[:, side, block]
        return free | (self.surplus_groups[:, side, block] > 0)

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
        self.by_pair[self._key(e.tail, e.head)].discard(eid)
        self.edges[eid] = None
        self._arc_contribution.setdefault((e.tail, e.head), [])
        self._refresh_arc((e.tail, e.head))

    def _move(self, eid: int, to: int) -> None:
        e = self._edge(eid)
        self._place(eid, e.tail, e.head, e.ocs, -1)
        e.ocs = to
        self._place(eid, e.tail, e.head, to, +1)
        self._refresh_arc((e.tail, e.head))

    def _edge(self, eid: int) -> _Edge:
        e = self.edges[eid]
        if e is None:
            raise RecolouringStuck("internal error: a dropped circuit was used again")
        return e

    def _surplus(self, pair: tuple[int, int]) -> int:
        return len(self.by_pair.get(pair, ())) - int(self.target[pair])

    def _free(self, ocs: int, side: int, block: int) -> int:
        return int(self.cap[ocs, side, block] - self.used[ocs, side, block])

    def _droppable(
        self, ocs: int, side: int, block: int, taken: set[int], spent: dict, prefer: dict | None = None
    ) -> int | None:
        """A circuit in this port group whose pair still has surplus (moved ones first,
        then those the exchange plan drops most)."""
        best: int | None = None
        best_score = -1.0
        for eid in self.at[ocs][side][block]:
            if eid in taken:
                continue
            e = self._edge(eid)
            pair = self._key(e.tail, e.head)
            if self._surplus(pair) - spent.get(pair, 0) <= 0:
                continue
            if e.ocs != e.home:
                return eid
            score = prefer.get((ocs, pair), 0.0) if prefer else 0.0
            if best is None or score > best_score:
                best, best_score = eid, score
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
        planned = 0
        for _ in range(EXCHANGE_ROUNDS if self.use_exchange_plan else 0):
            placed = 0
            order = self.rng.permutation(self.n_ocs)
            for start in range(0, self.n_ocs, EXCHANGE_BATCH):
                subset = np.zeros(self.n_ocs, dtype=bool)
                subset[order[start:start + EXCHANGE_BATCH]] = True
                placed += self._place_by_exchange_plan(subset)
            planned += placed
            if not placed:
                break
        for _ in range(SWAP_PASSES):
            placed = self._pack_swap_cycles()
            planned += placed
            if not placed:
                break
        if not self.directed:
            if self.orient_rest is None:
                raise RecolouringStuck("internal error: undirected recolouring without an orientation")
            self._switch_to_directed(self.orient_rest(self.directed_counts()))
            iu, ju = np.nonzero(self.target)
        for _ in range(SWAP_PASSES):
            if not self._pack_swap_cycles():
                break
        pending = []
        for a, b in zip(iu.tolist(), ju.tolist(), strict=True):
            pending.extend([(a, b)] * max(-self._surplus((a, b)), 0))
        order = self.rng.permutation(len(pending))
        pending = [pending[i] for i in order]
        hard = deque(self._insert_cheapest_first(pending))
        chains = len(hard)
        forced = 0
        while hard:
            a, b = hard.popleft()
            if self._insert(a, b, allow_chain=True):
                continue
            forced += 1
            if forced > MAX_FORCED_PLACEMENTS_PER_CIRCUIT * (len(pending) + 1):
                raise RecolouringStuck(f"no OCS or chain has room for a circuit between blocks #{a} and #{b}")
            hard.extend(self._force(a, b))
        self._drop_leftover_surplus()
        flips = self._improve_by_flips()
        log.debug("recolouring: %d planned exchanges, then %d insertions, %d needed a chain, %d forced, "
                  "%d improving flips", planned, len(pending), chains, forced, flips)
        return self._counts()

    def _place_by_exchange_plan(self, subset: np.ndarray | None = None) -> int:
        """Place deficit circuits where an LP says surplus circuits can make room for them.

        The LP relaxation of "which surplus circuits to drop on which OCS, and which
        deficit circuits to add there, so that every OCS keeps every block within its
        ports": ``r[o, arc]`` drops (at most today's circuits of a shrinking arc on ``o``),
        ``a[o, arc]`` additions (only where both ends have a free or droppable port),
        per OCS and block ``sum a - sum r <= free ports`` on each side, and per arc at
        most its surplus / deficit; maximise the additions. Its solution is not always
        integral (a circuit uses two port groups and an arc budget); the additions with
        the largest values are then made one by one, each checked on the real counts,
        dropping the planned surplus circuits first. Returns how many were placed.
        """
        drop_count: dict[tuple[int, tuple[int, int]], int] = {}
        for key, eids in self.by_pair.items():
            if self._surplus(key) <= 0:
                continue
            for eid in eids:
                e = self._edge(eid)
                if subset is not None and not subset[e.ocs]:
                    continue
                col = (e.ocs, (e.tail, e.head))
                drop_count[col] = drop_count.get(col, 0) + 1
        drop_cols = list(drop_count)
        deficit_arcs = [(int(a), int(b)) for a, b in zip(*np.nonzero(self.target), strict=True)
                        if (self.directed or a < b) and self._surplus((int(a), int(b))) < 0]
        add_cols: list[tuple[int, tuple[int, int]]] = []
        per_arc = int(np.clip(EXCHANGE_MAX_COLUMNS // max(1, 2 * len(deficit_arcs)), 2, EXCHANGE_OCS_PER_ARC))
        for a, b in deficit_arcs:
            for t, h in ((a, b),) if self.directed else ((a, b), (b, a)):
                both = self._avail_mask(NORTH, t) & self._avail_mask(SOUTH, h)
                room = self.in_domain[self.dom_array, t, h] < self.limit[self.dom_array, t, h]
                mask = both & room
                if subset is not None:
                    mask &= subset
                options = np.nonzero(mask)[0]
                if options.size > per_arc:
                    options = self.rng.choice(options, per_arc, replace=False)
                add_cols.extend((int(o), (t, h)) for o in options)
        if not add_cols:
            return 0
        group_row = {}  # (o, side, v) -> row
        arc_row = {}
        ri: list[int] = []
        ci: list[int] = []
        val: list[float] = []
        upper: list[float] = []
        cost: list[float] = []

        def row_of(key: tuple[int, int, int]) -> int:
            if key not in group_row:
                group_row[key] = len(group_row)
            return group_row[key]

        for j, (o, (a, b)) in enumerate(add_cols):
            for key in ((o, NORTH, a), (o, SOUTH, b)):
                ri.append(row_of(key))
                ci.append(j)
                val.append(1.0)
            upper.append(float(-self._surplus(self._key(a, b))))
            cost.append(-1.0)
        for jj, (o, arc) in enumerate(drop_cols):
            j = len(add_cols) + jj
            for key in ((o, NORTH, arc[0]), (o, SOUTH, arc[1])):
                ri.append(row_of(key))
                ci.append(j)
                val.append(-1.0)
            upper.append(float(drop_count[(o, arc)]))
            cost.append(1e-3)
        n_groups = len(group_row)
        for j, (_, arc) in enumerate(add_cols + drop_cols):
            key = self._key(*arc)
            if key not in arc_row:
                arc_row[key] = n_groups + len(arc_row)
            ri.append(arc_row[key])
            ci.append(j)
            val.append(1.0)
        rows = sp.csr_matrix((val, (ri, ci)), shape=(n_groups + len(arc_row), len(cost)))
        bound = np.zeros(rows.shape[0])
        for (o, side, v), r in group_row.items():
            bound[r] = self._free(o, side, v)
        for arc, r in arc_row.items():
            bound[r] = abs(self._surplus(arc))
        result = linprog(np.asarray(cost), A_ub=rows, b_ub=bound,
                         bounds=np.column_stack([np.zeros(len(upper)), upper]), method=EXCHANGE_LP_METHOD,
                         options={"ipm_optimality_tolerance": 1e-4})
        if result.status != 0 or result.x is None:
            return 0
        values = result.x[: len(add_cols)]
        log.debug("exchange LP: %.2f of %d deficit circuits placeable", values.sum(),
                  sum(-self._surplus(a) for a in deficit_arcs))
        drop_value: dict[tuple[int, tuple[int, int]], float] = {}
        for i, (o, arc) in enumerate(drop_cols):
            key = (o, self._key(*arc))
            drop_value[key] = drop_value.get(key, 0.0) + float(result.x[len(add_cols) + i])
        placed = 0
        for j in np.argsort(-values).tolist():
            if values[j] < 0.5:
                break
            o, (a, b) = add_cols[j]
            for _ in range(round(values[j])):
                if self._surplus(self._key(a, b)) >= 0:
                    break
                if self.in_domain[self.dom[o], a, b] >= self.limit[self.dom[o], a, b]:
                    break
                plan = self._direct_plan(o, a, b, prefer=drop_value)
                if plan is None:
                    break
                for d in plan.drops:
                    self._drop(d)
                self._add(a, b, o, NOT_HOME)
                placed += 1
        return placed

    def _pack_swap_cycles(self) -> int:
        """On each OCS, replace surplus circuits by deficit ones along closed cycles.

        On one OCS, dropping surplus circuits ``x_i->y_i`` frees the north ports of the
        ``x_i`` and the south ports of the ``y_i``; deficit circuits ``x_i->y_j`` that use
        exactly those ports cost nothing beyond the lower bound. Finding the most such
        replacements is an assignment problem (tails x heads, keeping a circuit = matching
        it to itself), solved per OCS; free ports join as extra rows and columns.
        Returns the number of deficit circuits placed.
        """
        placed = 0
        for o in self.rng.permutation(self.n_ocs).tolist():
            placed += self._swap_on(o)
        return placed

    def _swap_on(self, o: int) -> int:
        budget: dict[tuple[int, int], int] = {}
        droppable: list[int] = []
        for eid in sorted(set().union(*self.at[o][NORTH])):
            e = self._edge(eid)
            arc = self._key(e.tail, e.head)
            left = self._surplus(arc) - budget.get(arc, 0)
            if left > 0:
                budget[arc] = budget.get(arc, 0) + 1
                droppable.append(eid)
        free_north = [b for b in range(self.n) for _ in range(self._free(o, NORTH, b))]
        free_south = [b for b in range(self.n) for _ in range(self._free(o, SOUTH, b))]
        tails = [self._edge(e).tail for e in droppable] + free_north
        heads = [self._edge(e).head for e in droppable] + free_south
        if not tails or not heads:
            return 0
        k = len(droppable)
        rows, cols = len(tails), len(heads)
        size = rows + cols
        forbidden = -1e6
        weight = np.full((size, size), forbidden)
        deficit = np.array(
            [[t != h and self._surplus(self._key(t, h)) < 0 for h in heads] for t in tails]
        )
        weight[:rows, :cols] = np.where(deficit, 1.0, forbidden)
        idx = np.arange(k)
        weight[idx, idx] = 0.0  # keep
        weight[rows + np.arange(cols), np.arange(cols)] = 0.0  # a free south port stays free
        weight[np.arange(rows), cols + np.arange(rows)] = 0.0  # a free north port stays free
        weight[rows:, cols:] = 0.0
        for _ in range(4):
            r, c = linear_sum_assignment(weight, maximize=True)
            uses: dict[tuple[int, int], list[tuple[int, int]]] = {}
            for i, j in zip(r.tolist(), c.tolist(), strict=True):
                if i < rows and j < cols and weight[i, j] == 1.0:
                    uses.setdefault(self._key(tails[i], heads[j]), []).append((i, j))
            over = False
            for arc, cells in uses.items():
                room = -self._surplus(arc)
                for i, j in cells[room:]:
                    weight[i, j] = forbidden
                    over = True
            if not over:
                break
        else:
            return 0
        matched = [(i, j) for i, j in zip(r.tolist(), c.tolist(), strict=True)
                   if i < rows and j < cols and weight[i, j] == 1.0]
        if not matched:
            return 0
        for e in {droppable[i] for i, _ in matched if i < k} | {droppable[j] for _, j in matched if j < k}:
            self._drop(e)
        for i, j in matched:
            self._add(tails[i], heads[j], o, NOT_HOME)
        return len(matched)

    def _drop_over_domain_limit(self) -> None:
        for d in range(self.limit.shape[0]):
            over = np.argwhere(self.in_domain[d] > self.limit[d])
            for a, b in over.tolist():
                extra = int(self.in_domain[d, a, b] - self.limit[d, a, b])
                here = [eid for eid in self.by_pair[(a, b)] if self.dom[self._edge(eid).ocs] == d]
                for eid in here[:extra]:
                    self._drop(eid)

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
        best: _Plan | None = None
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

    def _direct_plan(self, o: int, tail: int, head: int, prefer: dict | None = None) -> _Plan | None:
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
        return _Plan(sum(self._drop_cost(d) for d in drops), o, tail, head, [], drops)

    def _available(self, o: int, side: int, block: int) -> bool:
        free = self.cap[o, side, block] > self.used[o, side, block]
        return bool(free or self.surplus_groups[o, side, block] > 0)

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
                    moves = (link, ("move", eid, o2))
                    if self._available(o2, other, w):
                        heapq.heappush(heap, (cost + step, counter, (state, ("end", moves), origin)))
                    else:
                        heapq.heappush(heap, (cost + step, counter, ((o2, other, w, o), moves, origin)))
                    counter += 1
        return None

    def _check_chain(self, origin: tuple[int, int, int, int], link: tuple) -> _Plan | None:
        """Turn a found chain into a plan, checking ports and pair limits on the real counts."""
        alpha, tail, head, _blocked = origin
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
        key = (self.dom[alpha], *self._key(tail, head))
        pair_delta[key] = pair_delta.get(key, 0) + 1
        for eid, to in steps:
            e = self._edge(eid)
            shift(e.ocs, NORTH, e.tail, +1)
            shift(e.ocs, SOUTH, e.head, +1)
            shift(to, NORTH, e.tail, -1)
            shift(to, SOUTH, e.head, -1)
            pair = self._key(e.tail, e.head)
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

    def _ends_fit(self, component: list[int], open_end: dict, alpha: int, beta: int) -> bool:
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
            over_north = (out[o].sum(axis=1) > self.cap[o, NORTH]).any()
            if over_north or (out[o].sum(axis=0) > self.cap[o, SOUTH]).any():
                raise RecolouringStuck("internal error: recolouring overfilled an OCS")
        return out


def recolour_pairs(
    ocs_list: Sequence[OcsPorts],
    pairs: np.ndarray,
    orient_rest: Callable[[np.ndarray], np.ndarray],
    seed: int = 0,
    exchange_plan: bool = True,
) -> list[np.ndarray]:
    """Like :func:`recolour` but from pair counts: the exchange plan may orient the new
    circuits either way; ``orient_rest(directed counts so far)`` then orients the rest.
    ``exchange_plan=False`` skips the LP (faster, more changes)."""
    limit = np.full((1, *pairs.shape), np.iinfo(np.int64).max // 4, dtype=np.int64)
    job = Recolouring(ocs_list, pairs, limit, [0] * len(ocs_list), np.random.default_rng(seed))
    job.directed = False
    job.by_pair = {}
    for eid, e in enumerate(job.edges):
        if e is not None:
            job.by_pair.setdefault(job._key(e.tail, e.head), set()).add(eid)
    job.surplus_groups[...] = 0
    job._arc_contribution = {}
    for key in list(job.by_pair):
        job._refresh_arc(key)
    job.orient_rest = orient_rest
    job.use_exchange_plan = exchange_plan
    return job.run()


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
