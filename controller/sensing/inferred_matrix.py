"""The TE matrix when blocks report only port counters: tomogravity over the pushed weights.

Pure. The routing is what the daemon last pushed (each block's WCMP group per destination:
direct, or through one transit block that forwards direct); the link loads are the summed
transmit rates of the ports of each trunk ``a -> b`` (the circuits TE routed over, and on a
hybrid fabric the spine links up: block -> spine from the block's ports, spine -> block from
the spine switch's). See
:mod:`controller.sensing.tomogravity` for the estimate itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from controller.device_view import GroupTables, circuit_ends
from controller.sensing.tomogravity import (
    TomogravityEstimate,
    aggregate_link_loads,
    routing_from_paths,
    tomogravity,
)
from optimizer.fabric import Fabric
from optimizer.spine import SpineLink
from optimizer.topology import Circuit


def routing_of_groups(tables: GroupTables) -> dict[tuple[str, str], dict[tuple[str, str], float]]:
    """Per (src, dst), the fraction of its traffic on each directed trunk."""
    paths = {}
    for src, groups in tables.items():
        for dst, hops in groups.items():
            paths[(src, dst)] = [
                ((src, dst) if via == dst else (src, via, dst), weight) for via, weight in hops.items()
            ]
    return routing_from_paths(paths)


def infer_matrix(
    fabric: Fabric,
    tables: GroupTables,
    circuits: Iterable[Circuit],
    port_rates: Mapping[tuple[str, int], float],
    spine_links: Iterable[SpineLink] = (),
) -> TomogravityEstimate:
    """Estimate the matrix from the trunks' measured loads and the groups that made them;
    ``port_rates`` are keyed (device, port), spine switches' ports included."""
    port_links: dict[tuple[str, int], tuple[str, str]] = {}
    for c in circuits:
        (ba, pa), (bb, pb) = circuit_ends(fabric, c)
        port_links[(ba, pa)] = (ba, bb)
        port_links[(bb, pb)] = (bb, ba)
    for link in spine_links:
        port_links[(link.block, link.block_port)] = (link.block, link.spine)
        port_links[(link.spine, link.spine_port)] = (link.spine, link.block)
    loads = aggregate_link_loads(port_rates, port_links)
    return tomogravity(fabric.block_names, routing_of_groups(tables), loads)
