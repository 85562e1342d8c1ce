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
from typing import overload

import numpy as np

from optimizer.errors import InfeasibleError
from optimizer.mapping.ocs import fill_one_part, orient

log = logging.getLogger(__name__)


@overload
def pair_domain_limit(count: int, domain_ports: int, total_ports: int) -> int: ...
@overload
def pair_domain_limit(count: np.ndarray, domain_ports: int, total_ports: int) -> np.ndarray: ...
def pair_domain_limit(count: int | np.ndarray, domain_ports: int, total_ports: int) -> int | np.ndarray:
    """The most circuits of a pair with ``count`` circuits that one domain may hold.

    ``ceil(count * share)`` where ``share = domain_ports / total_ports`` is the domain's
    share of the fabric's cabled OCS ports (``1/domains`` when the domains are equal).
    Losing that domain then keeps at least ``count - ceil(count * share) =
    floor(count * (1 - share))`` of the pair's circuits: with ``D`` equal domains, at least
    ``floor(count * (1 - 1/D))``, i.e. ``1 - 1/D`` of them rounded down. Exact integer
    arithmetic, no floating point.
    """
    limit: int | np.ndarray = (count * domain_ports + total_ports - 1) // total_ports
    return limit


@dataclass
class DomainSplit:
    """``counts[d]`` is the symmetric pair-count matrix placed in domain number ``d``."""

    counts: np.ndarray  # (domains, n, n)
    over_limit: list[tuple[int, int, int]]  # (domain number, a, b) pairs above their limit


def split_over_domains(
    target: np.ndarray,
    current_directed: np.ndarray,
    capacity: np.ndarray,
    limit: np.ndarray,
    block_names: tuple[str, ...],
) -> DomainSplit:
    """Split ``target`` (n x n) over domains.

    ``current_directed[d][a][b]``: today's circuits in domain number ``d`` from a north
    port of ``a`` to a south port of ``b``;
    ``capacity[d][a]``: block ``a``'s ports in domain ``d``; ``limit[d]``: the per-pair
    most circuits domain ``d`` may hold (n x n). Two greedy orders are tried (most
    constrained pair first; largest pair first), then, if both leave a pair over its
    limit or fail, the bipartite construction of :func:`split_by_orientation`, which
    always fits the ports when domains have proportional ports. The split with fewer
    pairs over their limit, then more circuits kept in place, wins. Raises
    InfeasibleError naming a block when none fits the ports.
    """
    current = current_directed + np.transpose(current_directed, (0, 2, 1))
    best: DomainSplit | None = None
    error: InfeasibleError | None = None
    for strategy in ("most constrained first", "largest first", "bipartite"):
        if strategy == "bipartite" and best is not None and not best.over_limit:
            break
        try:
            if strategy == "bipartite":
                split = split_by_orientation(target, current_directed, capacity, limit, block_names)
            else:
                split = _split(target, current, capacity, limit, block_names,
                               strategy == "most constrained first")
        except InfeasibleError as exc:
            error = error or exc
            continue
        log.debug("domain split (%s): %d pairs over their limit", strategy, len(split.over_limit))
        if best is None or _rank(split, current) < _rank(best, current):
            best = split
    if best is None:
        raise error or InfeasibleError("no split of the topology over the failure domains fits the ports")
    return best


def split_by_orientation(
    target: np.ndarray,
    current_directed: np.ndarray,
    capacity: np.ndarray,
    limit: np.ndarray,
    block_names: tuple[str, ...],
) -> DomainSplit:
    """Orient the pairs (north to south) for the whole fabric, then peel off one domain at
    a time with a bipartite flow: every directed arc gets at most ``ceil(count * share)``
    in a domain, every block at most half of the domain's ports on each side, and at
    least what the later domains cannot take. ``count * share`` per arc is a fractional
    solution, so by total unimodularity an integral one exists. Pairs split both ways can
    still end one circuit over their pair limit; those are reported.
    """
    n_dom, n = capacity.shape
    half = capacity // 2
    north = half.copy()
    south = capacity - half
    directed = orient(target, north.sum(axis=0), south.sum(axis=0), current_directed.sum(axis=0),
                      block_names, "the fabric")
    total_ports = int(capacity.sum())
    shares = capacity.sum(axis=1)
    remaining = directed.copy()
    later_current = current_directed.sum(axis=0)
    later_north = north.sum(axis=0)
    later_south = south.sum(axis=0)
    later_caps = sum(pair_domain_limit(directed, int(p), total_ports) for p in shares)
    parts: list[np.ndarray] = []
    for d in range(n_dom):
        caps = pair_domain_limit(directed, int(shares[d]), total_ports)
        later_current = later_current - current_directed[d]
        later_north = later_north - north[d]
        later_south = later_south - south[d]
        later_caps = later_caps - caps
        part = fill_one_part(remaining, current_directed[d], later_current, north[d], south[d],
                             later_north, later_south, arc_upper=caps,
                             arc_lower=np.maximum(remaining - later_caps, 0))
        if part is None:
            raise InfeasibleError(f"cannot split the circuits over the failure domains (domain number {d})")
        remaining = remaining - part
        parts.append(part + part.T)
    counts = np.stack(parts)
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    over = [(d, int(a), int(b)) for d in range(n_dom) for a, b in np.argwhere(upper & (counts[d] > limit[d]))]
    return DomainSplit(counts, over)


def _rank(split: DomainSplit, current: np.ndarray) -> tuple[int, int]:
    return (len(split.over_limit), -int(np.minimum(split.counts, current).sum()))


def _split(
    target: np.ndarray,
    current: np.ndarray,
    capacity: np.ndarray,
    limit: np.ndarray,
    block_names: tuple[str, ...],
    most_constrained_first: bool,
) -> DomainSplit:
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
    # Too few: most constrained pair first (fewest domains with room at both ends and
    # under the pair limit), into the domain with the most room; today's domains first.
    missing = np.where(upper, target - x.sum(axis=0), 0)
    while missing.any():
        # One unit per pair per round, in the order of the round's start; each pair's own
        # options are checked again when its turn comes.
        ia, ib = np.nonzero(missing)
        room = np.minimum(capacity[:, ia] - load[:, ia], capacity[:, ib] - load[:, ib])
        options = ((room > 0) & (x[:, ia, ib] < limit[:, ia, ib])).sum(axis=0)
        options = np.where(options == 0, n_dom + 1, options)
        if not most_constrained_first:
            options = np.zeros_like(options)
        for k in np.lexsort((-missing[ia, ib], options)).tolist():
            a, b = int(ia[k]), int(ib[k])
            room_k = np.minimum(capacity[:, a] - load[:, a], capacity[:, b] - load[:, b]).astype(float)
            under = x[:, a, b] < limit[:, a, b]
            score = np.where(under & (room_k > 0), room_k, -np.inf)
            if np.all(np.isneginf(score)):
                score = np.where(under, room_k, -np.inf)
                if np.all(np.isneginf(score)):
                    score = room_k
            d = int(np.argmax(score))
            x[d, a, b] += 1
            load[d, a] += 1
            load[d, b] += 1
            missing[a, b] -= 1

    over_limit: set[tuple[int, int, int]] = set()
    repairs = 0
    while True:
        overloaded = np.argwhere(load > capacity)
        if overloaded.size == 0:
            break
        d, v = (int(i) for i in overloaded[0])
        if not _shed_one(x, load, capacity, limit, current, v, d, strict=True) and not _shed_one(
            x, load, capacity, limit, current, v, d, strict=False
        ):
                raise InfeasibleError(
                    f"cannot fit block {block_names[v]}'s circuits into the ports of failure domain "
                    f"number {d} ({int(load[d, v])} circuits, {int(capacity[d, v])} ports)"
                )
        repairs += 1
    _rebalance_pairs(x, load, capacity, limit, current)
    for d in range(n_dom):
        for a, b in np.argwhere(upper & (x[d] > limit[d])):
            over_limit.add((d, int(a), int(b)))
    if repairs:
        log.debug("domain split needed %d repair chains", repairs)
    full = x + np.transpose(x, (0, 2, 1))
    return DomainSplit(full, sorted(over_limit))


def _rebalance_pairs(
    x: np.ndarray, load: np.ndarray, capacity: np.ndarray, limit: np.ndarray, current: np.ndarray
) -> None:
    """Move circuits of pairs over their limit to a domain under it, then repair the
    ports that overflow with strict alternating chains; undo a move that cannot be repaired."""
    n_dom = capacity.shape[0]
    upper = np.triu(np.ones(x.shape[1:], dtype=bool), 1)
    for _ in range(int(np.maximum(x - limit, 0).sum())):
        over = np.argwhere(upper[None] & (x > limit))
        if over.size == 0:
            return
        moved = False
        for d, a, b in over.tolist():
            for d2 in range(n_dom):
                if d2 == d or x[d2, a, b] >= limit[d2, a, b]:
                    continue
                trial_x, trial_load = x.copy(), load.copy()
                trial_x[d, a, b] -= 1
                trial_x[d2, a, b] += 1
                trial_load[d, [a, b]] -= 1
                trial_load[d2, [a, b]] += 1
                for _step in range(4 * x.shape[1]):
                    overloaded = np.argwhere(trial_load > capacity)
                    if overloaded.size == 0:
                        break
                    od, ov = (int(i) for i in overloaded[0])
                    if not _shed_one(trial_x, trial_load, capacity, limit, current, ov, od, strict=True):
                        break
                if (trial_load <= capacity).all() and not (trial_x > np.maximum(limit, x)).any():
                    x[...] = trial_x
                    load[...] = trial_load
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return


def _loads(x_upper: np.ndarray) -> np.ndarray:
    loads: np.ndarray = x_upper.sum(axis=2) + x_upper.sum(axis=1)
    return loads


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
                if room[e, w] > 0:
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
