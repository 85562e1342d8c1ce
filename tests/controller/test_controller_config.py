"""The controller config: shipped files load, defaults, path resolution, and named errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import (
    ControllerConfig,
    ListenAddress,
    Solver,
    controller_config_from_dict,
    load_controller_config,
    parse_controller_config,
    parse_listen_address,
)
from controller.reconfig.journal import StepName
from optimizer.config import load_fabric
from optimizer.errors import ConfigError
from optimizer.te import Predictor, TeMethod, TePolicy
from tests.support import ROOT

CONTROLLER_FILES = sorted((ROOT / "configs").glob("controller*.yaml"))
MINIMAL = {"fabric": "f.yaml", "devices": "d.yaml", "store": "j.db"}


def error_for(data: dict, source: str = "c.yaml") -> ConfigError:
    with pytest.raises(ConfigError) as info:
        controller_config_from_dict(data, source, Path("/base"))
    return info.value


def with_section(section: str, **values: object) -> dict:
    return {**MINIMAL, section: values}


def test_the_default_controller_config_is_shipped() -> None:
    assert ROOT / "configs" / "controller.yaml" in CONTROLLER_FILES


@pytest.mark.parametrize("path", CONTROLLER_FILES, ids=lambda p: p.name)
def test_every_controller_config_loads_with_its_fabric(path: Path) -> None:
    config = load_controller_config(path)
    assert config.fabric.is_absolute() and config.devices.is_absolute() and config.store.is_absolute()
    fabric = load_fabric(config.fabric)
    assert fabric.n_blocks >= 2


def test_the_default_config_drives_fabric_8_with_the_issue_defaults() -> None:
    config = load_controller_config(ROOT / "configs" / "controller.yaml")
    assert config.fabric == ROOT / "configs" / "fabric-8.yaml"
    assert config.devices == ROOT / "run" / "devices.yaml" and config.store == ROOT / "run" / "heliostat.db"
    assert config.intervals.te_interval == 30 and config.intervals.prediction_window == 3600
    assert config.thresholds.stage_mlu == 0.8
    settings = config.estimation_settings()
    assert (settings.prediction_window, settings.stale_after) == (3600.0, 90.0)


def test_a_minimal_config_gets_every_default() -> None:
    config = controller_config_from_dict(MINIMAL, "c.yaml", Path("/base"))
    assert config == ControllerConfig(
        source="c.yaml", fabric=Path("/base/f.yaml"), devices=Path("/base/d.yaml"), store=Path("/base/j.db")
    )
    assert config.solver is Solver.HIGHS
    assert (config.intervals.te_interval, config.intervals.prediction_window) == (30.0, 3600.0)
    assert str(config.listen.northbound) == "127.0.0.1:50051"


def test_the_deferred_plan_ttl_defaults_to_three_toe_checks_and_0_turns_deferral_off() -> None:
    assert controller_config_from_dict(MINIMAL, "c.yaml", Path("/base")).deferred_plan_ttl == 900.0
    faster = {**MINIMAL, "intervals": {"toe_check_interval": 60}}
    assert controller_config_from_dict(faster, "c.yaml", Path("/base")).deferred_plan_ttl == 180.0
    off = with_section("thresholds", deferred_plan_ttl=0)
    assert controller_config_from_dict(off, "c.yaml", Path("/base")).deferred_plan_ttl == 0.0
    longer = with_section("thresholds", deferred_plan_ttl=7200)
    assert controller_config_from_dict(longer, "c.yaml", Path("/base")).deferred_plan_ttl == 7200.0


def test_relative_paths_are_resolved_against_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    path = tmp_path / "etc" / "controller.yaml"
    path.write_text("fabric: fabric.yaml\ndevices: ../run/devices.yaml\nstore: /var/lib/h.db\n")
    config = load_controller_config(path)
    assert config.fabric == tmp_path / "etc" / "fabric.yaml"
    assert config.devices == tmp_path / "run" / "devices.yaml"
    assert config.store == Path("/var/lib/h.db")
    assert config.source == str(path)


def test_the_northbound_tls_files_are_relative_to_the_config_and_read_at_load(tmp_path: Path) -> None:
    (tmp_path / "certs").mkdir()
    cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    key = "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"
    for name, text in (("api.pem", cert), ("api-key.pem", key), ("ca.pem", cert)):
        (tmp_path / "certs" / name).write_text(text)
    path = tmp_path / "controller.yaml"
    listen = "listen:\n  northbound_tls:\n    cert: certs/api.pem\n    key: certs/api-key.pem\n"
    path.write_text(f"fabric: f.yaml\ndevices: d.yaml\nstore: j.db\n{listen}")
    tls = load_controller_config(path).listen.northbound_tls
    assert tls is not None and tls.client_ca is None
    assert (tls.cert, tls.key) == (tmp_path / "certs" / "api.pem", tmp_path / "certs" / "api-key.pem")
    path.write_text(f"fabric: f.yaml\ndevices: d.yaml\nstore: j.db\n{listen}    client_ca: certs/ca.pem\n")
    with pytest.raises(ConfigError, match=r"listen\.northbound_tls\.operators: required with client_ca"):
        load_controller_config(path)
    roles = "    operators: [alice]\n    readers: [grafana, prometheus]\n"
    top = "fabric: f.yaml\ndevices: d.yaml\nstore: j.db\n"
    path.write_text(f"{top}{listen}    client_ca: certs/ca.pem\n{roles}")
    listen_config = load_controller_config(path).listen
    assert listen_config.northbound_tls.client_ca == tmp_path / "certs" / "ca.pem"
    assert listen_config.northbound_roles.operators == {"alice"}
    assert listen_config.northbound_roles.readers == {"grafana", "prometheus"}
    (tmp_path / "certs" / "ca.pem").write_bytes(b"\x30\x82\x01\x0a")  # DER, not PEM
    with pytest.raises(ConfigError, match=r"listen\.northbound_tls\.client_ca: .*not a PEM certificate"):
        load_controller_config(path)
    (tmp_path / "certs" / "api-key.pem").unlink()
    with pytest.raises(ConfigError, match=r"listen\.northbound_tls\.key: cannot read"):
        load_controller_config(path)
    assert controller_config_from_dict(MINIMAL, "c.yaml", Path("/base")).listen.northbound_tls is None


def test_every_step_has_a_timeout() -> None:
    timeouts = controller_config_from_dict(with_section("timeouts", apply_ocs=12), "c", Path("/")).timeouts
    assert [timeouts.for_step(s.value) for s in StepName] == [30.0, 90.0, 12.0, 60.0, 30.0]
    with pytest.raises(KeyError):
        timeouts.for_step("reboot")
    with pytest.raises(KeyError):
        timeouts.for_step("toe_solve")  # a solver budget, not an executor step


def test_the_te_section_sets_the_policy_the_daemon_routes_with() -> None:
    config = controller_config_from_dict(
        with_section("te", method="min_mlu", predictor="peak", window=12, hedge=0.5, table_size=64),
        "c",
        Path("/"),
    )
    assert config.te == TePolicy(TeMethod.MIN_MLU, Predictor.PEAK, 12, 0.5, 64)
    assert controller_config_from_dict(with_section("te", hedge=None), "c", Path("/")).te.hedge is None
    assert controller_config_from_dict(with_section("te", burst=0.25), "c", Path("/")).te.burst == 0.25
    assert controller_config_from_dict(with_section("te", tail=0.2), "c", Path("/")).te.tail == 0.2


def test_the_toe_solver_budget_is_configured_under_timeouts() -> None:
    assert controller_config_from_dict(MINIMAL, "c", Path("/")).timeouts.toe_solve == 60.0
    config = controller_config_from_dict(with_section("timeouts", toe_solve=15), "c", Path("/"))
    assert config.timeouts.toe_solve == 15.0


@pytest.mark.parametrize(
    ("data", "key", "problem"),
    [
        ({**MINIMAL, "extra": 1}, "extra", "unknown key"),
        ({"devices": "d", "store": "s"}, "fabric", "required key is missing"),
        ({**MINIMAL, "store": ""}, "store", "non-empty string"),
        ({**MINIMAL, "solver": "gurobi"}, "solver", "expected one of highs, cbc"),
        (with_section("intervals", te_interval=0), "intervals.te_interval", "must be > 0"),
        (with_section("intervals", te_intervall=30), "intervals.te_intervall", "unknown key"),
        (with_section("intervals", te_interval="30s"), "intervals.te_interval", "expected a number"),
        (with_section("intervals", prediction_window=10), "intervals.prediction_window", "at least"),
        (with_section("thresholds", stage_mlu=1.5), "thresholds.stage_mlu", "at most 1"),
        (with_section("thresholds", stage_mlu=0), "thresholds.stage_mlu", "must be > 0"),
        (with_section("thresholds", min_qualified_fraction=-1), "thresholds.min_qualified_fraction", ">= 0"),
        (with_section("thresholds", reconfig_gain=-1), "thresholds.reconfig_gain", ">= 0"),
        (with_section("thresholds", matrix_floor_gbps=0), "thresholds.matrix_floor_gbps", "> 0"),
        (with_section("thresholds", te_stale_ratio=0.9), "thresholds.te_stale_ratio", "at least 1"),
        (with_section("thresholds", deferred_plan_ttl=-1), "thresholds.deferred_plan_ttl", ">= 0"),
        (with_section("thresholds", deferred_plan_ttl="1h"), "thresholds.deferred_plan_ttl", "a number"),
        (with_section("thresholds", deferred_plan_ttl=100), "thresholds.deferred_plan_ttl",
         "at least intervals.toe_check_interval (300 s"),
        (with_section("timeouts", qualify=-5), "timeouts.qualify", "must be > 0"),
        (with_section("timeouts", reboot=5), "timeouts.reboot", "unknown key"),
        (with_section("timeouts", toe_solve=0), "timeouts.toe_solve", "must be > 0"),
        (with_section("timeouts", toe_solve=".inf"), "timeouts.toe_solve", "expected a number"),
        (with_section("timeouts", toe_solve=float("inf")), "timeouts.toe_solve", "must be a finite number"),
        (with_section("te", method="oracle"), "te.method", "expected one of"),
        (with_section("te", predictor="future"), "te.predictor", "expected one of last, peak"),
        (with_section("te", window=0), "te.window", "must be >= 1"),
        (with_section("te", window=10**6), "te.window", "at most 1024"),
        (with_section("te", hedge=1.5), "te.hedge", "must be in (0, 1]"),
        (with_section("te", hedge=0), "te.hedge", "must be > 0"),
        (with_section("te", table_size=10**9), "te.table_size", "at most 65536"),
        (with_section("te", max_oversubscription=0.9), "te.max_oversubscription", ">= 1.0"),
        (with_section("te", hedging=0.5), "te.hedging", "unknown key"),
        (with_section("te", burst=1.0), "te.burst", "must be in [0, 1)"),
        (with_section("te", burst=-0.1), "te.burst", ">= 0"),
        (with_section("te", tail=1.0), "te.tail", "must be in [0, 1)"),
        (with_section("te", tail=-0.1), "te.tail", ">= 0"),
        (with_section("listen", northbound="localhost"), "listen.northbound", "host:port"),
        (with_section("listen", metrics="0.0.0.0:99999"), "listen.metrics", "0 to 65535"),
        (with_section("listen", metrics=":9100"), "listen.metrics", "host is empty"),
        ({**MINIMAL, "listen": [1]}, "listen", "expected a mapping"),
        (with_section("listen", northbound_tls="on"), "listen.northbound_tls", "expected a mapping"),
        (with_section("listen", northbound_tls={"cert": "c.pem"}), "listen.northbound_tls.key", "missing"),
        (
            with_section("listen", northbound_tls={"cert": "c", "key": "k", "ca": "a"}),
            "listen.northbound_tls.ca",
            "unknown key",
        ),
        (
            with_section("listen", northbound_tls={"cert": "/nonexistent/c.pem", "key": "k"}),
            "listen.northbound_tls.cert",
            "cannot read /nonexistent/c.pem",
        ),
    ],
)
def test_errors_name_the_file_and_the_key(data: dict, key: str, problem: str) -> None:
    err = error_for(data)
    assert err.source == "c.yaml" and err.key == key
    assert problem in err.problem
    assert str(err).startswith(f"c.yaml: {key}: ")


def test_yaml_syntax_errors_and_unreadable_files_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"c.yaml: line 2: invalid YAML"):
        parse_controller_config("fabric: f.yaml\n  devices: [\n", "c.yaml")
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match="cannot read file") as info:
        load_controller_config(missing)
    assert info.value.source == str(missing)


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("127.0.0.1:50051", ListenAddress("127.0.0.1", 50051)),
        ("localhost:0", ListenAddress("localhost", 0)),
        ("[::1]:9108", ListenAddress("::1", 9108)),
    ],
)
def test_listen_addresses(text: str, address: ListenAddress) -> None:
    parsed = parse_listen_address(text)
    assert parsed == address and str(parsed) == text


@pytest.mark.parametrize("text", ["::1:80", "[::1]80", "host:", "host:port"])
def test_bad_listen_addresses(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_listen_address(text)
