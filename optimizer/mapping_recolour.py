"""Moving today's circuits to the target with few changes: Kempe-chain recolouring.

Inside one failure domain the oriented demand is a bipartite multigraph (north copies of
the blocks -> south copies) and every OCS is a "colour" that may hold, per block, at most
its north ports' worth of out-edges and its south ports' worth of in-edges. Today's
circuits are a valid colouring of today's graph; the target differs from it by
*surplus* circuits (pairs that shrink) and *deficit* circuits (pairs that grow).

Each deficit circuit ``a->b`` is inserted in turn:

- on an OCS where ``a`` has a free (or surplus, hence droppable) north port and ``b`` a
  free or droppable south port, if there is one: this costs nothing beyond the lower
  bound;
- otherwise along a Kempe chain: ``a`` is free on OCS alpha, ``b`` on OCS beta; ``b``'s
  circuit on alpha moves to beta, the circuit that collides with it there moves to alpha,
  and so on until a free or droppable port ends the chain. Of all (alpha, beta) choices
  the chain that moves the fewest of today's circuits away from their OCS wins.

Finally the surplus circuits that are left are dropped, those already moved first. Every
step keeps every OCS within its ports, so the result is always valid; each insertion is
polynomial (at most ``#OCS^2`` chains of at most ``2 * blocks * ports`` steps).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optimizer.errors import InfeasibleError
from optimizer.mapping_ports import OcsPorts

log = logging.getLogger(__name__)

NORTH, SOUTH = 0, 1
NOT_HOME = -1


@dataclass
class _Edge:
    tail: int  # block on the north side
    head: int  # block on the south side
    ocs: int  # position in the domain's OCS list
    home: int  # OCS it is on today, or NOT_HOME for a new circuit


@dataclass
class _Chain:
    cost: float
    moves: list[tuple[int, int]]  # (edge id, to OCS)
    drops: list[int]


class DomainRecolouring:
    """The circuits of one domain as edges coloured by OCS, changed one circuit at a time."""

    def __init__(self, ocs_list: Sequence[OcsPorts], demand: np.ndarray) -> None:
        self.n = demand.shape[0]
        self.n_ocs = len(ocs_list)
        self.demand = demand
        self.cap = np.zeros((self.n_ocs, 2, self.n), dtype=np.int64)
        for i, o in enumerate(ocs_list):
            for b in range(self.n):
                self.cap[i, NORTH, b] = o.north_budget(b)
                self.cap[i, SOUTH, b] = o.south_budget(b)
        self.edges: list[_Edge | None] = []
        self.at: list[list[list[set[int]]]] = [
            [[set() for _ in range(self.n)] for _ in range(2)] for _ in range(self.n_ocs)
        ]
        self.by_arc: dict[tuple[int, int], set[int]] = {}
        for i, o in enumerate(ocs_list):
            for (a, b), circuits in o.current.items():
                for _ in circuits:
                    self._add(a, b, i, home=i)

    # -- bookkeeping ------------------------------------------------------------------------
    def _add(self, a: int, b: int, ocs: int, home: int) -> int:
        eid = len(self.edges)
        self.edges.append(_Edge(a, b, ocs, home))
        self.at[ocs][NORTH][a].add(eid)
        self.at[ocs][SOUTH][b].add(eid)
        self.by_arc.setdefault((a, b), set()).add(eid)
        return eid

    def _drop(self, eid: int) -> None:
        e = self.edges[eid]
        assert e is not None
        self.at[e.ocs][NORTH][e.tail].discard(eid)
        self.at[e.ocs][SOUTH][e.head].discard(eid)
        self.by_arc[(e.tail, e.head)].discard(eid)
        self.edges[eid] = None

    def _move(self, eid: int, to: int) -> None:
        e = self.edges[eid]
        assert e is not None
        self.at[e.ocs][NORTH][e.tail].discard(eid)
        self.at[e.ocs][SOUTH][e.head].discard(eid)
        e.ocs = to
        self.at[to][NORTH][e.tail].add(eid)
        self.at[to][SOUTH][e.head].add(eid)

    def _surplus(self, arc: tuple[int, int]) -> int:
        return len(self.by_arc.get(arc, ())) - int(self.demand[arc])

    def _free(self, ocs: int, side: int, block: int) -> int:
        return int(self.cap[ocs, side, block]) - len(self.at[ocs][side][block])

    def _droppable(self, ocs: int, side: int, block: int, taken: set[int], budget: dict) -> int | None:
        """A circuit at this port group whose pair has surplus left (one already moved first)."""
        best: int | None = None
        for eid in self.at[ocs][side][block]:
            if eid in taken:
                continue
            e = self.edges[eid]
            assert e is not None
            arc = (e.tail, e.head)
            if self._surplus(arc) - budget.get(arc, 0) <= 0:
                continue
            if e.ocs != e.home:
                return eid
            best = eid if best is None else best
        return best

    def _drop_cost(self, eid: int) -> float:
        e = self.edges[eid]
        assert e is not None
        return -1.0 if e.ocs != e.home else 0.0

    # -- the algorithm ----------------------------------------------------------------------
    def run(self) -> list[np.ndarray]:
        pending: list[tuple[int, int]] = []
        for (a, b) in zip(*np.nonzero(self.demand), strict=True):
            missing = int(self.demand[a, b]) - len(self.by_arc.get((int(a), int(b)), ()))
            pending.extend([(int(a), int(b))] * max(missing, 0))
        # Cheap insertions first (they need no chain), then chains.
        hard: list[tuple[int, int]] = []
        for a, b in pending:
            if not self._insert_direct(a, b):
                hard.append((a, b))
        chains = 0
        for a, b in hard:
            if not self._insert_direct(a, b):
                self._insert_by_chain(a, b)
                chains += 1
        self._drop_leftover_surplus()
        if chains:
            log.debug("recolouring needed %d Kempe chains for %d insertions", chains, len(pending))
        return self._counts()

    def _insert_direct(self, a: int, b: int) -> bool:
        best: tuple[float, int, list[int]] | None = None
        for o in range(self.n_ocs):
            drops: list[int] = []
            budget: dict[tuple[int, int], int] = {}
            if self._free(o, NORTH, a) <= 0:
                d = self._droppable(o, NORTH, a, set(), budget)
                if d is None:
                    continue
                drops.append(d)
                self._charge(d, budget)
            if self._free(o, SOUTH, b) <= 0:
                d = self._droppable(o, SOUTH, b, set(drops), budget)
                if d is None:
                    continue
                drops.append(d)
            cost = sum(self._drop_cost(d) for d in drops) + 0.01 * len(drops)
            if best is None or cost < best[0]:
                best = (cost, o, drops)
        if best is None:
            return False
        _, o, drops = best
        for d in drops:
            self._drop(d)
        self._add(a, b, o, NOT_HOME)
        return True

    def _charge(self, eid: int, budget: dict[tuple[int, int], int]) -> None:
        e = self.edges[eid]
        assert e is not None
        arc = (e.tail, e.head)
        budget[arc] = budget.get(arc, 0) + 1

    def _insert_by_chain(self, a: int, b: int) -> None:
        alphas = [o for o in range(self.n_ocs) if self._free(o, NORTH, a) > 0
                  or self._droppable(o, NORTH, a, set(), {}) is not None]
        betas = [o for o in range(self.n_ocs) if self._free(o, SOUTH, b) > 0
                 or self._droppable(o, SOUTH, b, set(), {}) is not None]
        best: tuple[_Chain, int] | None = None
        for alpha in alphas:
            for beta in betas:
                if alpha == beta:
                    continue
                chain = self._plan_chain(a, b, alpha, beta)
                if chain is not None and (best is None or chain.cost < best[0].cost):
                    best = (chain, alpha)
        if best is None:
            raise InfeasibleError(f"no recolouring chain places a circuit from block index {a} to {b}")
        chain, alpha = best
        for d in chain.drops:
            self._drop(d)
        for eid, to in chain.moves:
            self._move(eid, to)
        self._add(a, b, alpha, NOT_HOME)

    def _plan_chain(self, a: int, b: int, alpha: int, beta: int) -> _Chain | None:
        """Plan making room for ``a->b`` on alpha by pushing ``b``'s alpha circuit to beta."""
        taken: set[int] = set()
        budget: dict[tuple[int, int], int] = {}
        delta: dict[tuple[int, int, int], int] = {}
        cost = 0.0
        drops: list[int] = []
        moves: list[tuple[int, int]] = []

        def free(o: int, side: int, v: int) -> int:
            return self._free(o, side, v) + delta.get((o, side, v), 0)

        def take_drop(o: int, side: int, v: int) -> bool:
            nonlocal cost
            d = self._droppable(o, side, v, taken, budget)
            if d is None:
                return False
            e = self.edges[d]
            assert e is not None
            taken.add(d)
            self._charge(d, budget)
            drops.append(d)
            cost += self._drop_cost(d)
            delta[(o, NORTH, e.tail)] = delta.get((o, NORTH, e.tail), 0) + 1
            delta[(o, SOUTH, e.head)] = delta.get((o, SOUTH, e.head), 0) + 1
            return True

        # a's north port on alpha must be free or freed.
        if free(alpha, NORTH, a) <= 0 and not take_drop(alpha, NORTH, a):
            return None
        delta[(alpha, NORTH, a)] = delta.get((alpha, NORTH, a), 0) - 1
        # b's south port on alpha is full: push one of its circuits along the chain.
        side, v, src, dst = SOUTH, b, alpha, beta
        if free(src, side, v) > 0:
            delta[(alpha, SOUTH, b)] = delta.get((alpha, SOUTH, b), 0) - 1
            return _Chain(cost, moves, drops)
        max_steps = 2 * self.n * int(self.cap.max(initial=1)) + 4
        for _ in range(max_steps):
            eid = self._pick_to_move(src, side, v, taken)
            if eid is None:
                return None
            e = self.edges[eid]
            assert e is not None
            taken.add(eid)
            moves.append((eid, dst))
            cost += 1.0 if e.home == src else (-1.0 if e.home == dst else 0.0)
            cost += 0.001
            for s, blk in ((NORTH, e.tail), (SOUTH, e.head)):
                delta[(src, s, blk)] = delta.get((src, s, blk), 0) + 1
                delta[(dst, s, blk)] = delta.get((dst, s, blk), 0) - 1
            # The moved circuit's far end (from v) may now overflow on dst.
            side = NORTH if side == SOUTH else SOUTH
            v = e.tail if side == NORTH else e.head
            if free(dst, side, v) >= 0:
                break
            if take_drop(dst, side, v):
                break
            src, dst = dst, src
        else:
            return None
        # The port group that started the chain (b's south on alpha) now has room.
        if free(alpha, SOUTH, b) <= 0:
            return None
        # b's south port on beta received the pushed circuit: make room there too.
        if free(beta, SOUTH, b) < 0 and not take_drop(beta, SOUTH, b):
            return None
        return _Chain(cost, moves, drops)

    def _pick_to_move(self, o: int, side: int, v: int, taken: set[int]) -> int | None:
        best: int | None = None
        for eid in self.at[o][side][v]:
            if eid in taken:
                continue
            e = self.edges[eid]
            assert e is not None
            if e.home != o:
                return eid
            best = eid if best is None else best
        return best

    def _drop_leftover_surplus(self) -> None:
        for arc, eids in self.by_arc.items():
            extra = len(eids) - int(self.demand[arc])
            if extra <= 0:
                continue
            ordered = sorted(eids, key=lambda i: 0 if self.edges[i].ocs != self.edges[i].home else 1)
            for eid in ordered[:extra]:
                self._drop(eid)

    def _counts(self) -> list[np.ndarray]:
        out = [np.zeros((self.n, self.n), dtype=np.int64) for _ in range(self.n_ocs)]
        for e in self.edges:
            if e is not None:
                out[e.ocs][e.tail, e.head] += 1
        for o in range(self.n_ocs):
            if (out[o].sum(axis=1) > self.cap[o, NORTH]).any() or (out[o].sum(axis=0) > self.cap[o, SOUTH]).any():
                raise InfeasibleError("internal error: recolouring overfilled an OCS")
        return out


def recolour_domain(ocs_list: Sequence[OcsPorts], demand: np.ndarray) -> list[np.ndarray]:
    """Per OCS of ``ocs_list``, the directed counts realising ``demand`` with few changes."""
    return DomainRecolouring(ocs_list, demand).run()
