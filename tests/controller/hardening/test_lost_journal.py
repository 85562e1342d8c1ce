"""A lost journal does not strand capacity: the devices are the truth (issue 16: a crash
mid-stage, then a start on an empty journal, left 9 ports drained for good, MLU 0.752 instead
of 0.607). Drains no journal explains are found at start-up, reported, quarantined and
returned to service once their links qualify."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from controller import decision as dec
from controller.config import load_controller_config
from controller.daemon import Daemon
from controller.device_view import circuit_ends
from controller.reconfig.journal import Journal, StepState
from controller.sensing.observe import unexplained_drains
from emulation.fabric import EmulatedFabric
from optimizer.topology import Circuit
from optimizer.traffic import hotspot_matrix, uniform_matrix
from southbound.types import CrossConnect, SwitchPort
from tests.support.daemon_support import (
    CONFIGS,
    controller_config,
    running_fabric,
    start_daemon_process,
    stop_process,
    wait_for,
)

FABRIC_FILE = CONFIGS / "fabric-8.yaml"


def drained_ports(fabric: EmulatedFabric) -> set[tuple[str, int]]:
    return {
        (name, int(p["port"])) for name, sw in fabric.switches.items() for p in sw.ports() if p["drained"]
    }


def circuit_ports(fabric: EmulatedFabric) -> set[tuple[str, int]]:
    circuits = [Circuit(n, c.a, c.b) for n, d in fabric.ocs.items() for c in d.established()]
    return {end for c in circuits for end in circuit_ends(fabric.fabric, c)}


# -- the rule ------------------------------------------------------------------------------


def _port(port: int, drained: bool) -> SwitchPort:
    return SwitchPort(port, oper_up=True, drained=drained, speed_gbps=100.0, peer_block=None, peer_port=None)


def test_drains_the_journal_does_not_explain_are_found() -> None:
    ports = {"b1": [_port(0, True), _port(1, True), _port(2, False)], "b2": [_port(5, True)]}
    found = unexplained_drains(ports, {"b1": (1,)}, {"b2": (5,)})
    assert found == {"b1": (0,)}
    assert unexplained_drains(ports, {"b1": (0, 1)}, {"b2": (5,)}) == {}


# -- in a daemon ---------------------------------------------------------------------------


def test_a_start_on_an_empty_journal_returns_stray_drains_to_service(tmp_path: Path) -> None:
    with running_fabric(FABRIC_FILE, tmp_path) as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, 0.3))
        # What a crash mid-stage leaves: the ports of one OCS's circuits drained, one of those
        # circuits removed already; and no journal.
        ocs = sorted(fabric.ocs)[0]
        circuits = sorted(Circuit(ocs, c.a, c.b) for c in fabric.ocs[ocs].established())[:4]
        for c in circuits:
            for block, port in circuit_ends(fabric.fabric, c):
                fabric.switches[block].drain([port])
        removed = circuits[0]
        with fabric.ocs_client(ocs) as client:
            client.apply(expected_generation=fabric.ocs[ocs].generation,
                         remove=[CrossConnect(removed.a, removed.b)], request_id="crashed-stage")
        stray = drained_ports(fabric)
        assert len(stray) == 8
        config = load_controller_config(controller_config(tmp_path, FABRIC_FILE, fabric.devices_file,
                                                          toe_check_interval=600.0))
        events: list[tuple[str, dict]] = []
        daemon = Daemon(config, listener=lambda kind, details: events.append((kind, details)))
        daemon.start()
        try:
            found = [d for k, d in events if k == "unexplained_drains"]
            assert found and found[0]["ports"] == 8, events
            assert daemon.board.get("unexplained_drains") == 8
            with Journal(config.store, check=False) as journal:  # quarantined, and journaled
                held = {(b, p) for b, ps in journal.get_state("quarantined_ports").items() for p in ps}
            assert held == stray

            def settled() -> bool:
                daemon.cycle()
                return not (drained_ports(fabric) & circuit_ports(fabric))

            wait_for(settled, 60, interval=0.2, what="the stray drains to be released")
        finally:
            daemon.close()
        # Ports whose circuit is gone stay drained (nothing to qualify); the three live circuits
        # qualified and carry traffic again.
        assert drained_ports(fabric) <= set(circuit_ends(fabric.fabric, removed))
        assert fabric.stats().blackholed_bytes == 0


@pytest.mark.slow
def test_a_crash_mid_stage_then_an_empty_journal_leaves_no_port_drained(tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    with running_fabric(FABRIC_FILE, tmp_path) as fabric:
        fabric.set_demand(hotspot_matrix(fabric.fabric, seed=1, load=0.4))
        config = controller_config(tmp_path, FABRIC_FILE, fabric.devices_file, toe_check_interval=1.0)
        first = start_daemon_process(config, log, "--pause-at", "qualify")
        try:
            journal = Journal(tmp_path / "journal.db", check=False)

            def at_qualify() -> bool:
                point = journal.recovery_point()
                last = point.last_step if point else None
                return last is not None and last.name == "qualify" and last.state is StepState.INTENT

            wait_for(at_qualify, 90, what="the first daemon mid-stage")
            journal.close()
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=10)
        finally:
            if first.poll() is None:
                os.killpg(first.pid, signal.SIGKILL)
        stranded = drained_ports(fabric) & circuit_ports(fabric)
        assert stranded, "the crash left no drained circuit: nothing to recover"
        # The journal is lost: the next daemon starts on a new, empty one.
        lost = tmp_path / "lost"
        lost.mkdir()
        config2 = controller_config(lost, FABRIC_FILE, fabric.devices_file, toe_check_interval=600.0)
        second = start_daemon_process(config2, log)
        try:
            wait_for(lambda: not (drained_ports(fabric) & circuit_ports(fabric)), 90,
                     what=f"{len(stranded)} stranded drained ports to return to service")
        finally:
            assert stop_process(second) == 0
        text = log.read_text(errors="replace")
        assert "no journal explains" in text
        assert fabric.stats().blackholed_bytes == 0


def test_a_maintenance_drain_survives_a_restart_and_is_not_taken_for_a_stray(tmp_path: Path) -> None:
    with running_fabric(FABRIC_FILE, tmp_path) as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, 0.3))
        config = load_controller_config(controller_config(tmp_path, FABRIC_FILE, fabric.devices_file,
                                                          toe_check_interval=600.0))
        first = Daemon(config)
        first.start()
        try:
            wait_for(lambda: first.cycle() is not None and first.state.last_te_at is not None, 30,
                     interval=0.2, what="TE")
            first.submit(dec.SetMaintenance(dec.Maintenance(dec.MaintenanceTarget.BLOCK, "b1"), True))
            first.cycle()
            held = drained_ports(fabric)
            assert held and {b for b, _ in held} >= {"b1"}
        finally:
            first.close()
        second = Daemon(config)
        second.start()
        try:
            assert str(sorted(second.state.maintenance)[0]) == "block:b1"
            assert second.board.get("maintenance") == ("block:b1",)  # in status before any cycle
            assert second.board.get("unexplained_drains") == 0
            for _ in range(5):
                second.cycle()
            assert drained_ports(fabric) == held  # still out of service for maintenance
        finally:
            second.close()
