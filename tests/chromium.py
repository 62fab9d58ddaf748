"""A headless Chromium driven over the DevTools protocol on a pipe: open a page, evaluate script,
take a screenshot. Stdlib only, no browser download: it runs the system's chromium (Debian's,
installed by scripts/chromium.sh; or $CODEAGENT_CHROMIUM).

`--remote-debugging-pipe` makes Chromium read protocol messages from fd 3 and write them to fd 4,
NUL-terminated JSON; no port is opened, so nothing else on the machine can drive this browser.
Used by tests/test_view_browser.py and benchmarks/view_render.py.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any

__all__ = ["Chromium", "BrowserPage", "find_chromium", "BrowserError", "FLAGS"]

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
         "--disable-extensions", "--mute-audio", "--hide-scrollbars", "--remote-debugging-pipe")


class BrowserError(RuntimeError):
    """The browser failed, or did not answer in time."""


def find_chromium() -> str | None:
    """$CODEAGENT_CHROMIUM, else chromium (or chrome) on PATH, else None."""
    given = os.environ.get("CODEAGENT_CHROMIUM")
    if given:
        return given if os.access(given, os.X_OK) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Chromium:
    """One headless browser process; `page()` opens tabs in it. Use as a context manager."""

    def __init__(self, executable: str | None = None, *, timeout_s: float = 30.0) -> None:
        self.executable = executable or find_chromium()
        if not self.executable:
            raise BrowserError("no chromium found: run scripts/chromium.sh (or set CODEAGENT_CHROMIUM)")
        self.timeout_s = timeout_s
        self._profile = tempfile.mkdtemp(prefix="codeagent-chromium-")
        self._stderr = tempfile.TemporaryFile()
        to_browser, self._to_browser_w = os.pipe()
        self._from_browser_r, from_browser = os.pipe()

        def at_3_and_4() -> None:  # in the child: the protocol's fds are exactly 3 and 4
            a, b = os.dup(to_browser), os.dup(from_browser)  # (either may be 3 or 4 already)
            os.dup2(a, 3)  # dup2 makes them inheritable; every other fd of ours is not (PEP 446),
            os.dup2(b, 4)  # so close_fds=False passes exactly these two

        # pass_fds cannot name 3 and 4: subprocess marks those inheritable before preexec_fn runs,
        # and fails when the parent has no fd 3 or 4 open
        self.process = subprocess.Popen(
            [self.executable, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr,
            close_fds=False, preexec_fn=at_3_and_4, start_new_session=True)
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self.version = self.call("Browser.getVersion")["product"]

    # -- the protocol ----------------------------------------------------------------------

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser_w, json.dumps(message).encode() + b"\0")
        reply = self._wait(lambda m: m.get("id") == message["id"], what=method)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    def drop_events(self, method: str, session: str | None = None) -> None:
        """Forget the `method` events already received (a load event of an earlier page, or of a
        served page's own reload, must not stand for the next navigation's)."""
        self._events = [e for e in self._events
                        if not (e.get("method") == method and (session is None or e.get("sessionId") == session))]

    def wait_event(self, method: str, session: str | None = None) -> dict[str, Any]:
        def match(m: dict[str, Any]) -> bool:
            return m.get("method") == method and (session is None or m.get("sessionId") == session)

        for i, event in enumerate(self._events):
            if match(event):
                return self._events.pop(i)
        return self._wait(match, what=method, keep_others=True)

    def _wait(self, match: Any, *, what: str, keep_others: bool = True) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message = json.loads(raw)
                if match(message):
                    return message
                if "method" in message and keep_others:
                    self._events.append(message)
            left = deadline - time.monotonic()
            ready = select.select([self._from_browser_r], [], [], max(0.0, left))[0] if left > 0 else []
            if not ready:
                raise BrowserError(f"chromium did not answer {what} within {self.timeout_s:g} s{self._tail()}")
            chunk = os.read(self._from_browser_r, 1 << 20)
            if not chunk:
                raise BrowserError(f"chromium exited (status {self.process.poll()}) during {what}{self._tail()}")
            self._buffer += chunk

    def _tail(self) -> str:
        self._stderr.seek(0)
        text = self._stderr.read().decode("utf-8", "replace").strip().splitlines()[-5:]
        return (": " + " | ".join(text)) if text else ""

    # -- pages -----------------------------------------------------------------------------

    def page(self, width: int = 1200, height: int = 900) -> BrowserPage:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = BrowserPage(self, target, session)
        for domain in ("Page", "Runtime"):
            self.call(f"{domain}.enable", session=session)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session)
        return page

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.call("Browser.close")
            except (BrowserError, OSError):
                pass
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for fd in (self._to_browser_w, self._from_browser_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self._stderr.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BrowserPage:
    """One tab: navigate, evaluate, screenshot, console messages and exceptions seen."""

    def __init__(self, browser: Chromium, target: str, session: str) -> None:
        self.browser, self.target, self.session = browser, target, session

    def goto(self, url: str) -> float:
        """Load `url` and wait for its load event; the seconds it took."""
        t0 = time.perf_counter()
        self.browser.drop_events("Page.loadEventFired", self.session)
        self.browser.call("Page.navigate", {"url": url}, self.session)
        self.browser.wait_event("Page.loadEventFired", self.session)
        return time.perf_counter() - t0

    def evaluate(self, expression: str) -> Any:
        result = self.browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                        "awaitPromise": True}, self.session)
        if "exceptionDetails" in result:
            raise BrowserError(f"script failed: {result['exceptionDetails'].get('text')}: "
                               f"{result['result'].get('description', '')[:300]}")
        return result["result"].get("value")

    def screenshot(self, *, full_page: bool = False) -> bytes:
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            size = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1}
        return base64.b64decode(self.browser.call("Page.captureScreenshot", params, self.session)["data"])

    def events(self, method: str) -> list[dict[str, Any]]:
        """The events of this tab seen so far (console messages, CSP violations, exceptions)."""
        return [e for e in self.browser._events if e.get("method") == method and e.get("sessionId") == self.session]

    def close(self) -> None:
        self.browser.call("Target.closeTarget", {"targetId": self.target})
