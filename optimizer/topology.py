"""Logical topologies (circuit counts between blocks) and physical circuits on OCS ports."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
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
        # Circuit.blocks inlined, by block index: a plan reads ~20 x 8k circuits at 64 blocks
        block_of = fabric.derived("port_block_index", partial(_port_block_index, fabric))
        n = fabric.n_blocks
        ends: list[int] = []
        for c in circuits:
            i, j = block_of.get((c.ocs, c.a)), block_of.get((c.ocs, c.b))
            if i is None or j is None:
                raise ValueError(f"circuit {c} uses an uncabled port")
            ends.append(i * n + j)
        one_way = np.bincount(np.array(ends, dtype=np.int64), minlength=n * n).reshape(n, n)
        # as from_links: both directions, a block's own (refused by the constructor) once
        return cls(fabric.block_names, one_way + one_way.T - np.diag(np.diag(one_way)))

    def count(self, a: str, b: str) -> int:
        return int(self.counts[self.blocks.index(a), self.blocks.index(b)])

    def degree(self) -> np.ndarray:
        degree: np.ndarray = self.counts.sum(axis=1)
        return degree

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

    Joining every pair of blocks comes first (a pair without a circuit has to go through a
    transit block or the spine), balance over the failure domains second: a pair with fewer
    circuits than domains has them in distinct domains, and no domain holds more than its
    share of a pair's circuits where that can be had.

    Where every block has the same share of every OCS, the shift cycle is tried first: on
    each OCS, north port slot ``j`` of block ``i`` is joined to south slot ``j`` of block
    ``i + s`` (mod n), with the shift ``s`` running through 1..n-1 across OCSes and slots. It
    is kept when it joins as many pairs as the assignment below and is domain balanced (it
    does on the shipped fabrics and at Jupiter scale). Otherwise (fewer slots than shifts
    and unlucky domains, or unequal shares) the mesh is built one OCS at a time, the OCSes
    taken in turn from each domain, each as a min-cost assignment of north to south ports
    whose cost prefers pairs with the fewest circuits so far and then pairs with the fewest
    in the OCS's domain (:func:`_assigned_mesh`).

    Computed once per fabric object (:meth:`Fabric.derived`).
    """
    return fabric.derived("uniform_mesh", partial(_uniform_mesh, fabric))


def _uniform_mesh(fabric: Fabric) -> tuple[Circuit, ...]:
    candidates: list[tuple[Circuit, ...]] = []
    floor = (_fewest_gaps(fabric), 0)  # no mesh scores lower: the first to reach it is kept
    scores: list[tuple[int, int]] = []
    for build in _mesh_builders(fabric):
        circuits = build(fabric)
        score = _mesh_score(fabric, circuits)
        if score <= floor:
            return circuits
        candidates.append(circuits)
        scores.append(score)
    best_score, best = min(zip(scores, candidates, strict=True), key=lambda sc: sc[0])
    if (exact := _exact_mesh(fabric)) is not None and _mesh_score(fabric, exact) < best_score:
        best = exact
    return best


def _mesh_builders(fabric: Fabric) -> Iterator[Callable[[Fabric], tuple[Circuit, ...]]]:
    """The shift cycles, then the assignments (how many is worked out only if the cycles
    fall short: it walks every OCS's ports)."""
    yield _shift_mesh
    yield _shift_mesh_per_domain
    for seed in range(_assignment_tries(fabric)):
        yield partial(_assigned_mesh, seed=seed)


def _fewest_gaps(fabric: Fabric) -> int:
    """A floor under the pairs any mesh leaves apart: a block with ``k`` ports joins at most
    ``min(k, n - 1)`` pairs, so at most half their sum are joined (sparse fabrics, where
    blocks have fewer ports than partners, reach it with one circuit a pair)."""
    n = fabric.n_blocks
    ports = Counter(w.block for w in fabric.wiring)
    joinable = sum(min(ports[b], n - 1) for b in fabric.block_names) // 2
    return max(0, n * (n - 1) // 2 - joinable)


#: The exact mesh is tried on fabrics with at most this many (OCS, north block, south block)
#: arcs (small ones: 13 blocks on 3 OCSes have about 500), for at most this many seconds.
_EXACT_MESH_ARCS = 20_000
_EXACT_MESH_SECONDS = 10.0


def _exact_mesh(fabric: Fabric) -> tuple[Circuit, ...] | None:
    """The mesh as a small MIP, for the rare small fabric the builders leave with a pair apart
    although the ports allow them all (seen: blocks with exactly n - 1 uplinks, where a gap
    needs a chain of swaps over several circuits to close), or with a pair's circuits in one
    domain where distinct ones could be had.

    Counts ``x[o, a, b]`` of circuits from ``a``'s north to ``b``'s south ports on OCS ``o``:
    within the ports, every pair at least one circuit, as many circuits as the ports allow,
    then the largest pair count and the pairs' second circuits in one domain as few as can
    be. None when the MIP finds no such mesh in its time.
    """
    import scipy.sparse as sp
    from scipy.optimize import Bounds, LinearConstraint, milp

    names = fabric.block_names
    n = len(names)
    sides = [_sides(fabric, ocs) for ocs in fabric.ocs]
    n_arcs = sum(len(north) * len(south) - len(north.keys() & south.keys()) for north, south in sides)
    if n_arcs > _EXACT_MESH_ARCS:
        return None
    arcs = [(o, a, b) for o, (north, south) in enumerate(sides)
            for a in range(n) if names[a] in north for b in range(n) if b != a and names[b] in south]
    if not arcs or len(arcs) > _EXACT_MESH_ARCS:
        return None
    domains = sorted(fabric.domains)
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    z = len(arcs)  # the largest pair count, then one excess per pair and domain
    excess = {(p, d): z + 1 + p * len(domains) + di
              for p in range(len(pairs)) for di, d in enumerate(domains)}
    size = z + 1 + len(excess)
    rows: list[tuple[list[int], list[float], float, float]] = []
    arcs_out: dict[tuple[int, int], list[int]] = {}
    arcs_in: dict[tuple[int, int], list[int]] = {}
    arcs_of_pair: dict[tuple[int, int], list[int]] = {}
    for i, (o, a, b) in enumerate(arcs):
        arcs_out.setdefault((o, a), []).append(i)
        arcs_in.setdefault((o, b), []).append(i)
        arcs_of_pair.setdefault((min(a, b), max(a, b)), []).append(i)
    for o, (north, south) in enumerate(sides):
        for a in range(n):
            out, into = arcs_out.get((o, a), []), arcs_in.get((o, a), [])
            if out:
                rows.append((out, [1.0] * len(out), 0.0, float(len(north.get(names[a], ())))))
            if into:
                rows.append((into, [1.0] * len(into), 0.0, float(len(south.get(names[a], ())))))
    for p, (a, b) in enumerate(pairs):
        pair = arcs_of_pair.get((a, b), [])
        if not pair:
            return None  # no OCS can join them: the ports do not allow a full mesh
        rows.append((pair, [1.0] * len(pair), 1.0, np.inf))
        rows.append(([*pair, z], [1.0] * len(pair) + [-1.0], -np.inf, 0.0))  # count <= z
        for d in domains:  # a pair's second circuit in one domain counts as excess
            here = [i for i in pair if fabric.ocs[arcs[i][0]].domain == d]
            rows.append(([*here, excess[(p, d)]], [1.0] * len(here) + [-1.0], -np.inf, 1.0))
    data, ri, ci, lo, hi = [], [], [], [], []
    for r, (cols, values, low, high) in enumerate(rows):
        ri.extend([r] * len(cols))
        ci.extend(cols)
        data.extend(values)
        lo.append(low)
        hi.append(high)
    matrix = sp.csr_matrix((data, (ri, ci)), shape=(len(rows), size))
    cost = np.ones(size)  # the largest pair count and the domain excess down...
    cost[:z] = -float(size * n * n)  # ...after every circuit the ports allow
    result = milp(cost, constraints=LinearConstraint(matrix, lo, hi), integrality=np.ones(size),
                  bounds=Bounds(0, np.inf), options={"time_limit": _EXACT_MESH_SECONDS})
    if result.x is None:
        return None
    counts = np.rint(result.x[:z]).astype(np.int64)
    by_ocs: dict[str, list[Circuit]] = {}
    taken_north: dict[tuple[int, int], int] = {}
    taken_south: dict[tuple[int, int], int] = {}
    for (o, a, b), k in zip(arcs, counts, strict=True):
        north, south = sides[o]
        for _ in range(int(k)):
            i, j = taken_north.get((o, a), 0), taken_south.get((o, b), 0)
            taken_north[(o, a)], taken_south[(o, b)] = i + 1, j + 1
            port_a, port_b = north[names[a]][i].port, south[names[b]][j].port
            by_ocs.setdefault(fabric.ocs[o].name, []).append(Circuit(fabric.ocs[o].name, port_a, port_b))
    _rebalance(fabric, by_ocs)
    return tuple(c for ocs in fabric.ocs for c in by_ocs.get(ocs.name, ()))


def _mesh_score(fabric: Fabric, circuits: tuple[Circuit, ...]) -> tuple[int, int]:
    """(pairs left apart, pair-domain counts over the balance limit): lower is better."""
    i, j, domain = _circuit_arrays(fabric, circuits)
    n = fabric.n_blocks
    pair = np.minimum(i, j) * n + np.maximum(i, j)
    gaps = n * (n - 1) // 2 - len(np.unique(pair))
    return gaps, _domain_excess(fabric, circuits, (pair, domain))


def _circuit_arrays(fabric: Fabric, circuits: Iterable[Circuit]) -> tuple[np.ndarray, ...]:
    """Per circuit: the block index of each end and the OCS's domain, as arrays."""
    block_of = fabric.derived("port_block_index", partial(_port_block_index, fabric))
    domain_of = {o.name: o.domain for o in fabric.ocs}
    flat = [x for c in circuits for x in (block_of[(c.ocs, c.a)], block_of[(c.ocs, c.b)], domain_of[c.ocs])]
    table = np.array(flat, dtype=np.int64).reshape(-1, 3)
    return table[:, 0], table[:, 1], table[:, 2]


def _port_block_index(fabric: Fabric) -> dict[tuple[str, int], int]:
    """(OCS, port) -> index of the block cabled to it."""
    index = {name: i for i, name in enumerate(fabric.block_names)}
    return {(w.ocs, w.port): index[w.block] for w in fabric.wiring}


def mesh_gaps(fabric: Fabric, circuits: Iterable[Circuit] | None = None) -> list[tuple[str, str]]:
    """The block pairs the uniform mesh (or ``circuits``) leaves without a circuit.

    With the mesh this is empty whenever the ports allow every pair a circuit; a pair it
    lists can only reach each other through a transit block or the spine.
    """
    topo = Topology.from_circuits(fabric, uniform_mesh(fabric) if circuits is None else circuits)
    names = fabric.block_names
    n = len(names)
    return [(names[i], names[j]) for i in range(n) for j in range(i + 1, n) if topo.counts[i, j] == 0]


#: The assignment's cost of one more circuit for a pair that has this many already: every
#: pair before any pair's second circuit, then the domain term breaks ties.
_PAIR_COST = 1_000.0
_FORBIDDEN = 1e9
#: Assignments tried (the first in plain order, the others with the OCS order rotated and
#: ties broken at random, seeded) while pairs stay apart or domains over their share.
_ASSIGNMENT_TRIES = 6


#: Assignment cells (north ports x south ports of a round, summed over rounds, OCSes and tries)
#: the builders may spend: 6 tries up to ~128 blocks with one port per side of an OCS, fewer
#: above, none from ~360 (those keep the shift cycle's mesh, every pair joined where the
#: ports allow, domains as balanced as the cycle leaves them).
_ASSIGNMENT_WORK = 8_000_000


def _assignment_tries(fabric: Fabric) -> int:
    """How many assignments :func:`_uniform_mesh` tries within ``_ASSIGNMENT_WORK``."""
    work = 0
    for ocs in fabric.ocs:
        north, south = _sides(fabric, ocs)
        rounds = max((len(v) for v in (*north.values(), *south.values())), default=0)
        work += rounds * len(north) * len(south)
    return min(_ASSIGNMENT_TRIES, _ASSIGNMENT_WORK // max(work, 1))


def _assigned_mesh(fabric: Fabric, seed: int = 0) -> tuple[Circuit, ...]:
    """The mesh built OCS by OCS as min-cost assignments (see :func:`uniform_mesh`).

    On an OCS where a block has several ports per side, the ports are matched in rounds
    (one port per block and side in each round) so that the costs see the circuits the
    earlier rounds made. Cost of joining ``a`` to ``b`` on an OCS in domain ``d``:
    ``_PAIR_COST * circuits(a, b) + circuits in d(a, b)`` (squared, so a pair's circuits
    spread); a block's own ports are never joined.
    """
    from scipy.optimize import linear_sum_assignment

    names = fabric.block_names
    index = {b: i for i, b in enumerate(names)}
    n = len(names)
    pair_counts = np.zeros((n, n), dtype=np.int64)
    domain_counts: dict[int, np.ndarray] = {d: np.zeros((n, n), dtype=np.int64) for d in fabric.domains}
    circuits: list[Circuit] = []
    order = _interleaved_by_domain(fabric)
    rng = np.random.default_rng(seed) if seed else None
    if seed:
        order = order[seed % len(order):] + order[: seed % len(order)]
    for ocs in order:
        north, south = _sides(fabric, ocs)
        in_domain = domain_counts[ocs.domain]
        rounds = max((len(v) for v in (*north.values(), *south.values())), default=0)
        for r in range(rounds):
            ns = [(index[b], ps[r]) for b, ps in north.items() if len(ps) > r]
            ss = [(index[b], ps[r]) for b, ps in south.items() if len(ps) > r]
            if not ns or not ss:
                continue
            a_idx = np.array([a for a, _ in ns])
            b_idx = np.array([b for b, _ in ss])
            cost = _PAIR_COST * pair_counts[np.ix_(a_idx, b_idx)] ** 2 + in_domain[np.ix_(a_idx, b_idx)] ** 2
            cost = cost.astype(np.float64)
            if rng is not None:
                cost += rng.random(cost.shape) * 0.5
            cost = np.where(a_idx[:, None] == b_idx[None, :], _FORBIDDEN, cost)
            rows, cols = linear_sum_assignment(cost)
            succ = {int(i): int(j) for i, j in zip(rows, cols, strict=True) if cost[i, j] < _FORBIDDEN}
            succ = _without_two_cycles(succ, a_idx, b_idx, cost)
            for i, j in sorted(succ.items()):
                a, b = ns[i][0], ss[j][0]
                circuits.append(Circuit(ocs.name, ns[i][1].port, ss[j][1].port))
                for m in (pair_counts, in_domain):
                    m[a, b] += 1
                    m[b, a] += 1
    return _close_gaps(fabric, circuits, pair_counts)


def _close_gaps(fabric: Fabric, circuits: list[Circuit], pair_counts: np.ndarray) -> tuple[Circuit, ...]:
    """Join pairs the assignment left apart by swapping ends on one OCS.

    For a pair ``a, b`` without a circuit, circuits ``a - x`` and ``y - b`` on one OCS (``a``'s
    port on the side opposite ``b``'s) become ``a - b`` and ``y - x`` when ``a - x`` and
    ``y - b`` each keep another circuit. The pair to take from is the one with most circuits.

    Only blocks with a pair of two or more circuits can give one up, so pairs of other blocks
    are passed over without a look; a block's circuits are found through an index by OCS and
    block (:class:`_CircuitIndex`), and the swaps looked at are bounded by ``_GAP_SWAP_WORK``
    (past it the remaining gaps stay: a very large fabric keeps the assignment's mesh).
    """
    names = fabric.block_names
    n = len(names)
    by_ocs: dict[str, list[Circuit]] = {}
    for c in circuits:
        by_ocs.setdefault(c.ocs, []).append(c)
    at = _CircuitIndex(fabric, by_ocs)
    donors = (pair_counts >= 2).sum(axis=1)  # per block: partners it could give a circuit from
    work = 0
    for i in range(n):
        if not donors[i]:
            continue
        for partner in np.flatnonzero(pair_counts[i, i + 1:] == 0) + i + 1:
            j = int(partner)
            if not donors[i]:
                break
            if not donors[j] or pair_counts[i, j]:
                continue
            work += at.looks(i, j)
            if work > _GAP_SWAP_WORK:
                _rebalance(fabric, by_ocs)
                return tuple(c for ocs in fabric.ocs for c in by_ocs.get(ocs.name, ()))
            swap = _best_gap_swap(at, pair_counts, i, j)
            if swap is None:
                continue
            ocs, old, new = swap
            ocs_circuits = by_ocs[ocs]
            for c in old:
                ocs_circuits.remove(c)
            ocs_circuits.extend(new)
            at.replace(ocs, old, new)
            for c in (*old, *new):
                pa, pb = at.blocks_of(c)
                step = -1 if c in old else 1
                for p, q in ((pa, pb), (pb, pa)):
                    before = pair_counts[p, q]
                    pair_counts[p, q] += step
                    donors[p] += int(pair_counts[p, q] >= 2) - int(before >= 2)
    _rebalance(fabric, by_ocs)
    return tuple(c for ocs in fabric.ocs for c in by_ocs.get(ocs.name, ()))


#: Candidate swaps (pairs of circuits) :func:`_close_gaps` looks at in all before it stops.
_GAP_SWAP_WORK = 4_000_000


class _CircuitIndex:
    """The circuits on each OCS with an end at each block, in the OCS's circuit order, as
    ``(this end, the other end, circuit)``: what :func:`_best_gap_swap` scans for a pair."""

    def __init__(self, fabric: Fabric, by_ocs: Mapping[str, list[Circuit]]) -> None:
        self.fabric = fabric
        self.index = {b: i for i, b in enumerate(fabric.block_names)}
        self.ocs_order = list(by_ocs)
        self.at: dict[tuple[str, int], list[tuple[WiredPort, WiredPort, Circuit]]] = {}
        for ocs, cs in by_ocs.items():
            for c in cs:
                self._add(ocs, c)

    def _add(self, ocs: str, c: Circuit) -> None:
        pa, pb = c.ends(self.fabric)
        for mine, other in ((pa, pb), (pb, pa)):
            self.at.setdefault((ocs, self.index[mine.block]), []).append((mine, other, c))

    def replace(self, ocs: str, old: Iterable[Circuit], new: Iterable[Circuit]) -> None:
        for c in old:
            pa, pb = c.ends(self.fabric)
            for end in (pa, pb):
                entries = self.at[(ocs, self.index[end.block])]
                entries[:] = [e for e in entries if e[2] != c]
        for c in new:
            self._add(ocs, c)

    def blocks_of(self, c: Circuit) -> tuple[int, int]:
        pa, pb = c.ends(self.fabric)
        return self.index[pa.block], self.index[pb.block]

    def of(self, ocs: str, block: int) -> list[tuple[WiredPort, WiredPort, Circuit]]:
        return self.at.get((ocs, block), [])

    def looks(self, i: int, j: int) -> int:
        """How many circuit pairs a gap swap between blocks ``i`` and ``j`` looks at."""
        return sum(len(self.of(o, i)) * len(self.of(o, j)) for o in self.ocs_order) + len(self.ocs_order)


def _rebalance(fabric: Fabric, by_ocs: dict[str, list[Circuit]], rounds: int = 3) -> None:
    """Swap ends on one OCS where that lowers the domain excess and leaves no pair apart.

    Circuits ``a - b`` (a pair over its limit in the OCS's domain) and ``c - e`` become
    ``a - e`` and ``c - b`` (ports on opposite sides) when the excess of the pairs involved,
    summed over the domains, goes down.
    """
    domain_of = {o.name: o.domain for o in fabric.ocs}
    ports = Counter(domain_of[w.ocs] for w in fabric.wiring)
    total_ports = sum(ports.values())
    per_domain: Counter[tuple[int, tuple[str, str]]] = Counter()
    totals: Counter[tuple[str, str]] = Counter()
    ends: dict[Circuit, tuple[WiredPort, WiredPort]] = {}
    for ocs, cs in by_ocs.items():
        for c in cs:
            ends[c] = c.ends(fabric)
            pair = _pair(ends[c][0].block, ends[c][1].block)
            per_domain[(domain_of[ocs], pair)] += 1
            totals[pair] += 1

    def excess(pairs: set[tuple[str, str]]) -> int:
        return sum(
            max(0, per_domain[(d, p)] - -(-totals[p] * ports[d] // total_ports)) for p in pairs for d in ports
        )

    def move(pairs: list[tuple[str, str]], d: int, step: int) -> None:
        for p in pairs:
            per_domain[(d, p)] += step
            totals[p] += step

    for _ in range(rounds):
        improved = False
        for ocs, cs in by_ocs.items():
            d = domain_of[ocs]
            for c1 in list(cs):
                if c1 not in ends:
                    continue
                pa, pb = ends[c1]
                p1 = _pair(pa.block, pb.block)
                if per_domain[(d, p1)] <= -(-totals[p1] * ports[d] // total_ports):
                    continue
                for c2 in list(cs):
                    if c2 is c1 or c2 not in ends or c1 not in ends:
                        continue
                    pc, pe = ends[c2]
                    for x, y in ((pc, pe), (pe, pc)):
                        # a - y and x - b, with y on b's side and x on a's side
                        if (y.side != pb.side and pb.side is not Side.ANY) or pa.block == y.block:
                            continue
                        if x.block == pb.block:
                            continue
                        old = [p1, _pair(pc.block, pe.block)]
                        new = [_pair(pa.block, y.block), _pair(x.block, pb.block)]
                        touched = set(old) | set(new)
                        before = excess(touched)
                        move(old, d, -1)
                        move(new, d, 1)
                        if excess(touched) < before and all(totals[p] > 0 for p in old):
                            n1, n2 = Circuit(ocs, pa.port, y.port), Circuit(ocs, x.port, pb.port)
                            cs.remove(c1)
                            cs.remove(c2)
                            cs.extend((n1, n2))
                            del ends[c1], ends[c2]
                            ends[n1], ends[n2] = (pa, y), (x, pb)
                            improved = True
                            break
                        move(new, d, -1)
                        move(old, d, 1)
                    if c1 not in ends:
                        break
        if not improved:
            return


def _best_gap_swap(
    at: _CircuitIndex, pair_counts: np.ndarray, i: int, j: int
) -> tuple[str, tuple[Circuit, Circuit], tuple[Circuit, Circuit]] | None:
    best: tuple[int, str, tuple[Circuit, Circuit], tuple[Circuit, Circuit]] | None = None
    index = at.index
    for ocs in at.ocs_order:
        at_a = [(mine, other, c) for mine, other, c in at.of(ocs, i) if index[other.block] != j]
        at_b = [(mine, other, c) for mine, other, c in at.of(ocs, j) if index[other.block] != i]
        for pa, px, ca in at_a:
            x = index[px.block]
            if pair_counts[i, x] < 2:
                continue
            for pb, py, cb in at_b:
                y = index[py.block]
                if ca == cb or pair_counts[j, y] < 2 or x == y or pa.side == pb.side != Side.ANY:
                    continue
                score = int(pair_counts[i, x] + pair_counts[j, y])
                if best is None or score > best[0]:
                    new = (Circuit(ocs, pa.port, pb.port), Circuit(ocs, px.port, py.port))
                    best = (score, ocs, (ca, cb), new)
    return None if best is None else best[1:]


def _without_two_cycles(
    succ: dict[int, int], a_idx: np.ndarray, b_idx: np.ndarray, cost: np.ndarray
) -> dict[int, int]:
    """The assignment with its two-cycles broken up where that is no dearer.

    ``succ`` maps a north row to a south column; blocks ``a_idx[row]`` and ``b_idx[col]``.
    The costs are read before the round, so a north port of ``a`` to ``b`` and one of ``b``
    to ``a`` give the pair two circuits where the cost saw one: rewire ``b -> a`` and another
    ``c -> d`` into ``b -> d`` and ``c -> a`` (both new pairs) when such an edge exists.
    """
    a_of = [int(x) for x in a_idx]
    b_of = [int(x) for x in b_idx]
    col_of_block = {b: j for j, b in enumerate(b_of)}
    row_of_block = {a: i for i, a in enumerate(a_of)}
    joined: Counter[tuple[int, int]] = Counter(_pair_of(a_of[r], b_of[col]) for r, col in succ.items())

    for row in sorted(succ):
        a = a_of[row]
        b = b_of[succ[row]]
        back = row_of_block.get(b)
        if back is None or back not in succ or b_of[succ[back]] != a:
            continue
        best: tuple[float, int] | None = None
        for other, col in succ.items():
            c, d = a_of[other], b_of[col]
            if other in (row, back) or c in (a, b) or d in (a, b):
                continue
            if joined[_pair_of(b, d)] or joined[_pair_of(c, a)]:
                continue
            delta = cost[back, col] + cost[other, col_of_block[a]]
            if best is None or delta < best[0]:
                best = (delta, other)
        if best is not None:
            other = best[1]
            d = b_of[succ[other]]
            c = a_of[other]
            for gone, made in (((b, a), (b, d)), ((c, d), (c, a))):
                joined[_pair_of(*gone)] -= 1
                joined[_pair_of(*made)] += 1
            succ[back], succ[other] = succ[other], col_of_block[a]
    return succ


def _pair_of(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a <= b else (b, a)


def _interleaved_by_domain(fabric: Fabric) -> list[Ocs]:
    """The OCSes one domain after the other in turn (d0's first, d1's first, ..., d0's second...),
    so that every domain has OCSes early, while most pairs still lack a circuit."""
    queues = [list(fabric.ocs_in_domain(d)) for d in fabric.domains]
    order: list[Ocs] = []
    while any(queues):
        for q in queues:
            if q:
                order.append(q.pop(0))
    return order


def _sides(fabric: Fabric, ocs: Ocs) -> tuple[dict[str, list[WiredPort]], dict[str, list[WiredPort]]]:
    """An OCS's north and south ports by block (computed once per fabric: do not modify)."""
    every = fabric.derived("ocs_sides", lambda: {o.name: _sides_of(fabric, o) for o in fabric.ocs})
    return every[ocs.name]


def _sides_of(fabric: Fabric, ocs: Ocs) -> tuple[dict[str, list[WiredPort]], dict[str, list[WiredPort]]]:
    ports = fabric.ports_on_ocs(ocs.name)
    north: dict[str, list[WiredPort]] = {}
    south: dict[str, list[WiredPort]] = {}
    if ocs.sides is OcsSides.SPLIT:  # one pass (a 64-block fabric has 32k ports)
        for p in ports:
            if p.side is Side.NORTH:
                north.setdefault(p.block, []).append(p)
            elif p.side is Side.SOUTH:
                south.setdefault(p.block, []).append(p)
        return north, south
    for block, plist in _by_block(ports).items():
        half = len(plist) // 2
        north[block], south[block] = plist[:half], plist[half:]
    return north, south


def _shift_mesh(fabric: Fabric, restart_per_domain: bool = False) -> tuple[Circuit, ...]:
    circuits: list[Circuit] = []
    pair_counts: Counter[tuple[str, str]] = Counter()
    slot = 0
    domain = None
    for ocs in sorted(fabric.ocs, key=lambda o: o.domain) if restart_per_domain else fabric.ocs:
        if restart_per_domain and ocs.domain != domain:
            slot, domain = 0, ocs.domain
        made, slot = _mesh_one_ocs(fabric, ocs, slot, pair_counts)
        circuits.extend(made)
    return tuple(circuits)


def _shift_mesh_per_domain(fabric: Fabric) -> tuple[Circuit, ...]:
    """The shift cycle restarted in every domain: every domain gets the same pairs, which is
    balanced at some cost in uniformity (and leaves pairs apart when a domain has fewer slots
    than shifts)."""
    return _shift_mesh(fabric, restart_per_domain=True)


def _domain_excess(
    fabric: Fabric, circuits: Iterable[Circuit], arrays: tuple[np.ndarray, np.ndarray] | None = None
) -> int:
    """Circuits over ``ceil(L * the domain's share of the ports)`` (over one where a pair has
    fewer circuits than there are domains: those go to distinct domains), summed over pairs
    and domains. ``arrays``: each circuit's pair key and domain, when the caller has them."""
    if arrays is None:
        i, j, domain = _circuit_arrays(fabric, circuits)
        n = fabric.n_blocks
        arrays = (np.minimum(i, j) * n + np.maximum(i, j), domain)
    pair, domain = arrays
    if not len(pair):
        return 0
    ports: Counter[int] = Counter()
    for o in fabric.ocs:
        if wired := len(fabric.ports_on_ocs(o.name)):
            ports[o.domain] += wired
    total_ports = sum(ports.values())
    n_domains = len(ports)
    _, pair_at, totals = np.unique(pair, return_inverse=True, return_counts=True)
    # the distinct (pair, domain) rows as one integer each (np.unique by rows is slow)
    low = int(domain.min())
    span = int(domain.max()) - low + 1
    keys, per_domain = np.unique(pair_at * span + (domain - low), return_counts=True)
    total = totals[keys // span]
    domain_ports = np.array([ports[int(d)] for d in (keys % span + low).tolist()], dtype=np.int64)
    share = -(-total * domain_ports // total_ports)
    limit = np.where(total < n_domains, np.minimum(share, 1), share)
    return int(np.maximum(0, per_domain - limit).sum())


def _mesh_one_ocs(
    fabric: Fabric,
    ocs: Ocs,
    slot: int,
    pair_counts: Counter[tuple[str, str]],
) -> tuple[list[Circuit], int]:
    n = fabric.n_blocks
    north, south = _sides(fabric, ocs)
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
