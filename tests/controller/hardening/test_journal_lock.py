"""A second controller on one journal is refused at start, naming the journal and the holder
(issue 16: two ``heliostat run`` on one store both ran ToE and undid each other's stages)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from controller.config import load_controller_config
from controller.daemon import Daemon, DaemonError
from controller.reconfig.journal import Journal
from controller.reconfig.journal_lock import JournalLock, JournalLocked, lock_path
from optimizer.traffic import uniform_matrix
from tests.support.daemon_support import (
    CONFIGS,
    ROOT,
    controller_config,
    running_fabric,
    start_daemon_process,
    stop_process,
    wait_for,
)

FABRIC_FILE = CONFIGS / "fabric-4.yaml"


def test_a_second_lock_is_refused_with_the_holder_named(tmp_path: Path) -> None:
    journal = tmp_path / "j.db"
    with JournalLock(journal):
        with pytest.raises(JournalLocked) as refused:
            JournalLock(journal).acquire()
        message = str(refused.value)
        assert str(journal) in message
        assert f"pid {os.getpid()}" in message and "host" in message
    with JournalLock(journal) as again:  # released: the next controller gets it
        assert again.held


def test_the_lock_goes_with_a_killed_holder(tmp_path: Path) -> None:
    journal = tmp_path / "j.db"
    code = (
        "import sys, time; from controller.reconfig.journal_lock import JournalLock\n"
        f"JournalLock({str(journal)!r}).acquire(); print('held', flush=True); time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(JournalLocked, match=f"pid {holder.pid} "):
            JournalLock(journal).acquire()
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        with JournalLock(journal) as lock:  # no stale lock after a crash
            assert lock.held
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)


def test_a_second_daemon_in_one_process_is_refused_and_the_first_keeps_its_journal(tmp_path: Path) -> None:
    with running_fabric(FABRIC_FILE, tmp_path) as fabric:
        config = load_controller_config(controller_config(tmp_path, FABRIC_FILE, fabric.devices_file))
        first = Daemon(config)
        first.start()
        try:
            second = Daemon(config)
            with pytest.raises(DaemonError, match="in use by another controller"):
                second.start()
            second.close()  # closing the refused one must not release the first one's lock
            with pytest.raises(JournalLocked):
                JournalLock(config.store).acquire()
            first.cycle()  # the first still works on its journal
        finally:
            first.close()
        third = Daemon(config)
        third.start()
        third.close()


@pytest.mark.slow
def test_a_second_heliostat_run_exits_naming_the_journal_and_the_holder(tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    with running_fabric(FABRIC_FILE, tmp_path) as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, 0.3))
        config = controller_config(tmp_path, FABRIC_FILE, fabric.devices_file)
        first = start_daemon_process(config, log)
        try:
            wait_for(lambda: "controlling" in log.read_text(errors="replace"), 60, what="the first daemon")
            second_log = tmp_path / "second.log"
            second = start_daemon_process(config, second_log)
            try:
                code = second.wait(timeout=60)
            finally:
                stop_process(second)
            text = second_log.read_text(errors="replace")
            assert code == 2, text
            assert str(tmp_path / "journal.db") in text
            assert f"pid {first.pid} on host" in text
            assert "Traceback" not in text
            assert first.poll() is None  # the first one is untouched
            with Journal(tmp_path / "journal.db", check=False) as journal:
                assert journal.current_topology() is not None
        finally:
            assert stop_process(first) == 0
    assert lock_path(tmp_path / "journal.db").exists()
