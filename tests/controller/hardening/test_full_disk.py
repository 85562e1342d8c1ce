"""A full disk under the journal (issue 16: every cycle failed with "commit failed", a
``ctl drain`` answered "queued" was lost, ``last_error`` stayed after space came back).

The journal lives on a small tmpfs this test mounts (and unmounts) under its own tmp_path;
a filler file takes the free space and removing it gives the space back. Mounting needs
root (CI runs as root for the packet tests); elsewhere the tests skip and say so.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller import decision as dec
from controller.config import load_controller_config
from controller.daemon import Daemon
from controller.northbound import ControllerClient
from controller.northbound.api import ApiError, ApiErrorCode, MaintenanceKind
from controller.northbound.daemon_api import DaemonApi
from controller.operator_requests import RequestedState, RequestJournal
from controller.reconfig.journal import Journal
from optimizer.traffic import uniform_matrix
from southbound.errors import SouthboundError
from tests.support.daemon_support import (
    CONFIGS,
    controller_config,
    running_fabric,
    start_daemon_process,
    stop_process,
    wait_for,
)

FABRIC_FILE = CONFIGS / "fabric-4.yaml"


class SmallDisk:
    """A 4 MB tmpfs at ``path``; :meth:`fill` takes every free byte, :meth:`free` gives it back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.filler = path / "filler"

    def fill(self) -> None:
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == 28, exc  # ENOSPC: full
        finally:
            os.close(fd)

    def free(self) -> None:
        self.filler.unlink()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting the small tmpfs for the journal needs root (CI runs as root)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield SmallDisk(mount)
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _config(tmp_path: Path, disk: SmallDisk, devices: Path) -> Path:
    # reconfig_gain 100: no ToE plan is ever applied, so only the journal is under test
    path = controller_config(tmp_path, FABRIC_FILE, devices, toe_check_interval=600.0, reconfig_gain=100.0)
    text = path.read_text().replace(str(tmp_path / "journal.db"), str(disk.path / "journal.db"))
    path.write_text(text)
    return path


def test_a_request_is_refused_while_the_journal_cannot_take_it_and_the_loop_recovers(
    tmp_path: Path, small_disk: SmallDisk
) -> None:
    with running_fabric(FABRIC_FILE, tmp_path) as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, 0.3))
        config = load_controller_config(_config(tmp_path, small_disk, fabric.devices_file))
        daemon = Daemon(config)
        daemon.start()
        api = DaemonApi(daemon)
        try:
            wait_for(lambda: daemon.cycle() is not None and daemon.state.last_te_at is not None, 30,
                     interval=0.2, what="TE")
            te_before = daemon.te_runs
            small_disk.fill()
            with pytest.raises(ApiError) as refused:
                api.set_maintenance(MaintenanceKind.BLOCK, "b1", True)
            assert refused.value.code is ApiErrorCode.UNAVAILABLE
            assert "not accepted" in refused.value.message and "full" in refused.value.message
            with pytest.raises(ApiError, match="full"):
                api.pause_toe()
            assert daemon.requests.empty()  # nothing queued that the journal does not hold
            # The loop goes on: polls, estimates and TE while the journal cannot be written.
            fabric.set_demand(uniform_matrix(fabric.fabric, 0.6))
            wait_for(lambda: daemon.cycle() is not None and daemon.te_runs > te_before, 30, interval=0.2,
                     what="TE while the disk is full")
            assert "journal" in (daemon.board.get("last_error") or "")
            assert daemon.state.maintenance == frozenset()
            assert daemon.board.get("toe_paused") is False
            small_disk.free()
            daemon.cycle()
            assert daemon.board.get("last_error") is None  # recovered by itself
            api.set_maintenance(MaintenanceKind.BLOCK, "b1", True)
            daemon.cycle()
            assert dec.Maintenance(dec.MaintenanceTarget.BLOCK, "b1") in daemon.state.maintenance
        finally:
            daemon.close()


@pytest.mark.slow
def test_heliostat_run_refuses_then_accepts_and_keeps_what_it_acknowledged(
    tmp_path: Path, small_disk: SmallDisk
) -> None:
    log = tmp_path / "daemon.log"
    with running_fabric(FABRIC_FILE, tmp_path) as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, 0.3))
        config = _config(tmp_path, small_disk, fabric.devices_file)
        proc = start_daemon_process(config, log)
        try:
            address = wait_for(lambda: _address(log), 60, what="the API address")
            with ControllerClient(address) as client:
                wait_for(lambda: client.status().te_runs > 0, 60, what="TE")
                small_disk.fill()
                with pytest.raises(ApiError, match="full"):
                    client.set_maintenance(MaintenanceKind.BLOCK, "b2", True)
                wait_for(lambda: "journal" in (client.status().last_error or ""), 30,
                         what="the status to show the journal problem")
                small_disk.free()
                wait_for(lambda: client.status().last_error is None, 30, what="last_error to clear")
                client.set_maintenance(MaintenanceKind.BLOCK, "b2", True)
            # acknowledged = durable: a SIGKILL right after the answer does not lose it
            os.killpg(proc.pid, 9)
            proc.wait(10)
            proc = start_daemon_process(config, log)
            address = wait_for(lambda: _address(log, nth=2), 60, what="the restarted API")
            with ControllerClient(address) as client:
                wait_for(lambda: "block:b2" in client.status().maintenance, 30, what="the drain restored")
        finally:
            stop_process(proc)


def _address(log: Path, nth: int = 1) -> str | None:
    """The bound API address of the ``nth`` start in the log (not the configured port 0)."""
    found = [
        line.split("northbound API on ")[1].split()[0]
        for line in log.read_text(errors="replace").splitlines()
        if "northbound API on" in line
    ]
    bound = [a for a in found if not a.endswith(":0")]
    return bound[nth - 1] if len(bound) >= nth else None


def test_requests_taken_by_a_cycle_that_fails_wait_for_the_next_one(tmp_path: Path) -> None:
    with running_fabric(FABRIC_FILE, tmp_path) as fabric:
        config = load_controller_config(controller_config(tmp_path, FABRIC_FILE, fabric.devices_file))
        daemon = Daemon(config)
        daemon.start()
        try:
            drivers = daemon.drivers
            real_poll = drivers.poll

            def failing_poll():  # the cycle fails after it dequeued the request
                raise SouthboundError("b1", "the poll failed (injected)")

            drivers.poll = failing_poll
            target = dec.Maintenance(dec.MaintenanceTarget.BLOCK, "b1")
            daemon.submit(dec.SetMaintenance(target, True))
            assert daemon.cycle_safely() is False
            assert "injected" in daemon.board.get("last_error")
            drivers.poll = real_poll
            assert daemon.cycle_safely() is True
            assert target in daemon.state.maintenance
            assert daemon.board.get("last_error") is None  # the failed cycle's error is gone
        finally:
            daemon.close()


def test_the_request_journal_reads_back_what_it_recorded(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.db") as journal:
        requests = RequestJournal(journal)
        b1 = dec.Maintenance(dec.MaintenanceTarget.BLOCK, "b1")
        o1 = dec.Maintenance(dec.MaintenanceTarget.OCS, "ocs1")
        for request in (dec.SetToePaused(True), dec.SetMaintenance(b1, True), dec.SetMaintenance(o1, True),
                        dec.SetMaintenance(b1, False), dec.ToeTrigger("operator")):
            requests.record(request)
        assert requests.restore() == RequestedState(True, frozenset({o1}), "operator")
        requests.forget_toe_request()
        assert requests.restore().toe_requested is None
