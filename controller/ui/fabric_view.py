"""The fabric as its operators look at it: the blocks, the OCSes, and per block pair the
circuits with the OCS that carries each, their state, and the load; a drill-down on one link
or one device with its history.

Every circuit the OCSes hold is in one state: ``carrying`` (both ends up and in service: TE
routes over it), ``drained`` (up, but an end is drained for maintenance or quarantine, or its
block is under maintenance) or ``down`` (installed, but an end is down or its peer wrong).
Pure: :class:`FabricFacts` is what the daemon knows now, :class:`~controller.ui.load_history.LoadHistory`
the loads it polled; JSON-shaped dicts out (``/api/fabric-view``, ``GetFabricView``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.device_view import circuit_ends
from controller.ui.load_history import Figures, LoadHistory
from optimizer.errors import HeliostatError
from optimizer.fabric import Fabric
from optimizer.topology import Circuit

CARRYING, DRAINED, DOWN = "carrying", "drained", "down"
#: Points of history a drill-down returns by default.
HISTORY_POINTS = 60


class NotInFabric(HeliostatError):
    """A link or device the fabric does not have; ``name`` is what was asked for."""

    def __init__(self, what: str, name: str, fabric: str) -> None:
        self.name = name
        super().__init__(f"fabric {fabric!r} has no {what} {name!r}")


@dataclass(frozen=True)
class FabricFacts:
    """What the daemon knows now. ``devices`` is :func:`controller.ui.facts.devices_json`'s
    list (state and maintenance of every polled device); ``drained_ports`` are the block
    ports out of service (maintenance and quarantine), ``blocks_out`` the blocks under
    maintenance."""

    fabric: Fabric
    installed: frozenset[Circuit]
    live: frozenset[Circuit]
    devices: Sequence[Mapping[str, Any]] = ()
    drained_ports: Mapping[str, Iterable[int]] = field(default_factory=dict)
    blocks_out: frozenset[str] = frozenset()


def pair(fabric: Fabric, a: str, b: str) -> tuple[str, str]:
    """The block pair in the fabric's order of blocks."""
    return (a, b) if fabric.block_index(a) <= fabric.block_index(b) else (b, a)


def circuit_states(facts: FabricFacts) -> dict[Circuit, str]:
    """Each installed circuit's state (see the module's doc)."""
    drained = {(b, p) for b, ports in facts.drained_ports.items() for p in ports}
    out = {}
    for c in facts.installed:
        if c not in facts.live:
            out[c] = DOWN
        elif any(end in drained or end[0] in facts.blocks_out for end in circuit_ends(facts.fabric, c)):
            out[c] = DRAINED
        else:
            out[c] = CARRYING
    return out


def poll_loads(
    fabric: Fabric, carrying: Iterable[Circuit], port_rates: Mapping[tuple[str, int], float]
) -> tuple[dict[tuple[str, str], Figures], dict[str, Figures]]:
    """One poll's (load, capacity) in Gbit/s over the circuits carrying traffic: per block pair
    the busier direction against one direction's capacity (what the MLU is made of), per block
    what it sends into the fabric against its capacity, per OCS what crosses it (both
    directions) against both directions' capacity."""
    directed: dict[tuple[str, str], float] = {}
    links: dict[tuple[str, str], list[float]] = {}
    blocks: dict[str, list[float]] = {b.name: [0.0, 0.0] for b in fabric.blocks}
    ocs: dict[str, list[float]] = {o.name: [0.0, 0.0] for o in fabric.ocs}
    for c in carrying:
        (ba, pa), (bb, pb) = circuit_ends(fabric, c)
        speed = fabric.link_speed_gbps(ba, bb)
        ab, ba_rate = port_rates.get((ba, pa), 0.0), port_rates.get((bb, pb), 0.0)
        directed[(ba, bb)] = directed.get((ba, bb), 0.0) + ab
        directed[(bb, ba)] = directed.get((bb, ba), 0.0) + ba_rate
        links.setdefault(pair(fabric, ba, bb), [0.0, 0.0])[1] += speed
        for block, rate in ((ba, ab), (bb, ba_rate)):
            blocks[block][0] += rate
            blocks[block][1] += speed
        ocs[c.ocs][0] += ab + ba_rate
        ocs[c.ocs][1] += 2 * speed
    for (a, b), figures in links.items():
        figures[0] = max(directed.get((a, b), 0.0), directed.get((b, a), 0.0))
    devices = {name: (f[0], f[1]) for name, f in {**blocks, **ocs}.items()}
    return {k: (f[0], f[1]) for k, f in links.items()}, devices


def _figures(figures: Figures | None) -> dict[str, float | None]:
    if figures is None:
        return {"load_gbps": None, "capacity_gbps": None, "utilisation": None}
    load, capacity = figures
    return {"load_gbps": round(load, 6), "capacity_gbps": capacity,
            "utilisation": round(load / capacity, 6) if capacity > 0 else None}


def _counts(states: Iterable[str]) -> dict[str, int]:
    counts = {"installed": 0, "up": 0, CARRYING: 0, DRAINED: 0, DOWN: 0}
    for state in states:
        counts["installed"] += 1
        counts[state] += 1
        counts["up"] += state != DOWN
    return counts


def _circuit_json(fabric: Fabric, c: Circuit, state: str) -> dict[str, Any]:
    (ba, pa), (bb, pb) = circuit_ends(fabric, c)
    return {"ocs": c.ocs, "a": {"block": ba, "port": pa, "ocs_port": c.a},
            "b": {"block": bb, "port": pb, "ocs_port": c.b}, "state": state}


def _device_states(facts: FabricFacts) -> dict[str, Mapping[str, Any]]:
    return {str(d["name"]): d for d in facts.devices}


def fabric_view(facts: FabricFacts, loads: LoadHistory) -> dict[str, Any]:
    """The picture: blocks, OCSes (state, drained, failed, circuits by state, load) and the
    block pairs with circuits (circuits by state and by OCS, load), with the totals."""
    fabric = facts.fabric
    states = circuit_states(facts)
    latest = loads.latest()
    link_loads, device_loads = (latest[1], latest[2]) if latest else ({}, {})
    known = _device_states(facts)
    per_pair: dict[tuple[str, str], dict[str, Any]] = {}
    per_device: dict[str, list[str]] = {}
    for c, state in sorted(states.items()):
        a, b = pair(fabric, *c.blocks(fabric))
        entry = per_pair.setdefault((a, b), {"states": [], "by_ocs": {}})
        entry["states"].append(state)
        by_ocs = entry["by_ocs"].setdefault(c.ocs, {"ocs": c.ocs, "installed": 0, CARRYING: 0})
        by_ocs["installed"] += 1
        by_ocs[CARRYING] += state == CARRYING
        for name in {a, b, c.ocs}:
            per_device.setdefault(name, []).append(state)

    def device(kind: str, name: str, extra: dict[str, Any]) -> dict[str, Any]:
        d = known.get(name, {})
        state = str(d.get("state", "unknown"))
        return {"name": name, "kind": kind, "state": state, "maintenance": bool(d.get("maintenance")),
                "failed": state in ("unreachable", "unpowered"), **extra,
                "circuits": _counts(per_device.get(name, ())), **_figures(device_loads.get(name))}

    links = []
    for (a, b), entry in sorted(per_pair.items(), key=lambda kv: (fabric.block_index(kv[0][0]),
                                                                  fabric.block_index(kv[0][1]))):
        links.append({"a": a, "b": b, "circuits": _counts(entry["states"]),
                      "by_ocs": [entry["by_ocs"][o.name] for o in fabric.ocs if o.name in entry["by_ocs"]],
                      **_figures(link_loads.get((a, b)))})
    return {
        "fabric": fabric.name,
        "time": latest[0] if latest else None,
        "blocks": [device("block", b.name, {"uplinks": b.uplinks, "speed_gbps": b.speed_gbps})
                   for b in fabric.blocks],
        "ocs": [device("ocs", o.name, {"domain": o.domain, "ports": o.ports}) for o in fabric.ocs],
        "spine": [{"name": s.name, "state": str(known.get(s.name, {}).get("state", "unmanaged")),
                   "maintenance": bool(known.get(s.name, {}).get("maintenance"))} for s in fabric.spine],
        "links": links,
        "circuits": _counts(states.values()),
    }


def link_view(facts: FabricFacts, loads: LoadHistory, a: str, b: str,
              points: int = HISTORY_POINTS) -> dict[str, Any]:
    """One block pair: its load and capacity now, their history, and each of its circuits
    with its OCS and state. NotInFabric names a block the fabric does not have."""
    fabric = facts.fabric
    for name in (a, b):
        if not fabric.has_block(name):
            raise NotInFabric("block", name, fabric.name)
    a, b = pair(fabric, a, b)
    states = circuit_states(facts)
    mine = sorted(c for c in states if pair(fabric, *c.blocks(fabric)) == (a, b))
    latest = loads.latest()
    return {
        "a": a, "b": b,
        "speed_gbps": fabric.link_speed_gbps(a, b),
        **_figures(latest[1].get((a, b)) if latest else None),
        "circuits": _counts(states[c] for c in mine),
        "circuit_list": [_circuit_json(fabric, c, states[c]) for c in mine],
        "history": loads.link(a, b, points),
    }


def device_view(facts: FabricFacts, loads: LoadHistory, name: str,
                points: int = HISTORY_POINTS) -> dict[str, Any]:
    """One block or OCS (or spine switch): its state, load, capacity, history, its circuits
    and, per block pair (or peer block), how many it carries. NotInFabric for an unknown name."""
    fabric = facts.fabric
    view = fabric_view(facts, loads)
    entry = next((d for d in (*view["blocks"], *view["ocs"]) if d["name"] == name), None)
    if entry is None:
        spine = next((s for s in view["spine"] if s["name"] == name), None)
        if spine is None:
            raise NotInFabric("block, OCS or spine switch", name, fabric.name)
        return {**spine, "kind": "spine", "circuits": _counts(()), "circuit_list": [], "links": [],
                "history": []}
    states = circuit_states(facts)
    if entry["kind"] == "ocs":
        mine = sorted(c for c in states if c.ocs == name)
        links = [{"a": link["a"], "b": link["b"], "circuits": here}
                 for link in view["links"] for here in link["by_ocs"] if here["ocs"] == name]
    else:
        mine = sorted(c for c in states if name in c.blocks(fabric))
        links = [link for link in view["links"] if name in (link["a"], link["b"])]
    return {
        **entry,
        "circuit_list": [_circuit_json(fabric, c, states[c]) for c in mine],
        "links": links,
        "history": loads.device(name, points),
    }
