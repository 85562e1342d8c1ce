"""The wiring picture in a real browser: headless Chromium (``.ci/install-browser.sh``), driven
over the DevTools protocol (tests/controller/ui/cdp.py), loads the page of ``heliostat run`` on
emulated fabric-4; the picture has the fabric's blocks and OCSes and a line per OCS and block
pair, an operator's drain shows in the event list, on the OCS and in the circuit count, a
click on the OCS and on a line opens their drill-downs with the API's circuits and history,
and an OCS that loses power is drawn failed. A
screenshot is kept (``HELIOSTAT_ARTIFACTS``, default tests/artifacts/)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from controller.northbound import ControllerClient
from controller.northbound.api import MaintenanceKind
from optimizer.traffic import uniform_matrix
from tests.controller.ui.cdp import Browser
from tests.controller.ui.test_browser import CHROMIUM, _api, artifacts_dir
from tests.support import CONFIGS
from tests.support.daemon_support import (
    controller_config,
    running_fabric,
    start_daemon_process,
    stop_process,
    wait_for,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

COUNT = "document.querySelectorAll({!r}).length"
DATA = "document.querySelector({!r}).dataset"
OCS1 = DATA.format("#picture [data-device=ocs1]") + ".state"
OCS2 = DATA.format("#picture [data-device=ocs2]") + ".state"
CARRYING = DATA.format("#circuit-count") + ".carrying"
DRILLED = DATA.format("#drill") + ".name"
ROWS = "[...document.querySelectorAll('#drill-circuits tbody tr')].map((r) => r.className)"
#: A point a third along a line (its middle is on the OCS), in the viewport's coordinates.
LINE_POINT = """(() => {{ const p = document.querySelector({!r}); p.scrollIntoView({{block: 'center'}});
  const m = p.getPointAtLength(p.getTotalLength() / 3);
  const q = new DOMPoint(m.x, m.y).matrixTransform(p.getScreenCTM());
  return [q.x, q.y]; }})()"""


def test_the_picture_a_drain_and_the_drill_downs(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (sudo .ci/install-browser.sh installs Debian's)")
    log = tmp_path / "daemon.log"
    with running_fabric(CONFIGS / "fabric-4.yaml", tmp_path) as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, load=0.3))
        config = controller_config(tmp_path, CONFIGS / "fabric-4.yaml", fabric.devices_file)
        data = yaml.safe_load(config.read_text())
        data["listen"]["web"] = "127.0.0.1:0"
        config.write_text(yaml.safe_dump(data))
        proc = start_daemon_process(config, log)
        try:
            url = wait_for(lambda: re.search(r"status page (http://127\.0\.0\.1:\d+/)", log.read_text()),
                           30, what="the status page's URL in the log").group(1)
            northbound = wait_for(lambda: re.search(r"northbound API on (127\.0\.0\.1:\d+)", log.read_text()),
                                  30, what="the northbound address in the log").group(1)
            wait_for(lambda: any(x["load_gbps"] for x in _api(url + "api/fabric-view")["links"]), 60,
                     what="loads on the links")
            view = _api(url + "api/fabric-view")
            with Browser(CHROMIUM, tmp_path / "profile") as page, ControllerClient(northbound) as client:
                page.navigate(url)
                page.wait_for("document.body.dataset.loaded === '1' && "
                              + COUNT.format("#picture [data-kind=ocs]"), what="the picture")
                assert page.evaluate(COUNT.format("#picture [data-kind=block]")) == len(view["blocks"]) == 4
                assert page.evaluate(COUNT.format("#picture [data-kind=ocs]")) == len(view["ocs"]) == 2
                lines = sum(len(x["by_ocs"]) for x in view["links"])
                assert page.evaluate(COUNT.format("#picture path.link")) == lines > 0
                installed = view["circuits"]["installed"]
                assert page.evaluate(CARRYING) == str(installed)

                on_ocs2 = next(o for o in view["ocs"] if o["name"] == "ocs2")["circuits"]["installed"]
                client.set_maintenance(MaintenanceKind.OCS, "ocs2", True, force=True)
                page.wait_for(OCS2 + " === 'drained'", what="ocs2 drawn drained")
                page.wait_for("[...document.querySelectorAll('#events tr.kind-operator')]"
                              ".some((r) => r.textContent.includes('drain ocs:ocs2 (forced)'))",
                              what="the operator's drain in the event list")
                counts = page.wait_for(
                    "(() => { const d = document.getElementById('circuit-count').dataset;"
                    f" return d.drained === '{on_ocs2}' ? {{...d}} : null; }})()",
                    what="the count following the drain")
                assert counts == {"installed": str(installed), "up": str(installed),
                                  "carrying": str(installed - on_ocs2), "drained": str(on_ocs2)}
                assert page.evaluate(COUNT.format("#picture [data-device=ocs2] text.mark")) == 1

                page.click("#picture [data-device=ocs2] rect")
                page.wait_for(DRILLED + " === 'ocs2'", what="ocs2's drill-down")
                device = _api(url + "api/device?name=ocs2")
                rows = page.evaluate(ROWS)
                assert len(rows) == len(device["circuit_list"]) == on_ocs2
                assert set(rows) == {"circuit-drained"}
                assert page.evaluate("document.querySelector('#drill h3').textContent") == "ocs ocs2: drained"
                assert int(page.evaluate("document.getElementById('drill-spark').dataset.points")) >= 3

                line = "#picture path.link[data-ocs=ocs1]"
                pair = page.evaluate(f"[{DATA.format(line)}.a, {DATA.format(line)}.b]")
                x, y = page.evaluate(LINE_POINT.format(line))
                hit = page.evaluate(f"(() => {{ const e = document.elementFromPoint({x}, {y});"
                                    " return [e.tagName, e.dataset.a, e.dataset.b, e.dataset.ocs]; })()")
                assert hit == ["path", pair[0], pair[1], "ocs1"], hit  # the line is on top there
                page.click_at(x, y)
                name = f"{pair[0]} - {pair[1]}"
                page.wait_for(f"{DRILLED} === {json.dumps(name)}", what="the line's drill-down")
                link = _api(url + f"api/link?a={pair[0]}&b={pair[1]}")
                assert page.evaluate(COUNT.format("#drill-circuits tbody tr")) == len(link["circuit_list"])

                shot = artifacts_dir() / "fabric-picture.png"
                image = page.screenshot(shot)
                assert image[:8] == b"\x89PNG\r\n\x1a\n" and len(image) > 20_000
                reporter = request.config.pluginmanager.get_plugin("terminalreporter")
                if reporter is not None:
                    reporter.write_line(f"fabric picture screenshot: {shot}")
                client.set_maintenance(MaintenanceKind.OCS, "ocs2", False)
                page.wait_for(OCS2 + " === 'up'", what="ocs2 back in service")

                fabric.fail_ocs("ocs1")  # power lost: the OCS is failed, its circuits gone
                page.wait_for(OCS1 + " === 'failed'", what="ocs1 drawn failed")
                mark = "document.querySelector('#picture [data-device=ocs1] text.mark').textContent"
                assert page.evaluate(mark) == "failed"
                assert page.evaluate(COUNT.format("#picture path.link[data-ocs=ocs1]")) == 0
                fabric.restore_ocs("ocs1")
        finally:
            assert stop_process(proc) == 0, log.read_text()[-3000:]
