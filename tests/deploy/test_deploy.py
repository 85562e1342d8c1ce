"""What ``deploy/`` ships, checked against a live daemon: the alert rules and the daemon's
``/metrics`` pass ``promtool`` (Debian's ``prometheus`` package; CI installs it with
``.ci/install-prometheus.sh``), every metric the dashboard and the rules name is one the
daemon exports, and the systemd units run commands the CLI accepts."""

from __future__ import annotations

import configparser
import json
import re
import shlex
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.support import CONFIGS, ROOT
from tests.support.cli_helpers import cli_accepts, run_cli
from tests.support.daemon_support import (
    controller_config,
    free_port,
    running_fabric,
    start_daemon_process,
    stop_process,
    wait_for,
)

DEPLOY = ROOT / "deploy"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian's prometheus package: .ci/install-prometheus.sh)"
)
#: PromQL words that look like metric names but are functions, keywords or labels.
_PROMQL_WORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
    "offset", "le", "instance", "job", "src", "dst", "device", "kind", "ocs", "reason", "trigger",
    "outcome", "result", "name", "direction", "version", "python_version", "value", "labels",
}
_SUFFIXES = ("_bucket", "_sum", "_count")


@pytest.fixture(scope="module")
def live_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``heliostat run`` on an emulated fabric-4, once TE ran: (its /metrics text then, the
    address of its API)."""
    tmp = tmp_path_factory.mktemp("deploy")
    fabric_file = CONFIGS / "fabric-4.yaml"
    with running_fabric(fabric_file, tmp) as fabric:
        from optimizer.traffic import uniform_matrix

        fabric.set_demand(uniform_matrix(fabric.fabric, load=0.3))
        metrics_address = f"127.0.0.1:{free_port()}"
        api_address = f"127.0.0.1:{free_port()}"
        config = controller_config(tmp, fabric_file, fabric.devices_file, northbound=api_address)
        data = yaml.safe_load(config.read_text())
        data["listen"]["metrics"] = metrics_address
        config.write_text(yaml.safe_dump(data))
        proc = start_daemon_process(config, tmp / "daemon.log")
        try:
            def scraped() -> str | None:
                try:
                    with urllib.request.urlopen(f"http://{metrics_address}/metrics", timeout=5) as reply:
                        text = reply.read().decode()
                except OSError:
                    return None
                return text if re.search(r"^heliostat_te_runs_total [1-9]", text, re.M) and (
                    "heliostat_link_utilization_ratio{" in text) else None

            yield wait_for(scraped, 60, 0.5, what="a TE run in the daemon's metrics"), api_address
        finally:
            stop_process(proc)


@pytest.fixture(scope="module")
def live_metrics(live_daemon: tuple[str, str]) -> str:
    return live_daemon[0]


def exported_names(text: str) -> set[str]:
    return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}


def named_metrics(expr: str) -> set[str]:
    """Metric names in a PromQL expression (identifiers outside label matchers and strings)."""
    expr = re.sub(r'"[^"]*"', "", expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    names = set()
    for match in re.finditer(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b\s*(\()?", expr):
        word, call = match.group(1), match.group(2)
        if call or word in _PROMQL_WORDS or re.fullmatch(r"\d.*|e\d+|time", word):
            continue
        names.add(word)
    return names


def dashboard_queries() -> list[str]:
    dashboard = json.loads((DEPLOY / "grafana" / "heliostat.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    variables = dashboard["templating"]["list"]
    exprs += [v["query"]["query"] for v in variables if isinstance(v.get("query"), dict)]
    return exprs


def alert_queries() -> list[str]:
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
    return [rule["expr"] for group in rules["groups"] for rule in group["rules"]]


@needs_promtool
def test_alert_rules_pass_promtool() -> None:
    done = subprocess.run([PROMTOOL, "check", "rules", str(DEPLOY / "prometheus" / "alerts.yml")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 8 rules found" in done.stdout


@needs_promtool
def test_a_live_daemons_metrics_pass_promtool(live_metrics: str) -> None:
    done = subprocess.run([PROMTOOL, "check", "metrics"], input=live_metrics,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done.stdout + done.stderr


def test_the_daemon_exports_per_entity_series(live_metrics: str) -> None:
    assert "_created" not in live_metrics
    for series in (
        'heliostat_device_up{device="ocs1",kind="ocs"} 1.0',
        'heliostat_device_up{device="b1",kind="block"} 1.0',
        'heliostat_device_blackholed_bytes_total{device="b1"}',
        'heliostat_device_dropped_bytes_total{device="b1",direction="tx"}',
        'heliostat_block_pair_circuits{dst="b2",src="b1"}',
        'heliostat_build_info{',
        "process_resident_memory_bytes",
        "python_gc_collections_total",
    ):
        assert series in live_metrics, series
    step_series = r'^heliostat_reconfig_step\{heliostat_reconfig_step="(\w+)"\} (\S+)$'
    steps = dict(re.findall(step_series, live_metrics, re.M))
    assert sorted(steps.values()) == ["0.0"] * 6 + ["1.0"]  # one step in flight, or "none"
    stage = float(re.search(r"^heliostat_reconfig_stage (\S+)$", live_metrics, re.M).group(1))
    stages = float(re.search(r"^heliostat_reconfig_stages (\S+)$", live_metrics, re.M).group(1))
    assert (stage, stages, steps["none"]) == (0, 0, "1.0") or 1 <= stage <= stages
    ocs = [float(v) for v in re.findall(r'^heliostat_ocs_circuits\{ocs="ocs\d"\} (\S+)$', live_metrics, re.M)]
    assert len(ocs) == 2 and sum(ocs) > 0  # the uniform mesh's circuits
    utilisation = [float(v) for v in re.findall(r"^heliostat_link_utilization_ratio\{.*\} (\S+)$",
                                                live_metrics, re.M)]
    assert len(utilisation) == 12 and 0 < max(utilisation) <= 1.0  # 4 blocks: 12 directed trunks


def test_every_metric_the_dashboard_and_the_alerts_name_is_exported(live_metrics: str) -> None:
    exported = exported_names(live_metrics) | {"up"}  # `up` is Prometheus's own, per target
    exported |= {f"{n}{s}" for n in exported for s in ("_total", *_SUFFIXES)}
    for source, queries in (("dashboard", dashboard_queries()), ("alerts", alert_queries())):
        named = set().union(*(named_metrics(q) for q in queries))
        assert named, source
        assert not named - exported, f"{source} names metrics the daemon does not export: {named - exported}"


def test_named_metrics_reads_promql() -> None:
    assert named_metrics('sum by (le) (rate(heliostat_te_solve_seconds_bucket{instance=~"$i"}[15m]))') == {
        "heliostat_te_solve_seconds_bucket"
    }
    assert named_metrics("time() - a_b > 3 * c_d") == {"a_b", "c_d"}
    assert named_metrics('heliostat_reconfig_step{x="y"} == 1') == {"heliostat_reconfig_step"}


@pytest.mark.parametrize("unit", ["heliostat.service", "heliostat-emulate.service"])
def test_systemd_units_run_commands_the_cli_accepts(unit: str) -> None:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(DEPLOY / "systemd" / unit)
    service = parser["Service"]
    assert service["Restart"] == "on-failure" and service["RestartPreventExitStatus"] == "2"
    commands = [service["ExecStart"]] + ([service["ExecStartPre"]] if "ExecStartPre" in service else [])
    for line in commands:
        argv = shlex.split(line)
        assert argv[0] == "/opt/heliostat/.venv/bin/heliostat"
        assert cli_accepts(argv[1:])
    assert parser["Install"]["WantedBy"] == "multi-user.target"


def test_the_live_daemon_serves_ctl_reconfig_and_watch(live_daemon: tuple[str, str]) -> None:
    """The daemon's own API (journal, event hub), not the fake: the reconfiguration its first
    ToE started has stages and journaled steps, and `ctl watch` sees TE runs as they happen."""
    _metrics, address = live_daemon
    listed = run_cli("ctl", "--address", address, "history", "--format", "json", check=True)
    history = json.loads(listed.stdout)
    assert history, "the first ToE check on the mesh starts a reconfiguration"
    newest = history[0]["id"]
    done = run_cli("ctl", "--address", address, "reconfig", str(newest), "--format", "json", check=True)
    entry = json.loads(done.stdout)
    assert entry["id"] == newest and len(entry["stages"]) == history[0]["stages"] >= 1
    assert entry["stages"][0]["number"] == 1 and entry["steps"] and entry["steps"][0]["name"] == "drain"
    assert all(step["stage"] >= 1 for step in entry["steps"])
    watch = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "ctl", "--address", address, "watch", "--kind", "toe",
         "--count", "1", "--format", "json"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        def toe_seen() -> bool:  # ask for ToE until the watcher has seen one (it may subscribe late)
            if watch.poll() is None:
                run_cli("ctl", "--address", address, "toe")
            return watch.poll() is not None

        wait_for(toe_seen, 90, 2.0, what="a ToE event in ctl watch")
        out, err = watch.communicate(timeout=10)
    finally:
        if watch.poll() is None:
            watch.kill()
    assert watch.returncode == 0, err
    event = json.loads(out)
    assert event["kind"] == "EVENT_KIND_TOE" and event["toe"]["trigger"] == "operator"
    assert event["message"].startswith("ToE (operator): ")


def test_metrics_over_https_with_client_certificates(tmp_path: Path) -> None:
    """``listen.metrics_tls``: prometheus_client's own server speaks TLS; with client_ca a
    scraper without a certificate the CA signed is refused."""
    import ssl
    import urllib.error

    from controller.config import parse_controller_config
    from controller.metrics import ControllerMetrics
    from controller.northbound.listen import ListenAddress
    from controller.northbound.metrics_http import start_metrics_http
    from optimizer.errors import ConfigError
    from tests.support.tls_ca import make_pki

    pki = make_pki(tmp_path)
    head = f"fabric: f\ndevices: d\nstore: j\nlisten:\n  metrics_tls:\n    cert: {pki.server_cert}\n"
    text = head + f"    key: {pki.server_key}\n    client_ca: {pki.ca_cert}\n"
    tls = parse_controller_config(text, "c.yaml").listen.metrics_tls
    assert tls is not None and tls.client_ca == pki.ca_cert
    with pytest.raises(ConfigError, match=r"c.yaml: listen\.metrics_tls\.operators: unknown key"):
        parse_controller_config(text + "    operators: [x]\n", "c.yaml")
    with pytest.raises(ConfigError, match=r"c.yaml: listen\.metrics_tls\.key"):
        parse_controller_config(head, "c.yaml")
    server = start_metrics_http(ControllerMetrics().registry, ListenAddress("127.0.0.1", 0), tls)
    try:
        assert server.url.startswith("https://127.0.0.1:")
        url = f"https://localhost:{server.address.port}/metrics"
        scraper = ssl.create_default_context(cafile=str(pki.ca_cert))
        scraper.load_cert_chain(str(pki.client_cert), str(pki.client_key))
        with urllib.request.urlopen(url, context=scraper, timeout=10) as reply:
            assert "heliostat_mlu_ratio" in reply.read().decode()
        anonymous = ssl.create_default_context(cafile=str(pki.ca_cert))
        with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
            urllib.request.urlopen(url, context=anonymous, timeout=10).read()
    finally:
        server.stop()
