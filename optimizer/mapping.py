"""Mapping a logical topology onto the OCSes: circuits that the wiring allows, few changes.

:func:`map_topology` turns the block-pair circuit counts ``L`` of a
:class:`~optimizer.topology.Topology` into circuits ``(ocs, port, port)``:

- every circuit joins a north port to a south port of one OCS (any two ports on an OCS
  with ``sides: any``), uses each port once and never joins a block to itself;
- as many of today's circuits as possible are kept (same OCS, same two ports);
- every block pair is balanced over the failure domains: domain ``d`` holds at most
  :func:`~optimizer.mapping_domains.pair_domain_limit` of the pair's circuits, that is
  ``ceil(L * share_d)`` with ``share_d`` the domain's share of the cabled OCS ports. With
  ``D`` equal domains, losing any one domain keeps at least ``floor(L * (1 - 1/D))`` of
  the pair's ``L`` circuits ("``1 - 1/D`` of them, rounded down").

The algorithm is polynomial (no ILP over ports):

1. split every pair's circuits over the failure domains (greedy, keeping circuits in the
   domain they are in, then alternating-chain repairs so each block fits every domain);
2. per domain, orient the pairs north-to-south with a min-cost flow;
3. per domain, fill the OCSes one by one with a bipartite min-cost flow that keeps the
   OCS's current circuits and leaves the later OCSes a feasible remainder (Koenig);
4. give kept circuits their old ports and new circuits free ports.

Modules: :mod:`optimizer.mapping_ports` (port groups, ``any`` OCSes),
:mod:`optimizer.mapping_domains` (step 1), :mod:`optimizer.mapping_ocs` (steps 2-4),
:mod:`optimizer.mapping_flow` (the flow LPs).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from optimizer.errors import InfeasibleError, SolverError
from optimizer.fabric import Fabric
from optimizer.mapping_domains import pair_domain_limit, split_over_domains
from optimizer.mapping_ocs import assign_ports, current_orientation, orient, split_over_ocs
from optimizer.mapping_ports import OcsPorts, PortModel, build_port_model, require_same_blocks
from optimizer.mapping_recolour import RecolouringStuck, recolour
from optimizer.topology import Circuit, Topology

log = logging.getLogger(__name__)

__all__ = [
    "BalanceViolation",
    "MappingResult",
    "change_lower_bound",
    "domain_balance_violations",
    "domain_pair_counts",
    "map_topology",
    "pair_domain_limit",
]


@dataclass(frozen=True, slots=True)
class BalanceViolation:
    """Pair ``a``-``b`` has ``count`` of its ``total`` circuits in ``domain``; ``limit`` allowed."""

    a: str
    b: str
    domain: int
    count: int
    total: int
    limit: int


@dataclass(frozen=True)
class MappingResult:
    """The circuits realising a topology, and how they differ from today's.

    ``kept + added == len(circuits)`` and ``kept + removed == len(current)``.
    ``lower_bound`` is ``sum over pairs of max(0, L_old - L_new)``: no mapping removes
    fewer circuits. ``added_lower_bound`` is the same for additions.
    ``per_domain[d]`` is the topology placed in failure domain ``d``.
    """

    circuits: tuple[Circuit, ...]
    kept: int
    removed: int
    added: int
    lower_bound: int
    added_lower_bound: int
    removed_circuits: tuple[Circuit, ...]
    added_circuits: tuple[Circuit, ...]
    topology: Topology
    per_domain: Mapping[int, Topology] = field(repr=False)
    balance_violations: tuple[BalanceViolation, ...] = ()

    @property
    def domain_balanced(self) -> bool:
        return not self.balance_violations

    @property
    def changed(self) -> int:
        """Circuits torn down (each one is also re-made elsewhere, or its ports freed)."""
        return self.removed

    def changes_json(self) -> dict[str, int]:
        return {
            "kept": self.kept,
            "removed": self.removed,
            "added": self.added,
            "lower_bound": self.lower_bound,
        }

    def domain_counts_json(self) -> dict[str, Any]:
        return {str(d): top.to_json() for d, top in sorted(self.per_domain.items())}


def change_lower_bound(old: Topology, new: Topology) -> int:
    """``sum over pairs of max(0, L_old - L_new)`` (each pair counted once)."""
    diff = np.maximum(np.asarray(old.counts) - _reorder(new, old.blocks), 0)
    return int(np.triu(diff, 1).sum())


def _reorder(top: Topology, blocks: Sequence[str]) -> np.ndarray:
    index = [top.blocks.index(b) for b in blocks]
    return np.asarray(top.counts)[np.ix_(index, index)]


def domain_pair_counts(fabric: Fabric, circuits: Sequence[Circuit]) -> dict[int, Topology]:
    """Per failure domain, the topology formed by the circuits on its OCSes."""
    by_domain: dict[int, list[Circuit]] = {d: [] for d in fabric.domains}
    for c in circuits:
        by_domain[fabric.ocs_named(c.ocs).domain].append(c)
    return {d: Topology.from_circuits(fabric, cs) for d, cs in by_domain.items()}


def domain_balance_violations(
    fabric: Fabric, circuits: Sequence[Circuit], per_domain: Mapping[int, Topology] | None = None
) -> tuple[BalanceViolation, ...]:
    """Pairs with more circuits in one domain than :func:`pair_domain_limit` allows."""
    per_domain = dict(per_domain) if per_domain is not None else domain_pair_counts(fabric, circuits)
    ports = _domain_ports(fabric)
    total_ports = sum(ports.values())
    total = sum((np.asarray(t.counts) for t in per_domain.values()), np.zeros((fabric.n_blocks,) * 2))
    total = total.astype(np.int64)
    names = fabric.block_names
    out: list[BalanceViolation] = []
    for d, top in sorted(per_domain.items()):
        limit = pair_domain_limit(total, ports[d], total_ports)
        for a, b in np.argwhere(np.triu(np.asarray(top.counts) > limit, 1)):
            out.append(BalanceViolation(names[a], names[b], d, int(top.counts[a, b]),
                                        int(total[a, b]), int(limit[a, b])))
    return tuple(out)


def _domain_ports(fabric: Fabric) -> dict[int, int]:
    domain_of = {o.name: o.domain for o in fabric.ocs}
    ports = dict.fromkeys(fabric.domains, 0)
    for w in fabric.wiring:
        ports[domain_of[w.ocs]] += 1
    return ports


def map_topology(
    fabric: Fabric,
    target: Topology,
    current: Sequence[Circuit] = (),
    source: str = "<topology>",
) -> MappingResult:
    """Circuits realising ``target`` on ``fabric``, keeping as many of ``current`` as possible.

    ``current`` may be any valid set of circuits (the uniform mesh, a previous result,
    nothing at all). Raises :class:`~optimizer.errors.ConfigError` when the topology is
    over other blocks than the fabric or a current circuit is invalid, and
    :class:`~optimizer.errors.InfeasibleError` (naming the block) when a block needs more
    circuits than it has ports or the circuits cannot be placed.
    """
    order = require_same_blocks(fabric, target.blocks, source)
    n = fabric.n_blocks
    names = fabric.block_names
    wanted = np.zeros((n, n), dtype=np.int64)
    wanted[np.ix_(order, order)] = np.asarray(target.counts)
    model = build_port_model(fabric, current, "<current circuits>")
    _check_degrees(model, wanted, names)

    domains = model.domains()
    ocs_by_domain = {d: [o for o in model.ocs if o.domain == d] for d in domains}
    capacity = np.array(
        [[sum(o.north_budget(a) + o.south_budget(a) for o in ocs_by_domain[d]) for a in range(n)]
         for d in domains],
        dtype=np.int64,
    )
    domain_ports = capacity.sum(axis=1)
    total_ports = int(domain_ports.sum())
    limit = np.stack([pair_domain_limit(wanted, int(p), total_ports) for p in domain_ports])
    current_by_domain = np.stack([_symmetric(current_orientation(ocs_by_domain[d], n)) for d in domains])
    split = split_over_domains(wanted, current_by_domain, capacity, limit, names)
    counts_by_ocs: dict[str, np.ndarray] = {}
    for di, d in enumerate(domains):
        ocs_list = ocs_by_domain[d]
        try:
            per_ocs = recolour(ocs_list, _orient_domain(ocs_list, split.counts[di], names, f"failure domain {d}"))
        except RecolouringStuck as exc:
            log.info("failure domain %s: recolouring got stuck (%s); using the flow construction", d, exc)
            per_ocs = _flow_construction(ocs_list, split.counts[di], names, f"failure domain {d}")
        for o, c in zip(ocs_list, per_ocs, strict=True):
            counts_by_ocs[o.name] = c
    per_ocs = [counts_by_ocs[o.name] for o in model.ocs]
    circuits: list[Circuit] = []
    for o, counts in zip(model.ocs, per_ocs, strict=True):
        circuits.extend(assign_ports(o, counts))
    realised = Topology.from_circuits(fabric, circuits)
    if not np.array_equal(np.asarray(realised.counts), wanted):
        raise SolverError("internal error: the mapped circuits do not realise the target topology")
    return _result(fabric, current, circuits)


def _orient_domain(ocs_list: Sequence[OcsPorts], pairs: np.ndarray, names: tuple[str, ...], where: str) -> np.ndarray:
    n = len(names)
    north = np.array([sum(o.north_budget(a) for o in ocs_list) for a in range(n)], dtype=np.int64)
    south = np.array([sum(o.south_budget(a) for o in ocs_list) for a in range(n)], dtype=np.int64)
    return orient(pairs, north, south, current_orientation(ocs_list, n), names, where)


def _flow_construction(
    ocs_list: Sequence[OcsPorts], pairs: np.ndarray, names: tuple[str, ...], where: str
) -> list[np.ndarray]:
    """The always-feasible construction for one domain: orientation, then OCS by OCS."""
    return split_over_ocs(_orient_domain(ocs_list, pairs, names, where), ocs_list, names, where)


def _symmetric(directed: np.ndarray) -> np.ndarray:
    return directed + directed.T


def _check_degrees(model: PortModel, wanted: np.ndarray, names: tuple[str, ...]) -> None:
    n = len(names)
    ports = np.zeros(n, dtype=np.int64)
    for o in model.ocs:
        for a in range(n):
            ports[a] += o.north_budget(a) + o.south_budget(a)
    degree = wanted.sum(axis=1)
    for a in np.nonzero(degree > ports)[0]:
        raise InfeasibleError(
            f"block {names[a]} needs {int(degree[a])} circuits but has only {int(ports[a])} OCS ports"
        )


def _result(fabric: Fabric, current: Sequence[Circuit], circuits: list[Circuit]) -> MappingResult:
    new_set = set(circuits)
    old_set = set(current)
    kept = new_set & old_set
    removed = tuple(sorted(old_set - new_set))
    added = tuple(sorted(new_set - old_set))
    old_top = Topology.from_circuits(fabric, current)
    new_top = Topology.from_circuits(fabric, circuits)
    per_domain = domain_pair_counts(fabric, circuits)
    result = MappingResult(
        circuits=tuple(sorted(circuits)),
        kept=len(kept),
        removed=len(removed),
        added=len(added),
        lower_bound=change_lower_bound(old_top, new_top),
        added_lower_bound=change_lower_bound(new_top, old_top),
        removed_circuits=removed,
        added_circuits=added,
        topology=new_top,
        per_domain=MappingProxyType(per_domain),
        balance_violations=domain_balance_violations(fabric, circuits, per_domain),
    )
    log.info(
        "mapped %d circuits: kept %d, removed %d, added %d (lower bound %d)%s",
        len(circuits), result.kept, result.removed, result.added, result.lower_bound,
        "" if result.domain_balanced else f", {len(result.balance_violations)} pairs unbalanced",
    )
    return result
