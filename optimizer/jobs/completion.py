"""How long transfers take when they share the fabric fairly: max-min fair rates by progressive
filling, and completion times as transfers finish and free their share. Pure.

A *transfer* moves ``bytes`` from block ``src`` to block ``dst``, split over its paths with
fixed shares (the WCMP weights of the group in force: a flow cannot move its split), so at rate
``r`` it puts ``r x share(path)`` on every link of each path. Rates are max-min fair (TCP-like
elastic sharing): every unfinished transfer's rate grows at the same pace until a link it
crosses is full; transfers crossing a full link keep their rate and the others go on growing
(progressive filling). When a transfer finishes, rates are filled again for the ones left,
until all are done: :func:`completion_times` returns when each finishes.

``usage[t, e]`` is the share of transfer ``t``'s rate on link ``e`` (the sum of its paths'
shares through ``e``), ``capacity[e]`` in Gbit/s; :func:`link_usage` builds it from group
tables on a topology, transit hops going direct as the switches send.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from optimizer.jobs.traffic import BITS_PER_BYTE, JobTraffic

_EPS = 1e-12


def max_min_rates(usage: np.ndarray, capacity: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
    """(T,) Gbit/s: the max-min fair rate of each transfer; 0 for the inactive ones (``active``
    False), ``inf`` for one that crosses no link."""
    count = usage.shape[0]
    live = np.ones(count, dtype=bool) if active is None else active.copy()
    rates = np.zeros(count)
    frozen = ~live
    left = capacity.astype(np.float64).copy()
    while not frozen.all():
        growing = ~frozen
        load = usage[growing].sum(axis=0)  # Gbit/s per link per unit of rate
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.where(load > _EPS, left / load, np.inf)
        step = float(room.min()) if room.size else np.inf
        if not np.isfinite(step):  # the growing transfers cross no link: unbounded
            rates[growing] = np.inf
            break
        rates[growing] += step
        left -= step * load
        full = room <= step * (1 + 1e-9) + _EPS
        frozen |= growing & (usage[:, full] > _EPS).any(axis=1)
    return rates


def completion_times(usage: np.ndarray, capacity: np.ndarray, gbytes: np.ndarray) -> np.ndarray:
    """(T,) seconds until each transfer of ``gbytes`` (GB) finishes, all starting at 0."""
    remaining = gbytes.astype(np.float64) * BITS_PER_BYTE  # Gbit
    done = np.zeros(len(remaining))
    active = remaining > _EPS
    now = 0.0
    while active.any():
        rates = max_min_rates(usage, capacity, active)
        if not np.isfinite(rates[active]).all():  # nothing limits them: done at once
            done[active & ~np.isfinite(rates)] = now
            active &= np.isfinite(rates)
            continue
        if (rates[active] <= _EPS).any():
            raise ValueError("a transfer has no capacity on some link of its paths")
        ends = np.where(active, remaining / np.where(rates > 0, rates, 1.0), np.inf)
        step = float(ends.min())
        now += step
        remaining = np.where(active, remaining - rates * step, remaining)
        finished = active & (remaining <= 1e-9 * np.maximum(gbytes * BITS_PER_BYTE, 1.0))
        done[finished] = now
        active &= ~finished
    return done


def link_usage(
    nodes: Sequence[str],
    tables: Mapping[str, Mapping[str, Mapping[str, int]]],
    capacity: np.ndarray,
    pairs: Sequence[tuple[int, int]],
) -> tuple[np.ndarray, np.ndarray]:
    """(usage [T, links], link capacity [links]) for transfers between block ``pairs`` (indices
    into ``nodes``: the blocks, then any spine switches) routed by ``tables`` ({src: {dst: {via:
    weight}}}; a pair without a group goes direct; a transit block or spine switch sends
    straight on), over the directed links with ``capacity`` [m, m] Gbit/s > 0. Links are
    numbered row-major over the node pairs with capacity."""
    blocks = nodes
    n = len(nodes)
    index = {b: i for i, b in enumerate(nodes)}
    links = [(a, b) for a in range(n) for b in range(n) if a != b and capacity[a, b] > 0]
    number = {link: k for k, link in enumerate(links)}
    usage = np.zeros((len(pairs), len(links)))
    for t, (s, d) in enumerate(pairs):
        hops = tables.get(blocks[s], {}).get(blocks[d]) or {blocks[d]: 1}
        total = float(sum(w for w in hops.values() if w > 0))
        for via, weight in hops.items():
            if weight <= 0:
                continue
            v = index[via]
            share = weight / total
            path = [(s, d)] if v == d else [(s, v), (v, d)]
            for link in path:
                if link not in number:
                    raise ValueError(
                        f"the route {blocks[s]} -> {blocks[d]} via {via} uses a link with no capacity"
                    )
                usage[t, number[link]] += share
    return usage, np.array([capacity[a, b] for a, b in links])


def communication_seconds(
    usage_by_job: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray, float]],
    capacity: np.ndarray,
) -> dict[str, float]:
    """Per job, the communication time of one iteration that its compute does not hide: its
    gradient all-reduce, all jobs' all-reduces sharing the fabric at once (the worst case: they
    start together), plus whatever of its compute-phase transfers (pipeline sends, expert
    all-to-alls, under the same contention) outlasts its compute time.

    ``usage_by_job[name] = (usage, all_reduce_gbytes, compute_gbytes, compute_seconds)`` with
    ``usage`` [T, links] for the job's T block-pair transfers (the same pairs in both phases)."""
    names = list(usage_by_job)
    usage = np.vstack([usage_by_job[n][0] for n in names])
    owner = np.concatenate([[i] * len(usage_by_job[n][0]) for i, n in enumerate(names)])
    reduce = np.concatenate([usage_by_job[n][1] for n in names])
    compute = np.concatenate([usage_by_job[n][2] for n in names])
    reduce_done = completion_times(usage, capacity, reduce)
    compute_done = completion_times(usage, capacity, compute)
    out = {}
    for i, name in enumerate(names):
        mine = owner == i
        exposed = max(0.0, float(compute_done[mine].max(initial=0.0)) - usage_by_job[name][3])
        out[name] = float(reduce_done[mine].max(initial=0.0)) + exposed
    return out


def job_iteration_seconds(
    traffic: Sequence[JobTraffic],
    nodes: Sequence[str],
    tables: Mapping[str, Mapping[str, Mapping[str, int]]],
    capacity: np.ndarray,
) -> dict[str, float]:
    """Per job, the communication time of an iteration (:func:`communication_seconds`) when the
    fabric's links have ``capacity`` [m, m] Gbit/s and ``tables`` route the blocks' traffic."""
    by_job = {}
    for t in traffic:
        pairs, reduce, compute = t.pair_gbytes()
        usage, link_capacity = link_usage(nodes, tables, capacity, pairs)
        by_job[t.job.name] = (usage, reduce, compute, t.job.iteration_seconds)
    return communication_seconds(by_job, link_capacity)
