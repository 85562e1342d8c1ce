"""``heliostat demo --serve``: the page during and after the scripted shift, until SIGTERM."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.support import ROOT
from tests.support.demo_process import served_demo


def _read(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read()


@pytest.mark.slow
def test_demo_serve_prints_the_urls_and_keeps_serving_until_sigterm() -> None:
    with served_demo(summary_within_s=400) as demo:
        env = demo.env
        out = demo.output
        assert demo.proc.poll() is None, out
        assert "outcome: OK" in out, out[-4000:]
        page = re.search(r"status page: (http://127\.0\.0\.1:\d+/)", out)
        metrics = re.search(r"metrics: (http://127\.0\.0\.1:\d+/metrics)", out)
        assert page and metrics, out
        assert b"<canvas" in _read(page.group(1))
        history = json.loads(_read(page.group(1) + "api/reconfigurations"))["recent"]
        assert history[0]["state"] == "done" and history[0]["stages"] >= 1
        assert b"# TYPE heliostat_" in _read(metrics.group(1))
        # the demo's API is the daemon's: `ctl watch` streams its events (it was UNIMPLEMENTED)
        address = re.search(r"API: heliostat ctl --address (\S+) status", out)
        assert address, out
        cli = [sys.executable, "-m", "controller.cli", "ctl", "--address", address.group(1)]
        watch = subprocess.Popen([*cli, "watch", "--kind", "toe", "--count", "1", "--format", "json"],
                                 cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(2.0)  # the stream is open before the request
            asked = subprocess.run([*cli, "toe"], cwd=ROOT, env=env, capture_output=True, text=True,
                                   timeout=60)
            assert asked.returncode == 0, asked.stderr
            streamed, err = watch.communicate(timeout=90)
        finally:
            watch.kill()
        assert watch.returncode == 0, err
        assert json.loads(streamed.splitlines()[0])["kind"].lower().endswith("toe")
        time.sleep(1.5)  # still serving a while after the script ended
        status = json.loads(_read(page.group(1) + "api/status"))
        # serving and looping (the operator's ToE above may have found a change worth making)
        assert status["fabric"] == "demo-8" and status["phase"] in ("idle", "planning", "reconfiguring")
    assert demo.exit_code == 0, demo.output[-3000:]
    assert "stopping" in demo.output
