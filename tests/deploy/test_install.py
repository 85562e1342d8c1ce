"""A plain install (issue 33): the wheel ``pip install .`` builds holds what the daemon needs
at run time, and works from outside the checkout; the container recipe runs commands the CLI
accepts."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support import CONFIGS, ROOT
from tests.support.cli_helpers import cli_accepts

CONTAINERFILE = ROOT / "deploy" / "container" / "Containerfile"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    source = tmp_path_factory.mktemp("source")  # setuptools builds in the tree: not in the checkout
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("controller", "optimizer", "southbound", "emulation"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            str(source),
            "-w",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = out.glob("heliostat-*.whl")
    return built


def test_the_wheel_holds_the_page_the_protos_and_every_package(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "controller/ui/static/index.html",
        "controller/ui/static/app.js",
        "controller/cli.py",
        "optimizer/te/solve.py",
        "emulation/fabric.py",
    ):
        assert needed in names, needed
    assert any(n.endswith(".proto") for n in names)
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)


def test_the_installed_package_runs_from_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    env = {**os.environ, "PYTHONPATH": str(target)}  # the dependencies come from this interpreter's
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import controller, controller.ui.web as w; print(controller.__file__, w.__file__)",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert where.returncode == 0, where.stderr
    assert str(target) in where.stdout and str(ROOT) not in where.stdout  # not the checkout's code
    config = tmp_path / "controller.yaml"
    config.write_text(
        f"fabric: {CONFIGS / 'fabric-4.yaml'}\ndevices: {tmp_path / 'devices.yaml'}\n"
        f"store: {tmp_path / 'state' / 'journal.db'}\n"
    )
    check = subprocess.run(
        [sys.executable, "-m", "controller.cli", "config", "check", str(config), "--format", "json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout)["fabric"]["blocks"] == 4


def _entrypoint() -> list[str]:
    for line in CONTAINERFILE.read_text().splitlines():
        if line.startswith("ENTRYPOINT "):
            return json.loads(line.removeprefix("ENTRYPOINT "))
    raise AssertionError("the Containerfile has no ENTRYPOINT")


def test_the_container_checks_the_mounted_config_then_runs_the_daemon() -> None:
    shell, flag, script, config = _entrypoint()
    assert (shell, flag, config) == ("/bin/sh", "-c", "/etc/heliostat/controller.yaml")
    first, _, second = script.partition(" && exec ")
    for command in (first, second):
        argv = [config if word == "$0" else word for word in shlex.split(command)]
        assert argv[0] == "heliostat"
        assert cli_accepts(argv[1:])
    assert shlex.split(first)[1:3] == ["config", "check"] and " run --config " in second
    text = CONTAINERFILE.read_text()
    assert "pip install --no-cache-dir ." in text and "-e " not in text and "[test]" not in text
    assert 'VOLUME ["/var/lib/heliostat"]' in text and "USER heliostat" in text


def test_the_install_steps_put_every_file_where_the_units_read_it() -> None:
    readme = (ROOT / "deploy" / "README.md").read_text()
    units = "".join(
        (ROOT / "deploy" / "systemd" / u).read_text()
        for u in ("heliostat.service", "heliostat-emulate.service")
    )
    read = set(__import__("re").findall(r"/etc/heliostat/[\w.-]+", units))
    assert read == {"/etc/heliostat/controller.yaml", "/etc/heliostat/fabric.yaml"}
    copied = {
        line.split("#")[0].split()[-1] for line in readme.splitlines() if line.startswith("sudo cp configs/")
    }
    assert read <= copied, f"the units read {read - copied}, which the steps never write"
    for unit in ("heliostat-emulate", "heliostat"):
        assert f"sudo systemctl enable --now {unit}" in readme
