"""The daemon steers a hybrid fabric's spine: polls the spine switches, routes TE over spine
paths, pushes the spines' groups, drains a spine switch for maintenance and routes around a
cut spine link. ``configs/fabric-hybrid-8.yaml`` on the flow-level emulator over gRPC."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controller.config import load_controller_config
from controller.daemon import Daemon
from controller.northbound.api import MaintenanceKind
from controller.northbound.daemon_api import DaemonApi
from emulation.fabric import EmulatedFabric
from optimizer.traffic import hotspot_matrix
from tests.support.daemon_support import CONFIGS, controller_config, running_fabric, wait_for

FABRIC_FILE = CONFIGS / "fabric-hybrid-8.yaml"
SPINE_PORTS = 8  # per block: 4 to s1, then 4 to s2, after the 32 uplinks


@dataclass
class Hybrid:
    fabric: EmulatedFabric
    daemon: Daemon
    api: DaemonApi
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    hooks: list[Any] = field(default_factory=list)

    def on_event(self, kind: str, details: dict[str, Any]) -> None:
        self.events.append((kind, details))
        for hook in list(self.hooks):
            hook(kind, details)

    def te_runs(self, **match: Any) -> int:
        return sum(1 for k, d in self.events if k == "te" and all(d.get(x) == v for x, v in match.items()))

    def spine_carried(self, spine: str) -> float:
        links = self.fabric.stats().links
        return sum(s.carried_bytes for (a, b), s in links.items() if spine in (a, b))


@pytest.fixture
def hybrid(tmp_path: Path) -> Iterator[Hybrid]:
    with running_fabric(FABRIC_FILE, tmp_path, speed=20.0, tick_s=0.25) as fabric:
        # A hot pair beyond its circuits: the spine takes part of it.
        fabric.set_demand(hotspot_matrix(fabric.fabric, seed=3, load=0.4))
        config = load_controller_config(
            controller_config(tmp_path, FABRIC_FILE, fabric.devices_file, toe_check_interval=3600.0)
        )
        h = Hybrid(fabric, None, None)  # type: ignore[arg-type]
        h.daemon = Daemon(config, listener=h.on_event)
        h.api = DaemonApi(h.daemon)
        h.daemon.start()
        loop = threading.Thread(target=h.daemon.run, daemon=True)
        loop.start()
        try:
            yield h
        finally:
            h.daemon.stop()
            loop.join(timeout=30)
            h.daemon.close()


def spine_rate(h: Hybrid, window_s: float = 1.0) -> float:
    """Bytes the spine carried per emulated second over the next ``window_s`` wall seconds."""
    carried = h.spine_carried("s1") + h.spine_carried("s2")
    start = h.fabric.clock.now()
    time.sleep(window_s)
    return (h.spine_carried("s1") + h.spine_carried("s2") - carried) / (h.fabric.clock.now() - start)


def spine_hops(fabric: EmulatedFabric, spine: str) -> int:
    """How many block groups name ``spine`` as a next hop."""
    return sum(
        1 for sw in fabric.switches.values() for hops in sw.groups()[1].values() if hops.get(spine)
    )


@pytest.mark.slow
def test_the_daemon_routes_over_the_spine_and_drains_a_spine_switch(hybrid: Hybrid) -> None:
    h = hybrid
    wait_for(lambda: h.te_runs(), 30, what="the first TE run")
    # Both spine switches were polled and given a transit group toward every block.
    for name, spine in h.fabric.spines.items():
        assert set(spine.groups()[2]) == set(h.fabric.fabric.block_names), name
        assert spine.groups()[1] == {}
    assert spine_hops(h.fabric, "s1") and spine_hops(h.fabric, "s2")
    wait_for(lambda: h.spine_carried("s1") > 0 and h.spine_carried("s2") > 0, 10, what="spine traffic")
    view = h.api.topology()["spine"]
    assert len(view) == 16 and all(x["in_service"] == x["cabled"] == 4 for x in view)
    gauge = h.daemon.metrics.spine_utilization
    util = wait_for(
        lambda: [s.value for m in gauge.collect() for s in m.samples if s.value > 0],
        10,
        what="spine utilisation measured",
    )
    assert max(util) <= 1.0 + 1e-6
    assert h.daemon.metrics.spine_links._value.get() == 64

    # Drain s1 for maintenance: TE routes around it first, then both ends of its links drain.
    runs = h.te_runs(reason="maintenance changed")
    h.api.set_maintenance(MaintenanceKind.SPINE, "s1", True)
    wait_for(lambda: h.te_runs(reason="maintenance changed") > runs, 30, what="TE around s1")
    s1 = h.fabric.spines["s1"]
    wait_for(lambda: s1.forwarding_state().drained.all(), 10, what="s1's ports drained")
    assert all(sw.forwarding_state().drained[32:36].all() for sw in h.fabric.switches.values())
    assert not any(sw.forwarding_state().drained[36:40].any() for sw in h.fabric.switches.values())
    assert spine_hops(h.fabric, "s1") == 0 and spine_hops(h.fabric, "s2")
    assert h.api.status().maintenance == ("spine:s1",)
    assert all(x["in_service"] == (0 if x["spine"] == "s1" else 4) for x in h.api.topology()["spine"])
    carried = h.spine_carried("s1")
    time.sleep(1.0)
    assert h.spine_carried("s1") == carried  # nothing crosses s1 any more
    assert h.fabric.stats().blackholed_bytes == 0
    h.api.set_maintenance(MaintenanceKind.SPINE, "s1", False)
    wait_for(lambda: not s1.forwarding_state().drained.any(), 30, what="s1 back in service")
    wait_for(lambda: spine_hops(h.fabric, "s1"), 30, what="TE over s1 again")
    assert h.fabric.stats().blackholed_bytes == 0


@pytest.mark.slow
def test_a_cut_spine_link_is_routed_around(hybrid: Hybrid) -> None:
    h = hybrid
    wait_for(lambda: h.te_runs(), 30, what="the first TE run")
    b1 = h.fabric.switches["b1"]
    assert any(hops.get("s2") for hops in b1.groups()[1].values()) or any(
        hops.get("s2") for sw in h.fabric.switches.values() for d, hops in sw.groups()[1].items() if d == "b1"
    )
    runs = h.te_runs()
    for port in range(36, 40):  # every link between b1 and s2
        h.fabric.fail_link("b1", port)
    wait_for(lambda: h.te_runs(reason="spine links changed (-4 +0)"), 30, what="TE after the cut")
    assert h.te_runs() > runs
    assert not any(hops.get("s2") for hops in b1.groups()[1].values())
    assert not any(sw.groups()[1].get("b1", {}).get("s2") for sw in h.fabric.switches.values())
    assert [x["in_service"] for x in h.api.topology()["spine"] if x["block"] == "b1"] == [4, 0]
    lost = h.fabric.stats().blackholed_bytes
    time.sleep(1.0)
    assert h.fabric.stats().blackholed_bytes == lost  # nothing more is lost after TE


@pytest.mark.slow
def test_toe_plans_around_an_ocs_domain_drained_for_maintenance(hybrid: Hybrid) -> None:
    """Domain 0 (ocs1, ocs2) drained: the spine carries what the OCS layer lost, and ToE
    proposes (and carries out) a plan that changes only domain 1, every stage within the
    stage rule, while the maintenance lasts."""
    h = hybrid
    h.api.pause_toe()  # only the operator's ToE runs: the test decides when
    wait_for(lambda: h.te_runs(), 30, what="the first TE run")
    wait_for(lambda: h.spine_carried("s1") > 0, 10, what="spine traffic")
    before = h.fabric.stats()
    spine_before = spine_rate(h)
    runs = h.te_runs(reason="maintenance changed")
    h.api.set_maintenance(MaintenanceKind.OCS, "ocs1", True)
    h.api.set_maintenance(MaintenanceKind.OCS, "ocs2", True)
    wait_for(lambda: h.te_runs(reason="maintenance changed") > runs, 30, what="TE around domain 0")
    wired = [w for w in h.fabric.fabric.wiring if w.ocs in ("ocs1", "ocs2")]
    wait_for(
        lambda: all(h.fabric.switches[w.block].forwarding_state().drained[w.block_port] for w in wired),
        10,
        what="domain 0's ports drained",
    )
    assert spine_rate(h) > 1.02 * spine_before  # the spine took over part of the lost capacity
    during = h.fabric.stats()
    assert during.blackholed_bytes == 0 and during.dropped_bytes == before.dropped_bytes

    dry = h.api.trigger_toe(dry_run=True)
    plan = dry.plan
    assert plan is not None and plan["stages"], plan.get("reason")
    assert plan["frozen_circuits"] == sum(
        len(d.established()) for name, d in h.fabric.ocs.items() if name in ("ocs1", "ocs2")
    )
    domain1 = {o.name for o in h.fabric.fabric.ocs if o.domain == 1}
    for stage in plan["stages"]:
        assert stage["domain"] == 1
        assert {c[0] for c in (*stage["remove"], *stage["add"])} <= domain1
        assert stage["mlu_drained"] <= max(plan["threshold"], stage["mlu_start"]) + 1e-9, stage
    # Carried out during the maintenance: domain 0 untouched, nothing lost.
    frozen = {n: set(h.fabric.ocs[n].established()) for n in ("ocs1", "ocs2")}
    result = h.api.trigger_toe()
    assert result.accepted
    wait_for(lambda: any(k == "reconfiguration" for k, _ in h.events), 90, what="the reconfiguration")
    done = [d for k, d in h.events if k == "reconfiguration"][-1]
    assert done["outcome"] == "done", (done, h.daemon.quarantined)
    assert {n: set(h.fabric.ocs[n].established()) for n in ("ocs1", "ocs2")} == frozen
    assert all(h.fabric.switches[w.block].forwarding_state().drained[w.block_port] for w in wired)
    assert h.fabric.stats().blackholed_bytes == 0
    assert h.api.status().maintenance == ("ocs:ocs1", "ocs:ocs2")


@pytest.mark.slow
def test_a_reconfiguration_stops_before_a_stage_that_would_switch_an_ocs_under_maintenance(
    hybrid: Hybrid,
) -> None:
    """Planned without maintenance, the reconfiguration's first stage runs; an OCS its next
    stage needs is then drained for maintenance: the next stage never starts (the OCS keeps
    its circuits), the intent ends with the reason, and the maintenance is in force."""
    h = hybrid
    h.api.pause_toe()
    wait_for(lambda: h.te_runs(), 30, what="the first TE run")
    drained: list[str] = []

    def drain_next_stage_ocs(kind: str, details: dict[str, Any]) -> None:
        if kind == "stage" and details["event"] == "done" and details["stage"] == 0 and not drained:
            plan = h.daemon.journal.intent(details["intent"]).plan
            ocs = sorted({c.ocs for c in (*plan.stages[1].remove, *plan.stages[1].add)})[0]
            drained.append(ocs)
            held.update({ocs: set(h.fabric.ocs[ocs].established())})
            h.api.set_maintenance(MaintenanceKind.OCS, ocs, True)

    held: dict[str, set[Any]] = {}
    h.hooks.append(drain_next_stage_ocs)
    plan = h.api.trigger_toe(dry_run=True).plan
    assert plan is not None and len(plan["stages"]) >= 2, plan
    assert h.api.trigger_toe().accepted
    wait_for(lambda: any(k == "reconfiguration" for k, _ in h.events), 90, what="the reconfiguration to end")
    done = [d for k, d in h.events if k == "reconfiguration"][-1]
    assert drained and done["outcome"] == "rolled_back", done
    assert "stage 2 would switch " + drained[0] in done["reason"]
    assert set(h.fabric.ocs[drained[0]].established()) == held[drained[0]]
    intent = h.daemon.journal.reconfigurations(1)[0]
    assert intent.state.value == "rolled_back" and drained[0] in intent.reason
    assert h.api.status().maintenance == (f"ocs:{drained[0]}",)
    assert h.fabric.stats().blackholed_bytes == 0
