"""Status that says when the controller cannot see the fabric, and a daemon that follows its
devices to new addresses (issue 16: with every device unreachable ``status`` said ``idle``
with the last MLU; after the emulator restarted on new ports the daemon never reconnected)."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

from controller.commands.ctl.tables import status_text
from controller.config import load_controller_config
from controller.daemon import Daemon
from controller.devices_watch import DevicesFileWatch
from controller.northbound.client import StatusReport
from controller.northbound.daemon_api import DaemonApi
from optimizer.traffic import uniform_matrix
from southbound.devices import DeviceConfig, load_devices_file, write_devices_file
from tests.support.daemon_support import CONFIGS, controller_config, running_fabric, wait_for

FABRIC_FILE = CONFIGS / "fabric-4.yaml"


def test_the_watch_rereads_with_backoff_only_while_devices_are_unreachable(tmp_path: Path) -> None:
    path = tmp_path / "devices.yaml"
    devices = {"b1": DeviceConfig("b1", "block", "127.0.0.1:1000")}
    write_devices_file(path, devices)
    watch = DevicesFileWatch(path, load_devices_file(path), min_backoff_s=1.0, max_backoff_s=4.0)
    assert watch.check(frozenset(), 0.0) is None and watch.reads == 0  # all answer: never read
    reads_at = []
    for t in [x * 0.5 for x in range(40)]:  # 20 s with b1 unreachable
        before = watch.reads
        watch.check(frozenset({"b1"}), t)
        if watch.reads > before:
            reads_at.append(t)
    assert reads_at[:4] == [1.0, 3.0, 7.0, 11.0]  # 1 s, then 2, 4, and at most 4 apart
    assert all(b - a <= 4.0 for a, b in itertools.pairwise(reads_at))
    write_devices_file(path, {"b1": DeviceConfig("b1", "block", "127.0.0.1:2000")})
    moved = None
    for t in (20.0, 24.0, 28.0):
        moved = moved or watch.check(frozenset({"b1"}), t)
    assert moved is not None and moved["b1"].address == "127.0.0.1:2000"
    path.write_text("devices: [")  # half-written: kept, no error
    assert watch.check(frozenset({"b1"}), 40.0) is None
    assert watch.check(frozenset(), 41.0) is None  # reachable again: back to the short backoff
    watch.check(frozenset({"b1"}), 42.0)
    reads = watch.reads
    watch.check(frozenset({"b1"}), 43.0)
    assert watch.reads == reads + 1


def test_status_is_degraded_while_devices_are_unreachable_and_the_daemon_follows_them(tmp_path: Path) -> None:
    with running_fabric(FABRIC_FILE, tmp_path) as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, 0.3))
        config = load_controller_config(controller_config(tmp_path, FABRIC_FILE, fabric.devices_file,
                                                          toe_check_interval=600.0, reconfig_gain=100.0))
        daemon = Daemon(config)
        daemon.start()
        api = DaemonApi(daemon)
        try:
            wait_for(lambda: daemon.cycle() is not None and daemon.state.last_te_at is not None, 30,
                     interval=0.2, what="TE")
            assert api.status().details["health"] == "ok"
            before = {name: agent.address for name, agent in fabric.agents.items()}
            for name in fabric.agents:
                fabric.kill_agent(name)
            daemon.cycle()
            status = api.status()
            assert status.details["health"] == "degraded"
            (reason,) = status.details["degraded"]
            assert f"{len(before)} of {len(before)} devices unreachable" in reason
            assert "last known" in reason and all(name in reason for name in before)
            text = status_text(StatusReport(status, ""), time.time())
            assert "DEGRADED" in text.splitlines()[1]
            moved = fabric.move_agents()  # the emulator is back, elsewhere
            assert all(moved[n] != before[n] for n in before)

            def reconnected() -> bool:
                daemon.cycle()
                return api.status().details["health"] == "ok"

            wait_for(reconnected, 30, interval=0.3, what="the daemon to reconnect to the moved devices")
            assert api.status().details["degraded"] == []
            te_runs = daemon.te_runs
            fabric.set_demand(uniform_matrix(fabric.fabric, 0.6))
            wait_for(lambda: daemon.cycle() is not None and daemon.te_runs > te_runs, 30, interval=0.3,
                     what="TE on the reconnected devices")
        finally:
            daemon.close()
