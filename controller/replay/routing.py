"""What a set of group tables does to a matrix: trunk loads and utilisation. Pure.

The switches' forwarding model (``southbound/README.md``): a source block splits each
destination's traffic over its group's next hops by weight (a destination without a group
goes direct); a transit block sends what it receives straight to the destination (the
transit tables' loop-freedom rule); a trunk's load is spread equally over its members, the
block's undrained ports with a circuit to the next hop. A hybrid fabric's spine switches are
next hops too (its static links, as cabled: trunks after the blocks'), which send straight to
the destination. Replay measures the MLU the integer
weights in force give on each snapshot with these functions, and its in-memory devices
count bytes with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from controller.device_view import GroupTables
from controller.te_loop.transition import fractions, source_loads
from optimizer.fabric import Fabric
from optimizer.jobs.routed import trunk_capacity, trunk_members

__all__ = ["TrunkLoads", "routed_loads", "trunk_capacity", "trunk_members"]


@dataclass(frozen=True)
class TrunkLoads:
    """Gbit/s offered to each directed trunk ``[a, b]`` and the trunk's live capacity."""

    load: np.ndarray  # [m, m]: the blocks, then any spine switches
    capacity: np.ndarray  # [m, m]: undrained members x link speed (spine links as cabled)

    def utilisation(self) -> np.ndarray:
        """load / capacity per trunk; inf where load meets no capacity (blackholed), 0 if idle."""
        with np.errstate(divide="ignore", invalid="ignore"):
            util = np.where(self.capacity > 0, self.load / np.where(self.capacity > 0, self.capacity, 1), 0.0)
        return np.where((self.capacity <= 0) & (self.load > 1e-9), np.inf, util)

    def mlu(self) -> float:
        util = self.utilisation()
        return float(util.max()) if util.size else 0.0

    def blackholed_gbps(self) -> float:
        """Load sent to trunks that have no live member."""
        return float(self.load[(self.capacity <= 0) & (self.load > 1e-9)].sum())


def routed_loads(
    fabric: Fabric, tables: GroupTables, demand: np.ndarray, members: Mapping[tuple[str, str], list[int]]
) -> TrunkLoads:
    """The trunk loads of ``demand`` (``[n, n]`` Gbit/s in fabric block order) under ``tables``."""
    nodes = fabric.block_names + tuple(s.name for s in fabric.spine)
    split = fractions(tables, fabric.block_names, nodes)
    load = source_loads(split, np.asarray(demand, dtype=np.float64)).sum(axis=0)
    return TrunkLoads(load, trunk_capacity(fabric, members))
