"""The status page in a real browser: headless Chromium (Debian's ``chromium``, installed by
``.ci/install-browser.sh``) loads the page of ``heliostat run`` on an emulated fabric, runs its
script, and the MLU it shows is the API's. A screenshot is kept as an artifact (the path is
printed; ``HELIOSTAT_ARTIFACTS`` moves it, default ``tests/artifacts/``)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from optimizer.traffic import uniform_matrix
from tests.support import CONFIGS, ROOT
from tests.support.daemon_support import (
    controller_config,
    running_fabric,
    start_daemon_process,
    stop_process,
    wait_for,
)

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: Virtual time the page gets to fetch the endpoints and draw (the browser waits for the
#: network while virtual time is paused, so this is not a sleep).
BUDGET_MS = 4000


def _chromium(profile: Path, *args: str) -> str:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (sudo .ci/install-browser.sh installs Debian's)")
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         f"--user-data-dir={profile}", f"--virtual-time-budget={BUDGET_MS}", *args],
        capture_output=True, text=True, timeout=90,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _api(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _shown(dom: str, element: str, attribute: str) -> tuple[str, str]:
    """The ``data-`` attribute and the text of the element with id ``element``."""
    match = re.search(rf'<span id="{element}" {attribute}="([^"]*)"[^>]*>([^<]*)</span>', dom)
    assert match, f"#{element} not in the page:\n{dom[:3000]}"
    return html.unescape(match.group(1)), html.unescape(match.group(2))


def artifacts_dir() -> Path:
    path = Path(os.environ.get("HELIOSTAT_ARTIFACTS", ROOT / "tests" / "artifacts"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_the_page_in_chromium_shows_the_apis_mlu(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (sudo .ci/install-browser.sh installs Debian's)")
    log = tmp_path / "daemon.log"
    with running_fabric(CONFIGS / "fabric-4.yaml", tmp_path) as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, load=0.4))
        config = controller_config(tmp_path, CONFIGS / "fabric-4.yaml", fabric.devices_file)
        data = yaml.safe_load(config.read_text())
        data["listen"]["web"] = "127.0.0.1:0"
        config.write_text(yaml.safe_dump(data))
        proc = start_daemon_process(config, log)
        try:
            found = wait_for(lambda: re.search(r"status page (http://127\.0\.0\.1:\d+/)", log.read_text()),
                             30, what="the status page's URL in the log")
            url = found.group(1)
            wait_for(lambda: _api(url + "api/status")["mlu"] is not None, 30, what="a TE run")
            for _ in range(5):  # a TE run between the two reads moves the MLU: read again
                before = _api(url + "api/status")
                dom = _chromium(tmp_path / "profile", "--dump-dom", url)
                after = _api(url + "api/status")
                if (before["te_runs"], before["mlu"]) == (after["te_runs"], after["mlu"]):
                    break
            else:
                pytest.fail("TE ran during every page load")
            raw, text = _shown(dom, "mlu", "data-mlu")
            assert float(raw) == before["mlu"]
            assert text == f"{before['mlu']:.4f}"
            assert _shown(dom, "te-runs", "data-te-runs")[0] == str(before["te_runs"])
            assert 'data-loaded="1"' in dom and "cannot reach" not in dom
            polls = re.search(r'data-polls="(\d+)"', dom)
            assert polls and int(polls.group(1)) >= 2  # it polls again by itself (3 s of the budget)
            assert dom.count('class="state-up"') == len(_api(url + "api/devices")["devices"]) == 6
            shot = artifacts_dir() / "status-page.png"
            shot.unlink(missing_ok=True)
            _chromium(tmp_path / "profile", "--window-size=1280,1600", f"--screenshot={shot}", url)
            reporter = request.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(f"status page screenshot: {shot}")
            image = shot.read_bytes()
            assert image[:8] == b"\x89PNG\r\n\x1a\n" and len(image) > 20_000
            assert int.from_bytes(image[16:20], "big") == 1280  # the PNG's width
        finally:
            assert stop_process(proc) == 0, log.read_text()[-3000:]
