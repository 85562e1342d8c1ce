"""The ``heliostat`` command line itself: what it imports, exit statuses, global flags,
defaults in help, ``--version``, ``demand generate``'s format, ``fabric check`` and
``config check``. Speed is measured in ``benchmarks/bench_cli.py``, not here."""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from controller import cli
from controller.cli import JsonLogFormatter, log_level
from controller.commands.exit_codes import EXIT_CODE_OF_ERROR, FAILED, UNREACHABLE, USAGE, exit_code_of
from southbound.devices import DeviceConfig, write_devices_file
from tests.support import CONFIGS, ROOT
from tests.support.cli_helpers import run_cli
from tests.support.daemon_support import free_port

HEAVY = ("scipy", "highspy", "controller.daemon", "optimizer.te", "optimizer.toe")


def modules_after(argv: list[str]) -> tuple[int, set[str]]:
    """Run ``heliostat argv`` in a fresh interpreter; its exit status and the modules it loaded."""
    code = (
        "import json, sys\n"
        "from controller.cli import main\n"
        f"status = main({argv!r})\n"
        "sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n')\n"
        "sys.exit(status)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    return done.returncode, set(json.loads(line.removeprefix("MODULES ")))


def test_help_imports_no_solver_no_daemon_and_no_grpc() -> None:
    status, modules = modules_after(["--help"])
    assert status == 0
    assert not [m for m in modules if m.split(".")[0] in ("scipy", "highspy", "numpy", "grpc")]
    assert not {"controller.daemon", "controller.config"} & modules


def test_ctl_status_imports_the_client_but_not_the_optimiser() -> None:
    address = f"127.0.0.1:{free_port()}"
    status, modules = modules_after(["ctl", "--address", address, "--timeout", "1", "status"])
    assert status == UNREACHABLE  # nothing listens there
    assert "controller.northbound.client" in modules and "grpc" in modules
    assert not [m for m in modules if m in HEAVY or m.split(".")[0] in HEAVY]


def test_plan_at_64_blocks_imports_no_scipy(tmp_path: Path) -> None:
    """scipy (~0.25 s to import) is only for the stages a plan rarely reaches (the rounding
    MILP, scenario TE): ``heliostat plan`` on the 64-block hotspot of the process benchmark
    (benchmarks/scale/plan_process.py) never imports it, and still plans."""
    from optimizer.config import load_fabric
    from optimizer.traffic import dump_matrix, hotspot_matrix

    fabric_path = CONFIGS / "fabric-64.yaml"
    demand = tmp_path / "hotspot.csv"
    demand.write_text(dump_matrix(hotspot_matrix(load_fabric(fabric_path), seed=1, load=0.9), "csv"))
    out = tmp_path / "plan.json"
    status, modules = modules_after(
        ["plan", "--fabric", str(fabric_path), "--demand", str(demand), "--format", "json", "--out", str(out)]
    )
    assert status == 0
    routing = json.loads(out.read_text())["routing"]
    assert 0 < routing["mlu"] <= routing["mlu_quantized"]
    assert "highspy" in modules
    assert not [m for m in modules if m.split(".")[0] == "scipy"]


def test_every_command_is_listed_with_its_own_help() -> None:
    full = cli.build_parser(everything=True)
    (sub,) = [a for a in full._actions if isinstance(a, argparse._SubParsersAction)]
    listed = {a.dest: a.help for a in sub._choices_actions}
    assert listed == {name: help_text for name, (_module, help_text) in cli.COMMANDS.items()}


def test_every_option_with_a_default_shows_it_in_help() -> None:
    formatter = cli.DefaultsHelpFormatter("heliostat")
    missing = []
    for parser, _leaf in cli._parsers(cli.build_parser(everything=True)):
        assert parser.formatter_class is cli.DefaultsHelpFormatter
        for action in parser._actions:
            default = action.default
            if not action.option_strings or default in (None, False, [], argparse.SUPPRESS):
                continue
            if "default" not in (formatter._get_help_string(action) or ""):
                missing.append(f"{parser.prog} {action.option_strings[0]}")
    assert not missing
    plan_help = run_cli("plan", "--help").stdout
    assert "(default: 128)" in " ".join(plan_help.split())  # --table-size


def test_global_flags_stand_before_or_after_the_action() -> None:
    argv = ["-v", "--format", "json", "fabric", "--log-format=json", "wiring", "x.yaml", "-q"]
    assert cli.hoist_global_flags(argv) == [
        "fabric", "wiring", "x.yaml", "-v", "--format", "json", "--log-format=json", "-q"
    ]
    assert cli.hoist_global_flags(["ctl", "status", "--", "-v"]) == ["ctl", "status", "--", "-v"]
    after = run_cli("fabric", "wiring", "configs/fabric-4.yaml", "--format", "json", "-vv", check=True)
    before = run_cli("-q", "--format", "json", "--log-format", "json", "fabric", "wiring",
                     "configs/fabric-4.yaml", check=True)
    assert json.loads(after.stdout) == json.loads(before.stdout) and len(json.loads(after.stdout)) == 32


def test_version() -> None:
    from importlib.metadata import version

    done = run_cli("--version")
    assert done.returncode == 0 and done.stdout == f"heliostat {version('heliostat')}\n"


def test_exit_statuses_are_distinct(tmp_path: Path) -> None:
    assert run_cli("fabric", "check").returncode == USAGE  # a missing argument
    assert run_cli("fabric", "check", "configs/fabric-4.yaml", "--no-such-flag").returncode == USAGE
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nblocks: []\n")
    config_error = run_cli("fabric", "check", str(bad))
    assert config_error.returncode == USAGE and str(bad) in config_error.stderr
    unreachable = run_cli("ctl", "--address", f"127.0.0.1:{free_port()}", "--timeout", "1", "status")
    assert unreachable.returncode == UNREACHABLE and "cannot reach the controller" in unreachable.stderr
    # refused (1) is checked against a live API in test_northbound_ctl.py


def test_exit_codes_name_classes_that_exist() -> None:
    from controller.ha.elector import ReplicaRefused
    from controller.northbound.errors import ControllerCallFailed, ControllerUnreachable, NorthboundError
    from controller.reconfig.journal_lock import JournalLocked
    from optimizer.errors import ConfigError, InfeasibleError

    for cls in (ConfigError, JournalLocked, NorthboundError, ControllerUnreachable, ReplicaRefused):
        assert f"{cls.__module__}.{cls.__qualname__}" in EXIT_CODE_OF_ERROR
    assert exit_code_of(ConfigError("f", "k", "bad")) == USAGE
    assert exit_code_of(ControllerUnreachable("gone")) == UNREACHABLE
    assert exit_code_of(InfeasibleError("no plan")) == FAILED
    assert exit_code_of(ControllerCallFailed("x", None)) == FAILED  # type: ignore[arg-type]
    try:  # the daemon wraps what stopped its start (a locked journal, a bad devices file)
        try:
            raise ConfigError("devices.yaml", "devices.b1", "bad")
        except ConfigError as exc:
            raise InfeasibleError("could not start") from exc
    except InfeasibleError as wrapped:
        assert exit_code_of(wrapped) == USAGE


def test_json_log_lines_and_levels() -> None:
    record = logging.LogRecord("heliostat.x", logging.WARNING, __file__, 1, "MLU %.2f", (1.25,), None)
    entry = json.loads(JsonLogFormatter().format(record))
    assert entry["level"] == "WARNING" and entry["logger"] == "heliostat.x" and entry["message"] == "MLU 1.25"
    assert entry["time"].endswith("+00:00")
    assert log_level(0, False) == logging.WARNING and log_level(2, False) == logging.DEBUG
    assert log_level(2, True) == logging.ERROR  # -q wins
    code = ("from controller.cli import setup_logging\nimport logging\n"
            "setup_logging(1, False, 'json')\nlogging.getLogger('t').info('hello')\n"
            "logging.getLogger('t').debug('not shown')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30)
    lines = [json.loads(x) for x in done.stderr.splitlines()]
    assert [(x["level"], x["message"]) for x in lines] == [("INFO", "hello")]


def test_demand_generate_picks_the_format_from_the_extension(tmp_path: Path) -> None:
    args = ["demand", "generate", "--fabric", "configs/fabric-4.yaml"]
    run_cli(*args, "--out", str(tmp_path / "m.csv"), check=True)
    assert (tmp_path / "m.csv").read_text().splitlines()[0] == "src,dst,gbps"
    run_cli(*args, "--out", str(tmp_path / "m.json"), check=True)
    assert set(json.loads((tmp_path / "m.json").read_text())) == {"b1", "b2", "b3", "b4"}
    run_cli(*args, "--out", str(tmp_path / "m.json.csv"), "--format", "json", check=True)  # explicit wins
    assert json.loads((tmp_path / "m.json.csv").read_text())
    quiet = run_cli(*args, "--load", "1.0", check=True)
    assert "warning" not in quiet.stderr
    loud = run_cli(*args, "--load", "1.5", check=True)
    assert "warning: --load 1.5" in loud.stderr and json.loads(loud.stdout)


def test_fabric_check_json() -> None:
    done = run_cli("fabric", "check", "configs/fabric-hybrid-8.yaml", "--format", "json", check=True)
    data = json.loads(done.stdout)
    assert data["valid"] and data["blocks"] == 8 and data["spine_switches"] > 0 and data["mesh_gaps"] == []


def _controller_config(tmp_path: Path, devices: dict[str, str] | None, store: Path | None = None) -> Path:
    if devices is not None:
        entries = {name: DeviceConfig(name, kind, f"127.0.0.1:{5000 + i}")
                   for i, (name, kind) in enumerate(devices.items())}
        write_devices_file(tmp_path / "devices.yaml", entries)
    config = tmp_path / "controller.yaml"
    config.write_text(yaml.safe_dump({
        "fabric": str(CONFIGS / "fabric-4.yaml"), "devices": str(tmp_path / "devices.yaml"),
        "store": str(store or tmp_path / "journal.db"),
    }))
    return config


FABRIC_4_DEVICES = {"b1": "block", "b2": "block", "b3": "block", "b4": "block", "ocs1": "ocs", "ocs2": "ocs"}


def test_config_check_accepts_a_config_whose_files_are_right(tmp_path: Path) -> None:
    config = _controller_config(tmp_path, FABRIC_4_DEVICES)
    done = run_cli("config", "check", str(config), check=True)
    assert "valid: fabric 'demo-4'" in done.stdout and "6 devices" in done.stdout
    data = json.loads(run_cli("config", "check", str(config), "--format", "json", check=True).stdout)
    assert data["valid"] and data["devices"]["count"] == 6 and data["warnings"] == []
    assert not (tmp_path / "journal.db").exists()  # nothing started, nothing written


def test_config_check_warns_when_the_devices_file_is_not_written_yet(tmp_path: Path) -> None:
    done = run_cli("config", "check", str(_controller_config(tmp_path, None)), check=True)
    assert "warning:" in done.stderr and "devices file does not exist yet" in done.stderr


@pytest.mark.parametrize(
    ("devices", "store", "expected"),
    [
        ({k: v for k, v in FABRIC_4_DEVICES.items() if k != "ocs2"}, None,
         "devices.yaml: devices: no entry for ocs2"),
        ({**FABRIC_4_DEVICES, "b2": "ocs"}, None,
         "devices.yaml: devices.b2.kind: is ocs, the fabric needs a block"),
        (FABRIC_4_DEVICES, "afile/journal.db", "controller.yaml: store: "),
    ],
)
def test_config_check_names_the_file_and_key_at_fault(
    tmp_path: Path, devices: dict[str, str], store: str | None, expected: str
) -> None:
    (tmp_path / "afile").write_text("not a directory")
    config = _controller_config(tmp_path, devices, tmp_path / store if store else None)
    done = run_cli("config", "check", str(config))
    assert done.returncode == USAGE and expected in done.stderr and "Traceback" not in done.stderr
    if store:
        assert "afile is not a directory" in done.stderr


def test_a_missing_journal_directory_is_a_warning_and_heliostat_run_would_create_it(tmp_path: Path) -> None:
    """The README's daemon path on a fresh clone: run/ does not exist yet."""
    config = _controller_config(tmp_path, FABRIC_4_DEVICES, tmp_path / "run" / "state" / "journal.db")
    done = run_cli("config", "check", str(config))
    assert done.returncode == 0, done.stderr
    assert "run/state: the journal's directory does not exist yet; `heliostat run` creates it" in done.stderr
    assert not (tmp_path / "run").exists()  # the check starts and writes nothing


def test_the_shipped_controller_config_checks_on_a_fresh_clone_and_serves_the_page() -> None:
    done = run_cli("config", "check", "configs/controller.yaml", "--format", "json")
    assert done.returncode == 0, done.stderr
    from controller.config import load_controller_config

    assert load_controller_config(CONFIGS / "controller.yaml").listen.web is not None


def test_config_check_reads_the_fabric_the_config_names(tmp_path: Path) -> None:
    fabric = tmp_path / "fabric.yaml"
    fabric.write_text("name: x\nblocks:\n  - {name: b1, uplinks: 3}\nocs:\n  - {name: o1, ports: 8}\n")
    config = tmp_path / "controller.yaml"
    config.write_text(yaml.safe_dump({"fabric": str(fabric), "devices": "d.yaml", "store": "j.db"}))
    done = run_cli("config", "check", str(config))
    assert done.returncode == USAGE and f"{fabric}: blocks[0].uplinks" in done.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_completes_commands_actions_and_choices(tmp_path: Path) -> None:
    script = tmp_path / "heliostat.bash"
    script.write_text(run_cli("completion", "bash", check=True).stdout)

    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        probe = (f'source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; '
                 f'COMP_LINE="{line}"; COMP_POINT=${{#COMP_LINE}}; _shtab_heliostat; '
                 'echo "${COMPREPLY[@]}"')
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
        return done.stdout.split()

    assert complete("heliostat", "ctl", "wa") == ["watch"]
    assert complete("heliostat", "ctl", "drain", '""') == ["block", "ocs", "spine"]
    assert "config" in complete("heliostat", "con")
    assert run_cli("completion", "zsh", check=True).stdout.startswith("#compdef heliostat")
