"""Weights judged on link loads (issue 29): the integer weights keep the LP's MLU within the
bound on every link, not only per group, and every switch stays within its weight budget."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.config import load_fabric
from optimizer.errors import ConfigError
from optimizer.fabric import Block, Fabric, Ocs, SpineSwitch, build_fabric
from optimizer.te import TeSolver, solve_te
from optimizer.traffic import TrafficMatrix, gravity_matrix, hotspot_matrix, ring_matrix

BOUND = 1.02


def hot_fabric(n: int, spine: bool, seed: int) -> Fabric:
    """Blocks of 100G or 200G at random, 8 OCSes in 4 domains, optionally a 100G spine."""
    rng = np.random.default_rng(seed)
    blocks = [Block(f"b{i:02d}", 32, float(rng.choice([100.0, 200.0]))) for i in range(n)]
    ocs = [Ocs(f"o{k}", n * 4 + 4, k % 4) for k in range(8)]
    switches = (SpineSwitch("s1", tuple((b.name, 4) for b in blocks), 100.0),) if spine else ()
    return build_fabric(f"hot{n}", blocks, ocs, switches)


def at_load(fabric: Fabric, tm: TrafficMatrix, load: float) -> TrafficMatrix:
    return tm.scaled(load / TeSolver(fabric).min_mlu(None, tm))


def test_issue_case_24_blocks_skewed_keeps_the_lp_mlu_on_every_link() -> None:
    # The per-group reduction alone gives 1.0244x the LP's MLU here (each group within 1.02).
    fabric = hot_fabric(24, spine=True, seed=1)
    tm = at_load(fabric, gravity_matrix(fabric, 1, 0.5, skew=2.0), 0.9)
    result = solve_te(fabric, None, tm)
    assert result.mlu_quantized <= result.mlu * BOUND * (1 + 1e-9)
    assert max(link.utilisation for link in result.links) == pytest.approx(result.mlu_quantized)
    assert all(g.entries <= 128 for g in result.groups)


@pytest.mark.parametrize(
    "config",
    ["fabric-4", "fabric-8", "fabric-hybrid-4", "fabric-hybrid-8", "fabric-pod-a", "fabric-pod-b"],
)
def test_configs_keep_the_lp_mlu_within_the_bound(config: str) -> None:
    fabric = load_fabric(f"configs/{config}.yaml")
    matrices = [
        gravity_matrix(fabric, 3, 0.5, skew=2.0),
        gravity_matrix(fabric, 3, 0.5),
        hotspot_matrix(fabric, 3, 0.5),
        ring_matrix(fabric, 3, 0.5),
    ]
    for tm in matrices:
        for load in (0.6, 1.0, 1.3):
            result = solve_te(fabric, None, at_load(fabric, tm, load))
            assert result.mlu_quantized <= result.mlu * BOUND * (1 + 1e-9), (config, load)


def test_switch_budget_holds_for_every_switch() -> None:
    fabric = hot_fabric(16, spine=False, seed=2)
    tm = at_load(fabric, gravity_matrix(fabric, 2, 0.5, skew=1.5), 0.9)
    free = solve_te(fabric, None, tm)
    used = _entries_per_switch(free)
    budget = max(used.values()) // 2  # binds on the busiest switches
    tight = solve_te(fabric, None, tm, switch_budget=budget)
    assert max(_entries_per_switch(tight).values()) <= budget
    assert all(g.entries >= 1 for g in tight.groups)
    assert tight.mlu_quantized < free.baseline_mlu  # still better than ECMP on the mesh


def test_switch_budget_below_one_entry_per_group_is_refused() -> None:
    fabric = hot_fabric(8, spine=False, seed=1)
    tm = gravity_matrix(fabric, 1, 0.5)
    with pytest.raises(ConfigError, match="switch_budget"):
        solve_te(fabric, None, tm, switch_budget=6)  # 7 groups per switch
    with pytest.raises(ConfigError, match="switch_budget"):
        TeSolver(fabric, switch_budget=0)


def _entries_per_switch(result) -> dict[str, int]:  # type: ignore[no-untyped-def]
    used: dict[str, int] = {}
    for g in result.groups:
        used[g.src] = used.get(g.src, 0) + g.entries
    return used


@pytest.mark.slow
def test_hot_24_spine_hotspot_keeps_the_lp_mlu_on_every_link() -> None:
    # Hot pairs sharing links: each coarse group at its best total against the others left
    # 1.0268x; the search over totals (optimizer.te.totalsearch) gets within the bound
    # (1.0360x before the bulk moves and the search).
    fabric = hot_fabric(24, spine=True, seed=1)
    result = solve_te(fabric, None, at_load(fabric, hotspot_matrix(fabric, 1, 0.5), 0.9))
    assert result.mlu_quantized <= result.mlu * BOUND * (1 + 1e-9)


@pytest.mark.parametrize("n_links", [1, 4032, 2**16, 2**16 + 1, 200_000])
def test_order_by_link_is_the_stable_argsort(n_links: int) -> None:
    """The link repair groups its path entries by link with a 16-bit radix sort where the link
    indices fit: the very order of the 64-bit stable sort, ties in entry order."""
    from optimizer.te.paths import order_by_link

    rng = np.random.default_rng(n_links)
    links = rng.integers(0, n_links, 50_000)
    links[:100] = n_links - 1  # the largest index, and many ties
    order = order_by_link(links, n_links)
    assert np.array_equal(order, np.argsort(links, kind="stable"))
    assert np.all(np.diff(links[order]) >= 0)
