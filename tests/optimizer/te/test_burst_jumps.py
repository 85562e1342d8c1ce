"""Which jump the burst scenarios use (optimizer/te/scenarios.py: halves_agree, with_bursts):
each pair's own when the window's halves agree on which pairs jump, else the burstiest pair's."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.te.paths import all_pairs, build_link_graph, candidate_paths
from optimizer.te.scenarios import AGREE, PathOperator, halves_agree, with_bursts
from optimizer.topology import mesh_topology
from optimizer.traffic import gravity_matrix

MATRICES = 32


def _window(fabric, persistent: bool, seed: int = 5) -> np.ndarray:
    """(MATRICES, pairs) demands: noise around a gravity matrix, and jumps of a third of the
    pairs, each to its own size; ``persistent``: the same pairs, by the same size, in both
    halves of the window, else different pairs in each half."""
    rng = np.random.default_rng(seed)
    src, dst = all_pairs(fabric.n_blocks)
    base = gravity_matrix(fabric, 3, 0.4).gbps[src, dst]
    demands = base * rng.lognormal(0.0, 0.05, (MATRICES, len(base)))
    pairs = len(base)
    first = rng.choice(pairs, pairs // 3, replace=False)
    others = np.setdiff1d(np.arange(pairs), first)
    second = first if persistent else rng.choice(others, pairs // 3, replace=False)
    size = rng.uniform(2.0, 8.0, pairs)
    half = MATRICES // 2
    for offset, jumping in ((0, first), (half, second)):
        for p in jumping:
            demands[offset + rng.integers(half), p] *= size[p]
    return demands


def _operator(fabric) -> PathOperator:
    graph = build_link_graph(fabric, mesh_topology(fabric))
    src, dst = all_pairs(fabric.n_blocks)
    return PathOperator(graph, candidate_paths(graph, src, dst))


def test_halves_agree_when_the_same_pairs_jump_in_both_halves(fabric8) -> None:
    assert halves_agree(_window(fabric8, persistent=True)) >= AGREE
    assert halves_agree(_window(fabric8, persistent=False)) < AGREE
    assert halves_agree(_window(fabric8, persistent=True)[:6]) == 0.0  # too few matrices to tell


def test_persistent_jumps_give_each_pair_its_own_burst(fabric8) -> None:
    demands = _window(fabric8, persistent=True)
    scale = np.ones(len(demands))
    out, _, shares = with_bursts(_operator(fabric8), demands, scale, None, 0.2)
    fractions = demands / demands.sum(axis=1, keepdims=True)
    own = (fractions - fractions.mean(axis=0)).max(axis=0)
    mean = demands.mean(axis=0)
    raised = out[len(demands) :] - mean  # one row a pair (every pair jumps a little)
    assert len(raised) == len(mean)
    assert np.diag(raised) == pytest.approx(own * mean.sum())
    assert len(set(np.round(np.diag(raised), 6))) > 1  # not one size for all
    assert shares.sum() == pytest.approx(1.0) and shares[len(demands) :].sum() == pytest.approx(0.2)


def test_jumps_that_move_between_pairs_give_every_pair_the_largest(fabric8) -> None:
    demands = _window(fabric8, persistent=False)
    out, _, _ = with_bursts(_operator(fabric8), demands, np.ones(len(demands)), None, 0.2)
    fractions = demands / demands.sum(axis=1, keepdims=True)
    largest = float((fractions - fractions.mean(axis=0)).max())
    mean = demands.mean(axis=0)
    assert np.diag(out[len(demands) :] - mean) == pytest.approx(np.full(len(mean), largest * mean.sum()))
    # the same window with agreement demanded at any level: each pair's own again
    own, _, _ = with_bursts(_operator(fabric8), demands, np.ones(len(demands)), None, 0.2, agree=-np.inf)
    assert np.diag(own[len(demands) :] - mean).max() == pytest.approx(largest * mean.sum())
    assert np.diag(own[len(demands) :] - mean).min() < 0.5 * largest * mean.sum()


def test_halves_that_mirror_each_other_exactly_give_a_finite_answer() -> None:
    # two regimes, each the reverse of the other: the halves' jumps correlate at exactly -1
    low, high = np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    demands = np.array([low] * 4 + [high] * 4)
    assert np.isfinite(halves_agree(demands)) and halves_agree(demands) < AGREE
