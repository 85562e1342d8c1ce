"""Link qualification: is a circuit fit to carry traffic?

A circuit qualifies when both block ports are up, each sees the other end (block and port)
as its neighbour, and the OCS reports light on both of its ports. The executor qualifies a
stage's new links with it before it undrains them; the daemon qualifies circuits it
restored after an OCS lost them (e.g. a power loss) before it releases them from quarantine.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from controller.device_view import FabricPort, circuit_ends
from optimizer.fabric import Fabric
from optimizer.topology import Circuit
from southbound.errors import SouthboundError

log = logging.getLogger(__name__)


def qualified_links(fabric: Fabric, drivers: FabricPort, links: Iterable[Circuit]) -> set[Circuit]:
    """The ``links`` that qualify now (a block or OCS that cannot be read qualifies none of its)."""
    links = tuple(links)
    ends = {c: circuit_ends(fabric, c) for c in links}
    blocks = {b for pair in ends.values() for b, _ in pair}
    ports, errors = drivers.switch_ports(blocks)
    if errors:
        log.info("qualify: cannot read ports of %s", ", ".join(sorted(errors)))
    view = {(b, p.port): p for b, plist in ports.items() for p in plist}
    lit: dict[tuple[str, int], bool] = {}
    for ocs in sorted({c.ocs for c in links}):
        try:
            wanted = [p for c in links if c.ocs == ocs for p in (c.a, c.b)]
            lit.update({(ocs, p): up for p, up in drivers.ocs_light(ocs, wanted).items()})
        except SouthboundError as exc:
            log.info("qualify: no light levels from %s: %s", ocs, exc)
    good = set()
    for c, (end_a, end_b) in ends.items():
        pa, pb = view.get(end_a), view.get(end_b)
        if pa is None or pb is None or not (pa.oper_up and pb.oper_up):
            continue
        if (pa.peer_block, pa.peer_port) != end_b or (pb.peer_block, pb.peer_port) != end_a:
            continue
        if not lit.get((c.ocs, c.a), False) or not lit.get((c.ocs, c.b), False):
            continue
        good.add(c)
    return good
