"""Exchanges across two OCSes: keep more of today's circuits without changing any pair's count.

The per-domain mapping fixes how many circuits of each pair go to each failure domain before
it maps the domains one by one, and repairs and dives work on one OCS (or one domain) at a
time; on sparse fabrics (one north and one south port per block per OCS, few circuits per
pair per domain) that leaves circuits torn down that a joint choice would keep. This local
search works on the finished per-OCS counts ``C[o][a, b]`` (north block ``a``, south block
``b``): on OCS ``o`` the circuits ``a -> x`` and ``b -> y`` become ``a -> y`` and ``b -> x``,
and on another OCS ``o'`` the opposite happens (``a -> y``, ``b -> x`` become ``a -> x``,
``b -> y``; or the mirror ``y -> a``, ``x -> b`` become ``y -> b``, ``x -> a``). Every
pair keeps its count; each block keeps its ports on each OCS; a pair's count in a domain
may move between ``o``'s and ``o'``'s domains only within the domains' pair limits. A move
is taken when it keeps more of today's circuits (``min(C, today)`` summed); moves are
searched from each circuit that is not today's towards a circuit today had on that OCS.

Measured: 8 blocks with four north and four south ports per OCS, mesh -> skewed gravity,
60 -> 58 circuits removed; with one north and one south port per OCS (Jupiter's shape) the
search found at most one move (64 blocks, 1454 -> 1453), since a pair seldom has the two
circuits a partner OCS needs, so the mapper runs it only where some block has more ports.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from optimizer.budget import TimeBudget
from optimizer.mapping.ports import OcsPorts

log = logging.getLogger(__name__)

#: Passes over every OCS at most (each pass stops early when nothing improved).
MAX_PASSES = 8


def cross_exchange(
    ocs_list: Sequence[OcsPorts],
    per_ocs: Sequence[np.ndarray],
    domain_index: Sequence[int],
    limits: np.ndarray,
    budget: TimeBudget | None = None,
) -> list[np.ndarray]:
    """``per_ocs`` improved by two-OCS exchanges (see the module docstring).

    ``domain_index[o]`` is OCS ``o``'s domain as an index into ``limits`` (``[D, n, n]``, the
    most circuits of each pair a domain may hold). Stops at a local optimum, after
    :data:`MAX_PASSES` passes, or when ``budget`` is spent.
    """
    if not per_ocs or any(o.flexible for o in ocs_list):
        return [np.array(c) for c in per_ocs]
    counts = np.stack([np.asarray(c, dtype=np.int64) for c in per_ocs])
    n = counts.shape[1]
    today = np.zeros_like(counts)
    for k, ports in enumerate(ocs_list):
        for (a, b), circuits in ports.current.items():
            today[k, a, b] = len(circuits)
    domain = np.asarray(domain_index, dtype=np.int64)
    pairs = np.zeros((limits.shape[0], n, n), dtype=np.int64)
    for k in range(len(ocs_list)):
        pairs[domain[k]] += counts[k] + counts[k].T
    before = _kept(counts, today)
    moves = 0
    for _ in range(MAX_PASSES):
        improved = 0
        for o in range(len(ocs_list)):
            if budget is not None and budget.expired():
                break
            improved += _improve_ocs(o, counts, today, domain, pairs, limits)
        moves += improved
        if not improved or (budget is not None and budget.expired()):
            break
    if moves:
        log.info("cross-OCS exchanges: %d moves keep %d more circuits", moves, _kept(counts, today) - before)
    return [counts[k] for k in range(len(ocs_list))]


def _kept(counts: np.ndarray, today: np.ndarray) -> int:
    return int(np.minimum(counts, today).sum())


def _improve_ocs(
    o: int,
    c: np.ndarray,
    t: np.ndarray,
    domain: np.ndarray,
    pairs: np.ndarray,
    limits: np.ndarray,
) -> int:
    """Take the improving exchanges that start on OCS ``o``; returns how many."""
    taken = 0
    for a_at, x_at in np.argwhere(c[o] > t[o]):
        a, x = int(a_at), int(x_at)
        if c[o, a, x] <= t[o, a, x]:
            continue  # an earlier move on this OCS changed it
        for y_at in np.nonzero(t[o, a] > c[o, a])[0]:
            y = int(y_at)
            if y == x or c[o, a, x] <= t[o, a, x] or t[o, a, y] <= c[o, a, y]:
                continue
            for b_at in np.nonzero(c[o, :, y])[0]:
                b = int(b_at)
                if b in (a, x) or not c[o, b, y]:
                    continue
                gain = 1 + int(c[o, b, x] < t[o, b, x]) - int(c[o, b, y] <= t[o, b, y])
                if gain <= 0:
                    continue
                if _exchange(o, a, x, b, y, gain, c, t, domain, pairs, limits):
                    taken += 1
                    break
    return taken


def _exchange(
    o: int,
    a: int,
    x: int,
    b: int,
    y: int,
    gain: int,
    c: np.ndarray,
    t: np.ndarray,
    domain: np.ndarray,
    pairs: np.ndarray,
    limits: np.ndarray,
) -> bool:
    """Find the partner OCS for ``o``: (a->x, b->y) -> (a->y, b->x), and apply the best one."""
    best: tuple[int, int, tuple[int, int, int, int]] | None = None  # (net gain, o', arcs on o')
    # on o' the arcs (p->q, r->s) become (p->s, r->q): pairs {a,y},{b,x} -> {a,x},{b,y}
    for p, q, r, s in ((a, y, b, x), (y, a, x, b)):
        present = (c[:, p, q] >= 1) & (c[:, r, s] >= 1)
        present[o] = False
        if not present.any():
            continue
        loss = (
            (c[:, p, q] <= t[:, p, q]).astype(np.int64)
            + (c[:, r, s] <= t[:, r, s])
            - (c[:, p, s] < t[:, p, s])
            - (c[:, r, q] < t[:, r, q])
        )
        net = np.where(present, gain - loss, -1)
        for other in np.argsort(-net, kind="stable"):
            other = int(other)
            if net[other] <= 0:
                break
            if domain[other] != domain[o] and not _within_limits(o, other, a, x, b, y, domain, pairs, limits):
                continue
            if best is None or net[other] > best[0]:
                best = (int(net[other]), other, (p, q, r, s))
            break
    if best is None:
        return False
    _, other, (p, q, r, s) = best
    c[o, a, x] -= 1
    c[o, b, y] -= 1
    c[o, a, y] += 1
    c[o, b, x] += 1
    c[other, p, q] -= 1
    c[other, r, s] -= 1
    c[other, p, s] += 1
    c[other, r, q] += 1
    if domain[other] != domain[o]:
        _move_pairs(pairs[domain[o]], ((a, x), (b, y)), ((a, y), (b, x)))
        _move_pairs(pairs[domain[other]], ((a, y), (b, x)), ((a, x), (b, y)))
    return True


def _within_limits(
    o: int,
    other: int,
    a: int,
    x: int,
    b: int,
    y: int,
    domain: np.ndarray,
    pairs: np.ndarray,
    limits: np.ndarray,
) -> bool:
    """Whether ``o``'s domain may take one more of {a,y} and {b,x} and ``other``'s one more of
    {a,x} and {b,y}."""
    here, there = domain[o], domain[other]
    return bool(
        pairs[here, a, y] < limits[here, a, y]
        and pairs[here, b, x] < limits[here, b, x]
        and pairs[there, a, x] < limits[there, a, x]
        and pairs[there, b, y] < limits[there, b, y]
    )


def _move_pairs(
    table: np.ndarray, lose: tuple[tuple[int, int], ...], gain: tuple[tuple[int, int], ...]
) -> None:
    for u, v in lose:
        table[u, v] -= 1
        table[v, u] -= 1
    for u, v in gain:
        table[u, v] += 1
        table[v, u] += 1
