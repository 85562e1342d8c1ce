"""Safe transitions between two sets of WCMP groups. Pure.

Blocks take new groups one by one, so for a moment some send by the old groups and some by
the new: a link can then carry more than either plan gives it. With ``L_s(l)`` the load
source block ``s`` puts on link ``l`` (its first hop, and the second hop of what it sends
through a transit block), every mix of old and new is bounded by

    M(l) = sum_s max(L_s_old(l), L_s_new(l))

:func:`transition_steps` inserts intermediate groups (fractions interpolated between old
and new, bisecting where needed) until every consecutive pair's bound, over the capacity
that is live during the push, stays within the limit, or the step budget is spent. A pair
still over the limit then changes one block at a time (each state differs from the one
before in one block, so the state in between is one of the two): the blocks go in the
order that keeps the busiest link lowest at every step, greedily - a block that moves
traffic off a hot link before another moves traffic onto it. :func:`plan_transition` also
says what the steps reach (the daemon logs a warning when it is still over the limit);
:func:`worst_transition` evaluates any sequence of groups on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from controller.device_view import GroupTables
from optimizer.te import reduce_weights

MAX_INTERMEDIATE = 7


def fractions(tables: GroupTables, blocks: Sequence[str], nodes: Sequence[str] | None = None) -> np.ndarray:
    """[src, dst, via] split fractions; a destination without a group goes direct. ``via``
    runs over ``nodes`` (default the blocks; with a spine, the blocks then the spine switches)."""
    n = len(blocks)
    nodes = blocks if nodes is None else nodes
    index = {b: i for i, b in enumerate(nodes)}
    out = np.zeros((n, n, len(nodes)))
    for s in range(n):
        for d in range(n):
            if s != d:
                out[s, d, d] = 1.0
    for src, groups in tables.items():
        s = index[src]
        for dst, hops in groups.items():
            total = sum(w for w in hops.values() if w > 0)
            if total <= 0:
                continue
            d = index[dst]
            out[s, d, :] = 0.0
            for via, weight in hops.items():
                if weight > 0:
                    out[s, d, index[via]] = weight / total
    return out


def source_loads(split: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """[source, link src, link dst] Gbit/s each source block puts on each directed trunk
    (links between nodes: the blocks, then any spine switches ``split`` names)."""
    n, m = demand.shape[0], split.shape[2]
    flow = demand[:, :, None] * split  # [s, d, v]
    loads = np.zeros((n, m, m))
    first = flow.sum(axis=1)  # [s, v]: s -> v
    idx = np.arange(n)
    loads[idx, idx, :] = first
    second = flow.copy()
    second[:, idx, idx] = 0.0  # direct traffic has no second hop
    # second hop v -> d for source s
    loads[:, :, :n] += np.transpose(second, (0, 2, 1))  # [s, v, d]
    return loads


def mix_utilisation(a: np.ndarray, b: np.ndarray, capacity: np.ndarray) -> float:
    """The bound on any link's utilisation while blocks move from loads ``a`` to ``b``."""
    return _utilisation(np.maximum(a, b).sum(axis=0), capacity)


def tables_of(split: np.ndarray, blocks: Sequence[str], nodes: Sequence[str] | None = None) -> GroupTables:
    """Integer groups for fractions, reduced as TE reduces its own (WCMP, bounded excess)."""
    n = len(blocks)
    nodes = blocks if nodes is None else nodes
    m = len(nodes)
    reduced = reduce_weights(split.reshape(n * n, m)).weights.reshape(n, n, m)
    tables: GroupTables = {b: {} for b in blocks}
    for s in range(n):
        for d in range(n):
            if s == d:
                continue
            weights = {nodes[v]: int(reduced[s, d, v]) for v in range(m) if reduced[s, d, v] > 0}
            if weights:
                tables[blocks[s]][blocks[d]] = weights
    return tables


@dataclass(frozen=True)
class Transition:
    steps: list[GroupTables]  # the groups to push in order, ending with the new ones
    worst: float  # the bound on any link's utilisation while they are pushed


def transition_steps(
    old: GroupTables | None,
    new: GroupTables,
    blocks: Sequence[str],
    demand: np.ndarray,
    capacity: np.ndarray,
    limit: float,
    nodes: Sequence[str] | None = None,
) -> list[GroupTables]:
    """The groups to push in order, ending with ``new`` (see :func:`plan_transition`)."""
    return plan_transition(old, new, blocks, demand, capacity, limit, nodes).steps


def plan_transition(
    old: GroupTables | None,
    new: GroupTables,
    blocks: Sequence[str],
    demand: np.ndarray,
    capacity: np.ndarray,
    limit: float,
    nodes: Sequence[str] | None = None,
) -> Transition:
    """The groups to push in order, ending with ``new``: all at once when every mix is within
    ``limit``; else one block at a time if an order keeps every state within it; else
    intermediates, each pair still over the limit one block at a time. With the bound
    those steps keep (the same as :func:`worst_transition` of them). ``nodes`` are the next
    hops groups may name (default the blocks; with a spine, the blocks then the spine
    switches, ``capacity`` being over the same nodes)."""
    splits = [fractions(new, blocks, nodes)] if old is None else [
        fractions(old, blocks, nodes), fractions(new, blocks, nodes)
    ]
    loads = [source_loads(x, demand) for x in splits]
    if old is None:
        return Transition([new], mix_utilisation(loads[0], loads[0], capacity))
    jump = mix_utilisation(loads[0], loads[1], capacity)
    if jump <= limit:
        return Transition([new], jump)
    ordered, worst = _one_block_at_a_time(old, new, blocks, loads[0], loads[1], capacity)
    if worst <= limit:
        return Transition(ordered, worst)
    steps: list[GroupTables] = []  # the intermediates, in order
    while len(splits) - 2 < MAX_INTERMEDIATE:
        worst, at = 0.0, -1
        for k in range(len(splits) - 1):
            u = mix_utilisation(loads[k], loads[k + 1], capacity)
            if u > worst:
                worst, at = u, k
        if worst <= limit or at < 0:
            break
        middle_tables = tables_of((splits[at] + splits[at + 1]) / 2, blocks, nodes)
        middle = fractions(middle_tables, blocks, nodes)  # what the devices will do with the integers
        steps.insert(at, middle_tables)
        splits.insert(at + 1, middle)
        loads.insert(at + 1, source_loads(middle, demand))
    states = [old, *steps, new]
    out: list[GroupTables] = []
    worst = 0.0
    for k in range(len(states) - 1):
        mix = mix_utilisation(loads[k], loads[k + 1], capacity)
        if mix <= limit:
            out.append(states[k + 1])
        else:
            pair = (states[k], states[k + 1], blocks, loads[k], loads[k + 1], capacity)
            ordered, mix = _one_block_at_a_time(*pair)
            out.extend(ordered)
        worst = max(worst, mix)
    return Transition(out, worst)


def _one_block_at_a_time(
    before: GroupTables,
    after: GroupTables,
    blocks: Sequence[str],
    loads_before: np.ndarray,
    loads_after: np.ndarray,
    capacity: np.ndarray,
) -> tuple[list[GroupTables], float]:
    """States from ``before`` to ``after`` that change one block each (the last is ``after``),
    the next block always the one leaving the busiest link lowest; and the highest
    utilisation of any of them (consecutive states differ in one block, so nothing in
    between is worse than the two)."""
    index = {b: i for i, b in enumerate(blocks)}
    waiting = [b for b in blocks if before.get(b, {}) != after.get(b, {})]
    total = loads_before.sum(axis=0)
    worst = max(_utilisation(total, capacity), _utilisation(loads_after.sum(axis=0), capacity))
    state = {b: before.get(b, {}) for b in blocks}
    out: list[GroupTables] = []
    while len(waiting) > 1:
        def after_moving(b: str, now: np.ndarray = total) -> float:
            return _utilisation(now - loads_before[index[b]] + loads_after[index[b]], capacity)

        block = min(waiting, key=after_moving)
        i = index[block]
        total = total - loads_before[i] + loads_after[i]
        worst = max(worst, _utilisation(total, capacity))
        state = {**state, block: after.get(block, {})}
        out.append(state)
        waiting.remove(block)
    out.append(after)
    return out, worst


def _utilisation(load: np.ndarray, capacity: np.ndarray) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(capacity > 0, load / np.where(capacity > 0, capacity, 1.0), 0.0)
    return float(util.max(initial=0.0))


def worst_transition(
    old: GroupTables | None,
    steps: Sequence[GroupTables],
    blocks: Sequence[str],
    demand: np.ndarray,
    capacity: np.ndarray,
    nodes: Sequence[str] | None = None,
) -> float:
    """The bound on any link's utilisation while ``steps`` are pushed in turn after ``old``."""
    states = ([] if old is None else [old]) + list(steps)
    loads = [source_loads(fractions(t, blocks, nodes), demand) for t in states]
    if len(loads) == 1:
        return mix_utilisation(loads[0], loads[0], capacity)
    return max(mix_utilisation(loads[k], loads[k + 1], capacity) for k in range(len(loads) - 1))
