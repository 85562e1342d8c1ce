"""finsy (a foreign P4Runtime client) writes a WCMP group to a switch as the primary and reads
it back. Usage: finsy_groups.py ADDRESS ELECTION_ID PREFIX. Prints JSON: whether finsy was
primary, the group's members and the route, as finsy read them."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import sys

import finsy as fy


def next_hop(peer: str) -> list[fy.P4TableEntry]:
    return [
        fy.P4TableEntry("router_interface_table", match=fy.Match(router_interface_id=f"rif-{peer}"),
                        action=fy.Action("set_port_and_src_mac", port=f"trunk-{peer}",
                                         src_mac=0x020000000001)),
        fy.P4TableEntry("neighbor_table",
                        match=fy.Match(router_interface_id=f"rif-{peer}", neighbor_id=f"nbr-{peer}"),
                        action=fy.Action("set_dst_mac", dst_mac=0x020000000002)),
        fy.P4TableEntry("nexthop_table", match=fy.Match(nexthop_id=f"nh-{peer}"),
                        action=fy.Action("set_ip_nexthop", router_interface_id=f"rif-{peer}",
                                         neighbor_id=f"nbr-{peer}")),
    ]


async def main(address: str, election_id: int, prefix: str) -> dict[str, object]:
    options = fy.SwitchOptions(device_id=1, initial_election_id=election_id)
    async with fy.Switch("sw-a", address, options) as sw:
        primary = sw.is_primary
        group = fy.P4IndirectAction([3 * fy.Action("set_nexthop_id", nexthop_id="nh-b"),
                                     1 * fy.Action("set_nexthop_id", nexthop_id="nh-c")])
        await sw.insert([
            fy.P4TableEntry("vrf_table", match=fy.Match(vrf_id="heliostat-source"),
                            action=fy.Action("NoAction")),
            *next_hop("b"), *next_hop("c"),
            fy.P4TableEntry("wcmp_group_table", match=fy.Match(wcmp_group_id="src-b"), action=group),
            fy.P4TableEntry("ipv4_table", match=fy.Match(vrf_id="heliostat-source", ipv4_dst=prefix),
                            action=fy.Action("set_wcmp_group_id", wcmp_group_id="src-b")),
        ])
        members = []
        async for entry in sw.read(fy.P4TableEntry("wcmp_group_table")):
            action = entry.action
            for weighted in action.action_set:
                weight, act = weighted
                members.append([entry.match["wcmp_group_id"], act.args["nexthop_id"], weight])
        routes = []
        async for entry in sw.read(fy.P4TableEntry("ipv4_table")):
            dst = entry.match["ipv4_dst"]  # finsy reads an LPM match as (value, prefix length)
            network = ipaddress.IPv4Network(tuple(dst) if isinstance(dst, tuple) else dst)
            routes.append([entry.match["vrf_id"], str(network), entry.action.args["wcmp_group_id"]])
    return {"primary": primary, "members": sorted(members), "routes": routes}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))))
