"""From a fabric to what Mininet builds and what the OpenFlow agent serves (pure).

Names carry a short run tag so that two fabrics (or anybody else's bridges) never clash,
and every interface name stays within Linux's 15 characters:
  block switch ``<tag>b<i>``, OCS switch ``<tag>o<i>``, spine switch ``<tag>s<i>``,
  host ``<tag>h<i>x<h>`` (1-based),
  interfaces ``<node>-eth<OpenFlow port>``.
Port numbers follow emulation.openflow.spec: OCS port k and block uplink j are OpenFlow
ports k+1 and j+1; host h of a block is OpenFlow port HOST_PORT_BASE + h. A block's spine
links follow its OCS uplinks and spine port q is OpenFlow port q+1 (optimizer.spine).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from emulation.openflow.spec import (
    HOST_PORT_BASE,
    AgentSpec,
    BlockSpec,
    HostSpec,
    OcsSpec,
    ocs_ofport,
    uplink_ofport,
)
from optimizer.fabric import Fabric
from optimizer.spine import block_ports, spine_links, spine_port_count

BLOCK_DPID_BASE = 0x100
OCS_DPID_BASE = 0x10000
SPINE_DPID_BASE = 0x20000
MAX_IFNAME = 15


class PlanError(ValueError):
    """The fabric cannot be built as a Mininet network (too big for the naming scheme)."""


@dataclass(frozen=True)
class NetPlan:
    """Everything the Mininet builder needs, as JSON-able data, and the agent spec."""

    tag: str
    agent: AgentSpec
    switches: dict[str, dict[str, Any]]  # switch name -> {dpid, device}
    hosts: dict[str, dict[str, Any]]  # host name -> {ip, mac, switch, ofport, block}
    links: list[dict[str, Any]]  # {a, a_port, b, b_port}: switch-to-switch fibres

    def builder_json(self) -> dict[str, Any]:
        return {
            "tag": self.tag,
            "controller": {"ip": self.agent.of_host, "port": self.agent.of_port},
            "switches": self.switches,
            "hosts": self.hosts,
            "links": self.links,
        }

    def switch_of(self, device: str) -> str:
        for name, s in self.switches.items():
            if s["device"] == device:
                return name
        raise KeyError(device)

    def hosts_of(self, block: str) -> list[str]:
        return [h for h, v in self.hosts.items() if v["block"] == block]


def plan_network(fabric: Fabric, tag: str, of_port: int, hosts_per_block: int = 2,
                 bucket_scheme: str = "replicated", probe_interval_s: float = 0.5,
                 ocs_switching_time_s: float = 0.0) -> NetPlan:
    if not tag.isalnum() or len(tag) > 4:
        raise PlanError(f"tag {tag!r} must be 1-4 letters or digits")
    if not 1 <= hosts_per_block <= 250:
        raise PlanError("hosts_per_block must be 1..250")
    if fabric.n_blocks > 250:
        raise PlanError("at most 250 blocks (one 10.<b>.0.0/16 per block)")
    switches: dict[str, dict[str, Any]] = {}
    hosts: dict[str, dict[str, Any]] = {}
    links: list[dict[str, Any]] = []
    block_specs = []
    for i, block in enumerate(fabric.blocks):
        switch = f"{tag}b{i + 1}"
        dpid = BLOCK_DPID_BASE + i
        # OpenFlow15 too: the agent sends select-group mods with a selection method.
        switches[switch] = {"dpid": dpid, "device": block.name, "kind": "block",
                            "protocols": "OpenFlow13,OpenFlow15"}
        host_specs = []
        for h in range(hosts_per_block):
            name = f"{tag}h{i + 1}x{h + 1}"
            ip = f"10.{i + 1}.0.{h + 1}"
            mac = f"02:00:00:{(i + 1) >> 8:02x}:{(i + 1) & 0xFF:02x}:{h + 1:02x}"
            ofport = HOST_PORT_BASE + h
            hosts[name] = {"ip": ip, "mac": mac, "switch": switch, "ofport": ofport,
                           "block": block.name}
            host_specs.append(HostSpec(name, ip, mac, ofport))
            _check_ifname(f"{switch}-eth{ofport}")
            _check_ifname(f"{name}-eth0")
        # "uplinks" on the bridge: every fabric-facing port, OCS uplinks then spine links
        block_specs.append(BlockSpec(block.name, dpid, block_ports(fabric, block.name), block.speed_gbps,
                                     tuple(host_specs), bridge=switch))
    ocs_specs = []
    for o, ocs in enumerate(fabric.ocs):
        switch = f"{tag}o{o + 1}"
        dpid = OCS_DPID_BASE + o
        switches[switch] = {"dpid": dpid, "device": ocs.name, "kind": "ocs",
                            "protocols": "OpenFlow13"}
        ocs_specs.append(OcsSpec(ocs.name, dpid, ocs.ports, str(ocs.sides)))
    spine_specs = []
    for x, spine in enumerate(fabric.spine):
        switch = f"{tag}s{x + 1}"
        dpid = SPINE_DPID_BASE + x
        switches[switch] = {"dpid": dpid, "device": spine.name, "kind": "spine",
                            "protocols": "OpenFlow13,OpenFlow15"}
        spine_specs.append(BlockSpec(spine.name, dpid, spine_port_count(fabric, spine.name),
                                     spine.speed_gbps, (), bridge=switch))
    by_device = {s["device"]: name for name, s in switches.items()}
    for w in fabric.wiring:
        a, b = by_device[w.block], by_device[w.ocs]
        links.append({"a": a, "a_port": uplink_ofport(w.block_port), "b": b,
                      "b_port": ocs_ofport(w.port)})
        _check_ifname(f"{a}-eth{uplink_ofport(w.block_port)}")
        _check_ifname(f"{b}-eth{ocs_ofport(w.port)}")
    for link in spine_links(fabric):
        a, b = by_device[link.block], by_device[link.spine]
        links.append({"a": a, "a_port": uplink_ofport(link.block_port), "b": b,
                      "b_port": uplink_ofport(link.spine_port)})
        _check_ifname(f"{a}-eth{uplink_ofport(link.block_port)}")
        _check_ifname(f"{b}-eth{uplink_ofport(link.spine_port)}")
    agent = AgentSpec(blocks=tuple(block_specs), ocs=tuple(ocs_specs), of_port=of_port,
                      bucket_scheme=bucket_scheme, probe_interval_s=probe_interval_s,
                      ocs_switching_time_s=ocs_switching_time_s, spines=tuple(spine_specs))
    return NetPlan(tag, agent, switches, hosts, links)


def _check_ifname(name: str) -> None:
    if len(name) > MAX_IFNAME:
        raise PlanError(f"interface name {name!r} is longer than {MAX_IFNAME} characters")
