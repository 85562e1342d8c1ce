"""The fabric model: blocks, OCSes, the optional spine, and the fibre wiring between them.

A :class:`Fabric` is immutable. Build one with :func:`optimizer.config.load_fabric` (from
YAML) or :func:`build_fabric` (from Python values); both validate and raise
:class:`~optimizer.errors.ConfigError` naming the key and the problem.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from optimizer import limits
from optimizer.errors import ConfigError

_T = TypeVar("_T")

DEFAULT_SPEED_GBPS = 100.0


class Side(StrEnum):
    """Which half of an OCS a port is on. Circulator OCSes join north to south only."""

    NORTH = "north"
    SOUTH = "south"
    ANY = "any"


class OcsSides(StrEnum):
    """How an OCS's ports may be joined."""

    SPLIT = "split"  # north/south halves (circulators): a circuit joins a north and a south port
    ANY = "any"  # any two ports may be joined


class WiringRule(StrEnum):
    STRIPED = "striped"


@dataclass(frozen=True, slots=True)
class Block:
    """An electrical aggregation block with ``uplinks`` OCS-facing ports."""

    name: str
    uplinks: int
    speed_gbps: float = DEFAULT_SPEED_GBPS


@dataclass(frozen=True, slots=True)
class Ocs:
    """An optical circuit switch of ``ports`` ports in failure ``domain``."""

    name: str
    ports: int
    domain: int = 0
    sides: OcsSides = OcsSides.SPLIT

    @property
    def north_ports(self) -> range:
        return range(0, self.ports // 2)

    @property
    def south_ports(self) -> range:
        return range(self.ports // 2, self.ports)

    def side_of(self, port: int) -> Side:
        if self.sides is OcsSides.ANY:
            return Side.ANY
        return Side.NORTH if port < self.ports // 2 else Side.SOUTH


@dataclass(frozen=True, slots=True)
class SpineSwitch:
    """A static electrical spine switch: ``links`` maps block name to link count."""

    name: str
    links: tuple[tuple[str, int], ...]
    speed_gbps: float = DEFAULT_SPEED_GBPS

    def links_to(self, block: str) -> int:
        for name, count in self.links:
            if name == block:
                return count
        return 0


@dataclass(frozen=True, slots=True)
class WiredPort:
    """One fibre: OCS ``ocs`` port ``port`` is cabled to ``block`` uplink ``block_port``."""

    ocs: str
    port: int
    block: str
    block_port: int
    side: Side

    def to_json(self) -> dict[str, object]:
        return {
            "ocs": self.ocs,
            "port": self.port,
            "block": self.block,
            "block_port": self.block_port,
            "side": str(self.side),
        }


@dataclass(frozen=True)
class Fabric:
    """A validated fabric. Lookups are precomputed; the object is never mutated."""

    name: str
    blocks: tuple[Block, ...]
    ocs: tuple[Ocs, ...]
    spine: tuple[SpineSwitch, ...] = ()
    wiring: tuple[WiredPort, ...] = ()
    wiring_rule: WiringRule = WiringRule.STRIPED
    source: str = "<fabric>"
    _block_index: Mapping[str, int] = field(init=False, repr=False, compare=False)
    _ocs_index: Mapping[str, int] = field(init=False, repr=False, compare=False)
    _ports: Mapping[tuple[str, int], WiredPort] = field(init=False, repr=False, compare=False)
    _ports_by_ocs: Mapping[str, tuple[WiredPort, ...]] = field(init=False, repr=False, compare=False)
    _derived: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_block_index", {b.name: i for i, b in enumerate(self.blocks)})
        object.__setattr__(self, "_ocs_index", {o.name: i for i, o in enumerate(self.ocs)})
        object.__setattr__(self, "_ports", {(w.ocs, w.port): w for w in self.wiring})
        by_ocs: dict[str, list[WiredPort]] = {}
        for w in self.wiring:
            by_ocs.setdefault(w.ocs, []).append(w)
        object.__setattr__(self, "_ports_by_ocs", {o: tuple(ports) for o, ports in by_ocs.items()})
        object.__setattr__(self, "_derived", {})

    def derived(self, key: str, compute: Callable[[], _T]) -> _T:
        """``compute()``, a value that depends on the fabric alone, computed once per fabric
        object (it never changes; e.g. the uniform mesh, which a 64-block plan needs several
        times at ~0.3 s each). The value must be immutable."""
        if key not in self._derived:
            self._derived[key] = compute()
        value: _T = self._derived[key]
        return value

    # -- blocks -------------------------------------------------------------------------
    @property
    def block_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.blocks)

    @property
    def n_blocks(self) -> int:
        return len(self.blocks)

    def has_block(self, name: str) -> bool:
        return name in self._block_index

    def block_index(self, name: str) -> int:
        try:
            return self._block_index[name]
        except KeyError:
            raise KeyError(f"fabric {self.name!r} has no block {name!r}") from None

    def block(self, name: str) -> Block:
        return self.blocks[self.block_index(name)]

    def link_speed_gbps(self, a: str, b: str) -> float:
        """A circuit runs at the slower end's speed."""
        return min(self.block(a).speed_gbps, self.block(b).speed_gbps)

    # -- OCSes --------------------------------------------------------------------------
    def ocs_index(self, name: str) -> int:
        try:
            return self._ocs_index[name]
        except KeyError:
            raise KeyError(f"fabric {self.name!r} has no OCS {name!r}") from None

    def ocs_named(self, name: str) -> Ocs:
        return self.ocs[self.ocs_index(name)]

    @property
    def domains(self) -> tuple[int, ...]:
        return tuple(sorted({o.domain for o in self.ocs}))

    def ocs_in_domain(self, domain: int) -> tuple[Ocs, ...]:
        return tuple(o for o in self.ocs if o.domain == domain)

    # -- wiring -------------------------------------------------------------------------
    def wired_port(self, ocs: str, port: int) -> WiredPort | None:
        """The block port cabled to ``ocs`` port ``port``, or None if it is not cabled."""
        return self._ports.get((ocs, port))

    def ports_of(self, block: str, ocs: str | None = None) -> Iterator[WiredPort]:
        for w in self.wiring:
            if w.block == block and (ocs is None or w.ocs == ocs):
                yield w

    def ports_on_ocs(self, ocs: str) -> tuple[WiredPort, ...]:
        return self._ports_by_ocs.get(ocs, ())

    # -- spine --------------------------------------------------------------------------
    @property
    def has_spine(self) -> bool:
        return bool(self.spine)


def build_fabric(
    name: str,
    blocks: list[Block] | tuple[Block, ...],
    ocs: list[Ocs] | tuple[Ocs, ...],
    spine: list[SpineSwitch] | tuple[SpineSwitch, ...] = (),
    wiring_rule: WiringRule = WiringRule.STRIPED,
    source: str = "<fabric>",
) -> Fabric:
    """Validate the parts of a fabric and compute its wiring."""
    _check_unique_names(blocks, ocs, spine, source)
    block_names = {b.name for b in blocks}
    for si, s in enumerate(spine):
        for block, count in s.links:
            if block not in block_names:
                raise ConfigError(source, f"spine[{si}].links.{block}", f"unknown block {block!r}")
            if count < 0:
                raise ConfigError(source, f"spine[{si}].links.{block}", "must be >= 0")
    wired = sum(b.uplinks for b in blocks)
    if wired > limits.MAX_WIRED_PORTS:
        raise ConfigError(
            source, "blocks", f"{wired:,} uplinks in all; a fabric has at most {limits.MAX_WIRED_PORTS:,}"
        )
    wiring = striped_wiring(tuple(blocks), tuple(ocs), source)
    return Fabric(
        name=name,
        blocks=tuple(blocks),
        ocs=tuple(ocs),
        spine=tuple(spine),
        wiring=wiring,
        wiring_rule=wiring_rule,
        source=source,
    )


def _check_unique_names(
    blocks: tuple[Block, ...] | list[Block],
    ocs: tuple[Ocs, ...] | list[Ocs],
    spine: tuple[SpineSwitch, ...] | list[SpineSwitch],
    source: str,
) -> None:
    seen: dict[str, str] = {}
    sections: tuple[tuple[str, Sequence[Block | Ocs | SpineSwitch]], ...] = (
        ("blocks", blocks), ("ocs", ocs), ("spine", spine))
    for section, items in sections:
        for i, item in enumerate(items):
            key = f"{section}[{i}].name"
            if item.name in seen:
                raise ConfigError(source, key, f"duplicate name {item.name!r} (also {seen[item.name]})")
            seen[item.name] = key


def striped_wiring(
    blocks: tuple[Block, ...], ocs: tuple[Ocs, ...], source: str = "<fabric>"
) -> tuple[WiredPort, ...]:
    """Stripe every block's uplinks evenly over all OCSes, half north and half south.

    Block ``b``'s uplink ``o * k + j`` goes to OCS ``o`` (``k`` = uplinks / #OCS); on a
    split OCS its first ``k/2`` ports of each OCS are on the north side. OCS ports are
    handed out in block order, north ports from 0 and south ports from ``ports // 2``.
    """
    if not ocs:
        raise ConfigError(source, "ocs", "a fabric needs at least one OCS")
    if not blocks:
        raise ConfigError(source, "blocks", "a fabric needs at least one block")
    n_ocs = len(ocs)
    for bi, b in enumerate(blocks):
        if b.uplinks % n_ocs:
            raise ConfigError(
                source,
                f"blocks[{bi}].uplinks",
                f"{b.uplinks} uplinks cannot be striped evenly over {n_ocs} OCSes",
            )
        k = b.uplinks // n_ocs
        for oi, o in enumerate(ocs):
            if o.sides is OcsSides.SPLIT and k % 2:
                raise ConfigError(
                    source,
                    f"blocks[{bi}].uplinks",
                    f"{k} ports per OCS cannot be split evenly between the north and south "
                    f"sides of ocs[{oi}] ({o.name}); use an even share or sides: any",
                )
    for oi, o in enumerate(ocs):
        needed = sum(b.uplinks // n_ocs for b in blocks)
        if o.sides is OcsSides.SPLIT:
            half_needed = needed // 2
            if half_needed > o.ports // 2:
                raise ConfigError(
                    source,
                    f"ocs[{oi}].ports",
                    f"the wiring needs {half_needed} ports on each side ({needed} in all) "
                    f"but {o.name} has {o.ports // 2} per side",
                )
        elif needed > o.ports:
            raise ConfigError(
                source, f"ocs[{oi}].ports", f"the wiring needs {needed} ports but {o.name} has {o.ports}"
            )

    wired: list[WiredPort] = []
    add = wired.append
    north, south, either = Side.NORTH, Side.SOUTH, Side.ANY
    for oi, o in enumerate(ocs):  # 32k ports at 64 blocks: the invariants of each loop hoisted
        name, any_side = o.name, o.sides is OcsSides.ANY
        next_north, next_south, next_any = 0, o.ports // 2, 0
        for b in blocks:
            k = b.uplinks // n_ocs
            block, first, half = b.name, oi * k, k // 2
            if any_side:
                for j in range(k):
                    add(WiredPort(name, next_any + j, block, first + j, either))
                next_any += k
                continue
            for j in range(half):
                add(WiredPort(name, next_north + j, block, first + j, north))
            for j in range(half, k):
                add(WiredPort(name, next_south + j - half, block, first + j, south))
            next_north += half
            next_south += k - half
    return tuple(wired)
