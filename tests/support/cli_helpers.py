"""Running the ``heliostat`` CLI as a real subprocess."""

from __future__ import annotations

import subprocess
import sys

from tests.support import ROOT


def run_cli(*args: str, check: bool = False, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"heliostat {' '.join(args)} failed:\n{result.stderr}")
    return result


def cli_accepts(args: list[str]) -> bool:
    """Whether the CLI parses ``args`` (after ``heliostat``) into a command with a handler, as
    ``heliostat`` itself reads them (global flags anywhere), without running it."""
    from controller import cli

    hoisted = cli.hoist_global_flags(args)
    return callable(cli.build_parser(cli._command_of(hoisted)).parse_args(hoisted).handler)
