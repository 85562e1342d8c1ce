"""The OpenConfig data tree of an emulated switch, as leaves: every leaf path the target can
ever serve (fixed per device: the schema), and a :class:`View` that reads their values from
the device at one moment.

Per port ``N`` (SONiC's ``Ethernet0``...)::

    /interfaces/interface[name=N]/{config,state}/name, enabled, forwarding-viable
    /interfaces/interface[name=N]/state/admin-status, oper-status
    /interfaces/interface[name=N]/state/counters/in-octets, out-octets, in-pkts, out-pkts,
                                                 in-discards, out-discards
    /interfaces/interface[name=N]/ethernet/{config,state}/port-speed
    /lldp/interfaces/interface[name=N]/neighbors/neighbor[id=1]/state/id, system-name,
                                                 port-id, port-id-type   (while a peer is heard)

The device's one ``drained`` flag per port carries both drains: a port drained through the
admin state (``enabled`` false) or through ``forwarding-viable`` false is out of its groups.
An admin-down port also reports oper-status DOWN and no LLDP neighbour (its link is down); a
port that is only not forwarding-viable keeps its link, counters and neighbour.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from emulation.switch_device import PortRow, ServedSwitch
from southbound.standard.gnmi import paths
from southbound.standard.gnmi.values import Scalar
from southbound.standard.pb import gnmi_pb2

COUNTER_ROW = {leaf: column for leaf, column in paths.COUNTER_LEAVES.items()}
NEIGHBOR_ID = "1"


@dataclass(frozen=True)
class Leaf:
    """One leaf of the tree: its path, the port and what it reports (``kind``, ``arg``)."""

    path: gnmi_pb2.Path = field(compare=False)
    text: str
    port: int
    kind: str  # name, enabled, viable, admin, oper, counter, speed, lldp
    arg: str = ""  # the counter's PortCounters field, or the LLDP leaf
    config: bool = False  # a config (rw) leaf

    @property
    def name(self) -> str:
        return paths.leaf_name(self.path)


def schema(num_ports: int, naming: paths.PortNaming) -> list[Leaf]:
    """Every leaf the device has (LLDP ones serve only while a neighbour is heard)."""
    out: list[Leaf] = []

    def add(path: gnmi_pb2.Path, port: int, kind: str, arg: str = "", config: bool = False) -> None:
        out.append(Leaf(path, paths.text(path), port, kind, arg, config))

    for port in range(num_ports):
        name = naming.name(port)
        for part in ("config", "state"):
            config = part == "config"
            add(paths.interface(name, part, "name"), port, "name", config=config)
            add(paths.interface(name, part, "enabled"), port, "enabled", config=config)
            add(paths.interface(name, part, "forwarding-viable"), port, "viable", config=config)
            add(paths.interface(name, "ethernet", part, "port-speed"), port, "speed", config=config)
        add(paths.interface(name, "state", "admin-status"), port, "admin")
        add(paths.interface(name, "state", "oper-status"), port, "oper")
        for leaf, column in COUNTER_ROW.items():
            add(paths.counter(name, leaf), port, "counter", column)
        for leaf in ("id", "system-name", "port-id", "port-id-type"):
            path = paths.lldp_neighbor(name, leaf)
            path.elem[4].key["id"] = NEIGHBOR_ID
            add(path, port, "lldp", leaf)
    return out


def speed_identity(gbps: float, module: bool) -> str:
    """openconfig-if-ethernet's ETHERNET_SPEED identity of ``gbps``."""
    name = f"SPEED_{int(gbps)}GB" if gbps >= 1 and gbps == int(gbps) else f"SPEED_{int(gbps * 1000)}MB"
    return f"openconfig-if-ethernet:{name}" if module else name


class DrainState:
    """Which ports the target drained and how (admin down, not forwarding-viable), kept
    consistent with the device's own ``drained`` flags (which the native API may change)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.admin_down: set[int] = set()
        self.not_viable: set[int] = set()

    def reconcile(self, rows: list[PortRow]) -> None:
        """A port the device drained by other means is not forwarding-viable; one it
        undrained is neither admin down nor unviable any more."""
        with self.lock:
            for row in rows:
                port = row["port"]
                if row["drained"] and port not in self.admin_down:
                    self.not_viable.add(port)
                elif not row["drained"]:
                    self.admin_down.discard(port)
                    self.not_viable.discard(port)


class View:
    """The device at one moment, read lazily: counters only if a counter leaf is asked for."""

    def __init__(self, device: ServedSwitch, drains: DrainState, naming: paths.PortNaming) -> None:
        self.device = device
        self.drains = drains
        self.naming = naming
        self._counters: dict[str, Any] | None = None
        self._ports: list[PortRow] | None = None

    @property
    def counters(self) -> dict[str, Any]:
        if self._counters is None:
            self._counters = self.device.counters()
        return self._counters

    @property
    def ports(self) -> list[PortRow]:
        if self._ports is None:
            self._ports = self.device.ports()
            self.drains.reconcile(self._ports)
        return self._ports

    @property
    def time_ns(self) -> int:
        """The emulated time the counters are complete to, in ns (the notifications' time)."""
        return int(float(self.counters["time_s"]) * 1e9)

    def value(self, leaf: Leaf, encoding: gnmi_pb2.Encoding) -> Scalar | None:
        """The leaf's value now; None when it does not exist (no LLDP neighbour)."""
        if leaf.kind == "counter":
            return int(self.counters[leaf.arg][leaf.port])
        row = self.ports[leaf.port]
        admin_up = leaf.port not in self.drains.admin_down
        if leaf.kind == "name":
            return self.naming.name(leaf.port)
        if leaf.kind == "enabled":
            return admin_up
        if leaf.kind == "viable":
            return leaf.port not in self.drains.not_viable
        if leaf.kind == "admin":
            return "UP" if admin_up else "DOWN"
        if leaf.kind == "oper":
            return "UP" if row["oper_up"] and admin_up else "DOWN"
        if leaf.kind == "speed":
            return speed_identity(row["speed_gbps"], encoding == gnmi_pb2.JSON_IETF)
        peer = row["peer"] if admin_up else None
        if peer is None:
            return None
        return {"id": NEIGHBOR_ID, "system-name": peer[0], "port-id": self.naming.name(peer[1]),
                "port-id-type": "INTERFACE_NAME"}[leaf.arg]
