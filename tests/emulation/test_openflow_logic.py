"""The OpenFlow agent's pure parts (no switch needed): bucket planning, slot rounding,
monotonic counters, neighbour probes, the OpenFlow 1.5 group mod, the agent spec and the
Mininet plan's names and port numbers."""

from __future__ import annotations

import json
import struct

import pytest
from os_ken.ofproto import ofproto_v1_5

from emulation.mininet.plan import PlanError, plan_network
from emulation.openflow.groups15 import NTR_VENDOR_ID, group_mod
from emulation.openflow.pipeline import (
    MonotonicCounter,
    buckets,
    group_id,
    plan_groups,
    port_shares,
    round_to_slots,
)
from emulation.openflow.probes import ProbeNeighbours, parse_probe, probe_frame
from emulation.openflow.spec import spec_from_json
from optimizer.config import load_fabric
from optimizer.errors import ConfigError

BLOCKS = ("a", "b", "c", "d")
# uplinks of block "a": 0,1,2 -> b; 3,4 -> c; 5 -> d; 6 not connected
INSTALLED = [1, 1, 1, 2, 2, 3, -1]
NOT_DRAINED = [False] * 7


def test_a_next_hop_weight_is_spread_equally_over_its_uplinks() -> None:
    shares = port_shares({"b": 1, "c": 1}, BLOCKS, INSTALLED, NOT_DRAINED)
    # b's weight over 3 ports, c's over 2: 2 each and 3 each of 12
    assert shares == {0: 2, 1: 2, 2: 2, 3: 3, 4: 3}
    assert port_shares({"d": 5}, BLOCKS, INSTALLED, NOT_DRAINED) == {5: 1}


def test_drained_ports_leave_every_group_and_an_all_drained_hop_vanishes() -> None:
    drained = [False, True, False, True, True, False, False]
    assert port_shares({"b": 1, "c": 3}, BLOCKS, INSTALLED, drained) == {0: 1, 2: 1}
    assert port_shares({"c": 1}, BLOCKS, INSTALLED, drained) == {}


def test_groups_default_to_direct_and_transit_tables_are_separate() -> None:
    plan = plan_groups("a", BLOCKS, BLOCKS, {"c": {"b": 1}}, {}, INSTALLED, NOT_DRAINED,
                       scheme="weighted")
    assert set(plan.groups) == {group_id(t, d) for t in ("source", "transit") for d in (1, 2, 3)}
    assert plan.groups[group_id("source", 2)] == ((0, 1), (1, 1), (2, 1))  # via b
    assert plan.groups[group_id("transit", 2)] == ((3, 1), (4, 1))  # direct
    assert plan.groups[group_id("source", 3)] == ((5, 1),)


@pytest.mark.parametrize("shares", [{0: 3, 1: 1}, {0: 1, 1: 1, 2: 1}, {0: 2, 1: 3, 2: 2, 3: 3},
                                    {0: 1, 1: 7}, {0: 1, 1: 1000}])
def test_replicated_buckets_are_exactly_the_slots_in_proportion(shares: dict[int, int]) -> None:
    slots = round_to_slots(shares, 64)
    assert sum(slots.values()) == 64 and set(slots) == set(shares)
    total = sum(shares.values())
    for port, n in slots.items():
        assert n >= 1
        assert abs(n - 64 * shares[port] / total) < 1.0 or n == 1
    replicated = buckets(shares, "replicated")
    assert len(replicated) == 64 and {w for _, w in replicated} == {1}


def test_monotonic_counter_survives_restarts_of_the_raw_counter() -> None:
    c = MonotonicCounter()
    assert c.update("x", 100) == 100
    assert c.update("x", 150) == 150
    assert c.update("x", 20) == 170  # the flow was re-created: 20 new bytes
    assert c.update("x", 25) == 175
    assert c.value("y") == 0


def test_probe_frames_round_trip_and_junk_is_ignored() -> None:
    frame = probe_frame("blk-7", 12, "02:00:00:00:00:01")
    assert parse_probe(frame) == ("blk-7", 12)
    assert parse_probe(b"\x00" * 60) is None
    assert parse_probe(frame[:20]) is None


def test_neighbours_expire_and_go_at_link_down() -> None:
    n = ProbeNeighbours(BLOCKS, {"a": 3, "b": 3}, expiry_s=1.0)
    n.heard("a", 1, "b", 2, now=10.0)
    state = n.link_state("a", now=10.5)
    assert state.peer_node.tolist() == [-1, 1, -1] and state.peer_port.tolist() == [-1, 2, -1]
    assert n.link_state("a", now=11.5).peer_node.tolist() == [-1, -1, -1]
    n.heard("a", 1, "b", 2, now=20.0)
    n.link_down("a", 1)
    assert n.link_state("a", now=20.1).peer_node.tolist() == [-1, -1, -1]
    n.heard("a", 7, "b", 2)  # unknown port: ignored
    n.heard("a", 0, "nobody", 2)  # unknown block: ignored


def test_openflow15_group_mod_carries_the_dp_hash_selection_method() -> None:
    raw = group_mod(1002, ((0, 1), (3, 1)), xid=7)
    version, msg_type, length, xid = struct.unpack_from("!BBHI", raw)
    assert (version, msg_type, length, xid) == (ofproto_v1_5.OFP_VERSION,
                                                 ofproto_v1_5.OFPT_GROUP_MOD, len(raw), 7)
    command, group_type, _, group, bucket_array_len, _ = struct.unpack_from("!HBBIHxxI", raw, 8)
    assert (command, group_type, group) == (0x8000, ofproto_v1_5.OFPGT_SELECT, 1002)
    prop = raw[24 + bucket_array_len:]
    prop_type, prop_len, experimenter, exp_type = struct.unpack_from("!HHII", prop)
    assert (prop_type, experimenter, exp_type) == (ofproto_v1_5.OFPGPT_EXPERIMENTER, NTR_VENDOR_ID, 1)
    assert prop_len == 40 and prop[16:32].rstrip(b"\0") == b"dp_hash"
    assert struct.unpack_from("!Q", prop, 32)[0] == 0


def test_spec_round_trips_and_rejects_bad_values() -> None:
    fabric = load_fabric("configs/fabric-4.yaml")
    plan = plan_network(fabric, "t1", of_port=6655)
    spec = plan.agent
    again = spec_from_json(json.loads(json.dumps(spec.to_json())))
    assert again == spec
    with pytest.raises(ConfigError, match="bucket_scheme"):
        spec_from_json(spec.to_json() | {"bucket_scheme": "random"})
    with pytest.raises(ConfigError, match="ocs_switching_time_s"):
        spec_from_json(spec.to_json() | {"ocs_switching_time_s": -1})
    with pytest.raises(ConfigError, match="dpid"):
        raw = spec.to_json()
        raw["ocs"][0]["dpid"] = raw["blocks"][0]["dpid"]
        spec_from_json(raw)
    # the same dialect as the fabric and controller configs: the key path, then the problem
    raw = spec.to_json()
    raw["blocks"][1]["hosts"][0]["ofport"] = "one"
    with pytest.raises(ConfigError, match=r"^<spec>: blocks\[1\]\.hosts\[0\]\.ofport: expected an integer"):
        spec_from_json(raw)
    with pytest.raises(ConfigError, match=r"ocs\[0\]\.colour: unknown key"):
        raw = spec.to_json()
        raw["ocs"][0]["colour"] = "blue"
        spec_from_json(raw)


def test_plan_cables_ports_exactly_as_the_wiring_says() -> None:
    fabric = load_fabric("configs/fabric-4.yaml")
    plan = plan_network(fabric, "t1", of_port=6655, hosts_per_block=3)
    assert len(plan.hosts) == 12 and len(plan.switches) == 6
    by_switch = {name: s["device"] for name, s in plan.switches.items()}
    cabled = {(by_switch[link["b"]], link["b_port"] - 1): (by_switch[link["a"]], link["a_port"] - 1)
              for link in plan.links}
    assert cabled == {(w.ocs, w.port): (w.block, w.block_port) for w in fabric.wiring}
    names = [*plan.switches, *plan.hosts]
    assert len(set(names)) == len(names) and all(n.startswith("t1") for n in names)
    ips = {h["ip"] for h in plan.hosts.values()}
    assert len(ips) == 12 and "10.2.0.3" in ips


def test_plan_refuses_what_it_cannot_build() -> None:
    fabric = load_fabric("configs/fabric-4.yaml")
    with pytest.raises(PlanError, match="tag"):
        plan_network(fabric, "too-long", of_port=6655)
    from optimizer.config import generate_fabric

    with pytest.raises(PlanError, match="250 blocks"):
        plan_network(generate_fabric(blocks=251, uplinks=2, ocs=1, ports=502), "t1", of_port=6655)


def test_a_hybrid_plan_cables_the_spine_as_the_fabric_says() -> None:
    from optimizer.spine import spine_links

    fabric = load_fabric("configs/fabric-hybrid-8.yaml")
    plan = plan_network(fabric, "t1", of_port=6655)
    kinds = {s["device"]: s["kind"] for s in plan.switches.values()}
    assert kinds["s1"] == kinds["s2"] == "spine" and len(plan.switches) == 14
    by_switch = {name: s["device"] for name, s in plan.switches.items()}
    cabled = {(by_switch[link["b"]], link["b_port"] - 1): (by_switch[link["a"]], link["a_port"] - 1)
              for link in plan.links if by_switch[link["b"]] in ("s1", "s2")}
    assert cabled == {(lk.spine, lk.spine_port): (lk.block, lk.block_port) for lk in spine_links(fabric)}
    assert [b.uplinks for b in plan.agent.blocks] == [40] * 8  # 32 OCS uplinks + 8 spine links
    assert [(s.name, s.uplinks, s.hosts) for s in plan.agent.spines] == [("s1", 32, ()), ("s2", 32, ())]
    again = spec_from_json(json.loads(json.dumps(plan.agent.to_json())))
    assert again == plan.agent


def test_missing_requirements_say_what_is_missing() -> None:
    from emulation.mininet.fabric import missing_requirements

    reason = missing_requirements(system_python="/bin/false")  # a Python without Mininet
    assert reason is not None
    assert any(word in reason for word in ("root", "installed", "not running", "mininet"))
