"""Shared helpers for the topology-engineering and staging tests."""

from __future__ import annotations

import random
from collections.abc import Iterable

from optimizer.fabric import Fabric, Side
from optimizer.topology import Circuit


def wiring_problems(fabric: Fabric, circuits: Iterable[Circuit]) -> list[str]:
    """Check circuits against the wiring table only (independent of the code that made them)."""
    cabled = {(w.ocs, w.port): w for w in fabric.wiring}
    sides = {o.name: o.sides.value for o in fabric.ocs}
    used: set[tuple[str, int]] = set()
    problems = []
    for c in circuits:
        ends = [cabled.get((c.ocs, p)) for p in (c.a, c.b)]
        if None in ends:
            problems.append(f"{c}: uncabled port")
            continue
        a, b = ends
        if a.block == b.block:
            problems.append(f"{c}: joins block {a.block} to itself")
        if sides[c.ocs] == "split" and {a.side, b.side} != {Side.NORTH, Side.SOUTH}:
            problems.append(f"{c}: not north to south")
        for p in (c.a, c.b):
            if (c.ocs, p) in used:
                problems.append(f"{c}: port {p} used twice")
            used.add((c.ocs, p))
    return problems


def swap_rewire(fabric: Fabric, circuits: Iterable[Circuit], swaps: int, seed: int) -> list[Circuit]:
    """Rewire ``swaps`` random pairs of circuits on the same OCS: (n1-s1, n2-s2) -> (n1-s2, n2-s1)."""
    rng = random.Random(seed)
    result = list(circuits)
    done = 0
    for _ in range(swaps * 50):
        if done == swaps:
            break
        i, j = rng.sample(range(len(result)), 2)
        c1, c2 = result[i], result[j]
        if c1.ocs != c2.ocs:
            continue
        n1, s1 = _north_south(fabric, c1)
        n2, s2 = _north_south(fabric, c2)
        blk = {p: fabric.wired_port(c1.ocs, p).block for p in (n1, s1, n2, s2)}
        if blk[n1] == blk[s2] or blk[n2] == blk[s1] or {blk[n1], blk[s1]} == {blk[n1], blk[s2]}:
            continue
        result[i] = Circuit(c1.ocs, n1, s2)
        result[j] = Circuit(c1.ocs, n2, s1)
        done += 1
    return result


def _north_south(fabric: Fabric, c: Circuit) -> tuple[int, int]:
    pa = fabric.wired_port(c.ocs, c.a)
    return (c.a, c.b) if pa.side is Side.NORTH else (c.b, c.a)
