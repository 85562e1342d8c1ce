"""P4GroupWriter against the emulated switch's P4Runtime server: budget, replay, reconcile."""

from __future__ import annotations

import grpc
import pytest

from emulation.errors import ApplyAborted
from emulation.switch_device import SwitchTables
from southbound.errors import ApplyFailed, ApplyOutcome, InvalidRequest
from southbound.standard.p4rt import encoding
from southbound.standard.p4rt.driver import P4GroupWriter
from southbound.standard.p4rt.program import Program
from southbound.types import GroupBudget
from tests.support.p4rt_support import p4_device, served_p4_switch


def test_shipped_p4info_declares_pins_fabric_budget() -> None:
    assert Program.shipped().budget() == GroupBudget(256, 49_152)


def test_budget_is_read_from_the_devices_p4info() -> None:
    with served_p4_switch(max_group_entries=24, table_capacity=300) as (_, _, driver, _):
        assert driver.budget() == GroupBudget(24, 300)
        selector = driver.program().selector()
    assert selector.WhichOneof("selector_size_semantics") == "sum_of_weights"


def test_a_group_past_the_budget_is_refused_for_that_entity_and_never_truncated() -> None:
    with served_p4_switch(max_group_entries=16, table_capacity=40) as (device, _, driver, _):
        budget = driver.budget()
        with pytest.raises(InvalidRequest) as info:
            over = {"b": budget.max_group_weight, "c": 1}
            driver.set_groups(expected_generation=1, source={"c": {"c": 2}, "b": over})
        assert info.value.transport_code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "wcmp_group_table src-b" in str(info.value)
        assert "17 entries, more than the 16" in str(info.value)
        assert driver.groups().source == {} and device.groups()[1] == {}
        with pytest.raises(InvalidRequest) as total:
            driver.set_groups(expected_generation=1, source={d: {d: 16} for d in "bcd"})
        assert total.value.transport_code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "need 48 entries but the table holds 40" in str(total.value)
        full = {"b": {"b": 16}, "c": {"c": 16}, "d": {"d": 8}}
        exact = driver.set_groups(expected_generation=1, source=full)
    assert exact.entries_used == 40


def test_replay_is_answered_from_the_marker_on_the_switch_by_a_new_driver() -> None:
    with served_p4_switch() as (device, agent, driver, _):
        first = driver.set_groups(expected_generation=1, source={"b": {"b": 2}}, request_id="push-1")
        driver.set_groups(expected_generation=2, source={"c": {"c": 1}}, request_id="push-2")
        with P4GroupWriter(p4_device(agent.address)) as restarted:
            again = restarted.set_groups(expected_generation=1, source={"b": {"b": 2}}, request_id="push-1")
            with pytest.raises(InvalidRequest, match="used for a different request"):
                restarted.set_groups(expected_generation=1, source={"b": {"b": 3}}, request_id="push-1")
        assert (again.generation, again.replayed, again.entries_used) == (first.generation, True, 2)
        assert device.generation == 3
        assert driver.groups().source == {"c": {"c": 1}}


def test_read_reconciles_after_a_driver_restart() -> None:
    with served_p4_switch() as (device, agent, driver, _):
        driver.set_groups(expected_generation=1, source={"b": {"b": 3, "c": 1}, "d": {"d": 2}},
                          transit={"b": {"b": 1}})
        driver.close()
        with P4GroupWriter(p4_device(agent.address)) as restarted:
            seen = restarted.groups()
            result = restarted.set_groups(expected_generation=seen.generation, source={"c": {"c": 1}})
            left = restarted.read_entries()
    assert (seen.generation, seen.source, seen.transit) == (2, {"b": {"b": 3, "c": 1}, "d": {"d": 2}},
                                                            {"b": {"b": 1}})
    assert result.generation == 3 and device.groups()[1:3] == ({"c": {"c": 1}}, {})
    # the replace left no entry of the old groups behind: one route, one group, one next hop
    tables = sorted(e.table for e in left)
    assert tables.count("ipv4_table") == 1 and tables.count("wcmp_group_table") == 1
    assert tables.count("nexthop_table") == tables.count("router_interface_table") == 1
    markers = [e for e in left if str(e.field("vrf_id")).startswith(encoding.MARKER_PREFIX)]
    assert [m.field("vrf_id") for m in markers] == ["heliostat-gen-3"]


def test_the_driver_carries_on_after_the_switch_agent_restarts() -> None:
    with served_p4_switch() as (device, agent, driver, _):
        driver.set_groups(expected_generation=1, source={"b": {"b": 2}})
        agent.stop()
        agent.start()  # same port; the switch's tables and the model survive
        result = driver.set_groups(expected_generation=2, source={"c": {"c": 1}}, transit={"b": {"b": 1}})
        assert result.generation == 3 and driver.groups().transit == {"b": {"b": 1}}
    assert device.groups()[1:3] == ({"c": {"c": 1}}, {"b": {"b": 1}})


class _FailingDataPlane:
    """A realiser whose next change fails part way (the switch rolls it back)."""

    def __init__(self) -> None:
        self.fail = False

    def realise(self, tables: SwitchTables) -> None:
        if self.fail:
            self.fail = False
            raise ApplyAborted("the data plane failed to program a group")

    def committed(self, replayed: bool) -> None:
        return None


def test_a_failure_of_the_switch_is_apply_failed_with_the_old_state_read_back() -> None:
    data_plane = _FailingDataPlane()
    with served_p4_switch(realiser=data_plane) as (device, _, driver, _):
        driver.set_groups(expected_generation=1, source={"b": {"b": 1}})
        data_plane.fail = True
        with pytest.raises(ApplyFailed) as info:
            driver.set_groups(expected_generation=2, source={"c": {"c": 1}})
        assert info.value.outcome is ApplyOutcome.OLD_STATE
        assert "failed to program a group" in str(info.value)
        assert driver.groups().source == {"b": {"b": 1}} and device.groups()[1] == {"b": {"b": 1}}
        assert driver.set_groups(expected_generation=2, source={"c": {"c": 1}}).generation == 3
