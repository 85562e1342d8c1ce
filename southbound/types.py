"""Plain data types the southbound drivers return; the controller never sees protobufs."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class CrossConnect:
    """A circuit inside one OCS, joining ports ``a`` < ``b`` (given in either order)."""

    a: int
    b: int

    def __post_init__(self) -> None:
        if self.a > self.b:
            low, high = self.b, self.a
            object.__setattr__(self, "a", low)
            object.__setattr__(self, "b", high)


@dataclass(frozen=True)
class OcsInfo:
    name: str
    radix: int
    sides: str  # "north_south" or "any"
    north_ports: tuple[int, ...]
    south_ports: tuple[int, ...]
    generation: int
    switching_time_s: float
    powered: bool


@dataclass(frozen=True)
class CrossConnectTable:
    """Every cross-connect of one OCS; ``switching`` is the subset not yet carrying light."""

    generation: int
    cross_connects: frozenset[CrossConnect]
    switching: frozenset[CrossConnect] = frozenset()

    @property
    def established(self) -> frozenset[CrossConnect]:
        return self.cross_connects - self.switching


@dataclass(frozen=True)
class ApplyResult:
    generation: int
    replayed: bool
    request_id: str


@dataclass(frozen=True)
class OcsPortStatus:
    port: int
    side: str  # "north", "south" or "any"
    oper_up: bool
    rx_power_dbm: float
    tx_power_dbm: float
    connected_port: int | None


@dataclass(frozen=True)
class OcsEvent:
    """One OCS event; ``kind`` is circuit_up, circuit_down, power_loss or power_restored."""

    sequence: int
    time_s: float
    generation: int
    kind: str
    cross_connect: CrossConnect | None = None
    reason: str = ""
    circuits_lost: int = 0


@dataclass(frozen=True)
class SwitchInfo:
    name: str
    block: str
    num_ports: int
    port_speed_gbps: float
    max_group_entries: int
    table_capacity: int
    generation: int
    role: str = "block"  # or "spine"


@dataclass(frozen=True)
class SwitchPort:
    port: int
    oper_up: bool
    drained: bool
    speed_gbps: float
    peer_block: str | None
    peer_port: int | None


#: destination block -> {via block: weight}
GroupTable = dict[str, dict[str, int]]


@dataclass(frozen=True)
class NextHopGroups:
    generation: int
    source: GroupTable
    transit: GroupTable
    entries_used: int


@dataclass(frozen=True)
class GroupBudget:
    """What a switch's group tables hold, as the switch declares it: the sum of the weights of
    one group, and of all its groups together (PINS's fabric build: 49,152). The quantizer
    fits the weights to it; a device refuses a write past it."""

    max_group_weight: int
    total_weight: int


@dataclass(frozen=True)
class SetGroupsResult:
    generation: int
    replayed: bool
    entries_used: int
    request_id: str


@dataclass(frozen=True)
class PortCounters:
    port: int
    tx_bytes: int = 0
    rx_bytes: int = 0
    tx_packets: int = 0
    rx_packets: int = 0
    tx_drops: int = 0  # packets
    rx_drops: int = 0  # packets
    tx_drop_bytes: int = 0
    rx_drop_bytes: int = 0


#: PortCounters' counters, in their order
PORT_COUNTER_FIELDS = ("tx_bytes", "rx_bytes", "tx_packets", "rx_packets", "tx_drops", "rx_drops",
                       "tx_drop_bytes", "rx_drop_bytes")


@dataclass(frozen=True)
class SwitchCounters:
    time_s: float
    ports: dict[int, PortCounters] = field(default_factory=dict)
    egress_bytes: dict[str, int] = field(default_factory=dict)
    no_route_drops: int = 0
