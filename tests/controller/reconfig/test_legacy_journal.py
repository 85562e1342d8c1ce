"""A journal written by main as of b2f6973 (untyped plans, no schema version; see
data/make_legacy_journal.py), left mid-stage as a crash leaves it, is loaded and resumed by
today's daemon: the reconfiguration finishes, and the devices hold the plan's topology."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from controller.config import load_controller_config
from controller.daemon import Daemon
from controller.reconfig.journal import IntentState, StepState
from optimizer.topology import Circuit
from optimizer.traffic import hotspot_matrix
from tests.support.daemon_support import CONFIGS, controller_config, running_fabric, wait_for

LEGACY_JOURNAL = Path(__file__).parent / "data" / "journal-b2f6973.db"
FABRIC_FILE = CONFIGS / "fabric-8.yaml"


def test_a_journal_from_b2f6973_loads_and_its_reconfiguration_resumes(tmp_path: Path) -> None:
    shutil.copyfile(LEGACY_JOURNAL, tmp_path / "journal.db")  # the config's store
    with running_fabric(FABRIC_FILE, tmp_path, speed=20.0, tick_s=0.25) as fabric:
        fabric.set_demand(hotspot_matrix(fabric.fabric, seed=1, load=0.4))
        config = load_controller_config(
            controller_config(tmp_path, FABRIC_FILE, fabric.devices_file, toe_check_interval=3600.0)
        )
        events: list[tuple[str, dict[str, object]]] = []
        daemon = Daemon(config, listener=lambda kind, details: events.append((kind, details)))
        daemon.start()  # finds the intent in flight and resumes its first stage
        loop = threading.Thread(target=daemon.run, daemon=True)
        loop.start()
        try:
            journal = daemon.journal
            assert journal is not None
            assert ("recovering", {"intent": 1, "steps": 1}) in events
            intent = wait_for(lambda: None if journal.intent(1).in_progress else journal.intent(1), 60,
                              what="the resumed reconfiguration to end")
            assert intent.state is IntentState.DONE, intent.reason
            steps = journal.steps(1)
            assert len(steps) == 5 * len(intent.plan.stages)
            assert all(s.state is StepState.DONE for s in steps)
            record = journal.current_topology()
            assert record is not None
            held = frozenset(Circuit(o, c.a, c.b) for o, d in fabric.ocs.items() for c in d.established())
            assert held == frozenset(record.circuits)
            assert record.topology.to_json() == intent.plan.to_json()["topology"]
            assert fabric.stats().blackholed_bytes == 0
        finally:
            daemon.stop()
            loop.join(timeout=30)
            daemon.close()
