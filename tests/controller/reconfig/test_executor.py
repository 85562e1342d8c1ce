"""The staged executor inside a running daemon, against the emulated fabric over real gRPC.

Each test runs ``configs/fabric-8.yaml`` with its clock at 20x real time and a daemon loop
in a thread; events from the daemon make the fault injection points deterministic.
"""

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
from controller.northbound.api import ApiError, ApiErrorCode, MaintenanceKind, Phase
from controller.northbound.daemon_api import DaemonApi
from controller.reconfig.journal import IntentState, StepState
from emulation.fabric import EmulatedFabric
from optimizer.topology import Circuit
from optimizer.traffic import TrafficMatrix, hotspot_matrix, uniform_matrix
from tests.support.daemon_support import CONFIGS, controller_config, running_fabric, wait_for

FABRIC_FILE = CONFIGS / "fabric-8.yaml"


@dataclass
class Controller:
    fabric: EmulatedFabric
    daemon: Daemon
    api: DaemonApi
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    hooks: list[Any] = field(default_factory=list)

    def on_event(self, kind: str, details: dict[str, Any]) -> None:
        self.events.append((kind, details))
        for hook in list(self.hooks):
            hook(kind, details)

    def count(self, kind: str, **match: Any) -> int:
        return sum(1 for k, d in self.events if k == kind and all(d.get(x) == v for x, v in match.items()))

    def finished_intent(self) -> Any:
        journal = self.daemon.journal
        intents = journal.reconfigurations(1) if journal else []
        return intents[0] if intents and not intents[0].in_progress else None

    def device_circuits(self) -> frozenset[Circuit]:
        return frozenset(
            Circuit(name, c.a, c.b) for name, d in self.fabric.ocs.items() for c in d.established()
        )


@pytest.fixture
def controller(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Controller]:
    demand, timeouts = getattr(request, "param", ("uniform", None))
    with running_fabric(FABRIC_FILE, tmp_path, speed=20.0, tick_s=0.25) as fabric:
        model = fabric.fabric
        if demand == "idle":
            tm = TrafficMatrix.zeros(model.block_names)
        elif demand == "uniform":
            tm = uniform_matrix(model, 0.5)
        else:
            tm = hotspot_matrix(model, seed=1, load=0.4)
        fabric.set_demand(tm)
        config = load_controller_config(
            controller_config(
                tmp_path, FABRIC_FILE, fabric.devices_file, toe_check_interval=1.0, timeouts=timeouts
            )
        )
        ctl = Controller(fabric, None, None)  # type: ignore[arg-type]
        ctl.daemon = Daemon(config, listener=ctl.on_event)
        ctl.api = DaemonApi(ctl.daemon, dry_run_wait_s=30)
        ctl.daemon.start()
        loop = threading.Thread(target=ctl.daemon.run, daemon=True)
        loop.start()
        try:
            yield ctl
        finally:
            ctl.daemon.stop()
            loop.join(timeout=30)
            ctl.daemon.close()


@pytest.mark.slow
@pytest.mark.parametrize("controller", [("hotspot", None)], indirect=True)
def test_a_full_reconfiguration_loses_nothing_and_stays_under_the_stage_threshold(
    controller: Controller,
) -> None:
    ctl = controller
    wait_for(lambda: ctl.count("toe", apply=True), 30, what="a ToE plan to apply")
    start = ctl.fabric.stats()
    peak = 0.0
    deadline = time.monotonic() + 60
    while ctl.finished_intent() is None and time.monotonic() < deadline:
        peak = max(peak, ctl.fabric.stats().mlu)
        time.sleep(0.01)
    intent = ctl.finished_intent()
    assert intent is not None and intent.state is IntentState.DONE, intent
    end = ctl.fabric.stats()
    assert end.blackholed_bytes == start.blackholed_bytes == 0
    assert end.dropped_bytes == start.dropped_bytes  # no link was ever over capacity
    assert peak <= 0.8 + 1e-9
    steps = ctl.daemon.journal.steps(intent.id)
    stages = len(intent.plan.stages)
    assert len(steps) == 5 * stages and all(s.state is StepState.DONE for s in steps)
    # The devices hold exactly what the journal says, which is the plan's topology.
    record = ctl.daemon.journal.current_topology()
    assert ctl.device_circuits() == frozenset(record.circuits)
    assert record.topology.to_json() == intent.plan.to_json()["topology"]
    # Fresh TE on the new topology brings the MLU down to what the planner predicted.
    wait_for(
        lambda: ctl.fabric.stats().mlu <= intent.plan.planned_mlu * 1.05,
        10,
        what="the measured MLU near the plan",
    )


@pytest.mark.slow
@pytest.mark.parametrize("controller", [("hotspot", None)], indirect=True)
def test_an_ocs_agent_killed_mid_stage_rolls_the_stage_back_and_te_goes_on(controller: Controller) -> None:
    ctl = controller
    killed: list[str] = []

    def kill_at_verify(kind: str, d: dict[str, Any]) -> None:
        if kind == "step" and d["step"] == "verify_drain" and d["event"] == "started" and not killed:
            plan = ctl.daemon.journal.intent(d["intent"]).plan
            ocs = plan.stages[d["stage"]].add[0].ocs
            ctl.fabric.kill_agent(ocs)
            killed.append(ocs)

    ctl.hooks.append(kill_at_verify)
    before = ctl.device_circuits()
    intent = wait_for(ctl.finished_intent, 60, what="the reconfiguration to end")
    assert killed
    assert intent.state is IntentState.ROLLED_BACK
    assert "apply_ocs" in intent.reason and killed[0] in intent.reason
    assert all(s.state is StepState.ROLLED_BACK for s in ctl.daemon.journal.steps(intent.id))
    # The controller reports it, and the devices still hold the circuits of the stage's start.
    status = wait_for(lambda: (st := ctl.api.status()).last_error and st, 10, what="the error reported")
    assert killed[0] in status.last_error and status.reconfiguration_id is None
    assert ctl.api.history(5)[0]["state"] == "rolled_back"
    assert ctl.device_circuits() == before
    assert ctl.fabric.stats().blackholed_bytes == 0
    # TE keeps running: a new demand is measured and routed while the OCS is still away.
    runs = ctl.count("te")
    ctl.fabric.set_demand(uniform_matrix(ctl.fabric.fabric, 0.3))
    wait_for(lambda: ctl.count("te") > runs, 30, what="TE after the rollback")
    assert status.phase in (Phase.IDLE, Phase.PLANNING)
    ctl.fabric.restart_agent(killed[0])
    wait_for(lambda: killed[0] not in ctl.api.status().details["unreachable"], 30, what="the OCS back")


@pytest.mark.slow
def test_an_ocs_power_loss_is_routed_around_and_its_circuits_restored(controller: Controller) -> None:
    """Restored circuits are handled like a stage's new links: drained first, switched, and
    undrained only once they qualify; one whose block port is down stays quarantined."""
    ctl = controller
    wait_for(lambda: ctl.count("te"), 30, what="the first TE run")
    original = ctl.device_circuits()
    on_ocs2 = {c for c in original if c.ocs == "ocs2"}
    assert ctl.fabric.fail_ocs("ocs2") == len(on_ocs2) > 0
    wait_for(
        lambda: ctl.count("te", reason=f"live topology changed (-{len(on_ocs2)} +0 circuits)"),
        30,
        what="TE around the lost circuits",
    )
    # Once TE has moved traffic off the lost trunks, nothing more is blackholed.
    time.sleep(0.5)
    lost = ctl.fabric.stats().blackholed_bytes
    time.sleep(1.5)
    assert ctl.fabric.stats().blackholed_bytes == lost
    assert ctl.daemon.live == original - on_ocs2
    assert ctl.api.status().details["ocs_down"] == ["ocs2"]  # the controller reports it
    bad = min(on_ocs2)
    bad_ends = bad.ends(ctl.fabric.fabric)
    ctl.fabric.fail_link(bad_ends[0].block, bad_ends[0].block_port)  # this one will not qualify
    ctl.fabric.restore_ocs("ocs2")
    wait_for(lambda: ctl.count("restore", ocs="ocs2"), 30, what="the circuits restored")
    wait_for(lambda: ctl.device_circuits() == original, 30, what="ocs2's circuits back on the device")
    good = len(on_ocs2) - 1
    wait_for(
        lambda: ctl.count("te", reason=f"{good} quarantined links back in service"),
        30,
        what="the restored circuits qualified and back in service",
    )
    wait_for(lambda: ctl.daemon.state.te_circuits == original - {bad}, 30, what="TE over the good ones")
    for end in bad_ends:  # still drained and quarantined, and TE leaves it out
        assert ctl.fabric.switches[end.block].forwarding_state().drained[end.block_port]
        assert end.block_port in ctl.daemon.quarantined[end.block]
    ctl.fabric.restore_link(bad_ends[0].block, bad_ends[0].block_port)
    wait_for(lambda: ctl.count("te", reason="1 quarantined links back in service"), 30, what="the last one")
    wait_for(
        lambda: ctl.daemon.live == original and ctl.daemon.state.te_circuits == original,
        30,
        what="TE over the restored circuits",
    )
    assert not ctl.daemon.quarantined
    assert not any(ctl.fabric.switches[e.block].forwarding_state().drained[e.block_port] for e in bad_ends)
    assert ctl.fabric.stats().blackholed_bytes == lost


@pytest.mark.slow
def test_bad_api_calls_get_clear_errors_and_maintenance_drains_an_ocs(controller: Controller) -> None:
    ctl, api = controller, controller.api
    wait_for(lambda: ctl.count("te"), 30, what="the first TE run")
    with pytest.raises(ApiError) as info:
        api.history(0)
    assert info.value.code is ApiErrorCode.INVALID_ARGUMENT
    with pytest.raises(ApiError) as info:
        api.set_maintenance(MaintenanceKind.BLOCK, "b99", True)
    assert info.value.code is ApiErrorCode.INVALID_ARGUMENT and "b99" in info.value.message
    with pytest.raises(ApiError) as info:
        api.set_maintenance("rack", "b1", True)  # type: ignore[arg-type]
    assert info.value.code is ApiErrorCode.INVALID_ARGUMENT
    dry = api.trigger_toe(dry_run=True)
    assert dry.dry_run and dry.plan is not None and "stages" in dry.plan
    assert api.last_plan()["trigger"] == "dry_run"
    # Maintenance: the OCS's ports are drained only after TE routes around them.
    runs = ctl.count("te")
    api.set_maintenance(MaintenanceKind.OCS, "ocs1", True)
    wait_for(
        lambda: ctl.count("te", reason="maintenance changed") and ctl.count("te") > runs,
        30,
        what="TE around ocs1",
    )
    wired = [w for w in ctl.fabric.fabric.wiring if w.ocs == "ocs1"]
    wait_for(
        lambda: all(ctl.fabric.switches[w.block].forwarding_state().drained[w.block_port] for w in wired),
        10,
        what="ocs1's ports drained",
    )
    assert api.status().maintenance == ("ocs:ocs1",)
    assert "already drained" in api.set_maintenance(MaintenanceKind.OCS, "ocs1", True)
    assert "not drained" in api.set_maintenance(MaintenanceKind.OCS, "ocs3", False)
    with pytest.raises(ApiError) as info:  # half the OCSes gone: the MLU would reach ~1
        api.set_maintenance(MaintenanceKind.OCS, "ocs2", True)
    assert info.value.code is ApiErrorCode.FAILED_PRECONDITION
    assert "stage limit 0.8" in info.value.message and "--force" in info.value.message
    assert api.status().maintenance == ("ocs:ocs1",)
    time.sleep(1.0)
    assert ctl.fabric.stats().blackholed_bytes == 0
    api.set_maintenance(MaintenanceKind.OCS, "ocs1", False)
    # the undrain waits for the cycle in progress, which may be a ToE check (one a second here)
    # planning on the degraded fabric: on a loaded 2-core machine that once took over 30 s
    wait_for(
        lambda: not any(ctl.fabric.switches[w.block].forwarding_state().drained[w.block_port] for w in wired),
        90,
        what="ocs1's ports back",
    )
    assert ctl.fabric.stats().blackholed_bytes == 0
    # The daemon kept running through all of it.
    runs = ctl.count("te")
    ctl.fabric.set_demand(uniform_matrix(ctl.fabric.fabric, 0.3))
    wait_for(lambda: ctl.count("te") > runs, 30, what="TE after the bad calls")
    assert api.status().phase in (Phase.IDLE, Phase.PLANNING)


@pytest.mark.slow
def test_a_cut_fibre_takes_its_circuit_out_of_te_until_it_is_repaired(controller: Controller) -> None:
    ctl = controller
    wait_for(lambda: ctl.count("te"), 30, what="the first TE run")
    circuit = min(ctl.device_circuits())
    end = circuit.ends(ctl.fabric.fabric)[0]
    ctl.fabric.fail_link(end.block, end.block_port)
    wait_for(
        lambda: ctl.count("te", reason="live topology changed (-1 +0 circuits)"),
        30,
        what="TE around the cut fibre",
    )
    assert circuit not in ctl.daemon.live and circuit in ctl.daemon.installed
    time.sleep(0.5)
    lost = ctl.fabric.stats().blackholed_bytes
    time.sleep(1.0)
    assert ctl.fabric.stats().blackholed_bytes == lost  # nothing sent into the dark link any more
    assert ctl.count("restore") == 0  # the OCS still holds the circuit: nothing to re-install
    ctl.fabric.restore_link(end.block, end.block_port)
    wait_for(
        lambda: ctl.count("te", reason="live topology changed (-0 +1 circuits)"),
        30,
        what="TE over the repaired link",
    )
    assert circuit in ctl.daemon.live


QUICK_QUALIFY = {"drain": 20, "verify_drain": 20, "apply_ocs": 20, "qualify": 3, "undrain": 20}


@pytest.mark.slow
@pytest.mark.parametrize("controller", [("hotspot", QUICK_QUALIFY)], indirect=True)
@pytest.mark.parametrize("cut_share", [0.0, 0.25], ids=["one-link", "quarter"])
def test_new_links_that_fail_qualification_are_quarantined_or_roll_the_stage_back(
    controller: Controller, cut_share: float
) -> None:
    ctl = controller
    cut: list[Circuit] = []

    def cut_before_apply(kind: str, d: dict[str, Any]) -> None:
        if kind == "step" and d["step"] == "apply_ocs" and d["event"] == "started" and not cut:
            adds = ctl.daemon.journal.intent(d["intent"]).plan.stages[d["stage"]].add
            chosen = adds[: max(1, int(len(adds) * cut_share))]
            for circuit in chosen:
                end = circuit.ends(ctl.fabric.fabric)[0]
                ctl.fabric.fail_link(end.block, end.block_port)
                cut.append(circuit)

    ctl.hooks.append(cut_before_apply)
    intent = wait_for(ctl.finished_intent, 90, what="the reconfiguration to end")
    assert cut
    assert ctl.fabric.stats().blackholed_bytes == 0
    qualify = next(s for s in ctl.daemon.journal.steps(intent.id) if s.name == "qualify")
    if cut_share == 0.0:  # one bad link of many: the stage goes on without it
        assert intent.state is IntentState.DONE, intent.reason
        assert qualify.result["unqualified"] == [[c.ocs, c.a, c.b] for c in cut]
        bad = cut[0].ends(ctl.fabric.fabric)
        drained = [ctl.fabric.switches[e.block].forwarding_state().drained[e.block_port] for e in bad]
        assert drained == [True, True]  # quarantined: left drained
        assert cut[0] in ctl.daemon.installed and cut[0] not in ctl.daemon.live
        assert all(e.block_port in ctl.daemon.quarantined[e.block] for e in bad)
        # Repaired, the link passes the checks again and goes back into service.
        ctl.fabric.restore_link(bad[0].block, bad[0].block_port)
        wait_for(
            lambda: ctl.count("te", reason="1 quarantined links back in service"),
            30,
            what="the repaired link back in service",
        )
        assert not any(ctl.fabric.switches[e.block].forwarding_state().drained[e.block_port] for e in bad)
        assert cut[0] in ctl.daemon.state.te_circuits and not ctl.daemon.quarantined
    else:  # too many: the stage rolls back and the reconfiguration stops, saying why
        assert intent.state is IntentState.ROLLED_BACK
        assert "qualify" in intent.reason and "new links qualified" in intent.reason
        assert qualify.state is StepState.ROLLED_BACK
        record = ctl.daemon.journal.current_topology()
        assert ctl.device_circuits() == frozenset(record.circuits)


@pytest.mark.parametrize("controller", [("idle", None)], indirect=True)
def test_an_idle_fabric_is_not_an_error(controller: Controller) -> None:
    wait_for(lambda: controller.count("toe", trigger="auto"), timeout=30, what="an automatic ToE check")
    assert controller.count("toe", trigger="auto", reason="skipped: no traffic is predicted") >= 1
    status = controller.api.status()
    assert status.last_error is None and status.phase is Phase.IDLE


@pytest.mark.slow
@pytest.mark.parametrize("controller", [("hotspot", None)], indirect=True)
def test_a_reviewed_plan_is_applied_exactly_or_refused_once_the_fabric_moved(controller: Controller) -> None:
    """ctl toe --dry-run returns a plan id; --apply runs exactly that plan's stages; applying it
    again once the circuits changed is refused with the reason; --wait reports the outcome."""
    from controller.commands.ctl import wait_for_reconfiguration

    ctl, api = controller, controller.api
    api.pause_toe()  # only the operator's requests reconfigure
    wait_for(lambda: ctl.count("te"), 30, what="the first TE run")
    wait_for(lambda: ctl.daemon.estimation.predictor.prediction is not None, 30, what="a prediction")
    dry = api.trigger_toe(dry_run=True)
    assert dry.plan is not None and dry.plan["stages"], dry.message
    assert dry.plan_id and dry.plan["plan_id"] == dry.plan_id
    with pytest.raises(ApiError) as info:
        api.trigger_toe(plan_id="not-a-plan")
    assert info.value.code is ApiErrorCode.NOT_FOUND
    started = api.trigger_toe(plan_id=dry.plan_id)
    assert started.accepted and started.reconfiguration_id is not None
    intent = ctl.daemon.journal.intent(started.reconfiguration_id)
    assert intent.plan.to_json()["stages"] == dry.plan["stages"]  # exactly the reviewed stages
    ok, message = wait_for_reconfiguration(api, started.reconfiguration_id, None, timeout=90, poll_s=0.2)
    assert ok, message
    assert f"reconfiguration {started.reconfiguration_id} done" in message
    with pytest.raises(ApiError) as info:  # the same plan, now that its circuits are in place
        api.trigger_toe(plan_id=dry.plan_id)
    assert info.value.code is ApiErrorCode.FAILED_PRECONDITION
    assert "no longer starts from today's circuits" in info.value.message
