"""Logical topologies (circuit counts between blocks) and physical circuits on OCS ports."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from optimizer import schema
from optimizer.errors import ConfigError
from optimizer.fabric import Fabric, Ocs, OcsSides, Side, WiredPort


@dataclass(frozen=True)
class Topology:
    """L[a][b]: the number of circuits between blocks a and b (symmetric, zero diagonal)."""

    blocks: tuple[str, ...]
    counts: np.ndarray

    def __post_init__(self) -> None:
        counts = np.array(self.counts, dtype=np.int64, copy=True)
        n = len(self.blocks)
        if counts.shape != (n, n):
            raise ValueError(f"counts must be {n}x{n}, got {counts.shape}")
        if (counts < 0).any():
            raise ValueError("circuit counts must be >= 0")
        if not np.array_equal(counts, counts.T):
            raise ValueError("circuit counts must be symmetric")
        if np.diag(counts).any():
            raise ValueError("a block cannot have circuits to itself")
        counts.setflags(write=False)
        object.__setattr__(self, "counts", counts)

    @classmethod
    def empty(cls, blocks: Iterable[str]) -> Topology:
        names = tuple(blocks)
        return cls(names, np.zeros((len(names), len(names)), dtype=np.int64))

    @classmethod
    def from_links(cls, blocks: Iterable[str], links: Iterable[tuple[str, str, int]]) -> Topology:
        names = tuple(blocks)
        index = {b: i for i, b in enumerate(names)}
        counts = np.zeros((len(names), len(names)), dtype=np.int64)
        for a, b, count in links:
            i, j = index[a], index[b]
            counts[i, j] += count
            if i != j:
                counts[j, i] += count
        return cls(names, counts)

    @classmethod
    def from_circuits(cls, fabric: Fabric, circuits: Iterable[Circuit]) -> Topology:
        pairs: Counter[tuple[str, str]] = Counter()
        for c in circuits:
            a, b = c.blocks(fabric)
            pairs[(a, b)] += 1
        return cls.from_links(fabric.block_names, ((a, b, n) for (a, b), n in pairs.items()))

    def count(self, a: str, b: str) -> int:
        return int(self.counts[self.blocks.index(a), self.blocks.index(b)])

    def degree(self) -> np.ndarray:
        return self.counts.sum(axis=1)

    def links(self) -> list[tuple[str, str, int]]:
        """(a, b, count) for every joined pair, a before b in block order."""
        n = len(self.blocks)
        return [
            (self.blocks[i], self.blocks[j], int(self.counts[i, j]))
            for i in range(n)
            for j in range(i + 1, n)
            if self.counts[i, j]
        ]

    def total_circuits(self) -> int:
        return int(self.counts.sum() // 2)

    def to_json(self) -> dict[str, Any]:
        return {"links": [{"a": a, "b": b, "count": c} for a, b, c in self.links()]}

    def check_fits(self, fabric: Fabric, source: str = "<topology>") -> None:
        """Raise ConfigError if a block has more circuits than uplinks."""
        for i, b in enumerate(self.blocks):
            used = int(self.counts[i].sum())
            uplinks = fabric.block(b).uplinks
            if used > uplinks:
                raise ConfigError(source, f"topology.{b}", f"{used} circuits but only {uplinks} uplinks")


def topology_from_json(data: object, fabric: Fabric, source: str = "<topology>") -> Topology:
    """Read ``{"links": [{"a": .., "b": .., "count": ..}]}`` (or a plan with a ``topology`` key)."""
    top = schema.mapping(data, source, "")
    if "topology" in top and "links" not in top:
        top = schema.mapping(top["topology"], source, "topology")
        prefix = "topology"
    else:
        prefix = ""
    links_key = schema.join(prefix, "links")
    if "links" not in top:
        raise ConfigError(source, links_key, "required key is missing")
    links: list[tuple[str, str, int]] = []
    seen: dict[tuple[str, str], str] = {}
    for i, item in enumerate(schema.sequence(top["links"], source, links_key)):
        key = schema.join(links_key, i)
        m = schema.mapping(item, source, key)
        schema.check_keys(m, source, key, ("a", "b", "count"), required=("a", "b", "count"))
        a = schema.string(m["a"], source, schema.join(key, "a"))
        b = schema.string(m["b"], source, schema.join(key, "b"))
        for end, name in (("a", a), ("b", b)):
            if not fabric.has_block(name):
                raise ConfigError(source, schema.join(key, end), f"unknown block {name!r}")
        if a == b:
            raise ConfigError(source, key, f"a block cannot have circuits to itself ({a!r})")
        pair = (min(a, b), max(a, b))
        if pair in seen:
            raise ConfigError(source, key, f"pair {a}-{b} is listed twice (also {seen[pair]})")
        seen[pair] = key
        links.append((a, b, schema.integer(m["count"], source, schema.join(key, "count"), minimum=0)))
    topo = Topology.from_links(fabric.block_names, links)
    topo.check_fits(fabric, source)
    return topo


@dataclass(frozen=True, slots=True, order=True)
class Circuit:
    """A cross-connect joining OCS ports ``a`` and ``b`` (``a < b``)."""

    ocs: str
    a: int
    b: int

    def __post_init__(self) -> None:
        if self.a > self.b:
            a, b = self.b, self.a
            object.__setattr__(self, "a", a)
            object.__setattr__(self, "b", b)

    def ends(self, fabric: Fabric) -> tuple[WiredPort, WiredPort]:
        pa, pb = fabric.wired_port(self.ocs, self.a), fabric.wired_port(self.ocs, self.b)
        if pa is None or pb is None:
            raise ValueError(f"circuit {self} uses an uncabled port")
        return pa, pb

    def blocks(self, fabric: Fabric) -> tuple[str, str]:
        pa, pb = self.ends(fabric)
        return pa.block, pb.block

    def to_json(self, fabric: Fabric) -> dict[str, Any]:
        pa, pb = self.ends(fabric)
        return {
            "ocs": self.ocs,
            "a": {"block": pa.block, "port": self.a},
            "b": {"block": pb.block, "port": self.b},
        }


def circuit_problem(fabric: Fabric, circuit: Circuit) -> str | None:
    """Why a single circuit is not one the wiring allows, or None if it is."""
    try:
        ocs = fabric.ocs_named(circuit.ocs)
    except KeyError:
        return f"unknown OCS {circuit.ocs!r}"
    for port in (circuit.a, circuit.b):
        if not 0 <= port < ocs.ports:
            return f"port {port} is outside {ocs.name}'s 0..{ocs.ports - 1}"
        if fabric.wired_port(ocs.name, port) is None:
            return f"port {port} of {ocs.name} is not cabled to any block"
    if circuit.a == circuit.b:
        return "a circuit needs two different ports"
    pa, pb = circuit.ends(fabric)
    if ocs.sides is OcsSides.SPLIT and {pa.side, pb.side} != {Side.NORTH, Side.SOUTH}:
        return f"ports {circuit.a} and {circuit.b} of {ocs.name} are on the same side"
    if pa.block == pb.block:
        return f"ports {circuit.a} and {circuit.b} both belong to block {pa.block}"
    return None


def check_circuits(fabric: Fabric, circuits: Iterable[Circuit], source: str = "<circuits>") -> None:
    """Raise ConfigError for the first circuit the wiring does not allow, or a reused port."""
    used: dict[tuple[str, int], int] = {}
    for i, c in enumerate(circuits):
        problem = circuit_problem(fabric, c)
        if problem:
            raise ConfigError(source, f"circuits[{i}]", problem)
        for port in (c.a, c.b):
            if (c.ocs, port) in used:
                raise ConfigError(
                    source,
                    f"circuits[{i}]",
                    f"port {port} of {c.ocs} is already used by circuits[{used[(c.ocs, port)]}]",
                )
            used[(c.ocs, port)] = i


def circuits_from_json(data: object, fabric: Fabric, source: str = "<circuits>") -> tuple[Circuit, ...]:
    """Read ``{"circuits": [{"ocs": .., "a": {"block": .., "port": ..}, "b": {...}}]}``."""
    top = schema.mapping(data, source, "")
    if "circuits" not in top:
        raise ConfigError(source, "circuits", "required key is missing")
    circuits: list[Circuit] = []
    for i, item in enumerate(schema.sequence(top["circuits"], source, "circuits")):
        key = schema.join("circuits", i)
        m = schema.mapping(item, source, key)
        schema.check_keys(m, source, key, ("ocs", "a", "b"), required=("ocs", "a", "b"))
        ocs = schema.string(m["ocs"], source, schema.join(key, "ocs"))
        ends = []
        for end in ("a", "b"):
            ekey = schema.join(key, end)
            e = schema.mapping(m[end], source, ekey)
            schema.check_keys(e, source, ekey, ("block", "port"), required=("port",))
            port = schema.integer(e["port"], source, schema.join(ekey, "port"), minimum=0)
            if "block" in e:
                wired = fabric.wired_port(ocs, port) if _has_ocs(fabric, ocs) else None
                block = schema.string(e["block"], source, schema.join(ekey, "block"))
                if wired is not None and wired.block != block:
                    raise ConfigError(
                        source,
                        schema.join(ekey, "block"),
                        f"port {port} of {ocs} is cabled to {wired.block}, not {block}",
                    )
            ends.append(port)
        circuits.append(Circuit(ocs, ends[0], ends[1]))
    check_circuits(fabric, circuits, source)
    return tuple(circuits)


def _has_ocs(fabric: Fabric, name: str) -> bool:
    try:
        fabric.ocs_named(name)
    except KeyError:
        return False
    return True


def circuits_to_json(fabric: Fabric, circuits: Iterable[Circuit]) -> dict[str, Any]:
    return {"circuits": [c.to_json(fabric) for c in sorted(circuits)]}


# -- the uniform mesh ----------------------------------------------------------------------


def uniform_mesh(fabric: Fabric) -> tuple[Circuit, ...]:
    """The circuits of a fresh fabric: every block's links spread as evenly as possible.

    On each OCS, north port slot ``j`` of block ``i`` is joined to south slot ``j`` of block
    ``i + s`` (mod n), with the shift ``s`` running through 1..n-1 across OCSes and slots,
    so every block pair gets nearly the same number of circuits and each pair's circuits
    are spread over the OCSes (and so over the failure domains). Blocks with unequal port
    shares fall back to a greedy pairing that balances pair counts.
    """
    spread = _mesh(fabric, restart_per_domain=False)
    if _domain_balanced(fabric, spread):
        return spread
    # Small fabrics (fewer slots per domain than shifts) can leave a pair's circuits all in
    # one domain; restarting the shift cycle in every domain gives each domain the same
    # pairs, which is balanced at some cost in uniformity.
    return _mesh(fabric, restart_per_domain=True)


def _mesh(fabric: Fabric, restart_per_domain: bool) -> tuple[Circuit, ...]:
    circuits: list[Circuit] = []
    pair_counts: Counter[tuple[str, str]] = Counter()
    slot = 0
    domain = None
    for ocs in sorted(fabric.ocs, key=lambda o: o.domain) if restart_per_domain else fabric.ocs:
        if restart_per_domain and ocs.domain != domain:
            slot, domain = 0, ocs.domain
        ports = fabric.ports_on_ocs(ocs.name)
        made, slot = _mesh_one_ocs(fabric, ocs, ports, slot, pair_counts)
        circuits.extend(made)
    return tuple(circuits)


def _domain_balanced(fabric: Fabric, circuits: Iterable[Circuit]) -> bool:
    """Whether no domain holds more than ``ceil(L * its share of the ports)`` of any pair."""
    per_domain: Counter[tuple[int, tuple[str, str]]] = Counter()
    totals: Counter[tuple[str, str]] = Counter()
    for c in circuits:
        pair = _pair(*c.blocks(fabric))
        per_domain[(fabric.ocs_named(c.ocs).domain, pair)] += 1
        totals[pair] += 1
    ports = Counter(fabric.ocs_named(w.ocs).domain for w in fabric.wiring)
    total_ports = sum(ports.values())
    return all(
        count * total_ports <= -(-totals[pair] * ports[domain] // total_ports) * total_ports
        for (domain, pair), count in per_domain.items()
    )


def _mesh_one_ocs(
    fabric: Fabric,
    ocs: Ocs,
    ports: tuple[WiredPort, ...],
    slot: int,
    pair_counts: Counter[tuple[str, str]],
) -> tuple[list[Circuit], int]:
    n = fabric.n_blocks
    if ocs.sides is OcsSides.SPLIT:
        north = _by_block(p for p in ports if p.side is Side.NORTH)
        south = _by_block(p for p in ports if p.side is Side.SOUTH)
    else:
        north, south = {}, {}
        for block, plist in _by_block(ports).items():
            half = len(plist) // 2
            north[block], south[block] = plist[:half], plist[half:]
    shares = {len(v) for v in north.values()} | {len(v) for v in south.values()}
    if len(shares) == 1 and len(north) == n and len(south) == n and n > 1:
        share = shares.pop()
        circuits = []
        names = fabric.block_names
        for j in range(share):
            shift = 1 + (slot % (n - 1))
            slot += 1
            for i, a in enumerate(names):
                b = names[(i + shift) % n]
                circuits.append(Circuit(ocs.name, north[a][j].port, south[b][j].port))
                pair_counts[_pair(a, b)] += 1
        return circuits, slot
    return _greedy_mesh(ocs, north, south, pair_counts), slot


def _greedy_mesh(
    ocs: Ocs,
    north: Mapping[str, list[WiredPort]],
    south: Mapping[str, list[WiredPort]],
    pair_counts: Counter[tuple[str, str]],
) -> list[Circuit]:
    free_south = {b: list(ps) for b, ps in south.items()}
    circuits: list[Circuit] = []
    for a, nports in north.items():
        for np_ in nports:
            candidates = [b for b, ps in free_south.items() if ps and b != a]
            if not candidates:
                break
            b = min(candidates, key=lambda x: (pair_counts[_pair(a, x)], -len(free_south[x]), x))
            sp = free_south[b].pop(0)
            circuits.append(Circuit(ocs.name, np_.port, sp.port))
            pair_counts[_pair(a, b)] += 1
    return circuits


def _by_block(ports: Iterable[WiredPort]) -> dict[str, list[WiredPort]]:
    out: dict[str, list[WiredPort]] = {}
    for p in ports:
        out.setdefault(p.block, []).append(p)
    return out


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


def mesh_topology(fabric: Fabric) -> Topology:
    """The logical topology of the uniform mesh (the TE default)."""
    return Topology.from_circuits(fabric, uniform_mesh(fabric))
