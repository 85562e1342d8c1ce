"""``heliostat ctl`` against a real northbound server over loopback (a fake daemon behind it).

Most cases run the CLI as a subprocess; table layouts are also checked in-process.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from controller.cli import main
from controller.northbound import NorthboundServers
from controller.northbound.api import MaintenanceKind
from southbound.tls import ServerTlsConfig
from tests.support.cli_helpers import run_cli
from tests.support.northbound_fake import HISTORY, MATRICES, PLAN, TOPOLOGY, FakeControllerApi, serving
from tests.support.tls_ca import SERVER_NAME, make_pki

Served = tuple[FakeControllerApi, NorthboundServers]


@pytest.fixture
def served() -> Iterator[Served]:
    with serving() as (api, servers, _metrics):
        yield api, servers


def ctl(servers: NorthboundServers, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("ctl", "--address", str(servers.grpc_address), *args, timeout=60)


def ctl_in_process(servers: NorthboundServers, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(["ctl", "--address", str(servers.grpc_address), *args])
    out = capsys.readouterr().out
    assert code == 0, out
    return out


def _rows(table: str) -> dict[str, str]:
    """``key  value`` lines (two or more spaces apart) as a dict."""
    pairs = (re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in table.splitlines())
    return {p[0]: p[1] for p in pairs if len(p) == 2}


def _no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr


# -- subprocess ---------------------------------------------------------------------------------


def test_status_json_and_table(served: Served) -> None:
    _api, servers = served
    data = json.loads(ctl(servers, "status", "--format", "json").stdout)
    assert data["phase"] == "idle" and data["fabric"] == "fake-4" and data["te_runs"] == 12
    assert data["mlu"] == pytest.approx(0.4213) and data["last_toe_time"] is None
    assert data["metrics_address"] == str(servers.metrics_address)
    table = ctl(servers, "status")
    assert table.returncode == 0
    rows = _rows(table.stdout)
    assert rows["phase"] == "idle" and rows["MLU predicted"] == "0.55" and rows["automatic ToE"] == "on"
    assert rows["metrics"] == f"http://{servers.metrics_address}/metrics"
    assert rows["TE runs"].startswith("12, last at ") and rows["ToE runs"] == "1"


def test_topology_circuits_and_matrices_as_json(served: Served) -> None:
    _api, servers = served
    assert json.loads(ctl(servers, "topology", "--format", "json").stdout) == TOPOLOGY["topology"]
    circuits = json.loads(ctl(servers, "circuits", "--format", "json").stdout)
    assert circuits == {"circuits": TOPOLOGY["circuits"]}
    matrix = json.loads(ctl(servers, "matrix", "--format", "json").stdout)
    assert matrix == {"matrix": MATRICES["current"], "time": MATRICES["time"]}
    prediction = json.loads(ctl(servers, "prediction", "--format", "json").stdout)
    assert prediction["prediction"] == MATRICES["prediction"]


def test_actions_reach_the_daemon(served: Served) -> None:
    api, servers = served
    assert ctl(servers, "pause").stdout == "automatic ToE paused\n"
    assert api.snapshot.toe_paused
    drained = ctl(servers, "drain", "ocs", "ocs2")
    assert drained.returncode == 0 and drained.stdout == "drain of ocs ocs2 queued\n"
    assert api.maintenance == ["ocs:ocs2"]
    dry = json.loads(ctl(servers, "toe", "--dry-run", "--format", "json").stdout)
    assert dry["accepted"] and dry["dry_run"] and dry["plan"] == PLAN
    assert dry["message"] == "planned 2 stages, 4 circuits change"
    assert api.calls_to("trigger_toe") == [(True,)]


def test_history_and_plan_json(served: Served) -> None:
    api, servers = served
    assert json.loads(ctl(servers, "history", "--limit", "3", "--format", "json").stdout) == HISTORY[:3]
    api.plan = PLAN
    assert json.loads(ctl(servers, "plan", "--format", "json").stdout) == PLAN


def test_api_errors_exit_non_zero_with_the_message(served: Served) -> None:
    _api, servers = served
    missing = ctl(servers, "plan")
    assert missing.returncode != 0 and missing.stdout == ""
    assert missing.stderr.strip() == "heliostat: error: not_found: no ToE plan yet"
    unknown = ctl(servers, "undrain", "block", "b99")
    assert unknown.returncode != 0
    assert "heliostat: error: invalid_argument: name: no block 'b99' in fabric fake-4" in unknown.stderr
    bad_limit = ctl(servers, "history", "--limit", "-5")
    assert bad_limit.returncode != 0 and "--limit: must be from 1 to 1000, got -5" in bad_limit.stderr
    huge_limit = ctl(servers, "history", "--limit", "999999999999")  # past int32: used to be a traceback
    assert huge_limit.returncode == 2 and "--limit: must be from 1 to 1000" in huge_limit.stderr
    for result in (missing, unknown, bad_limit, huge_limit):
        _no_traceback(result.stderr)


def test_internal_error_is_reported_and_the_next_call_works(served: Served) -> None:
    api, servers = served
    api.fail["status"] = RuntimeError("journal is locked")
    failed = ctl(servers, "status")
    assert failed.returncode != 0
    assert "INTERNAL" in failed.stderr and "RuntimeError: journal is locked" in failed.stderr
    _no_traceback(failed.stderr)
    del api.fail["status"]
    assert ctl(servers, "status").returncode == 0


def test_unreachable_daemon_is_a_clear_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"
        result = run_cli("ctl", "--address", address, "status", timeout=60)
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.startswith(f"heliostat: error: cannot reach the controller at {address}")
    assert result.stderr.count("\n") == 1  # one line, no log noise, no traceback


def test_config_names_the_address_and_a_wildcard_host_is_dialled_on_loopback(
    served: Served, tmp_path: Path
) -> None:
    _api, servers = served
    config = tmp_path / "controller.yaml"
    config.write_text(
        "fabric: fabric.yaml\ndevices: devices.yaml\nstore: h.db\n"
        f"listen:\n  northbound: 0.0.0.0:{servers.grpc_port}\n  metrics: 127.0.0.1:0\n"
    )
    result = run_cli("ctl", "--config", str(config), "status", "--format", "json", timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["fabric"] == "fake-4"


def test_bad_address_and_timeout_are_errors_naming_the_option() -> None:
    bad = run_cli("ctl", "--address", "nowhere", "status", timeout=60)
    assert bad.returncode != 0 and "--address" in bad.stderr
    _no_traceback(bad.stderr)
    assert main(["ctl", "--timeout", "0", "status"]) != 0


# -- tables, in process ---------------------------------------------------------------------------


def test_topology_and_circuits_tables(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    _api, servers = served
    topology = ctl_in_process(servers, capsys, "topology").splitlines()
    assert topology[0] == "6 circuits between 3 block pairs"
    assert topology[1].split() == ["a", "b", "circuits"]
    assert topology[4].split() == ["b3", "b4", "3"]
    circuits = ctl_in_process(servers, capsys, "circuits").splitlines()
    assert circuits[0] == "3 circuits"
    assert circuits[2].split() == ["ocs1", "b1", "0", "b2", "4"]


def test_matrix_tables_as_grid_and_missing_prediction(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    api, servers = served
    lines = ctl_in_process(servers, capsys, "matrix").splitlines()
    assert lines[0].startswith("current matrix (Gbit/s) at ") and "420.8 Gbit/s in all" in lines[0]
    assert lines[1].split() == ["src", "\\", "dst", "b1", "b2", "b3", "b4"]
    assert lines[2].split() == ["b1", "-", "120.5", "0.0", "-"]
    api.matrices_data = {"current": None, "prediction": None, "time": None}
    assert ctl_in_process(servers, capsys, "prediction") == "no predicted matrix yet\n"


def test_status_table_shows_a_reconfiguration_in_flight(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    api, servers = served
    api.snapshot = replace(
        api.snapshot, reconfiguration_id=9, stage=1, stages_total=4, step="apply_ocs", last_error="ocs1 slow"
    )
    api.maintenance = ["block:b2"]
    out = ctl_in_process(servers, capsys, "status")
    rows = _rows(out)
    assert rows["reconfiguration"] == "#9, stage 2 of 4, step apply_ocs"
    assert rows["maintenance"] == "block:b2" and rows["last error"] == "ocs1 slow"
    assert out.endswith("details:\n  stale_counters  0\n  solver          highs\n")


def test_history_plan_and_toe_tables(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    api, servers = served
    history = ctl_in_process(servers, capsys, "history").splitlines()
    assert history[0].split() == [
        "id", "state", "trigger", "started", "(UTC)", "took", "stages", "circuits", "mlu", "reason"
    ]
    assert history[1].split()[:8] == ["7", "in_progress", "auto", "09-21", "14:13:20", "-", "2", "-1/+2"]
    assert history[1].endswith("...") and history[2].split()[5:7] == ["90", "s"]
    assert len(history) == 1 + len(HISTORY) and max(map(len, history)) <= 100
    toe = ctl_in_process(servers, capsys, "toe", "--dry-run")
    assert toe.startswith("dry run: planned 2 stages, 4 circuits change\n")
    plan = ctl_in_process(servers, capsys, "plan")  # reads like `heliostat toe`'s table
    assert plan.startswith("plan for fabric fake-4 (dry_run)\n")
    rows = _rows(plan)
    assert rows["reason"] == "predicted MLU improves by 43%"
    assert rows["MLU of the predicted demand"] == "0.9100 -> 0.5200"
    assert rows["circuits removed/added"] == "1 / 2" and rows["block pairs joined"] == "2"
    assert plan.endswith(
        "stages (drained MLU limit: max(0.8, MLU at the stage's start)):\n"
        "    1. domain 0: -1 +1 circuits, MLU 0.9100 -> drained 0.7000 -> 0.6000\n"
        "    2. domain 1: -0 +1 circuits, MLU 0.6000 -> drained 0.6000 -> 0.5200\n"
    )
    api.history_data = []
    assert ctl_in_process(servers, capsys, "history") == "no reconfigurations yet\n"


def test_queued_toe_then_refused_toe(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    _api, servers = served
    assert ctl_in_process(servers, capsys, "toe") == "queued: ToE run queued\n"
    assert main(["ctl", "--address", str(servers.grpc_address), "toe"]) == 1  # refused
    assert "failed_precondition: a ToE run is already queued" in capsys.readouterr().err


def test_undrain_and_resume(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    api, servers = served
    api.maintenance = ["block:b1"]
    api.snapshot = replace(api.snapshot, toe_paused=True)
    assert ctl_in_process(servers, capsys, "undrain", "block", "b1") == "undrain of block b1 queued\n"
    assert api.maintenance == []
    assert json.loads(ctl_in_process(servers, capsys, "resume", "--format", "json")) == {"toe_paused": False}
    assert not api.snapshot.toe_paused
    assert api.calls_to("set_maintenance") == [(MaintenanceKind.BLOCK, "b1", False)]



def test_ctl_over_mutual_tls_and_tls_option_errors(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    server_tls = ServerTlsConfig(pki.server_cert, pki.server_key, client_ca=pki.ca_cert)
    with serving(tls=server_tls) as (_api, servers, _m):
        tls_args = ["--ca-cert", str(pki.ca_cert), "--server-name", SERVER_NAME]
        client_args = ["--cert", str(pki.client_cert), "--key", str(pki.client_key)]
        address = ["--address", str(servers.grpc_address)]
        ok = run_cli("ctl", *address, *tls_args, *client_args, "status", "--format", "json", timeout=60)
        assert ok.returncode == 0, ok.stderr
        assert json.loads(ok.stdout)["fabric"] == "fake-4"
        plaintext = run_cli("ctl", *address, "status", timeout=60)
        assert plaintext.returncode != 0 and "TLS with the controller" in plaintext.stderr
        assert "pass --ca-cert" in plaintext.stderr  # says what to do, not "is heliostat run running?"
        anonymous = run_cli("ctl", *address, *tls_args, "status", timeout=60)
        assert anonymous.returncode != 0 and "TLS handshake" in anonymous.stderr
        assert "--cert/--key" in anonymous.stderr
        wrong_ca = run_cli("ctl", *address, "--ca-cert", str(pki.other_ca_cert), "--server-name", SERVER_NAME,
                           *client_args, "status", timeout=60)
        assert wrong_ca.returncode != 0 and "TLS with the controller" in wrong_ca.stderr
        assert "--ca-cert" in wrong_ca.stderr
    assert main(["ctl", "--cert", str(pki.client_cert), "status"]) == 2
    assert main(["ctl", "--ca-cert", str(tmp_path / "missing.pem"), "status"]) == 2
