"""Cutting a circuit change into safe, ordered stages.

Each stage lies inside one failure domain. Before a stage its removed circuits are
drained, so the predicted matrices must route on what is left with an MLU of at most
``max(threshold, MLU where the stage starts)``: a healthy fabric stays under the
threshold and a congested one never gets worse. For each domain the whole remaining change
is tried first, then halves, quarters and so on of it, taking the most lightly used
circuits first; a circuit is added in the first stage after which both its ports are free.
Domains that are blocked are retried after the others have moved (their added circuits may
be what unblocks them). If nothing can move, :class:`StagingBlocked` names the block pair.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from optimizer.errors import InfeasibleError
from optimizer.fabric import Fabric
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.8
_TOL = 1e-9
_SINGLE_TRIES = 4  # when one circuit cannot go, try one of this many other pairs before giving up

#: fabric, topology, matrix -> the minimum MLU traffic engineering reaches.
MluFunction = Callable[[Fabric, Topology, TrafficMatrix], float]


class StagingBlocked(InfeasibleError):
    """No split of the change keeps the drained MLU within the limit."""

    def __init__(self, domain: int, pair: tuple[str, str], mlu: float, limit: float) -> None:
        self.domain = domain
        self.pair = pair
        self.mlu = mlu
        self.limit = limit
        super().__init__(
            f"cannot stage the change in failure domain {domain}: draining even one circuit "
            f"between {pair[0]} and {pair[1]} would raise the MLU to {mlu:.4f}, over the limit "
            f"{limit:.4f}; raise the threshold or change less"
        )


@dataclass(frozen=True)
class Stage:
    domain: int
    remove: tuple[Circuit, ...]
    add: tuple[Circuit, ...]
    mlu_start: float  # MLU of the topology the stage starts from
    mlu_drained: float  # MLU with the stage's removed circuits drained
    mlu_after: float  # MLU once the stage's circuits are added

    def to_json(self, fabric: Fabric) -> dict[str, object]:
        return {
            "domain": self.domain,
            "remove": [c.to_json(fabric) for c in self.remove],
            "add": [c.to_json(fabric) for c in self.add],
            "mlu_start": _num(self.mlu_start),
            "mlu_drained": _num(self.mlu_drained),
            "mlu_after": _num(self.mlu_after),
        }


@dataclass(frozen=True)
class StagingPlan:
    stages: tuple[Stage, ...]
    threshold: float
    start_mlu: float
    final_topology: Topology
    final_mlu: float

    def to_json(self, fabric: Fabric) -> list[dict[str, object]]:
        return [s.to_json(fabric) for s in self.stages]


def stage_changes(
    fabric: Fabric,
    current: Iterable[Circuit],
    target: Iterable[Circuit],
    demands: TrafficMatrix | Sequence[TrafficMatrix],
    evaluate: MluFunction,
    threshold: float = DEFAULT_THRESHOLD,
) -> StagingPlan:
    """Order the change ``current -> target`` into stages; see the module docstring.

    ``evaluate(fabric, topology, matrix) -> MLU`` is the min-MLU traffic engineering used
    to check every drained topology (worst over the matrices).
    """
    if not threshold > 0 or math.isinf(threshold):
        raise InfeasibleError(f"the staging threshold must be a finite number > 0, got {threshold}")
    matrices = [demands] if isinstance(demands, TrafficMatrix) else list(demands)
    state = set(current)
    goal = set(target)
    to_remove: dict[int, set[Circuit]] = {}
    to_add: dict[int, set[Circuit]] = {}
    for c in state - goal:
        to_remove.setdefault(_domain(fabric, c), set()).add(c)
    for c in goal - state:
        to_add.setdefault(_domain(fabric, c), set()).add(c)

    def mlu_of(circuits: set[Circuit]) -> float:
        topo = Topology.from_circuits(fabric, circuits)
        return max((evaluate(fabric, topo, tm) for tm in matrices if tm.total() > 0), default=0.0)

    mlu_now = start_mlu = mlu_of(state)
    stages: list[Stage] = []
    domains = sorted(set(to_remove) | set(to_add))
    blocked: StagingBlocked | None = None
    while any(to_remove.get(d) or to_add.get(d) for d in domains):
        moved = False
        for domain in domains:
            while to_remove.get(domain) or to_add.get(domain):
                pending = to_remove.get(domain, set())
                step = _next_stage(fabric, state, domain, pending, matrices, mlu_now, threshold, mlu_of)
                if isinstance(step, StagingBlocked):
                    blocked = step
                    break
                removed, mlu_drained = step
                drained = state - set(removed)
                used = _used_ports(drained)
                adds = tuple(sorted(c for c in to_add.get(domain, set()) if _ports_free(c, used)))
                if not removed and not adds:
                    raise InfeasibleError(
                        f"failure domain {domain}: circuits to add use ports that no stage frees"
                    )
                state = drained | set(adds)
                to_remove[domain] = to_remove.get(domain, set()) - set(removed)
                to_add[domain] = to_add.get(domain, set()) - set(adds)
                mlu_after = mlu_of(state) if adds else mlu_drained
                stages.append(Stage(domain, tuple(sorted(removed)), adds, mlu_now, mlu_drained, mlu_after))
                log.info(
                    "stage %d: domain %d, -%d +%d circuits, drained MLU %.4f (start %.4f)",
                    len(stages),
                    domain,
                    len(removed),
                    len(adds),
                    mlu_drained,
                    mlu_now,
                )
                mlu_now = mlu_after
                moved = True
        if not moved:
            if blocked is None:  # pragma: no cover - a domain only stops when blocked
                raise InfeasibleError("staging made no progress")
            raise blocked
    return StagingPlan(
        stages=tuple(stages),
        threshold=threshold,
        start_mlu=start_mlu,
        final_topology=Topology.from_circuits(fabric, state),
        final_mlu=mlu_now,
    )


def _next_stage(
    fabric: Fabric,
    state: set[Circuit],
    domain: int,
    pending: set[Circuit],
    matrices: Sequence[TrafficMatrix],
    mlu_now: float,
    threshold: float,
    mlu_of: Callable[[set[Circuit]], float],
) -> tuple[tuple[Circuit, ...], float] | StagingBlocked:
    """The largest prefix (all, half, quarter, ...) of the lightest-first removals that passes."""
    if not pending:
        return (), mlu_now
    limit = max(threshold, mlu_now)
    order = lightest_first(fabric, state, pending, matrices)
    size = len(order)
    mlu = math.inf
    while size >= 1:
        chunk = tuple(order[:size])
        mlu = mlu_of(state - set(chunk))
        if mlu <= limit + _TOL:
            return chunk, mlu
        if size == 1:
            break
        size = math.ceil(size / 2)
    # the lightest circuit alone does not pass: try one circuit of a few other pairs
    first_pair = _pair(fabric, order[0])
    tried = {first_pair}
    for c in order[1:]:
        pair = _pair(fabric, c)
        if pair in tried:
            continue
        if len(tried) > _SINGLE_TRIES:
            break
        tried.add(pair)
        alt = mlu_of(state - {c})
        if alt <= limit + _TOL:
            return (c,), alt
    return StagingBlocked(domain, first_pair, mlu, limit)


def lightest_first(
    fabric: Fabric, state: set[Circuit], pending: set[Circuit], matrices: Sequence[TrafficMatrix]
) -> list[Circuit]:
    """Removals ordered so that each next one leaves its block pair least loaded.

    A pair's load is estimated from its own demand over its remaining direct capacity
    (worst over the matrices): removing from idle pairs first, and spreading removals over
    pairs rather than emptying one, is what keeps drained MLU low.
    """
    names = fabric.block_names
    index = {b: i for i, b in enumerate(names)}
    topo = Topology.from_circuits(fabric, state)
    demand = np.max([np.maximum(tm.gbps, tm.gbps.T) for tm in matrices], axis=0)
    by_pair: dict[tuple[int, int], list[Circuit]] = {}
    for c in sorted(pending):
        a, b = c.blocks(fabric)
        i, j = sorted((index[a], index[b]))
        by_pair.setdefault((i, j), []).append(c)
    left = {p: int(topo.counts[p]) for p in by_pair}

    def load_after_one_more(p: tuple[int, int]) -> float:
        remaining = left[p] - 1
        speed = fabric.link_speed_gbps(names[p[0]], names[p[1]])
        return math.inf if remaining <= 0 and demand[p] > 0 else demand[p] / max(remaining * speed, 1e-9)

    heap = [(load_after_one_more(p), p) for p in by_pair]
    heapq.heapify(heap)
    order: list[Circuit] = []
    while heap:
        _, p = heapq.heappop(heap)
        order.append(by_pair[p].pop())
        left[p] -= 1
        if by_pair[p]:
            heapq.heappush(heap, (load_after_one_more(p), p))
    return order


def _domain(fabric: Fabric, c: Circuit) -> int:
    return fabric.ocs_named(c.ocs).domain


def _pair(fabric: Fabric, c: Circuit) -> tuple[str, str]:
    a, b = c.blocks(fabric)
    return (a, b) if fabric.block_index(a) < fabric.block_index(b) else (b, a)


def _used_ports(circuits: Iterable[Circuit]) -> set[tuple[str, int]]:
    used: set[tuple[str, int]] = set()
    for c in circuits:
        used.add((c.ocs, c.a))
        used.add((c.ocs, c.b))
    return used


def _ports_free(c: Circuit, used: set[tuple[str, int]]) -> bool:
    return (c.ocs, c.a) not in used and (c.ocs, c.b) not in used


def _num(x: float) -> float | None:
    return round(x, 6) if math.isfinite(x) else None
