"""``heliostat run`` on ``configs/fabric-hybrid-8.yaml`` (the flow-level emulator in this
process, the daemon a real process): ``heliostat ctl topology`` shows the spine links and the
metrics endpoint exports the spine's utilisation."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml

from controller.northbound import ControllerClient
from optimizer.traffic import hotspot_matrix
from tests.support.daemon_support import (
    CONFIGS,
    ROOT,
    controller_config,
    free_port,
    running_fabric,
    start_daemon_process,
    stop_process,
    wait_for,
)

FABRIC_FILE = CONFIGS / "fabric-hybrid-8.yaml"


def spine_samples(url: str) -> dict[str, float]:
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("heliostat_spine_")
    }


@pytest.mark.slow
def test_heliostat_run_shows_spine_links_and_spine_utilisation(tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    address, metrics = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    with running_fabric(FABRIC_FILE, tmp_path) as fabric:
        fabric.set_demand(hotspot_matrix(fabric.fabric, seed=3, load=0.4))
        config = controller_config(tmp_path, FABRIC_FILE, fabric.devices_file, northbound=address,
                                   toe_check_interval=3600.0)
        data = yaml.safe_load(config.read_text())
        data["listen"]["metrics"] = metrics
        config.write_text(yaml.safe_dump(data))
        proc = start_daemon_process(config, log)
        try:
            with ControllerClient(address) as client:
                wait_for(lambda: _te_ran(client), 30, what="TE via the API")
            url = f"http://{metrics}/metrics"
            samples = wait_for(
                lambda: (s := spine_samples(url)) and any(
                    v > 0 for k, v in s.items() if k.startswith("heliostat_spine_utilization_ratio")
                ) and s,
                30,
                what="spine utilisation in the metrics",
            )
            assert samples["heliostat_spine_links"] == 64
            assert max(v for k, v in samples.items() if "utilization" in k) <= 1.0
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            shown = subprocess.run(
                [sys.executable, "-m", "controller.cli", "ctl", "--address", address, "topology"],
                capture_output=True, text=True, env=env, cwd=ROOT, timeout=60, check=True,
            ).stdout
            assert "spine: 64 of 64 links in service" in shown
            rows = [line.split() for line in shown.splitlines() if line.startswith(("s1 ", "s2 "))]
            assert len(rows) == 16 and all(r[2:] == ["4", "4"] for r in rows), shown
        finally:
            assert stop_process(proc) == 0, log.read_text()[-3000:]


def _te_ran(client: ControllerClient) -> bool:
    try:
        return client.status().te_runs >= 1
    except Exception:  # not serving yet
        return False
