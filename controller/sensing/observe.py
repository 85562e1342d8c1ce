"""Pure helpers that turn one poll into what the decisions and the estimator need.

- :func:`live_circuits` — the established circuits, holding the last known ones of an OCS
  that did not answer (fail static: an unreachable OCS keeps its circuits);
- :func:`links_up` — those whose block ports are up and see each other (a cut fibre or a
  dark port takes its circuit out of what TE may use);
- :func:`egress_samples` / :func:`port_samples` — counter samples keyed for the estimator;
- :func:`measured_mlu` — the highest trunk utilisation from per-port transmit rates;
- :func:`reconcile` — at start-up, what the OCSes should hold, from the journal and what
  the devices report (the devices are the truth for what is installed);
- :func:`fresh_fabric` — at start-up, whether the fabric was never configured (nothing
  journaled, every OCS answering, powered and empty): the daemon then intends the uniform
  mesh, which the restore rule installs;
- :func:`maintenance_ports` — the block ports a maintenance drain takes out;
- :func:`unexplained_drains` — at start-up, drained ports that neither the journal's quarantine
  nor maintenance explain (a lost or wrong journal, a crash mid-stage): the devices are the
  truth, so the daemon quarantines them and returns them to service once they qualify.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from controller.decision import Maintenance, MaintenanceTarget
from controller.device_view import (
    OcsReading,
    PortsByBlock,
    circuit_ends,
    ends_see_each_other,
    merge_ports,
    ports_of_circuits,
)
from controller.sensing.estimation import CounterSample
from controller.sensing.spine import spine_ports_of
from optimizer.fabric import Fabric
from optimizer.topology import Circuit, uniform_mesh
from southbound.types import SwitchCounters, SwitchPort


def live_circuits(
    readings: Mapping[str, OcsReading], previous: Iterable[Circuit], unreachable: Iterable[str]
) -> frozenset[Circuit]:
    down = set(unreachable)
    held = {c for c in previous if c.ocs in down and c.ocs not in readings}
    return frozenset(held.union(*(r.circuits for r in readings.values())))


def links_up(
    fabric: Fabric, circuits: Iterable[Circuit], ports: Mapping[str, Iterable[SwitchPort]]
) -> frozenset[Circuit]:
    """The circuits whose two block ports are up and see each other (as LLDP reports).

    A block whose ports were not read (unreachable) does not take its circuits out.
    """
    seen = {(b, p.port): p for b, plist in ports.items() for p in plist}
    return frozenset(c for c in circuits if ends_see_each_other(seen, ports, circuit_ends(fabric, c)))


def egress_samples(counters: Mapping[str, SwitchCounters]) -> list[tuple[tuple[str, str], CounterSample]]:
    samples = []
    for block, reading in counters.items():
        for dst, value in reading.egress_bytes.items():
            samples.append(((block, dst), CounterSample(reading.time_s, int(value))))
    return samples


def port_samples(counters: Mapping[str, SwitchCounters]) -> list[tuple[tuple[str, int], CounterSample]]:
    return [
        ((block, port), CounterSample(reading.time_s, int(c.tx_bytes)))
        for block, reading in counters.items()
        for port, c in reading.ports.items()
    ]


def measured_mlu(
    fabric: Fabric, circuits: Iterable[Circuit], port_rates: Mapping[tuple[str, int], float]
) -> float | None:
    """max over trunks (block -> peer block) of transmitted rate / trunk capacity."""
    load: dict[tuple[str, str], float] = {}
    capacity: dict[tuple[str, str], float] = {}
    seen = False
    for c in circuits:
        (ba, pa), (bb, pb) = circuit_ends(fabric, c)
        speed = fabric.link_speed_gbps(ba, bb)
        for (src, port), dst in (((ba, pa), bb), ((bb, pb), ba)):
            rate = port_rates.get((src, port))
            capacity[(src, dst)] = capacity.get((src, dst), 0.0) + speed
            if rate is not None:
                seen = True
                load[(src, dst)] = load.get((src, dst), 0.0) + rate
    if not seen:
        return None
    return max((load.get(k, 0.0) / cap for k, cap in capacity.items() if cap > 0), default=0.0)


@dataclass(frozen=True)
class Reconciled:
    intended: frozenset[Circuit]
    adopted: frozenset[Circuit]  # on the devices but not in the journal
    dropped: frozenset[Circuit]  # in the journal, ports now taken by adopted circuits


def reconcile(journaled: Iterable[Circuit] | None, live: frozenset[Circuit]) -> Reconciled:
    """What the OCSes should hold after a restart with nothing in flight.

    Circuits the devices report that the journal does not know are adopted (the devices
    are the truth); journaled circuits whose ports they now use are dropped; journaled
    circuits simply missing (e.g. an OCS lost power) stay intended, to be restored.
    """
    if journaled is None:
        return Reconciled(live, frozenset(), frozenset())
    known = frozenset(journaled)
    adopted = live - known
    taken = {(c.ocs, p) for c in adopted for p in (c.a, c.b)}
    dropped = frozenset(c for c in known - live if (c.ocs, c.a) in taken or (c.ocs, c.b) in taken)
    return Reconciled((known - dropped) | adopted, adopted, dropped)


@dataclass(frozen=True)
class StartupIntent:
    """What the OCSes should hold when the daemon starts with nothing in flight."""

    intended: frozenset[Circuit]
    fresh: bool  # never configured: the uniform mesh is intended
    save: bool  # the journal's topology is to be rewritten with ``intended``
    reconciled: Reconciled


def startup_intent(
    fabric: Fabric,
    journaled: Iterable[Circuit] | None,
    readings: Mapping[str, OcsReading],
    installed: frozenset[Circuit],
) -> StartupIntent:
    """The start-up rule: reconcile the journal with the devices (they are the truth); a
    fabric never configured (nothing journaled, every OCS empty) intends the uniform mesh,
    which the restore rule then installs OCS by OCS before any TE or ToE."""
    known = None if journaled is None else tuple(journaled)
    result = reconcile(known, installed)
    if fresh_fabric(known, readings, (o.name for o in fabric.ocs)):
        return StartupIntent(frozenset(uniform_mesh(fabric)), True, True, result)
    save = bool(result.adopted or result.dropped or known is None)
    return StartupIntent(result.intended, False, save, result)


def fresh_fabric(
    journaled: Iterable[Circuit] | None, readings: Mapping[str, OcsReading], ocs: Iterable[str]
) -> bool:
    """True when the fabric was never configured: no circuit journaled and every OCS of
    ``ocs`` answered, is powered and holds no circuit (established or switching).

    An OCS that did not answer or has no power makes this False: its circuits are unknown,
    so the start-up adopts what it can see instead of configuring from scratch.
    """
    if journaled is not None and any(True for _ in journaled):
        return False
    names = list(ocs)
    if not names:
        return False
    for name in names:
        reading = readings.get(name)
        if reading is None or not reading.powered or reading.circuits or reading.switching:
            return False
    return True


def maintenance_ports(
    fabric: Fabric, maintenance: Iterable[Maintenance], circuits: Iterable[Circuit]
) -> PortsByBlock:
    """Ports to drain: every block port wired to an OCS under maintenance, both ends of
    every circuit of a block under maintenance, and both ends of every link of a spine
    switch under maintenance (the spine switch's own ports keyed by its name)."""
    maintenance = tuple(maintenance)
    spines = {m.name for m in maintenance if m.kind is MaintenanceTarget.SPINE}
    blocks = {m.name for m in maintenance if m.kind is MaintenanceTarget.BLOCK}
    ocs = {m.name for m in maintenance if m.kind is MaintenanceTarget.OCS}
    wired: dict[str, set[int]] = {}
    for w in fabric.wiring:
        if w.ocs in ocs or w.block in blocks:
            wired.setdefault(w.block, set()).add(w.block_port)
    touching = [c for c in circuits if any(b in blocks for b, _ in circuit_ends(fabric, c)) or c.ocs in ocs]
    return merge_ports(wired, ports_of_circuits(fabric, touching), spine_ports_of(fabric, spines))


def blocks_out(maintenance: Iterable[Maintenance]) -> frozenset[str]:
    return frozenset(m.name for m in maintenance if m.kind is MaintenanceTarget.BLOCK)


def unexplained_drains(
    ports: Mapping[str, Iterable[SwitchPort]], quarantined: PortsByBlock, maintained: PortsByBlock
) -> PortsByBlock:
    """The ports the blocks report drained that are neither quarantined nor under maintenance."""
    known = {(b, p) for group in (quarantined, maintained) for b, plist in group.items() for p in plist}
    out: dict[str, tuple[int, ...]] = {}
    for block, plist in sorted(ports.items()):
        stray = sorted({p.port for p in plist if p.drained and (block, p.port) not in known})
        if stray:
            out[block] = tuple(stray)
    return out


def spines_out(maintenance: Iterable[Maintenance]) -> frozenset[str]:
    return frozenset(m.name for m in maintenance if m.kind is MaintenanceTarget.SPINE)
