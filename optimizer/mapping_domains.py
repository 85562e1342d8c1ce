"""Splitting a logical topology over the failure domains.

Every block pair's circuits are spread over the domains so that no domain holds more than
:func:`pair_domain_limit` of them, every block stays within its ports in every domain, and
as many circuits as possible stay in the domain they are in today.

The split is greedy, then repaired: a block with more circuits than ports in a domain
sheds one along an alternating chain (move pair ``u-w`` from domain alpha to beta, then a
pair ``w-z`` from beta back to alpha, ...) found by a shortest-path search over
(block, domain) states, in the manner of Kempe chains. Everything is polynomial: each
repair is a search over ``blocks x domains`` states.
"""

from __future__ import annotations

import heapq
import logging
from dataclasses import dataclass

import numpy as np

from optimizer.errors import InfeasibleError

log = logging.getLogger(__name__)


def pair_domain_limit(count: int | np.ndarray, domain_ports: int, total_ports: int) -> int | np.ndarray:
    """The most circuits of a pair with ``count`` circuits that one domain may hold.

    ``ceil(count * share)`` where ``share = domain_ports / total_ports`` is the domain's
    share of the fabric's cabled OCS ports (``1/domains`` when the domains are equal).
    Losing that domain then keeps at least ``count - ceil(count * share) =
    floor(count * (1 - share))`` of the pair's circuits: with ``D`` equal domains, at least
    ``floor(count * (1 - 1/D))``, i.e. ``1 - 1/D`` of them rounded down. Exact integer
    arithmetic, no floating point.
    """
    return (count * domain_ports + total_ports - 1) // total_ports


@dataclass
class DomainSplit:
    """``counts[d]`` is the symmetric pair-count matrix placed in domain number ``d``."""

    counts: np.ndarray  # (domains, n, n)
    over_limit: list[tuple[int, int, int]]  # (domain number, a, b) pairs above their limit


def split_over_domains(
    target: np.ndarray,
    current: np.ndarray,
    capacity: np.ndarray,
    limit: np.ndarray,
    block_names: tuple[str, ...],
) -> DomainSplit:
    """Split ``target`` (n x n) over domains.

    ``current[d]``: today's pair counts in domain number ``d`` (n x n, symmetric);
    ``capacity[d][a]``: block ``a``'s ports in domain ``d``; ``limit[d]``: the per-pair
    most circuits domain ``d`` may hold (n x n). Raises InfeasibleError naming a block
    when no split fits the ports.
    """
    n_dom, n = capacity.shape
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    x = np.minimum(np.minimum(current, limit), target[None, :, :])
    x = np.where(upper[None], x, 0)
    load = _loads(x)

    pairs = np.argwhere(upper & (target > 0))
    # Too many kept: drop from the domains where the blocks are most loaded.
    for a, b in pairs:
        excess = int(x[:, a, b].sum() - target[a, b])
        while excess > 0:
            over = (load[:, a] - capacity[:, a]) + (load[:, b] - capacity[:, b])
            over = np.where(x[:, a, b] > 0, over, -(10**9))
            d = int(np.argmax(over))
            x[d, a, b] -= 1
            load[d, a] -= 1
            load[d, b] -= 1
            excess -= 1
    # Too few: add to the domains with the most room at both ends.
    order = sorted(pairs.tolist(), key=lambda p: -int(target[p[0], p[1]]))
    for a, b in order:
        missing = int(target[a, b] - x[:, a, b].sum())
        while missing > 0:
            room = np.minimum(capacity[:, a] - load[:, a], capacity[:, b] - load[:, b]).astype(float)
            room = np.where(x[:, a, b] < limit[:, a, b], room, -np.inf)
            if np.all(np.isneginf(room)):
                room = np.minimum(capacity[:, a] - load[:, a], capacity[:, b] - load[:, b]).astype(float)
            d = int(np.argmax(room))
            x[d, a, b] += 1
            load[d, a] += 1
            load[d, b] += 1
            missing -= 1

    over_limit: set[tuple[int, int, int]] = set()
    repairs = 0
    while True:
        overloaded = np.argwhere(load > capacity)
        if overloaded.size == 0:
            break
        d, v = (int(i) for i in overloaded[0])
        if not _shed_one(x, load, capacity, limit, current, v, d, strict=True):
            if not _shed_one(x, load, capacity, limit, current, v, d, strict=False):
                raise InfeasibleError(
                    f"cannot fit block {block_names[v]}'s circuits into the ports of failure domain "
                    f"number {d} ({int(load[d, v])} circuits, {int(capacity[d, v])} ports)"
                )
        repairs += 1
    for d in range(n_dom):
        for a, b in np.argwhere(upper & (x[d] > limit[d])):
            over_limit.add((d, int(a), int(b)))
    if repairs:
        log.debug("domain split needed %d repair chains", repairs)
    full = x + np.transpose(x, (0, 2, 1))
    return DomainSplit(full, sorted(over_limit))


def _loads(x_upper: np.ndarray) -> np.ndarray:
    return x_upper.sum(axis=2) + x_upper.sum(axis=1)


def _shed_one(
    x: np.ndarray,
    load: np.ndarray,
    capacity: np.ndarray,
    limit: np.ndarray,
    current: np.ndarray,
    start: int,
    start_domain: int,
    strict: bool,
) -> bool:
    """Find and apply an alternating chain that takes one circuit of ``start`` out of
    ``start_domain`` without overloading any other block.

    A state ``(v, d, f)`` says: block ``v`` has one circuit too many in domain ``d`` and
    one free port in domain ``f`` (freed by the previous move; ``-1`` at the start). A
    move takes pair ``v-w`` from ``d`` to a domain ``e`` where ``v`` has room; it ends the
    chain when ``w`` has room in ``e``. Cost: one per move, plus one per circuit moved out
    of the domain it is in today, minus a half per circuit moved back into it.
    """
    n_dom, _ = capacity.shape
    sym = x + np.transpose(x, (0, 2, 1))
    big = np.iinfo(np.int64).max // 4
    room = capacity - load
    first = (start, start_domain, -1)
    best: dict[tuple[int, int, int], float] = {first: 0.0}
    parent: dict[tuple[int, int, int], tuple[tuple[int, int, int], tuple[int, int, int, int]]] = {}
    heap: list[tuple[float, tuple[int, int, int]]] = [(0.0, first)]
    found: tuple[tuple[int, int, int], tuple[int, int, int, int]] | None = None
    while heap and found is None:
        cost, state = heapq.heappop(heap)
        if cost > best.get(state, np.inf):
            continue
        v, d, freed = state
        for e in range(n_dom):
            if e == d or (room[e, v] <= 0 and e != freed):
                continue
            allowed = limit[e, v] if strict else big
            for w in np.nonzero((sym[d, v] > 0) & (sym[e, v] < allowed))[0].tolist():
                step = 1.0
                if sym[d, v, w] <= current[d, v, w]:
                    step += 1.0
                if sym[e, v, w] < current[e, v, w]:
                    step -= 0.5
                move = (v, w, d, e)
                if room[e, w] > 0 and w != start:
                    found = (state, move)
                    break
                nxt = (w, e, d)
                if cost + step < best.get(nxt, np.inf):
                    best[nxt] = cost + step
                    parent[nxt] = (state, move)
                    heapq.heappush(heap, (cost + step, nxt))
            if found is not None:
                break
    if found is None:
        return False
    state, move = found
    moves = [move]
    while state != first:
        state, move = parent[state]
        moves.append(move)
    trial_x = x.copy()
    trial_load = load.copy()
    for v, w, d, e in reversed(moves):
        a, b = (v, w) if v < w else (w, v)
        if trial_x[d, a, b] <= 0:
            return False
        trial_x[d, a, b] -= 1
        trial_x[e, a, b] += 1
        trial_load[d, [v, w]] -= 1
        trial_load[e, [v, w]] += 1
    before = np.maximum(load - capacity, 0).sum()
    after = np.maximum(trial_load - capacity, 0).sum()
    if after >= before:
        return False
    x[...] = trial_x
    load[...] = trial_load
    return True
