"""A small Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (stdlib only).

Chromium reads commands from file descriptor 3 and writes replies and events to
descriptor 4, each message JSON terminated by a NUL byte. No websocket, no port, no
third-party package. Enough for the report tests: open a page, evaluate script, watch
console, log and network events, take screenshots and print to PDF.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
    "--no-default-browser-check", "--disable-features=Translate,MediaRouter",
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class CDPError(RuntimeError):
    pass


class Browser:
    """One headless Chromium process; :meth:`page` opens a tab (a flat session)."""

    def __init__(self, executable: str, timeout: float = 20.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="gpu-triage-chromium-")
        to_chrome_r, self._write = os.pipe()
        self._read, from_chrome_w = os.pipe()
        # Move the child's ends above 4 so that placing them on 3 and 4 cannot clobber one.
        high_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD_CLOEXEC, 10)
        high_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_chrome_r)
        os.close(from_chrome_w)

        def wire() -> None:  # runs in the child before it closes other descriptors
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=wire,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(high_r)
        os.close(high_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []

    # -- transport --------------------------------------------------------------------------

    def _send(self, method: str, params: dict[str, Any] | None, session: str | None) -> int:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            written = os.write(self._write, data)
            data = data[written:]
        return self._next

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._read], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise CDPError("Chromium closed the pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None) -> dict[str, Any]:
        wanted = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._receive(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise CDPError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self.events.append(message)

    def wait_event(self, method: str, session: str | None, timeout: float | None = None
                   ) -> dict[str, Any]:
        for index, event in enumerate(self.events):
            if event.get("method") == method and event.get("sessionId") == session:
                return self.events.pop(index)
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            message = self._receive(deadline)
            if message.get("method") == method and message.get("sessionId") == session:
                return message
            if "method" in message:
                self.events.append(message)

    def drain(self, seconds: float = 0.2) -> None:
        """Collect events that arrive within ``seconds``."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                message = self._receive(deadline)
                if "method" in message:
                    self.events.append(message)
        except CDPError:
            return

    # -- pages -------------------------------------------------------------------------------

    def page(self, *, width: int = 1366, height: int = 900, javascript: bool = True,
             dark: bool = False) -> Page:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", {}, session)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session)
        self.call("Emulation.setEmulatedMedia", {"features": [
            {"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]}, session)
        if not javascript:
            self.call("Emulation.setScriptExecutionDisabled", {"value": True}, session)
        return page

    def close(self) -> None:
        try:
            self._send("Browser.close", None, None)
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        finally:
            for fd in (self._read, self._write):
                with suppress(OSError):
                    os.close(fd)
            shutil.rmtree(self._profile, ignore_errors=True)


class Page:
    def __init__(self, browser: Browser, target: str, session: str) -> None:
        self.browser = browser
        self.target = target
        self.session = session

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.call(method, params, self.session)

    def goto(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})
        self.browser.wait_event("Page.loadEventFired", self.session)
        self.browser.drain(0.05)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise CDPError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def events(self, *methods: str) -> list[dict[str, Any]]:
        self.browser.drain(0.05)
        return [e for e in self.browser.events
                if e.get("sessionId") == self.session and e.get("method") in methods]

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (CSP violations too)."""
        found = []
        for event in self.events("Runtime.consoleAPICalled", "Runtime.exceptionThrown",
                                 "Log.entryAdded"):
            params = event["params"]
            if event["method"] == "Runtime.consoleAPICalled" and params.get("type") in (
                    "error", "assert", "warning"):
                found.append(f"console.{params['type']}: {params.get('args')}")
            elif event["method"] == "Runtime.exceptionThrown":
                found.append(f"exception: {params['exceptionDetails']}")
            elif event["method"] == "Log.entryAdded" and params["entry"].get("level") in (
                    "error", "warning"):
                found.append(f"log: {params['entry'].get('text')}")
        return found

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events("Network.requestWillBeSent")]

    def screenshot(self, path: Path, *, full_page: bool = False) -> None:
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"],
                              "height": min(size["height"], 16000), "scale": 1}
        data = self.call("Page.captureScreenshot", params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def pdf(self, path: Path) -> None:
        data = self.call("Page.printToPDF", {"printBackground": True})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        self.browser.call("Target.closeTarget", {"targetId": self.target})


@contextmanager
def browser(executable: str) -> Iterator[Browser]:
    chrome = Browser(executable)
    try:
        yield chrome
    finally:
        chrome.close()
