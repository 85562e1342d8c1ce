"""The edge state of the recolouring: circuits as edges coloured by OCS, with bookkeeping.

A circuit is an edge from the north copy of one block to the south copy of another,
coloured by its OCS. :class:`EdgeState` keeps, per OCS and port group (block and side),
the edges there and how many ports are used; per demand key (the arc, or the block pair
before orientation) the edges counting towards it; and per port group the number of edges
whose demand is in surplus, so "is there a free or droppable port" is one lookup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optimizer.errors import InfeasibleError
from optimizer.mapping.ports import OcsPorts

NORTH, SOUTH = 0, 1
NOT_HOME = -1
DROP_PENALTY = 0.01
USE_EXCHANGE_LP = True
#: (OCS, pair) -> how much the exchange plan drops of that pair's circuits there.
DropValue = dict[tuple[int, tuple[int, int]], float]


class RecolouringStuck(InfeasibleError):
    """No chain could make room for a circuit; the caller may try another construction."""


@dataclass
class Edge:
    tail: int  # block on the north side
    head: int  # block on the south side
    ocs: int
    home: int  # the OCS it is on today, or NOT_HOME for a new circuit


@dataclass
class Plan:
    """A way to place one new circuit: drops and moves first, then the circuit."""

    cost: float
    ocs: int
    tail: int
    head: int
    moves: list[tuple[int, int]]  # (edge id, to OCS)
    drops: list[int]


class EdgeState:
    """The circuits of some OCSes as coloured edges, and the demand they should meet."""

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
        self.cap = np.zeros((self.n_ocs, 2, self.n), dtype=np.int64)
        for i, o in enumerate(ocs_list):
            for b in range(self.n):
                self.cap[i, NORTH, b] = o.north_budget(b)
                self.cap[i, SOUTH, b] = o.south_budget(b)
        self.used = np.zeros_like(self.cap)
        self.edges: list[Edge | None] = []
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
        self.edges.append(Edge(a, b, ocs, home))
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

    def _edge(self, eid: int) -> Edge:
        e = self.edges[eid]
        if e is None:
            raise RecolouringStuck("internal error: a dropped circuit was used again")
        return e

    def _surplus(self, pair: tuple[int, int]) -> int:
        return len(self.by_pair.get(pair, ())) - int(self.target[pair])

    def _free(self, ocs: int, side: int, block: int) -> int:
        return int(self.cap[ocs, side, block] - self.used[ocs, side, block])

    def _droppable(
        self,
        ocs: int,
        side: int,
        block: int,
        taken: set[int],
        spent: dict[tuple[int, int], int],
        prefer: DropValue | None = None,
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

    def _available(self, o: int, side: int, block: int) -> bool:
        free = self.cap[o, side, block] > self.used[o, side, block]
        return bool(free or self.surplus_groups[o, side, block] > 0)

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
