"""The fabric view model (controller/ui/fabric_view.py) and the load history it reads, without
servers: circuits by state and by OCS, a drained or failed OCS, loads, drill-downs."""

from __future__ import annotations

import pytest

from controller.decision import Maintenance, MaintenanceTarget
from controller.device_view import circuit_ends
from controller.sensing.observe import maintenance_ports
from controller.ui.fabric_view import (
    FabricFacts,
    NotInFabric,
    circuit_states,
    device_view,
    fabric_view,
    link_view,
    pair,
    poll_loads,
)
from controller.ui.facts import devices_json
from controller.ui.load_history import LoadHistory
from optimizer.fabric import Fabric
from optimizer.topology import Circuit, uniform_mesh


def _facts(fabric: Fabric, drained_ocs: str | None = None, board: dict | None = None,
           down: frozenset[Circuit] = frozenset()) -> FabricFacts:
    installed = frozenset(uniform_mesh(fabric))
    maintenance = {Maintenance(MaintenanceTarget.OCS, drained_ocs)} if drained_ocs else set()
    board = {"circuits_installed": len(installed), **(board or {})}
    if drained_ocs:
        board["maintenance"] = (f"ocs:{drained_ocs}",)
    return FabricFacts(
        fabric, installed, installed - down,
        devices=devices_json(fabric, [], board, {}),
        drained_ports=maintenance_ports(fabric, maintenance, installed),
    )


def test_every_circuit_is_in_one_pair_with_the_ocs_that_carries_it(fabric4: Fabric) -> None:
    facts = _facts(fabric4)
    view = fabric_view(facts, LoadHistory())
    assert [b["name"] for b in view["blocks"]] == ["b1", "b2", "b3", "b4"]
    assert [o["name"] for o in view["ocs"]] == ["ocs1", "ocs2"]
    total = len(facts.installed)
    assert view["circuits"] == {"installed": total, "up": total, "carrying": total, "drained": 0, "down": 0}
    assert sum(link["circuits"]["installed"] for link in view["links"]) == total
    for link in view["links"]:
        expected = {o: sum(1 for c in facts.installed if c.ocs == o and pair(fabric4, *c.blocks(fabric4))
                           == (link["a"], link["b"])) for o in ("ocs1", "ocs2")}
        assert {o["ocs"]: o["installed"] for o in link["by_ocs"]} == {k: v for k, v in expected.items() if v}
    for o in view["ocs"]:
        assert o["circuits"]["installed"] == sum(c.ocs == o["name"] for c in facts.installed)


def test_a_drained_ocs_is_marked_and_its_circuits_carry_nothing(fabric4: Fabric) -> None:
    facts = _facts(fabric4, drained_ocs="ocs2")
    view = fabric_view(facts, LoadHistory())
    ocs = {o["name"]: o for o in view["ocs"]}
    on_ocs2 = sum(c.ocs == "ocs2" for c in facts.installed)
    assert ocs["ocs2"]["maintenance"] and not ocs["ocs1"]["maintenance"]
    assert ocs["ocs2"]["circuits"]["drained"] == on_ocs2 and ocs["ocs2"]["circuits"]["carrying"] == 0
    total = len(facts.installed)
    # the card: all up, but only the other OCS's circuits carry traffic
    assert view["circuits"] == {"installed": total, "up": total, "carrying": total - on_ocs2,
                                "drained": on_ocs2, "down": 0}
    for link in view["links"]:
        assert all(o["carrying"] == 0 for o in link["by_ocs"] if o["ocs"] == "ocs2")


def test_a_failed_ocs_and_a_down_circuit(fabric4: Fabric) -> None:
    one = sorted(uniform_mesh(fabric4))[0]
    facts = _facts(fabric4, board={"ocs_down": ("ocs1",), "unreachable": ("b4",)}, down=frozenset({one}))
    assert circuit_states(facts)[one] == "down"
    view = fabric_view(facts, LoadHistory())
    ocs = {o["name"]: o for o in view["ocs"]}
    assert ocs["ocs1"]["failed"] and ocs["ocs1"]["state"] == "unpowered" and not ocs["ocs2"]["failed"]
    assert {b["name"]: b["state"] for b in view["blocks"]}["b4"] == "unreachable"
    assert view["circuits"]["down"] == 1 and view["circuits"]["up"] == len(facts.installed) - 1


def test_loads_per_pair_block_and_ocs_come_from_the_port_rates(fabric4: Fabric) -> None:
    circuits = sorted(uniform_mesh(fabric4))
    rates = {}
    for i, c in enumerate(circuits):
        (ba, pa), (bb, pb) = circuit_ends(fabric4, c)
        rates[(ba, pa)] = 10.0 + i
        rates[(bb, pb)] = 1.0
    links, devices = poll_loads(fabric4, circuits, rates)
    first = circuits[0]
    a, b = pair(fabric4, *first.blocks(fabric4))
    mine = [c for c in circuits if pair(fabric4, *c.blocks(fabric4)) == (a, b)]
    forward = sum(rates[circuit_ends(fabric4, c)[0]] for c in mine if c.blocks(fabric4)[0] == a) + sum(
        rates[circuit_ends(fabric4, c)[1]] for c in mine if c.blocks(fabric4)[1] == a)
    backward = sum(rates[e] for c in mine for e in circuit_ends(fabric4, c)) - forward
    assert links[(a, b)] == (max(forward, backward), 100.0 * len(mine))
    through = [rates[e] for c in circuits if c.ocs == "ocs1" for e in circuit_ends(fabric4, c)]
    assert devices["ocs1"][0] == sum(through)
    assert devices["ocs1"][1] == 200.0 * sum(c.ocs == "ocs1" for c in circuits)
    sent = sum(r for (blk, _), r in rates.items() if blk == "b1")
    assert devices["b1"] == (sent, 100.0 * sum("b1" in c.blocks(fabric4) for c in circuits))


def test_drill_downs_carry_the_history_and_the_circuits(fabric4: Fabric) -> None:
    facts = _facts(fabric4, drained_ocs="ocs2")
    history = LoadHistory(max_samples=3)
    for t in range(5):
        devices = {"ocs1": (float(t), 800.0), "b1": (2.0 * t, 400.0)}
        history.record(float(t), {("b1", "b2"): (10.0 * t, 200.0)}, devices)
    link = link_view(facts, history, "b2", "b1")
    assert (link["a"], link["b"]) == ("b1", "b2")
    assert [h["time"] for h in link["history"]] == [2.0, 3.0, 4.0]  # bounded: the last three
    assert [h["load_gbps"] for h in link["history"]] == [20.0, 30.0, 40.0]
    assert link["load_gbps"] == 40.0 and link["utilisation"] == 0.2
    assert {c["ocs"] for c in link["circuit_list"]} <= {"ocs1", "ocs2"}
    assert all(c["state"] == ("drained" if c["ocs"] == "ocs2" else "carrying") for c in link["circuit_list"])
    assert len(link["circuit_list"]) == link["circuits"]["installed"] > 0
    ocs = device_view(facts, history, "ocs2")
    assert ocs["kind"] == "ocs" and ocs["maintenance"]
    assert len(ocs["circuit_list"]) == sum(c.ocs == "ocs2" for c in facts.installed)
    assert [h["load_gbps"] for h in ocs["history"]] == [None, None, None]  # not in these samples
    block = device_view(facts, history, "b1")
    assert [h["load_gbps"] for h in block["history"]] == [4.0, 6.0, 8.0]
    assert {(x["a"], x["b"]) for x in block["links"]} == {("b1", "b2"), ("b1", "b3"), ("b1", "b4")}


@pytest.mark.parametrize("call", [
    lambda f, h: device_view(f, h, "ocs9"),
    lambda f, h: link_view(f, h, "b1", "b9"),
])
def test_unknown_names_are_refused_naming_them(fabric4: Fabric, call: object) -> None:
    with pytest.raises(NotInFabric) as caught:
        call(_facts(fabric4), LoadHistory())  # type: ignore[operator]
    assert caught.value.name in ("ocs9", "b9") and "demo-4" in str(caught.value)


def test_the_history_shares_keys_and_stays_bounded() -> None:
    history = LoadHistory(max_samples=4)
    for t in range(10):
        history.record(float(t), {("a", "b"): (t, 1.0), ("a", "c"): (2 * t, 1.0)}, {"a": (3.0, 4.0)})
    assert len(history) == 4
    assert [h["load_gbps"] for h in history.link("a", "c")] == [12.0, 14.0, 16.0, 18.0]
    assert [h["load_gbps"] for h in history.link("b", "a")] == [6.0, 7.0, 8.0, 9.0]
    history.record(10.0, {("a", "c"): (1.0, 1.0), ("a", "b"): (5.0, 1.0)}, {})  # another order
    assert history.link("a", "b")[-1]["load_gbps"] == 5.0 and history.link("a", "c")[-1]["load_gbps"] == 1.0
    history.record(11.0, {("b", "c"): (float("nan"), 1.0)}, {})
    latest = history.latest()
    assert latest is not None and latest[1] == {("b", "c"): (0.0, 1.0)}
    assert history.link("a", "b")[-1] == {"time": 11.0, "load_gbps": None, "capacity_gbps": None}
