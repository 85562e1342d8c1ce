"""Mapping by repair: start from today's circuits and change as few as the target needs.

The recolouring of :mod:`optimizer.mapping.recolour` builds a domain's circuits from its
pair counts, preferring today's. When the topology changes a little (what ToE usually
asks for), it is better to start from today's circuits as they are and repair the pair
counts with small moves on one OCS each:

- *add* a circuit between a free north and a free south port;
- *remove* a circuit;
- *swap* two circuits ``a->b, c->d`` into ``a->d, c->b`` (the four blocks keep their
  ports on that OCS, two circuits are torn down and two made);
- *rotate* three circuits ``a->b, c->d, e->f`` into ``a->d, c->f, e->b``.

A move's *gain* is how much it shrinks ``sum |need|`` (``need`` = wanted minus placed
circuits per block pair) and its *cost* how many more of today's circuits it tears down
(re-making a circuit torn down earlier costs -1). Each round scores every move on every
OCS of the domain (vectorised), then applies the best ones in order, each re-checked
against the pair counts as they are by then, and only if it still gains. Every applied
move shrinks ``sum |need|``, so the repair ends; when no move gains while pairs are
still wrong it gives up (returns ``None``) and the caller keeps the recolouring's answer.

Polynomial: a round is ``O(OCSes x arcs^3)`` numpy work (rotations are only tried
through the best ``ROTATION_WIDTH`` arcs per OCS) and there are at most ``sum |need|``
moves.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from optimizer.mapping.ocs import assign_ports, current_orientation
from optimizer.mapping.ports import OcsPorts

log = logging.getLogger(__name__)

Arcs = tuple[tuple[int, int], ...]  # (north block, south block) arcs on one OCS
Move = tuple[float, int, int, Arcs, Arcs]  # (score, gain, ocs, removes, adds)
Swap = tuple[int, Arcs, Arcs]  # (ocs, removes, adds)

#: Candidate moves applied per round (each re-checked), before all are scored again.
MOVES_PER_ROUND = 4000


class _Repair:
    """The state of a repair: per-OCS directed counts, the pair needs and, when the OCSes
    span several failure domains, every pair's circuits per domain against its limit."""

    def __init__(
        self,
        ocs_list: Sequence[OcsPorts],
        pairs: np.ndarray,
        start: Sequence[np.ndarray] | None = None,
        domain_limit: np.ndarray | None = None,
        domain_of: Sequence[int] | None = None,
    ) -> None:
        n = pairs.shape[0]
        self.n = n
        self.north = np.array([[o.north_budget(a) for a in range(n)] for o in ocs_list], dtype=np.int64)
        self.south = np.array([[o.south_budget(a) for a in range(n)] for o in ocs_list], dtype=np.int64)
        self.orig = np.zeros((len(ocs_list), n, n), dtype=np.int64)
        for i, ports in enumerate(ocs_list):
            self.orig[i] = current_orientation([ports], n)
        self.count = self.orig.copy() if start is None else np.stack(start).astype(np.int64)
        placed = self.count.sum(axis=0)
        self.wanted = np.asarray(pairs, dtype=np.int64)
        self.need = self.wanted - placed - placed.T
        self.torn_down = int(np.maximum(self.orig - self.count, 0).sum())
        one_domain = np.zeros(len(ocs_list), dtype=np.int64)
        self.domain_of = one_domain if domain_of is None else np.asarray(domain_of, dtype=np.int64)
        n_domains = int(self.domain_of.max(initial=0)) + 1
        unlimited = np.full((n_domains, n, n), np.iinfo(np.int64).max // 4, dtype=np.int64)
        self.limit = unlimited if domain_limit is None else np.asarray(domain_limit, dtype=np.int64)
        self.in_domain = np.zeros((n_domains, n, n), dtype=np.int64)
        for o in range(len(ocs_list)):
            self.in_domain[self.domain_of[o]] += self.count[o] + self.count[o].T

    @property
    def units_wrong(self) -> int:
        """Pair units too many plus too few, each pair counted once."""
        return int(np.abs(self.need).sum()) // 2

    # -- exact bookkeeping -------------------------------------------------------------

    def _unit_cost(self, o: int, a: int, b: int, delta: int) -> int:
        """Change in torn-down circuits when arc a->b on OCS o changes by ``delta`` (+-1)."""
        c, k = self.count[o, a, b], self.orig[o, a, b]
        if delta < 0:
            return 1 if c <= k else 0
        return -1 if c < k else 0

    def exact(
        self, o: int, removes: Sequence[tuple[int, int]], adds: Sequence[tuple[int, int]]
    ) -> tuple[int, int]:
        """(gain, cost) of a move, against the state as it is now; gain -inf if invalid."""
        change: dict[tuple[int, int], int] = {}
        for a, b in removes:
            if self.count[o, a, b] < sum(1 for r in removes if r == (a, b)):
                return -(1 << 30), 0
            key = (min(a, b), max(a, b))
            change[key] = change.get(key, 0) - 1
        out_n = np.zeros(self.n, dtype=np.int64)
        in_s = np.zeros(self.n, dtype=np.int64)
        for a, b in removes:
            out_n[a] -= 1
            in_s[b] -= 1
        for a, b in adds:
            if a == b:
                return -(1 << 30), 0
            out_n[a] += 1
            in_s[b] += 1
            key = (min(a, b), max(a, b))
            change[key] = change.get(key, 0) + 1
        used_n = self.count[o].sum(axis=1) + out_n
        used_s = self.count[o].sum(axis=0) + in_s
        if (used_n > self.north[o]).any() or (used_s > self.south[o]).any():
            return -(1 << 30), 0
        gain = 0
        room = self.limit[self.domain_of[o]] - self.in_domain[self.domain_of[o]]
        for (a, b), d in change.items():
            if d > room[a, b]:
                return -(1 << 30), 0
            before = self.need[a, b]
            gain += abs(before) - abs(before - d)
        cost = 0
        done: list[tuple[int, int, int]] = []
        for (a, b), d in [(r, -1) for r in removes] + [(x, 1) for x in adds]:
            cost += self._unit_cost(o, a, b, d)
            self.count[o, a, b] += d
            done.append((a, b, d))
        for a, b, d in done:
            self.count[o, a, b] -= d
        return gain, cost

    def apply(self, o: int, removes: Sequence[tuple[int, int]], adds: Sequence[tuple[int, int]]) -> None:
        placed = self.in_domain[self.domain_of[o]]
        for a, b in removes:
            self.torn_down += self._unit_cost(o, a, b, -1)
            self.count[o, a, b] -= 1
            self.need[a, b] += 1
            self.need[b, a] += 1
            placed[a, b] -= 1
            placed[b, a] -= 1
        for a, b in adds:
            self.torn_down += self._unit_cost(o, a, b, 1)
            self.count[o, a, b] += 1
            self.need[a, b] -= 1
            self.need[b, a] -= 1
            placed[a, b] += 1
            placed[b, a] += 1

    # -- scoring ----------------------------------------------------------------------

    def candidates(self) -> list[Move]:
        """Every move with a positive estimated gain: (score, gain, ocs, removes, adds).

        Free ports take part as arcs to or from a dummy block ``n`` (whose pairs never
        count): swapping ``x->dummy`` with ``dummy->y`` is an add, ``x->y`` with
        ``dummy->dummy`` a remove, ``x->dummy`` with ``u->y`` moves a circuit's north end.
        """
        n = self.n
        need = self.need
        add_gain = np.zeros((n + 1, n + 1), dtype=np.int64)
        rm_gain = np.zeros((n + 1, n + 1), dtype=np.int64)
        add_gain[:n, :n] = np.where(need > 0, 1, -1)
        rm_gain[:n, :n] = np.where(need < 0, 1, -1)
        rm_cost = np.zeros((len(self.count), n + 1, n + 1), dtype=np.int64)
        add_cost = np.zeros_like(rm_cost)
        rm_cost[:, :n, :n] = self.count <= self.orig
        add_cost[:, :n, :n] = -(self.count < self.orig).astype(np.int64)
        free_n = self.north - self.count.sum(axis=2)
        free_s = self.south - self.count.sum(axis=1)
        # tearing a circuit down without a replacement only helps blocks with too many circuits
        placed = self.count.sum(axis=0)
        surplus = (placed + placed.T).sum(axis=1) - self.wanted.sum(axis=1)
        may_drop = np.append(surplus > 0, True)
        full = self.in_domain >= self.limit  # adding to a full pair breaks the domain's limit
        add_gain_in = np.repeat(add_gain[None], len(full), axis=0)
        add_gain_in[:, :n, :n][full] = -8  # never worth it (the exact check refuses it anyway)
        out: list[Move] = []
        for o in range(len(self.count)):
            add_gain = add_gain_in[self.domain_of[o]]
            xs, ys = np.nonzero(self.count[o])
            fn = np.nonzero(free_n[o])[0]
            fs = np.nonzero(free_s[o])[0]
            xs = np.concatenate([xs, fn, np.full(len(fs) + 1, n)])
            ys = np.concatenate([ys, np.full(len(fn), n), fs, [n]])
            out.extend(self._moves(o, xs, ys, rm_gain, add_gain, rm_cost[o], add_cost[o], may_drop))
        return out

    def _moves(
        self, o: int, xs: np.ndarray, ys: np.ndarray, rm_gain: np.ndarray, add_gain: np.ndarray,
        rm_cost: np.ndarray, add_cost: np.ndarray, may_drop: np.ndarray,
    ) -> list[Move]:
        """Swaps and rotations on OCS ``o`` through arcs ``xs[i] -> ys[i]`` (dummy block ``n``
        for free ports); ``may_drop[b]``: block ``b`` may lose a circuit without a new one."""
        n = self.n
        m = len(xs)
        out: list[Move] = []

        def real(arcs: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
            return tuple((a, b) for a, b in arcs if a != n and b != n)

        def no_loop(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            keep: np.ndarray = (x != y) | (x == n)
            return keep

        # two arcs i, j -> x_i->y_j, x_j->y_i. With h[i, j] = (arc i removed, x_i->y_j made),
        # the swap's gain is h[i, j] + h[j, i], and likewise its cost.
        r_gain = rm_gain[xs, ys]
        r_cost = rm_cost[xs, ys]
        cross = (xs[:, None], ys[None, :])
        h_gain = r_gain[:, None] + add_gain[cross]
        gain = h_gain + h_gain.T
        pairable = no_loop(xs[:, None], ys[None, :])
        pairable &= (xs[:, None] != xs[None, :]) & (ys[:, None] != ys[None, :])
        valid = pairable & pairable.T
        drop = (xs == n) & (ys == n)  # a dummy->dummy arc: the other arc is torn down alone
        droppable = may_drop[xs] & may_drop[ys]
        valid &= ~drop[:, None] | droppable[None, :]
        valid &= ~drop[None, :] | droppable[:, None]
        order = np.arange(m)
        valid &= order[:, None] < order[None, :]
        first, second = np.nonzero(valid & (gain > 0))
        h_cost = r_cost[:, None] + add_cost[cross]
        cost = h_cost[first, second] + h_cost[second, first]
        for i, j, g, c in zip(first.tolist(), second.tolist(), gain[first, second].tolist(), cost.tolist(),
                              strict=True):
            a, b, c_, d = int(xs[i]), int(ys[i]), int(xs[j]), int(ys[j])
            out.append((float(g - c), g, o, real(((a, b), (c_, d))), real(((a, d), (c_, b)))))
        # three arcs i -> j -> k: x_i->y_j, x_j->y_k, x_k->y_i (through the best arcs only). With
        # h[i, j] = (arc i removed, x_i->y_j made) the rotation gains h[i, j] + h[j, k] + h[k, i];
        # it may use i->j if e[i, j] (distinct ends, no loop made), and i is its smallest arc.
        rotatable = np.nonzero((xs != n) | (ys != n))[0]  # not dummy->dummy
        width = min(len(rotatable), ROTATION_WIDTH)
        top = rotatable[np.argsort(-(r_gain - r_cost)[rotatable], kind="stable")[:width]]
        tx, ty = xs[top], ys[top]
        h_gain = r_gain[top][:, None] + add_gain[tx[:, None], ty[None, :]]
        h_cost = r_cost[top][:, None] + add_cost[tx[:, None], ty[None, :]]
        distinct = (tx[:, None] != tx[None, :]) & (ty[:, None] != ty[None, :])
        e = distinct & no_loop(tx[:, None], ty[None, :])
        order = np.arange(width)
        e_first = e & (order[:, None] < order[None, :])  # i -> j with i < j
        e_back = e & (order[:, None] > order[None, :])  # k -> i with i < k
        ok = e_first[:, :, None] & e[None, :, :] & e_back.T[:, None, :]
        g3 = h_gain[:, :, None] + h_gain[None, :, :] + h_gain.T[:, None, :]
        ia, ib, ic = np.nonzero(ok & (g3 > 0))
        g_sel = g3[ia, ib, ic]
        c_sel = h_cost[ia, ib] + h_cost[ib, ic] + h_cost[ic, ia]
        for a, b, c, g, cost3 in zip(ia.tolist(), ib.tolist(), ic.tolist(), g_sel.tolist(), c_sel.tolist(),
                                     strict=True):
            xa, ya, xb, yb, xc, yc = (int(tx[a]), int(ty[a]), int(tx[b]), int(ty[b]), int(tx[c]), int(ty[c]))
            out.append((float(g - cost3), g, o,
                        real(((xa, ya), (xb, yb), (xc, yc))), real(((xa, yb), (xb, yc), (xc, ya)))))
        return out


    # -- chains ---------------------------------------------------------------------

    def chain(self) -> list[Swap] | None:
        """The cheapest chain of swaps that fixes one unit of excess and one of deficit.

        Block ``a`` has a circuit too many to ``b`` and one too few to ``z``. Swapping an
        ``a-b`` circuit with the circuit that holds ``z``'s port on that OCS (``u-z``)
        makes ``a-z`` and ``u-b``: ``a`` is fixed and the trouble moves to ``u`` (now
        one too many to ``b``, one too few to ``z``), unless ``u-z`` was in excess or
        ``u-b`` short, where the chain ends. Dijkstra over the blocks, weighted by the
        circuits each swap tears down. Returns the swaps ``(ocs, removes, adds)``.
        """
        best: tuple[int, list[Swap]] | None = None
        excess = np.argwhere(self.need < 0)
        for a, b in excess.tolist():
            for z in np.nonzero(self.need[a] > 0)[0].tolist():
                if z == b:
                    continue
                found = self._cheapest_chain(a, b, z, 1 << 30 if best is None else best[0])
                if found is not None:
                    best = found
                    if best[0] == 0:  # none is cheaper (the first of the cheapest is kept)
                        return best[1]
        return None if best is None else best[1]

    def _cheapest_chain(
        self, a: int, b: int, z: int, bound: int
    ) -> tuple[int, list[Swap]] | None:
        """The cheapest chain from ``a`` for excess ``a-b`` and deficit ``a-z``, if it costs
        less than ``bound`` (the cheapest found so far: the search stops at that cost)."""
        dist = {a: 0}
        back: dict[int, tuple[int, Swap]] = {}
        heap = [(0, a)]
        done: set[int] = set()
        while heap:
            d, x = heapq.heappop(heap)
            if d >= bound:
                return None
            if x in done:
                continue
            done.add(x)
            if x != a and (self.need[x, z] < 0 or self.need[x, b] > 0):
                steps: list[Swap] = []
                while x != a:
                    x, step = back[x]
                    steps.append(step)
                return d, steps[::-1]
            for cost, u, step in self._chain_steps(x, b, z):
                if u in done:
                    continue
                if d + cost < dist.get(u, 1 << 30):
                    dist[u] = d + cost
                    back[u] = (x, step)
                    heapq.heappush(heap, (d + cost, u))
        return None

    def _chain_steps(self, x: int, b: int, z: int) -> list[tuple[int, int, Swap]]:
        """Swaps turning an x-b circuit into x-z: (circuits torn down, next block, swap)."""
        out = []
        for o in np.nonzero(self.count[:, x, b] > 0)[0].tolist():  # x->b with u->z
            for u in np.nonzero(self.count[o, :, z] > 0)[0].tolist():
                if u not in (x, b) and x != z:
                    out.append((o, ((x, b), (u, z)), ((x, z), (u, b)), u))
        for o in np.nonzero(self.count[:, b, x] > 0)[0].tolist():  # b->x with z->u
            for u in np.nonzero(self.count[o, z, :] > 0)[0].tolist():
                if u not in (x, b) and x != z:
                    out.append((o, ((b, x), (z, u)), ((z, x), (b, u)), u))
        steps: list[tuple[int, int, Swap]] = []
        room = self.limit - self.in_domain
        for o, removes, adds, u in out:
            if any(room[self.domain_of[o], p, q] < 1 for p, q in adds):
                continue
            cost = sum(self._unit_cost(o, p, q, -1) for p, q in removes)
            cost += sum(self._unit_cost(o, p, q, 1) for p, q in adds)
            steps.append((max(cost, 0), u, (o, removes, adds)))
        return steps

    def apply_chain(self, steps: list[Swap]) -> bool:
        """Apply a chain's swaps if each is still valid and together they gain; else undo."""
        before = int(np.abs(self.need).sum())
        done: list[Swap] = []
        for o, removes, adds in steps:
            if any(self.count[o, p, q] < 1 for p, q in removes) or self.exact(o, removes, adds)[0] < -4:
                break
            self.apply(o, removes, adds)
            done.append((o, removes, adds))
        else:
            if int(np.abs(self.need).sum()) < before:
                return True
        for o, removes, adds in reversed(done):
            self.apply(o, adds, removes)
        return False


#: The largest change (pair units wrong / today's circuits in the domain) that is repaired.
SMALL_CHANGE = 0.15

#: Arcs per OCS through which three-circuit rotations are tried.
ROTATION_WIDTH = 24


def units_wrong(
    ocs_list: Sequence[OcsPorts], pairs: np.ndarray, counts: Sequence[np.ndarray] | None = None
) -> int:
    """Pair units (circuits too many plus too few, per pair) between ``counts`` (default:
    today's circuits) and the symmetric pair counts ``pairs``."""
    return _Repair(ocs_list, pairs, counts).units_wrong


def small_change(ocs_list: Sequence[OcsPorts], pairs: np.ndarray) -> bool:
    """Whether the domain's pair counts differ from today's by at most ``SMALL_CHANGE`` of
    its circuits: where the repair pays. For bigger changes it costs several times the
    recolouring's time (40 s instead of 7 s per 64-block mapping) for about 1% fewer
    tear-downs (``benchmarks/RESULTS_mapping.md``)."""
    job = _Repair(ocs_list, pairs)
    return job.units_wrong <= SMALL_CHANGE * max(int(job.orig.sum()), 1)


def repair_from_current(
    ocs_list: Sequence[OcsPorts],
    pairs: np.ndarray,
    start: Sequence[np.ndarray] | None = None,
    domain_limit: np.ndarray | None = None,
    domain_of: Sequence[int] | None = None,
) -> tuple[list[np.ndarray], bool]:
    """Per-OCS directed counts reached by small moves towards the symmetric pair counts
    ``pairs`` on these OCSes, and whether they realise them all (``False`` when no move
    gains any more, or a domain holds more of a pair than its limit: the counts are then a
    partial repair).

    Moves start from ``start`` (default: today's circuits) and are costed against today's
    circuits. Over several failure domains, ``domain_of[i]`` is OCS ``i``'s domain number
    and no move puts more of a pair's circuits in domain ``d`` than ``domain_limit[d]``
    allows (a pair already over it may keep what it has)."""
    job = _Repair(ocs_list, pairs, start, domain_limit, domain_of)
    rounds = 0
    while job.need.any():
        rounds += 1
        applied = _greedy_round(job)
        while not applied and job.need.any():  # stuck: chains until none is left
            steps = job.chain()
            if steps is None or not job.apply_chain(steps):
                break
            applied = -1
        if not applied:
            log.debug("repair stopped after %d rounds: %d pair units still wrong, %d circuits torn down",
                      rounds, job.units_wrong, job.torn_down)
            break
    counts = [job.count[o].copy() for o in range(len(ocs_list))]
    within_limits = bool((job.in_domain <= job.limit).all())  # today's may be over (rebalance)
    return counts, within_limits and not job.need.any()


def _greedy_round(job: _Repair) -> int:
    """Score every move, apply the best ones that still gain; return how many were applied."""
    moves = job.candidates()
    moves.sort(key=lambda m: (-m[0], -m[1]))
    applied = 0
    for score, _gain, o, removes, adds in moves[:MOVES_PER_ROUND]:
        gain, cost = job.exact(o, removes, adds)
        if gain > 0 and gain - cost >= score:
            job.apply(o, removes, adds)
            applied += 1
    if not applied and moves and job.exact(*moves[0][2:])[0] > 0:
        job.apply(*moves[0][2:])
        applied = 1
    return applied


def with_current(ocs: OcsPorts, counts: np.ndarray) -> OcsPorts:
    """A copy of ``ocs`` whose current circuits are the ones ``counts`` lays on it (today's
    where they agree): the partial repair as a starting point for the recolouring."""
    block_of = {p: b for b, ports in enumerate(ocs.north) for p in ports}
    block_of.update({p: b for b, ports in enumerate(ocs.south) for p in ports})
    current: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for c in assign_ports(ocs, counts):
        current.setdefault((block_of[c.a], block_of[c.b]), []).append((c.a, c.b))
    return replace(ocs, current=current, north=[list(p) for p in ocs.north],
                   south=[list(p) for p in ocs.south], flexible=[set(f) for f in ocs.flexible])
