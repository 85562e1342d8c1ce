"""Exchanges: replace surplus circuits by deficit ones on the same OCS, at no extra cost.

Dropping surplus circuits on an OCS frees north and south ports of some blocks; deficit
circuits joining exactly such ports cost nothing beyond the lower bound. Two ways to find
them: an LP over batches of OCSes (the exchange plan) and, per OCS, an assignment problem
(swap cycles).
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment, linprog

from optimizer.mapping.chains import ChainMixin
from optimizer.mapping.edges import NORTH, NOT_HOME, SOUTH, DropValue

log = logging.getLogger(__name__)

SWAP_PASSES = 3
EXCHANGE_ROUNDS = 3
EXCHANGE_LP_METHOD = "highs-ipm"
EXCHANGE_OCS_PER_ARC = 16
EXCHANGE_BATCH = 8
EXCHANGE_MAX_COLUMNS = 8000


class ExchangeMixin(ChainMixin):
    """Exchange steps of :class:`~optimizer.mapping.recolour.Recolouring`."""

    rng: np.random.Generator

    def _run_exchanges(self, lp: bool = True) -> int:
        """The exchange plan (if enabled), then swap cycles. Returns circuits placed."""
        planned = 0
        rounds = EXCHANGE_ROUNDS if lp and self.use_exchange_plan else 0
        round_number = 0
        while round_number < rounds:
            # Early rounds place only what the LP gives whole circuits; the last rounds up.
            threshold = 0.5 if round_number == rounds - 1 else 0.999
            round_number += 1
            placed = 0
            order = self.rng.permutation(self.n_ocs)
            for start in range(0, self.n_ocs, EXCHANGE_BATCH):
                subset = np.zeros(self.n_ocs, dtype=bool)
                subset[order[start:start + EXCHANGE_BATCH]] = True
                placed += self._place_by_exchange_plan(subset, threshold)
            planned += placed
            if not placed:
                round_number = rounds - 1 if threshold > 0.5 else rounds
        for _ in range(SWAP_PASSES):
            placed = self._pack_swap_cycles()
            planned += placed
            if not placed:
                break
        return planned

    def _place_by_exchange_plan(self, subset: np.ndarray | None = None, threshold: float = 0.5) -> int:
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
        group_row: dict[tuple[int, int, int], int] = {}  # (o, side, v) -> row
        arc_row: dict[tuple[int, int], int] = {}
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
            for group in ((o, NORTH, a), (o, SOUTH, b)):
                ri.append(row_of(group))
                ci.append(j)
                val.append(1.0)
            upper.append(float(-self._surplus(self._key(a, b))))
            cost.append(-1.0)
        for jj, (o, arc) in enumerate(drop_cols):
            j = len(add_cols) + jj
            for group in ((o, NORTH, arc[0]), (o, SOUTH, arc[1])):
                ri.append(row_of(group))
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
        drop_value: DropValue = {}
        for i, (o, arc) in enumerate(drop_cols):
            where = (o, self._key(*arc))
            drop_value[where] = drop_value.get(where, 0.0) + float(result.x[len(add_cols) + i])
        placed = 0
        for j in np.argsort(-values).tolist():
            if values[j] < threshold:
                break
            o, (a, b) = add_cols[j]
            for _ in range(int(values[j] + 1 - threshold)):
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
