"""A lower bound on the circuits any valid mapping must tear down, that the wiring can reach.

The pair-level bound ``sum over pairs of max(0, L_old - L_new)`` ignores that every OCS
is a matching between north and south ports: with one north and one south port per block
per OCS (Jupiter's shape) a pair cannot lose a circuit on one OCS and gain it on another
without moving other circuits too, so no mapping reaches it. This module bounds the
exact problem instead (the one ``benchmarks/mapping_optimum.py`` solves as a MIP on small
fabrics): choose per OCS a matching of north to south ports, so that every pair gets its
``L_new`` circuits and every domain at most its share, keeping as many of today's
circuits as possible.

Lagrangian relaxation: the pair and domain constraints are priced (multipliers ``lam``
and ``mu >= 0``); what is left splits into one assignment problem per OCS, solved
exactly (``scipy.optimize.linear_sum_assignment``). For *any* multipliers the result is
an upper bound on the circuits kept, so ``current - floor(bound)`` is a valid lower
bound on the circuits torn down; subgradient steps (Polyak, towards a known mapping's
count) tighten it towards the LP relaxation's value. On the 8-block instances it matched
the LP relaxation (618 vs 620, 676 vs 676), and the exact MIP optimum sits at most one
above the LP there.

Not part of the product (it takes tens of seconds at 64 blocks): the ToE benchmark
reports the mapping's tear-downs against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from optimizer.fabric import Fabric
from optimizer.mapping import build_port_model, domain_layout
from optimizer.topology import Circuit, Topology


@dataclass(frozen=True)
class _Ocs:
    domain: int
    north_block: np.ndarray  # per north port, its block
    south_block: np.ndarray
    keep_bonus: np.ndarray  # 1 where north port i and south port j are joined today
    same_block: np.ndarray


def _instance(
    fabric: Fabric, target: Topology, current: Sequence[Circuit]
) -> tuple[list[_Ocs], np.ndarray, np.ndarray, int]:
    model = build_port_model(fabric, current)
    n = fabric.n_blocks
    domains = model.domains()
    per: list[_Ocs] = []
    for o in model.ocs:
        north = [(a, p) for a in range(n) for p in o.north[a]]
        south = [(b, p) for b in range(n) for p in o.south[b]]
        n_pos = {p: i for i, (_, p) in enumerate(north)}
        s_pos = {p: i for i, (_, p) in enumerate(south)}
        bonus = np.zeros((len(north), len(south)))
        for circuits in o.current.values():
            for n_port, s_port in circuits:
                bonus[n_pos[n_port], s_pos[s_port]] = 1.0
        nb = np.array([a for a, _ in north], dtype=np.int64)
        sb = np.array([b for b, _ in south], dtype=np.int64)
        per.append(_Ocs(domains.index(o.domain), nb, sb, bonus, nb[:, None] == sb[None, :]))
    index = [target.blocks.index(b) for b in fabric.block_names]
    wanted = np.asarray(target.counts, dtype=np.int64)[np.ix_(index, index)]
    limit = domain_layout(model, wanted).limit  # as map_topology (rebalance=False)
    keepable = int(sum(o.keep_bonus.sum() for o in per))
    return per, wanted, limit, keepable


def wiring_lower_bound(
    fabric: Fabric,
    target: Topology,
    current: Sequence[Circuit],
    known_kept: int,
    iterations: int = 400,
) -> int:
    """Fewest circuits of ``current`` any valid mapping of ``target`` must tear down (a
    valid bound after any number of ``iterations``; ``known_kept`` is what some mapping
    keeps, the subgradient's target)."""
    per, wanted, limit, keepable = _instance(fabric, target, current)
    n = wanted.shape[0]
    n_domains = limit.shape[0]
    upper = np.triu_indices(n, 1)
    lam = np.zeros((n, n))
    mu = np.zeros((n_domains, n, n))
    best = float(keepable)  # keeping every keepable circuit is an upper bound on kept
    theta, stale = 1.0, 0
    for _ in range(iterations):
        placed = np.zeros((n_domains, n, n))
        value = 0.0
        for o in per:
            price = lam + mu[o.domain]
            weight = o.keep_bonus - price[o.north_block][:, o.south_block]
            weight[o.same_block] = -1e9
            weight = np.maximum(weight, 0.0)  # a port may stay unused
            rows, cols = linear_sum_assignment(weight, maximize=True)
            used = weight[rows, cols] > 1e-12
            rows, cols = rows[used], cols[used]
            value += float(weight[rows, cols].sum())
            np.add.at(placed[o.domain], (o.north_block[rows], o.south_block[cols]), 1)
        placed = placed + placed.transpose(0, 2, 1)
        bound = value + float((lam[upper] * wanted[upper]).sum())
        bound += sum(float((mu[d][upper] * limit[d][upper]).sum()) for d in range(n_domains))
        if bound < best - 1e-9:
            best, stale = bound, 0
        else:
            stale += 1
            if stale >= 20:
                theta, stale = theta / 2, 0
        g_pair = np.zeros((n, n))
        g_pair[upper] = wanted[upper] - placed.sum(axis=0)[upper]
        g_domain = np.zeros((n_domains, n, n))
        for d in range(n_domains):
            g_domain[d][upper] = limit[d][upper] - placed[d][upper]
        g_domain = np.where((mu <= 0) & (g_domain > 0), 0.0, g_domain)
        norm = float((g_pair**2).sum() + (g_domain**2).sum())
        if norm == 0 or theta < 1e-4:
            break
        step = theta * max(bound - known_kept, 1e-3) / norm
        lam -= step * (g_pair + g_pair.T)
        mu = np.maximum(0.0, mu - step * (g_domain + g_domain.transpose(0, 2, 1)))
    return len(current) - int(np.floor(best + 1e-6))
