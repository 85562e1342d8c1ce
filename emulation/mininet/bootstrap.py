"""A first configuration for a fresh fabric, applied through the southbound drivers the
way the controller does: the uniform mesh on every OCS, then WCMP groups in every block.

The groups are the simple ones a controller without traffic data would push: toward each
destination, direct with weight = circuits to it, and through each other block ``k`` with
weight = min(circuits to k, circuits from k to the destination) (``transit_share`` scales
the transit weights; 0 means direct only), and through each spine switch with weight =
min(its links to the source, its links to the destination). Transit tables go direct; each
spine switch gets a transit group toward every block it reaches (ECMP over its links).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping

from optimizer.fabric import Fabric, SpineSwitch
from optimizer.spine import spine_links
from optimizer.topology import Circuit, Topology, uniform_mesh
from southbound.grpc_native.ocs_client import OcsClient
from southbound.grpc_native.switch_client import SwitchClient
from southbound.types import CrossConnect, GroupTable

log = logging.getLogger(__name__)

ClientFor = Callable[[str], OcsClient | SwitchClient]


class BootstrapError(RuntimeError):
    """The fabric did not reach the expected state (e.g. neighbours never seen)."""


def simple_groups(
    topology: Topology, transit_share: float = 1.0, spine: Iterable[SpineSwitch] = ()
) -> dict[str, GroupTable]:
    """block -> source table (destination -> {via: weight})."""
    spine = tuple(spine)
    tables: dict[str, GroupTable] = {}
    for s in topology.blocks:
        table: GroupTable = {}
        for d in topology.blocks:
            if d == s:
                continue
            hops = {d: topology.count(s, d)} if topology.count(s, d) else {}
            for k in topology.blocks:
                if k in (s, d):
                    continue
                weight = round(min(topology.count(s, k), topology.count(k, d)) * transit_share)
                if weight:
                    hops[k] = weight
            for x in spine:
                if weight := min(x.links_to(s), x.links_to(d)):
                    hops[x.name] = weight
            if hops:
                table[d] = hops
        tables[s] = table
    return tables


def install_circuits(clients: ClientFor, fabric: Fabric, circuits: Iterable[Circuit]) -> None:
    """Make every OCS hold exactly ``circuits`` (one compare-and-set apply per OCS)."""
    wanted: dict[str, set[CrossConnect]] = {o.name: set() for o in fabric.ocs}
    for c in circuits:
        wanted[c.ocs].add(CrossConnect(c.a, c.b))
    for ocs, connects in wanted.items():
        client = clients(ocs)
        if not isinstance(client, OcsClient):
            raise BootstrapError(f"{ocs} is not an OCS")
        table = client.cross_connects()
        client.apply(expected_generation=table.generation,
                     remove=sorted(table.cross_connects - connects),
                     add=sorted(connects - table.cross_connects))


def expected_peers(fabric: Fabric, circuits: Iterable[Circuit]) -> dict[tuple[str, int], tuple[str, int]]:
    """(block, port) -> (peer block, peer port) that the circuits create, and both ends of
    every spine link ((spine switch, port) -> (block, port) and back)."""
    peers = {}
    for c in circuits:
        a, b = c.ends(fabric)
        peers[(a.block, a.block_port)] = (b.block, b.block_port)
        peers[(b.block, b.block_port)] = (a.block, a.block_port)
    for link in spine_links(fabric):
        peers[(link.block, link.block_port)] = (link.spine, link.spine_port)
        peers[(link.spine, link.spine_port)] = (link.block, link.block_port)
    return peers


def wait_for_peers(clients: ClientFor, expected: Mapping[tuple[str, int], tuple[str, int]],
                   timeout_s: float = 15.0) -> float:
    """Wait until every named port reports its expected neighbour; returns the wait."""
    start = time.monotonic()
    blocks = sorted({b for b, _ in expected})
    while True:
        wrong = []
        for block in blocks:
            client = clients(block)
            if not isinstance(client, SwitchClient):
                raise BootstrapError(f"{block} is not a block switch")
            for p in client.ports():
                want = expected.get((block, p.port))
                if want is not None and (p.peer_block, p.peer_port) != want:
                    wrong.append((block, p.port))
        if not wrong:
            return time.monotonic() - start
        if time.monotonic() - start > timeout_s:
            raise BootstrapError(f"neighbours not as expected after {timeout_s} s: {wrong[:6]}")
        time.sleep(0.1)


def push_groups(clients: ClientFor, tables: Mapping[str, GroupTable], spines: Iterable[str] = ()) -> None:
    """Replace every block's source table (transit: direct, the default); a spine switch's
    table (named in ``spines``) is its transit table."""
    spines = set(spines)
    for block, table in tables.items():
        client = clients(block)
        if not isinstance(client, SwitchClient):
            raise BootstrapError(f"{block} is not a block switch")
        generation = client.groups().generation
        source, transit = ({}, table) if block in spines else (table, {})
        client.set_groups(expected_generation=generation, source=source, transit=transit, replace=True)


def bootstrap(clients: ClientFor, fabric: Fabric, transit_share: float = 1.0) -> tuple[Circuit, ...]:
    """Uniform mesh + simple groups; returns the circuits."""
    circuits = uniform_mesh(fabric)
    install_circuits(clients, fabric, circuits)
    waited = wait_for_peers(clients, expected_peers(fabric, circuits))
    log.info("uniform mesh installed, neighbours seen after %.1f s", waited)
    spine_tables = {
        x.name: {block: {block: 1} for block, count in x.links if count} for x in fabric.spine
    }
    push_groups(clients, spine_tables, spines=spine_tables)  # they forward before blocks use them
    topology = Topology.from_circuits(fabric, circuits)
    push_groups(clients, simple_groups(topology, transit_share, fabric.spine))
    return circuits
