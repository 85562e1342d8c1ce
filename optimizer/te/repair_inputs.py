"""The fixed context of one link repair (:mod:`optimizer.te.linkfit`), built once where it starts."""

from __future__ import annotations

import dataclasses

import numpy as np

from optimizer.te.paths import CandidatePaths, LinkGraph


@dataclasses.dataclass(frozen=True)
class RepairInputs:
    """What every stage of one link repair reads and none changes.

    ``graph`` and ``paths`` are the links and each group's candidate paths (one row a
    group); ``demand_gbps`` each group's demand, ``tables`` its table size and ``sources``
    its switch (source block), whose groups together hold at most ``switch_budget`` weight
    entries; ``target_mlu`` is the link MLU the repair aims at (the LP's MLU times the
    over-subscription bound). The stages take it first, then what they change (weights, the
    rows they may touch).
    """

    graph: LinkGraph
    paths: CandidatePaths
    demand_gbps: np.ndarray
    tables: np.ndarray
    sources: np.ndarray
    switch_budget: int
    target_mlu: float
