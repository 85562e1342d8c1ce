"""Proof of how far any safe sequence of stages gets on a hot fabric, by exhaustive look-ahead
(issue 30, item 2: the 16-block rings and shifts that stop after one step at stage limit 0.8).

Two facts make a finite proof possible. (1) Adding capacity never raises the min-MLU and
draining never lowers it (TE's LP only gains or loses columns' capacity). (2) Where every
block's uplinks are in use, a stage that changes anything drains at least two circuits of
one OCS: a drained circuit frees one port on each of its two blocks, and with no other free
uplink the only circuit those two ports can make is the one just drained. So a stage is
possible from a topology only if some *two-circuit drain* on one OCS keeps the MLU within
the stage rule's limit (``max(threshold, MLU now)``), and a larger stage only if every two of
its circuits on one OCS do (by (1), its drain is worse than each of theirs).

So every stage possible from a topology is found by enumeration: the two-circuit drains on
each OCS (TE for each distinct pair-count drain, the hose floor first), the sets of circuits
of one OCS whose every two form a safe drain (up to :data:`MAX_STAGE_CIRCUITS`), every
re-pairing of their ports, and their combinations over the OCSes of one failure domain (the
combined drain checked whole). From today's topology the search visits every topology a
sequence of such stages reaches, breadth first; when it ends by itself (no cut), the lowest
MLU among them is the best any safe sequence reaches: a proof, as
:mod:`optimizer.toe.hose` gives for the skewed case. It covers the sequences whose stages
make as many circuits as they drain (the planner's stages; a stage that leaves uplinks idle
only lowers capacity, and the next stage's drain counts against a limit no higher).

    python -m benchmarks.hot.lookahead [--sizes 16] [--kinds ring shift] [--load 0.9]
        [--stage-limit 0.8] [--max-topologies 2000] [--out benchmarks/RESULTS_hot.md]
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.jobs.results_file import write_section
from benchmarks.machine import machine_summary
from optimizer.fabric import Fabric, OcsSides, Side
from optimizer.te import TeSolver
from optimizer.toe.hose import block_demand, free_uplinks, speed_matrix, spine_capacity
from optimizer.toe.swap_rank import SwapRanker
from optimizer.topology import Circuit, Topology, uniform_mesh
from optimizer.traffic import TrafficMatrix
from tests.support.hot_fabrics import mesh_scaled, mixed_fabric, ring, shift

ROOT = Path(__file__).resolve().parents[2]
BEGIN = "### Look-ahead proof: how far safe stages get on the 16-block rings and shifts"
END = "<!-- end: hot lookahead -->"
_TOL = 1e-9
#: Circuits of one OCS in one first stage, at most (every two of them must be a safe drain), and
#: first stages touching several OCSes of one domain enumerated, at most: beyond either the
#: enumeration is cut and proves nothing.
MAX_STAGE_CIRCUITS = 4
MAX_COMBINATIONS = 100_000
#: Topologies the breadth-first search visits, at most.
MAX_TOPOLOGIES = 2000


@dataclass
class Proof:
    start: float
    drains: int  # distinct two-circuit drains checked from today's
    safe_drains: int  # of which within the limit
    topologies: int  # topologies reached by safe sequences (today's not counted)
    depth: int  # stages of the longest sequence explored
    best: float  # lowest MLU any of them has
    best_depth: int  # stages to the best
    free_ports: bool  # some block has a free uplink: fact (2) does not hold
    truncated: bool  # the enumeration was cut (a stage larger than it goes, or too many)
    te_checks: int
    seconds: float

    @property
    def proven(self) -> bool:
        return not self.free_ports and not self.truncated


class Fabric2:
    """The fabric, the matrices and a cached TE min-MLU over pair counts."""

    def __init__(self, fabric: Fabric, matrices: Sequence[TrafficMatrix]) -> None:
        self.fabric = fabric
        self.matrices = list(matrices)
        self.solver = TeSolver(fabric)
        self.cache: dict[bytes, float] = {}
        self.pair_demand = np.max([np.maximum(tm.gbps, tm.gbps.T) for tm in matrices], axis=0)
        self.demand = block_demand(matrices)

    def counts(self, circuits: set[Circuit] | frozenset[Circuit]) -> np.ndarray:
        return np.asarray(Topology.from_circuits(self.fabric, circuits).counts)

    def mlu(self, counts: np.ndarray) -> float:
        key = counts.tobytes()
        if key not in self.cache:
            topo = Topology(self.fabric.block_names, counts)
            self.cache[key] = max(self.solver.min_mlu(topo, tm) for tm in self.matrices)
        return self.cache[key]

    def ranker(self, counts: np.ndarray) -> SwapRanker:
        fabric = self.fabric
        return SwapRanker(fabric, counts, self.pair_demand, speed_matrix(fabric), self.demand,
                          spine_capacity(fabric))


def safe_pairs(
    fx: Fabric2, state: frozenset[Circuit], limit: float
) -> tuple[dict[str, set[frozenset[Circuit]]], int, int]:
    """Per OCS, the two-circuit drains within ``limit`` (as sets of two circuits), and how many
    distinct pair-count drains were checked and found safe."""
    fabric = fx.fabric
    counts = fx.counts(state)
    ranker = fx.ranker(counts)
    index = ranker.index
    verdict: dict[tuple[tuple[int, int], ...], bool] = {}
    out: dict[str, set[frozenset[Circuit]]] = {}
    by_ocs: dict[str, list[tuple[Circuit, int, int]]] = {}
    for c in sorted(state):
        a, b = c.blocks(fabric)
        by_ocs.setdefault(c.ocs, []).append((c, index[a], index[b]))
    for ocs, items in by_ocs.items():
        for (c1, i1, j1), (c2, i2, j2) in itertools.combinations(items, 2):
            gone = ((min(i1, j1), max(i1, j1)), (min(i2, j2), max(i2, j2)))
            key = tuple(sorted(gone))
            if key not in verdict:
                if ranker.drain_floor(gone) > limit * (1 + _TOL):
                    verdict[key] = False
                else:
                    drained = counts.copy()
                    for i, j in gone:
                        drained[i, j] -= 1
                        drained[j, i] -= 1
                    verdict[key] = fx.mlu(drained) <= limit + _TOL
            if verdict[key]:
                out.setdefault(ocs, set()).add(frozenset((c1, c2)))
    return out, len(verdict), sum(verdict.values())


def _cliques(edges: set[frozenset[Circuit]], most: int) -> Iterator[tuple[Circuit, ...]]:
    """Every set of 2..``most`` circuits whose every two are an edge."""
    nodes = sorted({c for e in edges for c in e})
    adjacent = {c: {d for e in edges if c in e for d in e if d != c} for c in nodes}

    def grow(chosen: tuple[Circuit, ...], candidates: list[Circuit]) -> Iterator[tuple[Circuit, ...]]:
        for k, c in enumerate(candidates):
            group = (*chosen, c)
            if len(group) >= 2:
                yield group
            if len(group) < most:
                yield from grow(group, [d for d in candidates[k + 1:] if d in adjacent[c]])

    yield from grow((), nodes)


def _repairings(fabric: Fabric, circuits: tuple[Circuit, ...]) -> Iterator[tuple[Circuit, ...]]:
    """Every other way to join the ports of ``circuits`` (one OCS) into circuits between blocks."""
    ocs = circuits[0].ocs
    ports = sorted(p for c in circuits for p in (c.a, c.b))
    block = {p: fabric.wired_port(ocs, p) for p in ports}
    original = frozenset(circuits)
    if fabric.ocs_named(ocs).sides is OcsSides.SPLIT:
        north = [p for p in ports if block[p].side is Side.NORTH]  # type: ignore[union-attr]
        south = [p for p in ports if block[p].side is Side.SOUTH]  # type: ignore[union-attr]
        matchings: Iterator[list[tuple[int, int]]] = (list(zip(north, perm, strict=True))
                                                     for perm in itertools.permutations(south))
    else:
        matchings = _perfect_matchings(ports)
    for pairs in matchings:
        new = tuple(Circuit(ocs, a, b) for a, b in pairs)
        if frozenset(new) == original:
            continue
        if any(block[c.a].block == block[c.b].block for c in new):  # type: ignore[union-attr]
            continue
        yield new


def _perfect_matchings(ports: list[int]) -> Iterator[list[tuple[int, int]]]:
    if not ports:
        yield []
        return
    first, rest = ports[0], ports[1:]
    for k, other in enumerate(rest):
        for more in _perfect_matchings(rest[:k] + rest[k + 1:]):
            yield [(first, other), *more]


def next_stages(
    fx: Fabric2, state: frozenset[Circuit], limit: float
) -> tuple[set[frozenset[Circuit]], int, int, bool]:
    """Every topology one safe stage reaches from ``state`` (each stage making as many circuits as
    it drains), the distinct two-circuit drains checked and found safe, and whether the
    enumeration was cut."""
    fabric = fx.fabric
    pairs, checked, safe = safe_pairs(fx, state, limit)
    truncated = False
    # per OCS: sets whose every two circuits are a safe drain, re-paired
    per_ocs: dict[str, list[tuple[tuple[Circuit, ...], tuple[Circuit, ...]]]] = {}
    for ocs, edges in pairs.items():
        for group in _cliques(edges, MAX_STAGE_CIRCUITS + 1):
            if len(group) > MAX_STAGE_CIRCUITS:
                truncated = True
                continue
            if len(group) > 2 and fx.mlu(fx.counts(state - set(group))) > limit + _TOL:
                continue
            per_ocs.setdefault(ocs, []).extend((group, new) for new in _repairings(fabric, group))
    by_domain: dict[int, list[str]] = {}
    for ocs in per_ocs:
        by_domain.setdefault(fabric.ocs_named(ocs).domain, []).append(ocs)
    reached: set[frozenset[Circuit]] = set()
    for ocses in by_domain.values():  # a stage touches the OCSes of one failure domain
        options = [[None, *per_ocs[o]] for o in sorted(ocses)]
        if np.prod([float(len(o)) for o in options]) > MAX_COMBINATIONS:
            truncated = True
            options = [[None, *per_ocs[o]] if k == 0 else [None] for k, o in enumerate(sorted(ocses))]
        for combo in itertools.product(*options):
            parts = [p for p in combo if p is not None]
            if not parts:
                continue
            removed = {c for g, _ in parts for c in g}
            if len(parts) > 1 and fx.mlu(fx.counts(state - removed)) > limit + _TOL:
                continue
            reached.add(frozenset((state - removed) | {c for _, n in parts for c in n}))
    return reached, checked, safe, truncated


def prove(
    fabric: Fabric,
    matrices: Sequence[TrafficMatrix],
    threshold: float,
    current: Sequence[Circuit] | None = None,
    max_topologies: int = MAX_TOPOLOGIES,
) -> Proof:
    """Every topology safe sequences reach from ``current`` (default: the mesh), breadth first,
    and the lowest MLU among them: the best any safe sequence reaches when the search ends by
    itself (not cut by ``max_topologies`` or the enumeration's limits)."""
    started = time.perf_counter()
    fx = Fabric2(fabric, matrices)
    state = frozenset(uniform_mesh(fabric) if current is None else current)
    start = fx.mlu(fx.counts(state))
    seen = {state}
    frontier = [state]
    best, best_depth, depth, total = start, 0, 0, 0
    checked = safe = -1
    truncated = False
    while frontier:
        following: list[frozenset[Circuit]] = []
        for topo in frontier:
            mlu = fx.mlu(fx.counts(topo))
            reached, n_checked, n_safe, cut = next_stages(fx, topo, max(threshold, mlu))
            if checked < 0:
                checked, safe = n_checked, n_safe
            truncated |= cut
            for after in reached:
                if after in seen:  # what follows depends on the circuits, not their counts only
                    continue
                seen.add(after)
                following.append(after)
                m = fx.mlu(fx.counts(after))
                if m < best * (1 - 1e-9):
                    best, best_depth = m, depth + 1
        total += len(following)
        if following:
            depth += 1
        if total > max_topologies:
            truncated = True
            break
        frontier = following
    free = bool((free_uplinks(fabric, fx.counts(state)) > 0).any())
    return Proof(start, checked, safe, total, depth, best, best_depth, free, truncated, len(fx.cache),
                 time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[16])
    parser.add_argument("--kinds", nargs="+", default=["ring", "shift"], choices=("ring", "shift"))
    parser.add_argument("--load", type=float, default=0.9)
    parser.add_argument("--stage-limit", type=float, default=0.8)
    parser.add_argument("--spine", action="store_true", help="the fabrics with a spine switch too")
    parser.add_argument("--max-topologies", type=int, default=MAX_TOPOLOGIES,
                        help="topologies the search visits before it is cut (a cut proves nothing)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "RESULTS_hot.md"))
    args = parser.parse_args(argv)
    rows = []
    for n in args.sizes:
        for spine_links in (0, 2) if args.spine else (0,):
            fabric = mixed_fabric(n, spine_links=spine_links)
            for kind in args.kinds:
                tm = mesh_scaled(fabric, (ring if kind == "ring" else shift)(fabric), args.load)
                p = prove(fabric, [tm], args.stage_limit, max_topologies=args.max_topologies)
                if p.proven:
                    verdict = f"proven: no safe sequence reaches below {p.best:.4f}"
                else:
                    why = "a block has a free uplink" if p.free_ports else "enumeration cut"
                    verdict = f"not proven ({why}): {p.best:.4f} found"
                rows.append(
                    f"| {fabric.name} {kind} x{args.load:g} | {p.start:.4f} | {p.drains} | "
                    f"{p.safe_drains} | {p.topologies} | {p.depth} | {p.best:.4f} ({p.best_depth} stages) | "
                    f"{p.te_checks} | {p.seconds:.0f} | {verdict} |"
                )
                print(rows[-1], flush=True)
    words = (f"--sizes {' '.join(map(str, args.sizes))} --kinds {' '.join(args.kinds)} "
             f"--load {args.load:g} --stage-limit {args.stage_limit:g}{' --spine' if args.spine else ''}"
             f"{'' if args.max_topologies == MAX_TOPOLOGIES else f' --max-topologies {args.max_topologies}'}")
    lines = [
        BEGIN,
        "",
        f"`python -m benchmarks.hot.lookahead {words}` on {machine_summary()}.",
        "",
        "| case | mesh MLU | two-circuit drains from the mesh (distinct) | safe | topologies reached | "
        "longest sequence | lowest MLU reached | TE checks | seconds | verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        *rows,
        "",
        END,
    ]
    write_section(Path(args.out), BEGIN, END, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
