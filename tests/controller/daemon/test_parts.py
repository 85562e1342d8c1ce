"""The daemon's parts alone (controller/daemon/): each built with its collaborators in memory
(the replay's in-memory devices, a real TE pusher and SQLite journal, no gRPC, no threads),
driven by hand, and judged on the shared state, the devices and the journal."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pytest

from controller import decision as dec
from controller.daemon import DaemonState
from controller.daemon.quarantine import Quarantine
from controller.daemon.report import Reporter
from controller.daemon.sensing import Sensing
from controller.daemon.spine import SpineService
from controller.daemon.state import QUARANTINE_KEY
from controller.daemon.te_step import TeStep
from controller.device_view import ports_of_circuits
from controller.metrics import ControllerMetrics
from controller.reconfig.journal import Journal
from controller.replay.series import Series
from controller.replay.series_fabric import SeriesFabric
from controller.sensing.estimation import EstimationSettings, TrafficEstimation
from controller.status import StatusBoard
from controller.te_loop.te_push import TePusher
from controller.ui.recorder import Recorder
from optimizer.topology import uniform_mesh
from optimizer.traffic import hotspot_matrix
from tests.support import shipped_fabric

FABRIC = shipped_fabric("fabric-4")
MESH = frozenset(uniform_mesh(FABRIC))
DEMAND = hotspot_matrix(FABRIC, seed=1, load=0.4)


@dataclass
class Parts:
    devices: SeriesFabric
    state: DaemonState
    journal: Journal
    quarantine: Quarantine
    te: TeStep
    sensing: Sensing
    events: list[tuple[str, dict[str, object]]] = field(default_factory=list)

    def drained(self) -> set[tuple[str, int]]:
        ports, _ = self.devices.switch_ports(FABRIC.block_names)
        return {(b, p.port) for b, plist in ports.items() for p in plist if p.drained}


@pytest.fixture
def parts(tmp_path: Path) -> Parts:
    series = Series(FABRIC.block_names, np.array([0.0, 600.0]), np.stack([DEMAND.gbps, DEMAND.gbps]))
    devices = SeriesFabric(FABRIC, series, MESH)
    settings = EstimationSettings(stale_after=90.0, prediction_window=600.0)
    state = DaemonState(estimation=TrafficEstimation(FABRIC.block_names, settings), recent=deque(maxlen=3))
    journal = Journal(tmp_path / "journal.db", clock=devices.now)
    events: list[tuple[str, dict[str, object]]] = []
    report = Reporter(state, StatusBoard(FABRIC.name), Recorder(), ControllerMetrics(),
                      lambda kind, details: events.append((kind, details)), devices.now, journal.path)
    spine = SpineService(FABRIC, state)
    quarantine = Quarantine(state, journal)
    te = TeStep(FABRIC, state, devices, TePusher(FABRIC, devices), journal, spine, quarantine, report)
    sensing = Sensing(FABRIC, state, devices, None, tmp_path / "devices.yaml", journal, 600.0, te, spine,
                      quarantine, report)
    return Parts(devices, state, journal, quarantine, te, sensing, events)


def test_sensing_polls_the_devices_into_the_state_and_estimates_the_matrix(parts: Parts) -> None:
    assert parts.sensing.poll(parts.devices.now()) is False  # the counters' baseline: no rates yet
    assert parts.state.installed == parts.state.live == MESH and parts.state.ocs_down == frozenset()
    assert parts.state.matrix is None
    parts.devices.advance(30.0)
    assert parts.sensing.poll(parts.devices.now()) is True  # a first matrix: TE is due
    matrix = parts.state.matrix
    assert matrix is not None and list(parts.state.recent) == [matrix]
    assert np.allclose(matrix.gbps, DEMAND.gbps, rtol=1e-6, atol=1e-6)
    [(when, journaled)] = parts.journal.matrix_history()
    assert when == parts.devices.now() and np.allclose(journaled.gbps, matrix.gbps)


def test_sensing_sees_a_circuit_an_ocs_lost(parts: Parts) -> None:
    parts.sensing.poll(parts.devices.now())
    lost = sorted(MESH)[0]
    generation = parts.devices.read_ocs(lost.ocs).generation
    parts.devices.apply_ocs(lost.ocs, generation, (), (lost,), "test")
    parts.sensing.poll(parts.devices.now())
    assert parts.state.installed == parts.state.live == MESH - {lost}


def test_te_routes_the_recent_demand_and_folds_its_outcome_into_the_decisions(parts: Parts) -> None:
    parts.sensing.poll(parts.devices.now())
    parts.state.recent.append(DEMAND)
    parts.te.run_te("test", 100.0)
    assert parts.state.te_runs == 1 and parts.state.pushed_tables is not None
    assert parts.state.control.last_te_at == 100.0 and parts.state.control.te_circuits == MESH
    [te] = [d for kind, d in parts.events if kind == "te"]
    assert te["reason"] == "test" and 0 < float(te["mlu"]) < 1  # type: ignore[arg-type]
    tables = parts.devices.history[-1].tables
    assert tables == parts.state.pushed_tables and tables["b1"]  # the devices route by them


def test_te_drains_a_block_under_maintenance_and_gives_it_back_after(parts: Parts) -> None:
    parts.sensing.poll(parts.devices.now())
    parts.state.recent.append(DEMAND)
    b1 = dec.Maintenance(dec.MaintenanceTarget.BLOCK, "b1")
    parts.state.control = replace(parts.state.control, maintenance=frozenset({b1}))
    parts.te.run_te("maintenance", 100.0)
    b1_ports = {(b, p) for b, ports in parts.state.maintenance_drained.items() for p in ports}
    assert b1_ports and {b for b, _ in b1_ports} >= {"b1"} and parts.drained() == b1_ports
    parts.state.control = replace(parts.state.control, maintenance=frozenset())
    parts.te.run_te("maintenance over", 200.0)
    assert parts.drained() == set() and parts.state.maintenance_drained == {}


def test_a_restored_circuit_stays_quarantined_until_sensing_finds_it_qualified(parts: Parts) -> None:
    parts.sensing.poll(parts.devices.now())
    parts.state.recent.append(DEMAND)
    lost = sorted(MESH)[0]
    generation = parts.devices.read_ocs(lost.ocs).generation
    parts.devices.apply_ocs(lost.ocs, generation, (), (lost,), "test")
    parts.te.restore_circuits((lost,))
    ends = {(b, p) for b, ports in ports_of_circuits(FABRIC, [lost]).items() for p in ports}
    assert lost in parts.devices.read_ocs(lost.ocs).circuits
    assert parts.drained() == ends
    journaled = parts.journal.get_state(QUARANTINE_KEY)
    assert {(b, p) for b, ports in journaled.items() for p in ports} == ends
    assert ("restore", {"ocs": lost.ocs, "circuits": 1}) in parts.events
    parts.sensing.poll(parts.devices.now())  # the circuit is up again
    parts.sensing.release_quarantine(parts.devices.now())
    assert parts.drained() == set() and parts.state.quarantined == {}
    assert parts.journal.get_state(QUARANTINE_KEY) == {}
    assert parts.state.te_runs == 1  # TE routes over it again


def test_te_inputs_leave_out_the_quarantined_ports(parts: Parts) -> None:
    parts.sensing.poll(parts.devices.now())
    held = sorted(MESH)[0]
    parts.quarantine.set(add=ports_of_circuits(FABRIC, [held]))
    inputs = parts.te.te_inputs()
    assert inputs.drained_ports == parts.state.quarantined
    assert inputs.demand.latest.total() == 0  # nothing measured yet
    assert held not in parts.te.usable(MESH) and parts.te.usable(MESH) == MESH - {held}

