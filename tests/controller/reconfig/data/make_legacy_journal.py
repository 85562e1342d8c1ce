"""How ``journal-b2f6973.db`` was made: a journal written by main as of b2f6973 (plans as
untyped dicts, no schema version), left the way a crash leaves it, for
``tests/controller/reconfig/test_legacy_journal.py``.

Run against that commit's code (it imports names that have moved since)::

    git archive b2f6973 | tar -x -C /tmp/orig
    PYTHONPATH=/tmp/orig python tests/controller/reconfig/data/make_legacy_journal.py OUT.db

The daemon runs on the emulated ``configs/fabric-8.yaml`` under the hotspot demand of
test_executor.py (seed 1, load 0.4), plans a reconfiguration and is stopped as its first
step (drain) is journaled, before it touches a device: the journal holds the intent in
progress with that step started, as after a crash.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
from pathlib import Path

from controller.config import load_controller_config
from controller.daemon import Daemon
from controller.reconfig.executor import PausePoint  # type: ignore[attr-defined]  # b2f6973
from optimizer.traffic import hotspot_matrix
from tests.support.daemon_support import CONFIGS, controller_config, running_fabric, wait_for


def main(out: Path) -> None:
    paused = threading.Event()

    def on_event(kind: str, details: dict[str, object]) -> None:
        if kind == "step" and details.get("step") == "drain" and details.get("event") == "started":
            paused.set()

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        fabric_file = CONFIGS / "fabric-8.yaml"
        with running_fabric(fabric_file, tmp, speed=20.0, tick_s=0.25) as fabric:
            fabric.set_demand(hotspot_matrix(fabric.fabric, seed=1, load=0.4))
            config = load_controller_config(
                controller_config(tmp, fabric_file, fabric.devices_file, toe_check_interval=1.0)
            )
            daemon = Daemon(config, listener=on_event, pause=PausePoint("drain", "before"))
            daemon.start()
            loop = threading.Thread(target=daemon.run, daemon=True)
            loop.start()
            wait_for(paused.is_set, 120, what="the first stage's drain to be journaled")
            daemon.stop()
            loop.join(timeout=30)
            daemon.close()
        shutil.copyfile(config.store, out)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
