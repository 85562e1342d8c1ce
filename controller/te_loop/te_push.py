"""TE as the daemon runs it: the topology TE may use, the solve, and the groups per block.

:func:`usable_circuits` is pure: live circuits minus those with a drained end (maintenance,
a stage in flight, links that failed qualification) or an end in a block under maintenance;
:func:`demand_without` leaves those blocks out as endpoints. :class:`TePusher` solves with a
warm :class:`TeSolver` and pushes each block's groups (atomically per block, generation-checked).

With a spine, TE routes over the spine in service (:meth:`TePusher.set_spine`: the links that
are up, less drained ones and switches under maintenance): blocks' groups name spine switches
as next hops where the LP sends traffic over them, and each spine switch that has a device
gets its transit groups toward the blocks it reaches (:func:`spine_tables`), pushed before
the blocks' groups.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from controller.decision import WeightsFit
from controller.device_view import FabricPort, GroupTables, circuit_ends
from controller.te_loop.transition import (
    fractions,
    mix_utilisation,
    plan_transition,
    source_loads,
)
from optimizer.fabric import Fabric, SpineSwitch
from optimizer.spine import spine_capacity_gbps
from optimizer.te import RecentDemand, TePolicy, TeResult, TeSolver, route
from optimizer.te.linkfit import DEFAULT_SWITCH_BUDGET
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix
from southbound.types import GroupBudget

log = logging.getLogger(__name__)

#: weights_fit reuses the policy's best MLU while the matrix moved by at most this share of its
#: volume (relative L1): the optimum moves about as much, well inside the 10% staleness margin.
REUSE_POSSIBLE = 0.02


@dataclass(frozen=True)
class TeRun:
    result: TeResult
    circuits: frozenset[Circuit]  # the circuits TE routed over
    solve_s: float
    push_s: float
    generations: dict[str, int]


def usable_circuits(
    fabric: Fabric,
    live: Iterable[Circuit],
    drained_ports: Mapping[str, Iterable[int]] | None = None,
    blocks_out: Iterable[str] = (),
) -> frozenset[Circuit]:
    """Live circuits TE may route over: both ends undrained and neither end's block out."""
    drained = {(b, p) for b, ports in (drained_ports or {}).items() for p in ports}
    out = set(blocks_out)
    usable = set()
    for c in live:
        ends = circuit_ends(fabric, c)
        if any(e in drained or e[0] in out for e in ends):
            continue
        usable.add(c)
    return frozenset(usable)


def demand_without(matrix: TrafficMatrix, blocks_out: Iterable[str]) -> TrafficMatrix:
    """The matrix with the rows and columns of ``blocks_out`` zeroed (nobody can reach them)."""
    out = [matrix.blocks.index(b) for b in blocks_out if b in matrix.blocks]
    if not out:
        return matrix
    gbps = np.array(matrix.gbps, dtype=np.float64, copy=True)
    gbps[out, :] = 0.0
    gbps[:, out] = 0.0
    return TrafficMatrix(matrix.blocks, gbps)


def group_tables(result: TeResult, blocks: Iterable[str]) -> GroupTables:
    """Each block's source groups: destination -> {via: weight}, ``via`` a block or a spine
    switch (the spine members the LP gave traffic to)."""
    names = set(blocks)
    tables: GroupTables = {b: {} for b in names}
    for g in result.groups:
        if g.src not in names:
            continue
        hops = {h.via: h.weight for h in g.next_hops if h.weight > 0}
        if hops:
            tables[g.src][g.dst] = hops
    return tables


def spine_tables(spine: Iterable[SpineSwitch], devices: Iterable[str]) -> GroupTables:
    """Each spine switch's transit groups: toward every block it has a link in service to,
    that block (ECMP over its ports to it); only for the switches with a device."""
    managed = set(devices)
    return {
        s.name: {block: {block: 1} for block, count in s.links if count > 0}
        for s in spine
        if s.name in managed
    }


class TePusher:
    """Solve and push TE; one solver, used under a lock (the executor and the loop share it).

    It remembers the groups it last pushed, so that a push whose old/new mix could load a
    link over ``max(mix_floor, old plan, new plan)`` changes the blocks one at a time in a
    safe order, or goes through intermediate groups (:mod:`controller.te_loop.transition`); it logs
    a warning when neither keeps the bound within that limit.
    """

    def __init__(
        self, fabric: Fabric, drivers: FabricPort, mix_floor: float = 0.8, policy: TePolicy | None = None
    ) -> None:
        self.fabric = fabric
        self.drivers = drivers
        self.policy = policy or TePolicy()
        self.solver = TeSolver(
            fabric,
            hedge=self.policy.hedge,
            table_size=self.policy.table_size,
            max_oversubscription=self.policy.max_oversubscription,
        )
        # min-MLU without a hedge, as staging checks it: the MLU figures and a stage's drain
        self.exact = TeSolver(
            fabric, table_size=self.policy.table_size, max_oversubscription=self.policy.max_oversubscription
        )
        self.mix_floor = mix_floor
        self.pushed: GroupTables | None = None
        # The spine in service (None: the fabric's whole spine, as cabled) and the spine
        # switches with a device, whose groups are pushed.
        self.spine: tuple[SpineSwitch, ...] | None = None
        self.spine_devices: frozenset[str] = frozenset()
        self._lock = threading.Lock()
        # (circuits, spine), matrix, the policy's best MLU for it: weights_fit's last LP
        self._possible_cache: (
            tuple[tuple[frozenset[Circuit], tuple[SpineSwitch, ...]], TrafficMatrix, float] | None
        ) = None

    def fit_budgets(self, budgets: Mapping[str, GroupBudget]) -> tuple[int, int]:
        """Fit the weights to what the switches declare: a group holds at most the smallest
        declared group (and the policy's ``table_size``), a switch's groups together at most the
        smallest declared total. Returns (table size, switch budget) in force."""
        with self._lock:
            table_size = min([self.policy.table_size, *(b.max_group_weight for b in budgets.values())])
            switch_budget = min((b.total_weight for b in budgets.values()), default=DEFAULT_SWITCH_BUDGET)
            for solver in (self.solver, self.exact):
                solver.table_size, solver.switch_budget = table_size, switch_budget
        if table_size < self.policy.table_size:
            log.warning("the switches hold groups of at most %d weights, below te.table_size %d: using %d",
                        table_size, self.policy.table_size, table_size)
        log.info("TE weights fit groups of %d and %d weights a switch (%d switches declared theirs)",
                 table_size, switch_budget, len(budgets))
        return table_size, switch_budget

    def set_spine(self, spine: Iterable[SpineSwitch] | None, devices: Iterable[str] = ()) -> None:
        """The spine TE may route over from now on (see :func:`optimizer.spine.spine_in_service`)."""
        with self._lock:
            self.spine = None if spine is None else tuple(spine)
            self.spine_devices = frozenset(devices)

    def spine_in_service(self) -> tuple[SpineSwitch, ...]:
        return self.fabric.spine if self.spine is None else self.spine

    def solve(self, circuits: Iterable[Circuit], demand: RecentDemand, for_latest: bool = False) -> TeResult:
        """TE on ``circuits`` and the spine in service for the recent demand, as the policy says
        (see :mod:`optimizer.te.policy`).

        ``for_latest``: the min-MLU routing of the latest matrix instead (no hedge), whatever the
        policy: a stage's drain routes for the matrix its staging rule was checked against, so
        that the rule holds on it (the policy's routing, planned for the next interval, comes
        back at the undrain).
        """
        topology = Topology.from_circuits(self.fabric, circuits)
        with self._lock:
            spine = self.spine_in_service()
            if for_latest:
                return self.exact.solve(topology, demand.latest, spine)
            return route(self.solver, topology, demand, self.policy, spine)

    def min_mlu(self, topology: Topology, matrix: TrafficMatrix) -> float:
        """The LP optimum of ``matrix`` on ``topology`` and the spine in service (no hedge: the
        figure staging checks)."""
        with self._lock:
            return self.exact.min_mlu(topology, matrix, self.spine_in_service())

    def run(self, circuits: Iterable[Circuit], demand: RecentDemand, request_prefix: str) -> TeRun:
        circuits = frozenset(circuits)
        started = time.monotonic()
        result = self.solve(circuits, demand)
        return self.push(result, circuits, request_prefix, demand.latest, solve_s=time.monotonic() - started)

    def push(
        self,
        result: TeResult,
        circuits: frozenset[Circuit],
        request_prefix: str,
        matrix: TrafficMatrix | None = None,
        live: Iterable[Circuit] | None = None,
        solve_s: float = 0.0,
    ) -> TeRun:
        """Push a solved plan's groups to every block.

        ``live`` is the capacity in service while the blocks change over (default:
        ``circuits``); with ``matrix`` the change goes through intermediate groups if a mix of
        old and new groups could overload a link.
        """
        solved = time.monotonic()
        started = solved - solve_s
        blocks = self.fabric.block_names
        new = group_tables(result, blocks)
        steps = [new]
        if matrix is not None:
            steps = self._steps(new, matrix, circuits if live is None else frozenset(live))
        spine = spine_tables(self.spine_in_service(), self.spine_devices)
        if spine:  # the spine forwards toward the blocks before blocks send through it
            self.drivers.push_groups(spine, request_prefix + "-spine")
        generations: dict[str, int] = {}
        for k, tables in enumerate(steps):
            final = k == len(steps) - 1
            suffix = "" if final else f"-mix{k + 1}"
            before = self.pushed
            # An intermediate state goes only to the blocks it changes (one block at a time in
            # an ordered transition); the final one to every block, mending any drift.
            wanted = (
                tables if final or before is None else {b: t for b, t in tables.items() if before.get(b) != t}
            )
            self.pushed = None  # unknown until the push succeeds everywhere
            generations = self.drivers.push_groups(wanted, request_prefix + suffix)
            self.pushed = tables
        pushed = time.monotonic()
        log.info(
            "TE: MLU %.4f (quantised %.4f) over %d circuits, %.1f Gbit/s; solve %.3fs push %.3fs%s",
            result.mlu,
            result.mlu_quantized,
            len(circuits),
            result.total_demand_gbps,
            solved - started,
            pushed - solved,
            f" in {len(steps)} steps" if len(steps) > 1 else "",
        )
        return TeRun(result, circuits, solved - started, pushed - solved, generations)

    def weights_fit(
        self, circuits: Iterable[Circuit], matrix: TrafficMatrix, stale_ratio: float
    ) -> WeightsFit | None:
        """What the groups in force give ``matrix`` over ``circuits`` and the spine in service,
        against what is possible there (None before any push, or for an empty matrix).

        The LP optimum is solved only when the weights give more than ``stale_ratio`` times the
        hose bound (no routing beats the busiest block's egress or ingress over its links):
        below that they fit whatever the optimum is, and most cycles cost no LP."""
        circuits = frozenset(circuits)
        if self.pushed is None or matrix.total() <= 0:
            return None
        nodes, index, capacity = self._capacity(circuits)
        demand = self._ordered(matrix)
        loads = source_loads(
            fractions(self._known_hops(self.pushed, index) or {}, self.fabric.block_names, nodes), demand
        )
        in_force = mix_utilisation(loads, loads, capacity)
        n = len(self.fabric.block_names)
        with np.errstate(divide="ignore", invalid="ignore"):
            out_ratio = demand.sum(axis=1) / capacity[:n].sum(axis=1)
            in_ratio = demand.sum(axis=0) / capacity[:, :n].sum(axis=0)
        bound = float(np.nanmax(np.concatenate([out_ratio, in_ratio])))
        if in_force <= stale_ratio * bound:
            return WeightsFit(in_force, bound, exact=False)
        return WeightsFit(in_force, self._possible(circuits, matrix))

    def _possible(self, circuits: frozenset[Circuit], matrix: TrafficMatrix) -> float:
        """The best MLU the policy can give ``matrix``: the LP optimum under its hedge (a hedged
        policy never aims lower: hedge S = 1 is the oblivious routing, whose MLU is its own),
        reused while the matrix stays within :data:`REUSE_POSSIBLE` of the one it was solved for
        on the same capacity (traffic that holds costs one LP, not one a cycle)."""
        spine = self.spine_in_service()
        cached = self._possible_cache
        if cached is not None and cached[0] == (circuits, spine):
            before = np.asarray(cached[1].gbps)
            moved = float(np.abs(np.asarray(matrix.gbps) - before).sum())
            if moved <= REUSE_POSSIBLE * max(float(before.sum()), 1e-12):
                return cached[2]
        topology = Topology.from_circuits(self.fabric, circuits)
        with self._lock:
            solver = self.exact if self.policy.hedge is None else self.solver
            value = solver.min_mlu(topology, matrix, spine)
        self._possible_cache = ((circuits, spine), matrix, value)
        return value

    def _ordered(self, matrix: TrafficMatrix) -> np.ndarray:
        """``matrix`` in the fabric's block order."""
        order = [matrix.blocks.index(b) for b in self.fabric.block_names]
        return np.asarray(matrix.gbps, dtype=np.float64)[np.ix_(order, order)]

    def _capacity(self, live: frozenset[Circuit]) -> tuple[tuple[str, ...], dict[str, int], np.ndarray]:
        """The next hops (the blocks, then every spine switch: one out of service has no
        capacity, so a group still naming it shows up as an overload), their index, and the
        Gbit/s between them over ``live`` and the spine in service."""
        blocks = self.fabric.block_names
        counts = Topology.from_circuits(self.fabric, live).counts
        speed = np.array([[self.fabric.link_speed_gbps(a, b) for b in blocks] for a in blocks])
        nodes = blocks + tuple(s.name for s in self.fabric.spine)
        capacity = np.zeros((len(nodes), len(nodes)))
        capacity[: len(blocks), : len(blocks)] = counts * speed
        index = {name: i for i, name in enumerate(nodes)}
        for (a, b), gbps in spine_capacity_gbps(self.spine_in_service(), self.fabric).items():
            capacity[index[a], index[b]] = gbps
        return nodes, index, capacity

    def _steps(self, new: GroupTables, matrix: TrafficMatrix, live: frozenset[Circuit]) -> list[GroupTables]:
        blocks = self.fabric.block_names
        demand = self._ordered(matrix)
        nodes, index, capacity = self._capacity(live)
        old = self._known_hops(self.pushed, index)
        new_loads = source_loads(fractions(new, blocks, nodes), demand)
        limit = max(self.mix_floor, mix_utilisation(new_loads, new_loads, capacity))
        if old is not None:
            old_loads = source_loads(fractions(old, blocks, nodes), demand)
            limit = max(limit, mix_utilisation(old_loads, old_loads, capacity))
        transition = plan_transition(old, new, blocks, demand, capacity, limit + 1e-9, nodes)
        if transition.worst > limit + 1e-6:
            log.warning(
                "TE: the change of groups may load a link to %.4f on the estimated matrix, over the "
                "limit %.4f, even in %d steps",
                transition.worst,
                limit,
                len(transition.steps),
            )
        return transition.steps

    @staticmethod
    def _known_hops(tables: GroupTables | None, index: Mapping[str, int]) -> GroupTables | None:
        """``tables`` less the groups naming a next hop that is no node of the fabric (None
        stays None): the transition judges only what it can place."""
        if tables is None:
            return None
        return {
            b: {d: hops for d, hops in groups.items() if all(v in index for v in hops)}
            for b, groups in tables.items()
        }
