"""Helpers for the mapping tests and benchmark: random and perturbed topologies."""

from __future__ import annotations

import numpy as np

from optimizer.config import generate_fabric
from optimizer.fabric import Fabric
from optimizer.topology import Topology


def random_topology(fabric: Fabric, rng: np.random.Generator, fill: float = 1.0) -> Topology:
    """A random symmetric topology using about ``fill`` of every block's uplinks."""
    n = fabric.n_blocks
    left = np.array([int(b.uplinks * fill) for b in fabric.blocks])
    counts = np.zeros((n, n), dtype=np.int64)
    for _ in range(int(left.sum())):
        open_blocks = np.nonzero(left > 0)[0]
        if open_blocks.size < 2:
            break
        a, b = rng.choice(open_blocks, 2, replace=False)
        counts[a, b] += 1
        counts[b, a] += 1
        left[a] -= 1
        left[b] -= 1
    return Topology(fabric.block_names, counts)


def perturb(top: Topology, swaps: int, rng: np.random.Generator, hot_share: float = 0.8) -> Topology:
    """Move circuits between pairs keeping every block's degree: ``swaps`` times replace
    a-b and c-d by a-c and b-d. With probability ``hot_share`` a-c is one of ``n`` hot
    pairs, which makes the result skewed like a real traffic-driven topology."""
    counts = np.array(top.counts)
    n = counts.shape[0]
    if n < 4:
        return top
    hot = [tuple(rng.choice(n, 2, replace=False)) for _ in range(n)]
    done = attempts = 0
    while done < swaps and attempts < 50 * swaps + 100:
        attempts += 1
        if rng.random() < hot_share:
            a, c = hot[rng.integers(len(hot))]
            b, d = rng.choice([x for x in range(n) if x not in (a, c)], 2, replace=False)
        else:
            a, b, c, d = rng.choice(n, 4, replace=False)
        if counts[a, b] > 0 and counts[c, d] > 0:
            for x, y, by in ((a, b, -1), (c, d, -1), (a, c, 1), (b, d, 1)):
                counts[x, y] += by
                counts[y, x] += by
            done += 1
    return Topology(top.blocks, counts)


def as_pairs(top: Topology) -> dict[tuple[str, str], int]:
    return {(a, b): c for a, b, c in top.links()}


def gravity_topology(fabric: Fabric, rng: np.random.Generator, skew: float = 1.0) -> Topology:
    """A topology shaped like a skewed gravity traffic matrix, using every uplink.

    Pair weights are ``w_a * w_b * noise_ab`` with log-normal block weights and pair noise
    (sigma ``skew``); the shares are scaled (Sinkhorn) so every block's row sums to its
    uplinks, floored, and the leftover ports paired up by the largest fractional parts.
    """
    n = fabric.n_blocks
    uplinks = np.array([b.uplinks for b in fabric.blocks], dtype=float)
    weight = rng.lognormal(0.0, skew, n)
    noise = rng.lognormal(0.0, skew, (n, n))
    share = np.outer(weight, weight) * (noise + noise.T) / 2
    np.fill_diagonal(share, 0.0)
    for _ in range(200):
        share *= (uplinks / share.sum(axis=1))[:, None]
        share = (share + share.T) / 2
    counts = np.floor(share).astype(np.int64)
    left = uplinks.astype(np.int64) - counts.sum(axis=1)
    frac = share - counts
    order = np.dstack(np.unravel_index(np.argsort(-frac, axis=None), frac.shape))[0]
    for a, b in order:
        if a < b and left[a] > 0 and left[b] > 0:
            counts[a, b] += 1
            counts[b, a] += 1
            left[a] -= 1
            left[b] -= 1
    return Topology(fabric.block_names, counts)


def jupiter_like(blocks: int = 8, ocs: int = 32, domains: int = 4):
    """Every block has one north and one south port on every OCS."""
    return generate_fabric(blocks, 2 * ocs, ocs, 2 * blocks + 8, domains=domains)
