"""Poking a running emulated fabric (issue 33, item 7): ``heliostat emulate --control`` and
``heliostat emuctl`` change the demand, cut fibres, power OCSes off, stop agents and take
blocks down, and the fabric's devices show it; bad requests change nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import grpc
import pytest

from emulation.control import ControlServer, FabricControl
from emulation.fabric import EmulatedFabric
from optimizer.errors import ConfigError
from southbound.devices import load_devices_file
from tests.support import CONFIGS, ROOT
from tests.support.cli_helpers import run_cli
from tests.support.daemon_support import stop_process, wait_for


@pytest.fixture
def poked(tmp_path: Path):  # type: ignore[no-untyped-def]
    fabric = EmulatedFabric.from_config(
        CONFIGS / "fabric-4.yaml", tick_s=0.5, devices_file=tmp_path / "d.yaml"
    )
    with fabric:
        server = ControlServer(FabricControl(fabric))
        url = server.start()
        try:
            yield fabric, url
        finally:
            server.stop()


def emuctl(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("emuctl", "--control", url, "--format", "json", *args)


def test_demand_fibres_ocs_power_and_blocks_follow_the_commands(poked) -> None:  # type: ignore[no-untyped-def]
    fabric, url = poked
    done = emuctl(url, "demand", "--kind", "hotspot", "--seed", "2", "--load", "0.7")
    assert done.returncode == 0, done.stderr
    fabric.step(1.0)
    assert fabric.stats().offered_bytes > 0
    ocs, port = fabric._wired("b1", 0)
    assert emuctl(url, "fail-link", "b1", "0").returncode == 0
    assert not fabric.ocs[ocs].fibre_ok(port)
    assert json.loads(emuctl(url, "status").stdout)["failed_links"] == [{"device": "b1", "port": 0}]
    assert emuctl(url, "restore-link", "b1", "0").returncode == 0
    assert fabric.ocs[ocs].fibre_ok(port)
    lost = json.loads(emuctl(url, "fail-ocs", "ocs1").stdout)
    assert lost["circuits_lost"] > 0 and not fabric.ocs["ocs1"].powered
    assert emuctl(url, "restore-ocs", "ocs1").returncode == 0 and fabric.ocs["ocs1"].powered
    down = json.loads(emuctl(url, "fail-block", "b3").stdout)
    assert down["links"] == fabric.fabric.blocks[2].uplinks
    assert len(json.loads(emuctl(url, "status").stdout)["failed_links"]) == down["links"]
    assert emuctl(url, "restore-block", "b3").returncode == 0
    assert json.loads(emuctl(url, "status").stdout)["failed_links"] == []


def test_a_killed_agent_stops_answering_and_comes_back(poked) -> None:  # type: ignore[no-untyped-def]
    fabric, url = poked
    address = load_devices_file(fabric.devices_file)["b2"].address
    assert emuctl(url, "kill-agent", "b2").returncode == 0
    with pytest.raises(grpc.FutureTimeoutError):
        grpc.channel_ready_future(grpc.insecure_channel(address)).result(timeout=1.0)
    again = json.loads(emuctl(url, "restart-agent", "b2").stdout)
    assert again["address"] == address
    grpc.channel_ready_future(grpc.insecure_channel(address)).result(timeout=10.0)


def test_bad_requests_are_refused_and_change_nothing(poked) -> None:  # type: ignore[no-untyped-def]
    _, url = poked
    unknown = emuctl(url, "fail-link", "b9", "0")
    assert unknown.returncode == 1 and "no block 'b9'" in unknown.stderr
    assert emuctl(url, "fail-ocs", "nope").returncode == 1
    kind = emuctl(url, "demand", "--kind", "rainbow")
    assert kind.returncode == 1 and "kind" in kind.stderr
    assert json.loads(emuctl(url, "status").stdout)["failed_links"] == []
    big = urllib.request.Request(f"{url}/demand", data=b"{" + b" " * (70 << 10) + b"}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(big, timeout=10)
    assert caught.value.code == 413
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(urllib.request.Request(f"{url}/reboot", data=b"{}", method="POST"), timeout=10)
    assert caught.value.code == 404
    nobody = run_cli("emuctl", "--control", "http://127.0.0.1:9", "status")
    assert nobody.returncode == 1 and "no emulator answers" in nobody.stderr


def test_the_control_endpoint_is_loopback_only() -> None:
    with pytest.raises(ConfigError, match="loopback only"):
        ControlServer(FabricControl(None), host="0.0.0.0")  # type: ignore[arg-type]


def test_heliostat_emulate_serves_control_beside_its_devices_file(tmp_path: Path) -> None:
    devices = tmp_path / "run" / "devices.yaml"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "emulate",
            "--fabric",
            str(CONFIGS / "fabric-4.yaml"),
            "--devices-file",
            str(devices),
            "--control",
            "127.0.0.1:0",
            "--speed",
            "10",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    sidecar = Path(f"{devices}.control")
    try:
        wait_for(sidecar.exists, 60, 0.2, what="the control file")
        status = run_cli("emuctl", "--devices-file", str(devices), "--format", "json", "status")
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["fabric"] == "demo-4"
    finally:
        code = stop_process(proc, signal.SIGTERM, timeout=30)
    assert code == 0
    assert not sidecar.exists()  # gone with the emulator
    gone = run_cli("emuctl", "--devices-file", str(devices), "status")
    assert gone.returncode == 2 and "run heliostat emulate with --control" in gone.stderr
