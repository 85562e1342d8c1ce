"""Headless Chromium driven over the Chrome DevTools Protocol on a pipe (``--remote-debugging-pipe``:
commands on the browser's fd 3, answers on its fd 4, each a JSON message ended by a NUL byte),
so a test can load the page, wait for what its script draws, click with the mouse and take a
screenshot, with nothing but the standard library."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any


class BrowserError(Exception):
    """The browser answered with an error, or did not answer in time."""


def _high(fd: int) -> int:
    """``fd`` moved to 10 or above (so that placing the pipes at 3 and 4 clobbers neither)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return moved


class Browser:
    """One headless Chromium with one page. Use as a context manager."""

    def __init__(self, chromium: str, profile: Path, width: int = 1280, height: int = 1600) -> None:
        cmd_r, self._cmd_w = (_high(fd) for fd in os.pipe())
        self._res_r, res_w = (_high(fd) for fd in os.pipe())

        def on_fds_3_and_4() -> None:
            os.dup2(cmd_r, 3)
            os.dup2(res_w, 4)

        profile.mkdir(parents=True, exist_ok=True)
        self._log = open(profile / "chromium.log", "wb")  # noqa: SIM115  # closed in close()
        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--remote-debugging-pipe", f"--user-data-dir={profile}", f"--window-size={width},{height}",
             "about:blank"],
            preexec_fn=on_fds_3_and_4, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=self._log, stderr=subprocess.STDOUT,
        )
        os.close(cmd_r)
        os.close(res_w)
        self._buffer = b""
        self._next_id = 0
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable", session=self.session)
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        self.call("Emulation.setDeviceMetricsOverride", metrics, session=self.session)

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout_s: float = 30.0) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._cmd_w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout_s
        while True:
            answer = self._read(deadline, method)
            if answer.get("id") != self._next_id:
                continue  # an event, or a late answer
            if "error" in answer:
                raise BrowserError(f"{method}: {answer['error']}")
            return dict(answer.get("result") or {})

    def _read(self, deadline: float, method: str) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._res_r], [], [], left)[0]:
                raise BrowserError(f"{method}: no answer from the browser in time")
            chunk = os.read(self._res_r, 1 << 16)
            if not chunk:
                raise BrowserError(f"{method}: the browser closed its pipe (exit {self.proc.poll()})")
            self._buffer += chunk
        text, self._buffer = self._buffer.split(b"\0", 1)
        return dict(json.loads(text))

    # -- the page ----------------------------------------------------------------------------

    def navigate(self, url: str) -> None:
        self.call("Page.navigate", {"url": url}, session=self.session)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session=self.session)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout_s: float = 60.0, what: str = "") -> Any:
        """Evaluate ``expression`` until it is truthy (an exception counts as not yet);
        BrowserError after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        # an element not drawn yet throws: not yet
        guarded = f"(() => {{ try {{ return ({expression}); }} catch (e) {{ return null; }} }})()"
        while True:
            value = self.evaluate(guarded)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out after {timeout_s:g} s waiting for {what or expression}")
            time.sleep(0.2)

    def click(self, selector: str) -> None:
        """A left click with the mouse in the middle of the first element ``selector`` matches
        (scrolled into view first), as a person's."""
        where = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        if not where:
            raise BrowserError(f"nothing on the page matches {selector}")
        self.click_at(*where)

    def click_at(self, x: float, y: float) -> None:
        """A left click at (x, y) of the viewport."""
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            params = {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
            self.call("Input.dispatchMouseEvent", params, session=self.session)

    def screenshot(self, path: Path) -> bytes:
        shot = self.call("Page.captureScreenshot", {"format": "png"}, session=self.session)
        data = base64.b64decode(shot["data"])
        path.write_bytes(data)
        return data

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):
            self.call("Browser.close", timeout_s=5)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        for fd in (self._cmd_w, self._res_r):
            os.close(fd)
        self._log.close()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
