"""The per-entity figures of one poll and one TE run, for :class:`controller.metrics.FabricCollector`
(per-link load and utilisation, circuits per OCS and per block pair, devices up, the bytes the
switches' counters say they dropped or blackholed). Pure: the poll in, mappings out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from controller.device_view import PollResult, circuit_ends
from optimizer.fabric import Fabric
from optimizer.topology import Circuit


def trunk_loads(
    fabric: Fabric, circuits: Iterable[Circuit], port_rates: Mapping[tuple[str, int], float]
) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], float]]:
    """(load, capacity) in Gbit/s per trunk (block src -> block dst) over ``circuits``: what
    :func:`controller.sensing.observe.measured_mlu` takes the maximum of."""
    load: dict[tuple[str, str], float] = {}
    capacity: dict[tuple[str, str], float] = {}
    for c in circuits:
        (ba, pa), (bb, pb) = circuit_ends(fabric, c)
        speed = fabric.link_speed_gbps(ba, bb)
        for (src, port), dst in (((ba, pa), bb), ((bb, pb), ba)):
            capacity[(src, dst)] = capacity.get((src, dst), 0.0) + speed
            load[(src, dst)] = load.get((src, dst), 0.0) + port_rates.get((src, port), 0.0)
    return load, capacity


def poll_figures(
    fabric: Fabric,
    poll: PollResult,
    installed: frozenset[Circuit],
    live: frozenset[Circuit],
    port_rates: Mapping[tuple[str, int], float],
) -> dict[str, object]:
    """The FabricSnapshot fields one poll sets (keyword arguments of ``FabricCollector.update``)."""
    load, capacity = trunk_loads(fabric, live, port_rates)
    ocs_circuits = {o.name: 0 for o in fabric.ocs}
    for c in installed:
        ocs_circuits[c.ocs] = ocs_circuits.get(c.ocs, 0) + 1
    pair_circuits: dict[tuple[str, str], int] = {}
    for c in live:
        (ba, _), (bb, _) = circuit_ends(fabric, c)
        key = (ba, bb) if fabric.block_index(ba) < fabric.block_index(bb) else (bb, ba)
        pair_circuits[key] = pair_circuits.get(key, 0) + 1
    kinds = {b: "block" for b in fabric.block_names} | {o.name: "ocs" for o in fabric.ocs}
    polled_spines = set(poll.spine_counters) | set(poll.spine_ports)
    kinds |= {s.name: "spine" for s in fabric.spine if s.name in polled_spines or s.name in poll.errors}
    dropped: dict[tuple[str, str], int] = {}
    blackholed: dict[str, int] = {}
    for name, counters in {**poll.counters, **poll.spine_counters}.items():
        dropped[(name, "tx")] = sum(p.tx_drop_bytes for p in counters.ports.values())
        dropped[(name, "rx")] = sum(p.rx_drop_bytes for p in counters.ports.values())
        blackholed[name] = counters.no_route_drops
    return {
        "link_load_gbps": load,
        "link_capacity_gbps": capacity,
        "ocs_circuits": ocs_circuits,
        "pair_circuits": pair_circuits,
        "devices_up": {(name, kind): name not in poll.errors for name, kind in kinds.items()},
        "dropped_bytes": dropped,
        "blackholed_bytes": blackholed,
    }
