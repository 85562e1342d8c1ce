"""The directed link graph TE routes over, and the candidate paths of every commodity.

Nodes are the blocks (in fabric order) followed by the spine switches. A circuit pair a-b
with ``L[a][b]`` circuits is one directed link each way of ``L[a][b] * link speed``; a
spine switch s gives the links block->s and s->block of ``links_to(block) * min(spine
speed, block speed)``.

A path of commodity (a, b) is named by its *via* node v, the first hop out of a:

- ``v == b``: the direct path a->b (one block hop);
- ``v`` another block: the one-transit path a->v->b (two block hops);
- ``v`` a spine switch: the spine path a->v->b (two block hops).

Everything is a numpy array indexed by commodity and via node, so pricing every candidate
path costs a few vector operations even at 64 blocks (4,032 commodities x 66 vias).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optimizer.errors import ConfigError, InfeasibleError
from optimizer.fabric import Fabric, SpineSwitch
from optimizer.topology import Topology
from optimizer.traffic import TrafficMatrix

NO_LINK = -1
"""Link index of a path's missing second hop (the direct path has only one link)."""


@dataclass(frozen=True)
class LinkGraph:
    """Directed links between blocks and spine switches, with their capacities."""

    nodes: tuple[str, ...]
    n_blocks: int
    link_src: np.ndarray  # (n_links,) node index
    link_dst: np.ndarray  # (n_links,) node index
    capacity_gbps: np.ndarray  # (n_links,) float
    link_index: np.ndarray  # (n_nodes, n_nodes) link id or NO_LINK

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @property
    def n_links(self) -> int:
        return len(self.link_src)

def build_link_graph(
    fabric: Fabric, topology: Topology, spine: Sequence[SpineSwitch] | None = None
) -> LinkGraph:
    """The directed links of ``topology`` plus the spine (default: the fabric's spine)."""
    if topology.blocks != fabric.block_names:
        raise ConfigError(
            "<topology>", "blocks", f"topology is over blocks {list(topology.blocks)[:4]}..., "
            f"not the blocks of fabric {fabric.name!r}"
        )
    spine = fabric.spine if spine is None else tuple(spine)
    n = fabric.n_blocks
    names = fabric.block_names + tuple(s.name for s in spine)
    size = len(names)
    capacity = np.zeros((size, size))
    block_speed = np.array([b.speed_gbps for b in fabric.blocks])
    capacity[:n, :n] = topology.counts * np.minimum(block_speed[:, None], block_speed[None, :])
    for k, switch in enumerate(spine):
        s = n + k
        for block, count in switch.links:
            if not fabric.has_block(block):
                raise ConfigError("<spine>", f"{switch.name}.links.{block}", f"unknown block {block!r}")
            i = fabric.block_index(block)
            gbps = count * min(switch.speed_gbps, block_speed[i])
            capacity[i, s] += gbps
            capacity[s, i] += gbps
    src, dst = np.nonzero(capacity > 0)
    link_index = np.full((size, size), NO_LINK, dtype=np.int64)
    link_index[src, dst] = np.arange(len(src))
    return LinkGraph(
        nodes=names,
        n_blocks=n,
        link_src=src.astype(np.int64),
        link_dst=dst.astype(np.int64),
        capacity_gbps=capacity[src, dst],
        link_index=link_index,
    )


@dataclass(frozen=True)
class Commodities:
    """The (src, dst) block pairs with demand, as parallel arrays."""

    src: np.ndarray  # (K,) block index
    dst: np.ndarray  # (K,) block index
    demand_gbps: np.ndarray  # (K,)

    @property
    def count(self) -> int:
        return len(self.src)


def commodities_of(tm: TrafficMatrix, fabric: Fabric) -> Commodities:
    if tm.blocks != fabric.block_names:
        raise ConfigError(
            "<demand>", "blocks", f"the matrix is not over the blocks of fabric {fabric.name!r}"
        )
    src, dst = np.nonzero(tm.gbps > 0)
    return Commodities(src.astype(np.int64), dst.astype(np.int64), tm.gbps[src, dst].astype(np.float64))


def all_pairs(n_blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair of distinct blocks, row-major."""
    src, dst = np.nonzero(~np.eye(n_blocks, dtype=bool))
    return src.astype(np.int64), dst.astype(np.int64)


@dataclass(frozen=True)
class CandidatePaths:
    """Every direct, one-transit and spine path of each commodity, as (K, n_nodes) arrays.

    Entry [k, v] is the path of commodity k whose first hop goes to node v; ``valid`` says
    whether it exists. ``second`` is NO_LINK for the direct path.
    """

    src: np.ndarray  # (K,)
    dst: np.ndarray  # (K,)
    valid: np.ndarray  # (K, N) bool
    first: np.ndarray  # (K, N) link id (NO_LINK where invalid)
    second: np.ndarray  # (K, N) link id, NO_LINK for direct or invalid
    bottleneck_gbps: np.ndarray  # (K, N) 0 where invalid
    hops: np.ndarray  # (K, N) block hops: 1 direct, 2 otherwise

    @property
    def count(self) -> int:
        return len(self.src)

    def capacity_sum(self) -> np.ndarray:
        """B_k: the sum of the bottleneck capacities of commodity k's paths."""
        sums: np.ndarray = self.bottleneck_gbps.sum(axis=1)
        return sums


def candidate_paths(graph: LinkGraph, src: np.ndarray, dst: np.ndarray) -> CandidatePaths:
    """Enumerate the candidate paths of the commodities (src[k], dst[k])."""
    vias = np.arange(graph.n_nodes)
    first = graph.link_index[src[:, None], vias[None, :]]
    second = graph.link_index[vias[None, :], dst[:, None]]
    direct = vias[None, :] == dst[:, None]
    second = np.where(direct, NO_LINK, second)
    valid = (first != NO_LINK) & (direct | (second != NO_LINK)) & (vias[None, :] != src[:, None])
    first = np.where(valid, first, NO_LINK)
    second = np.where(valid, second, NO_LINK)
    # NO_LINK (-1) picks the appended sentinel, never a real link; masked out below anyway.
    caps = np.append(graph.capacity_gbps, 0.0)
    cap_first = np.where(valid, caps[first], 0.0)
    cap_second = np.where(second != NO_LINK, caps[second], np.inf)
    bottleneck = np.where(valid, np.minimum(cap_first, cap_second), 0.0)
    hops = np.where(direct, 1, 2).astype(np.int64)
    return CandidatePaths(src, dst, valid, first, second, bottleneck, hops)


def check_routable(paths: CandidatePaths, graph: LinkGraph) -> None:
    """Raise InfeasibleError if a commodity has no path at all."""
    stranded = np.flatnonzero(~paths.valid.any(axis=1))
    if len(stranded):
        names = [f"{graph.nodes[paths.src[k]]}->{graph.nodes[paths.dst[k]]}" for k in stranded[:5]]
        more = f" and {len(stranded) - 5} more" if len(stranded) > 5 else ""
        raise InfeasibleError(
            f"no direct, one-transit or spine path for the demand {', '.join(names)}{more}"
        )


def path_loads(
    graph: LinkGraph, paths: CandidatePaths, flow_gbps: np.ndarray
) -> np.ndarray:
    """Gbit/s on every link when ``flow_gbps[k, v]`` runs on path (k, v)."""
    mask = paths.valid & (flow_gbps != 0)
    load = np.bincount(paths.first[mask], weights=flow_gbps[mask], minlength=graph.n_links)
    two_hop = mask & (paths.second != NO_LINK)
    load += np.bincount(paths.second[two_hop], weights=flow_gbps[two_hop], minlength=graph.n_links)
    return load


@dataclass(frozen=True)
class LinkEntries:
    """The (group, path) entries of a mask, indexed by the links they use: entry i is
    (``rows[i]``, ``vias[i]``), and :meth:`on` gives the entries using a link."""

    rows: np.ndarray  # (E,) commodity
    vias: np.ndarray  # (E,) via node
    by_link: np.ndarray  # entry ids sorted by link (a two-hop entry appears under both links)
    starts: np.ndarray  # (n_links + 1,) where each link's entries start in by_link

    def on(self, link: int) -> np.ndarray:
        """The ids of the entries whose path uses ``link``."""
        on_link: np.ndarray = self.by_link[self.starts[link] : self.starts[link + 1]]
        return on_link


def entries_by_link(paths: CandidatePaths, n_links: int, mask: np.ndarray) -> LinkEntries:
    """The entries where ``mask`` (K, N) holds, indexed by the links of their paths."""
    rows, vias = np.nonzero(mask)
    entry_links = np.concatenate([paths.first[rows, vias], paths.second[rows, vias]])
    entry_ids = np.concatenate([np.arange(len(rows)), np.arange(len(rows))])
    keep = entry_links != NO_LINK
    order = order_by_link(entry_links[keep], n_links)
    starts = np.searchsorted(entry_links[keep][order], np.arange(n_links + 1))
    return LinkEntries(rows, vias, entry_ids[keep][order], starts)


def utilisation(graph: LinkGraph, load_gbps: np.ndarray) -> np.ndarray:
    utilisation: np.ndarray = load_gbps / graph.capacity_gbps
    return utilisation


def order_by_link(links: np.ndarray, n_links: int) -> np.ndarray:
    """``np.argsort(links, kind="stable")`` for link indices in ``[0, n_links)``: the same
    order, by radix sort on 16-bit keys where they fit (a 64-block fabric's 4k links; ~8x
    faster than the 64-bit sort on the link repair's half-million path entries)."""
    if n_links <= 2**16:
        return np.argsort(links.astype(np.uint16), kind="stable")
    return np.argsort(links, kind="stable")
