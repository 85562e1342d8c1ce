"""What the emulated P4 switch accepts: each update on its own (the entry fits the P4Info,
it exists or not as its type needs, a group fits the per-group budget, a port is a trunk to
a neighbour), then the batch's result as a whole (every reference resolves, transit goes
direct, every group together fits the switch-wide budget). Errors are (key, code, message)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import grpc

from emulation.switch_device import ServedSwitch
from southbound.standard.p4rt import encoding
from southbound.standard.p4rt.entries import Entry, Key
from southbound.standard.p4rt.program import Program

SC = grpc.StatusCode
State = dict[Key, Entry]


@dataclass(frozen=True)
class Refusal:
    key: Key | None  # the entry the error is about
    code: grpc.StatusCode
    message: str
    referenced: Key | None = None  # for a dangling reference: the entry it names


class SwitchRules:
    """The checks of one emulated switch: its program, budget, neighbours and prefixes."""

    def __init__(self, program: Program, device: ServedSwitch, prefixes: Mapping[str, str]) -> None:
        self.program = program
        self.device = device
        self.block_of = {str(ipaddress.IPv4Network(p)): b for b, p in prefixes.items()}

    def check_update(self, kind: str, e: Entry, state: State) -> Refusal | None:
        """One update's own validity against the state before it (None: fine)."""
        table = self.program.table(e.table)
        present = {name for name, _ in e.match}
        missing = [f.name for f in table.fields if f.name not in present]
        if missing:
            return Refusal(e.key, SC.INVALID_ARGUMENT, f"{e.table}: match field {missing[0]} missing")
        exists = e.key in state
        if kind == "INSERT" and exists:
            return Refusal(e.key, SC.ALREADY_EXISTS, f"{e.table} entry {_shown(e)} already exists")
        if kind in ("MODIFY", "DELETE") and not exists:
            return Refusal(e.key, SC.NOT_FOUND, f"{e.table} entry {_shown(e)} does not exist")
        if kind == "DELETE":
            return None
        if kind == "INSERT" and sum(1 for k in state if k[0] == e.table) >= table.size:
            return Refusal(e.key, SC.RESOURCE_EXHAUSTED, f"{e.table} is full ({table.size} entries)")
        if table.selector_id:
            return self._check_group(e)
        if not e.action:
            return Refusal(e.key, SC.INVALID_ARGUMENT, f"{e.table} entry {_shown(e)}: no action")
        if e.table == "router_interface_table":
            return self._check_port(e)
        if e.table == "ipv4_table":
            return self._check_route(e)
        return None

    def _check_group(self, e: Entry) -> Refusal | None:
        where = f"WCMP group {_shown(e)}"
        if e.action:
            return Refusal(e.key, SC.INVALID_ARGUMENT, f"{where}: a table with an action selector takes "
                           "a one-shot action set, not a single action")
        if not e.members:
            return Refusal(e.key, SC.INVALID_ARGUMENT, f"{where}: no next hop with a positive weight")
        for _, params, weight in e.members:
            if weight <= 0:
                return Refusal(e.key, SC.INVALID_ARGUMENT,
                               f"{where}: weight {weight} of {dict(params)} is not positive")
        size = sum(w for _, _, w in e.members)
        budget = self.program.budget()
        if size > budget.max_group_weight:
            return Refusal(e.key, SC.RESOURCE_EXHAUSTED, f"{where}: weights need {size} entries, more "
                           f"than the {budget.max_group_weight} a group holds")
        return None

    def _check_port(self, e: Entry) -> Refusal | None:
        port = str(e.param("port"))
        node = encoding.node_of_port(port)
        d = self.device
        if node is None or node not in d.nodes or node == d.block:
            return Refusal(e.key, SC.INVALID_ARGUMENT, f"router interface {_shown(e)}: port {port!r}: "
                           f"{node or port!r} is not a neighbour block or spine (ports: trunk-<node>)")
        return None

    def _check_route(self, e: Entry) -> Refusal | None:
        vrf = e.field("vrf_id")
        if vrf not in (encoding.SOURCE_VRF, encoding.TRANSIT_VRF):
            return None  # another VRF: kept, not forwarded by the emulated data plane
        which = "source" if vrf == encoding.SOURCE_VRF else "transit"
        dest = self.block_of.get(str(e.field("ipv4_dst")))
        where = f"{which} group for route {e.field('ipv4_dst')}"
        if dest is None:
            return Refusal(e.key, SC.INVALID_ARGUMENT, f"{where}: unknown destination block")
        if dest == self.device.block:
            return Refusal(e.key, SC.INVALID_ARGUMENT, f"{which} group for {dest!r}: a block does not "
                           "route to itself")
        if e.action == "drop":
            return Refusal(e.key, SC.UNIMPLEMENTED, f"{where}: the emulated switch does not drop; "
                           "route it to a next hop or group")
        if which == "source" and self.device.role == "spine":
            return Refusal(e.key, SC.INVALID_ARGUMENT, f"{where}: source groups: a spine switch "
                           "originates no traffic; set transit groups")
        return None

    def check_state(self, state: State) -> list[Refusal]:
        """The batch's result as a whole: references, transit next hops, the total budget."""
        out: list[Refusal] = []

        def need(e: Entry, key: Key, what: str) -> None:
            if key not in state:
                out.append(Refusal(e.key, SC.NOT_FOUND, f"{e.table} entry {_shown(e)} names {what}, "
                                   "which does not exist", key))

        for e in state.values():
            if e.table == "ipv4_table":
                need(e, ("vrf_table", (("vrf_id", e.field("vrf_id") or ""),)), f"VRF {e.field('vrf_id')!r}")
                if e.action == "set_wcmp_group_id":
                    gid = e.param("wcmp_group_id") or ""
                    need(e, ("wcmp_group_table", (("wcmp_group_id", gid),)), f"WCMP group {gid!r}")
                elif e.action == "set_nexthop_id":
                    nh = e.param("nexthop_id") or ""
                    need(e, ("nexthop_table", (("nexthop_id", nh),)), f"next hop {nh!r}")
            elif e.table == "wcmp_group_table":
                for _, params, _ in e.members:
                    nh = dict(params).get("nexthop_id", "")
                    need(e, ("nexthop_table", (("nexthop_id", nh),)), f"next hop {nh!r}")
            elif e.table == "nexthop_table":
                rif, nbr = e.param("router_interface_id") or "", e.param("neighbor_id") or ""
                need(e, _rif_key(rif), f"router interface {rif!r}")
                need(e, ("neighbor_table", (("neighbor_id", nbr), ("router_interface_id", rif))),
                     f"neighbor {nbr!r} on {rif!r}")
            elif e.table == "neighbor_table":
                rif = e.field("router_interface_id") or ""
                need(e, _rif_key(rif), f"router interface {rif!r}")
        if out:
            return out
        out.extend(self._check_transit(state))
        groups = [e for e in state.values() if e.table == "wcmp_group_table"]
        used = sum(w for e in groups for _, _, w in e.members)
        total = self.program.budget().total_weight
        if used > total:
            out.append(Refusal(None, SC.RESOURCE_EXHAUSTED,
                               f"the groups need {used} entries but the table holds {total}"))
        return out

    def _check_transit(self, state: State) -> Iterable[Refusal]:
        for e in state.values():
            if e.table != "ipv4_table" or e.field("vrf_id") != encoding.TRANSIT_VRF:
                continue
            dest = self.block_of.get(str(e.field("ipv4_dst")))
            hops: list[str] = []
            if e.action == "set_nexthop_id":
                hops = [str(e.param("nexthop_id"))]
            elif e.action == "set_wcmp_group_id":
                group = state[("wcmp_group_table", (("wcmp_group_id", e.param("wcmp_group_id") or ""),))]
                hops = [str(dict(p)["nexthop_id"]) for _, p, _ in group.members]
            for nh in hops:
                via = encoding.next_hop_node(nh, state)
                if via != dest:
                    yield Refusal(e.key, SC.INVALID_ARGUMENT, f"transit group for {dest!r}: transit traffic "
                                  f"may only go direct, not via {via!r}")
                    break


def _rif_key(rif: object) -> Key:
    return "router_interface_table", (("router_interface_id", str(rif)),)


def _shown(e: Entry) -> str:
    return " ".join(str(v) for _, v in e.match)
