"""A P4Runtime server started anew in front of a switch that kept its groups (the packet
fabric's agent process after a crash: fail static) adopts them: the controller's Read finds
the groups and a generation at least the one it left, and its next write is accepted."""

from __future__ import annotations

from emulation.standard.p4rt import start_p4runtime
from southbound.standard.p4rt.driver import P4GroupWriter
from tests.support.p4rt_support import PREFIXES, block_switch, p4_device


def test_a_new_server_adopts_the_groups_the_switch_kept() -> None:
    device, _ = block_switch()
    first = start_p4runtime(device, prefixes=PREFIXES)
    with P4GroupWriter(p4_device(first.address)) as driver:
        written = driver.set_groups(expected_generation=1, source={"b": {"b": 3, "c": 1}, "d": {"d": 2}},
                                    transit={"c": {"c": 1}})
    first.stop()
    second = start_p4runtime(device, prefixes=PREFIXES)  # a new servicer: its tables start empty
    try:
        with P4GroupWriter(p4_device(second.address)) as driver:
            adopted = driver.groups()
            assert adopted.source == {"b": {"b": 3, "c": 1}, "d": {"d": 2}}
            assert adopted.transit == {"c": {"c": 1}}
            assert adopted.generation >= written.generation
            again = driver.set_groups(expected_generation=adopted.generation, source={"b": {"b": 1}},
                                      replace=False)
        assert again.generation == adopted.generation + 1
        _, source, _, _ = device.groups()
        assert source["b"] == {"b": 1} and source["d"] == {"d": 2}
    finally:
        second.stop()


def test_a_switch_with_no_groups_starts_with_empty_tables() -> None:
    device, _ = block_switch()
    agent = start_p4runtime(device, prefixes=PREFIXES)
    try:
        with P4GroupWriter(p4_device(agent.address)) as driver:
            groups = driver.groups()
        assert (groups.generation, groups.source, groups.transit) == (1, {}, {})
    finally:
        agent.stop()
