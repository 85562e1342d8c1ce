"""What ToE may plan with while devices are drained for maintenance. Pure.

ToE does not wait for maintenance to end: it plans around it, the way TE routes around it.
:func:`planning_view` gives the fabric as the planner sees it then:

- an OCS under maintenance is left out, with its fibres: its circuits are *frozen* (kept as
  they are, never staged) and the blocks' port budgets shrink by the ports cabled to it;
- a block under maintenance keeps its circuits frozen too (its fibres left out, no ports to
  plan with) and its traffic is out of the matrix (nobody can reach it); the far ends of
  its frozen circuits are taken, so their fibres are left out as well;
- the spine is the spine in service (links up, not drained, switches not under
  maintenance), which the ToE LP and every MLU check route over.

The planner's target is then the plan on the view plus the frozen circuits, so the
reconfiguration changes only what is in service, within one failure domain per stage as
always, and each stage is checked on the capacity really there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from optimizer.fabric import Block, Fabric, SpineSwitch
from optimizer.topology import Circuit
from optimizer.traffic import TrafficMatrix


@dataclass(frozen=True)
class PlanningView:
    fabric: Fabric  # the fabric ToE may change
    frozen: frozenset[Circuit]  # circuits on devices under maintenance: kept, never staged
    blocks_out: frozenset[str]  # blocks whose traffic is out of the matrix

    def current(self, circuits: Iterable[Circuit]) -> frozenset[Circuit]:
        """Today's circuits the planner may change."""
        return frozenset(circuits) - self.frozen

    def demand(self, matrix: TrafficMatrix) -> TrafficMatrix:
        """``matrix`` without the traffic of blocks under maintenance."""
        out = [matrix.blocks.index(b) for b in self.blocks_out if b in matrix.blocks]
        if not out:
            return matrix
        gbps = np.array(matrix.gbps, dtype=np.float64, copy=True)
        gbps[out, :] = 0.0
        gbps[:, out] = 0.0
        return TrafficMatrix(matrix.blocks, gbps)


def maintenance_conflict(
    fabric: Fabric,
    remove: Iterable[Circuit],
    add: Iterable[Circuit],
    ocs_out: Iterable[str],
    blocks_out: Iterable[str],
) -> str | None:
    """What under maintenance a stage's circuits touch (``"ocs1"``, ``"block b3"``), or None.
    A stage planned before the maintenance began must not switch a device being serviced."""
    ocs_gone, blocks_gone = set(ocs_out), set(blocks_out)
    for c in (*remove, *add):
        if c.ocs in ocs_gone:
            return c.ocs
        for block in c.blocks(fabric):
            if block in blocks_gone:
                return f"block {block}"
    return None


def planning_view(
    fabric: Fabric,
    circuits: Iterable[Circuit],
    ocs_out: Iterable[str] = (),
    blocks_out: Iterable[str] = (),
    spine: Iterable[SpineSwitch] | None = None,
) -> PlanningView:
    """The fabric without the OCSes and blocks under maintenance (see the module docstring);
    ``spine`` is the spine in service (default: the fabric's)."""
    ocs_gone = set(ocs_out)
    blocks_gone = set(blocks_out)
    circuits = tuple(circuits)
    frozen = frozenset(
        c for c in circuits if c.ocs in ocs_gone or any(b in blocks_gone for b in c.blocks(fabric))
    )
    taken = {(c.ocs, p) for c in frozen for p in (c.a, c.b)}
    wiring = tuple(
        w for w in fabric.wiring
        if w.ocs not in ocs_gone and w.block not in blocks_gone and (w.ocs, w.port) not in taken
    )
    ports = {b.name: 0 for b in fabric.blocks}
    for w in wiring:
        ports[w.block] += 1
    view = Fabric(
        name=fabric.name,
        blocks=tuple(Block(b.name, ports[b.name], b.speed_gbps) for b in fabric.blocks),
        ocs=tuple(o for o in fabric.ocs if o.name not in ocs_gone),
        spine=fabric.spine if spine is None else tuple(spine),
        wiring=wiring,
        wiring_rule=fabric.wiring_rule,
        source=fabric.source,
    )
    return PlanningView(view, frozen, frozenset(blocks_gone))
