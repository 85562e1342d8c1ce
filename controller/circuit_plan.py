"""Turn a logical topology into per-OCS circuits, keeping as many of today's as possible.

A thin adapter over :func:`optimizer.mapping.map_topology` (polynomial: domain split,
orientation flow, recolouring) for the daemon's planner. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable

from optimizer.fabric import Fabric
from optimizer.mapping import map_topology
from optimizer.topology import Circuit, Topology


def plan_circuits(fabric: Fabric, target: Topology, current: Iterable[Circuit]) -> tuple[Circuit, ...]:
    """The circuits realising ``target``, starting from ``current``. Raises InfeasibleError."""
    return tuple(sorted(map_topology(fabric, target, tuple(current)).circuits))
