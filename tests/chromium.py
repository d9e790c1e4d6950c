"""A small driver of headless Chromium over its DevTools pipe (``--remote-debugging-pipe``), for the viewer's
browser tests and screenshots: no websocket library and no network, just two pipes (the browser reads
NUL-terminated JSON commands on fd 3 and writes answers and events on fd 4).

    with Chromium.start() as browser:
        browser.open("http://127.0.0.1:8000/?judge=x")
        browser.wait_ready()
        text = browser.eval("document.body.innerText")
        png = browser.screenshot()
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    """The browser binary: $AGENTJUDGE_CHROMIUM, else the first of ``CANDIDATES`` on PATH."""
    explicit = os.environ.get("AGENTJUDGE_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).is_file() else None
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    pass


class Chromium:
    def __init__(self, binary: str, width: int = 1400, height: int = 900) -> None:
        self.profile = tempfile.mkdtemp(prefix="agentjudge-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire() -> None:  # in the child: the pipe ends on the descriptors Chromium reads and writes
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire,
            pass_fds=(3, 4),
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next = 0
        self.session: str | None = None
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    @classmethod
    def start(cls, width: int = 1400, height: int = 900) -> Chromium:
        binary = find_chromium()
        if binary is None:
            raise BrowserError("no chromium found (install Debian's `chromium` or set AGENTJUDGE_CHROMIUM)")
        return cls(binary, width, height)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):
            self.call("Browser.close", session=False, timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    # ------------------------------------------------------------------ protocol

    def call(
        self, method: str, params: dict[str, Any] | None = None, session: bool = True, timeout: float = 30
    ) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            for answer in self._messages(deadline):
                if answer.get("id") == self._next:
                    if "error" in answer:
                        raise BrowserError(f"{method}: {answer['error']}")
                    result: dict[str, Any] = answer.get("result", {})
                    return result

    def _messages(self, deadline: float) -> list[dict[str, Any]]:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("the browser did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError("the browser closed its pipe")
            self._buffer += chunk
        *complete, self._buffer = self._buffer.split(b"\0")
        return [json.loads(part) for part in complete if part]

    # ------------------------------------------------------------------ pages

    def open(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})

    def eval(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:60]}: {result['exceptionDetails'].get('text')}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 20) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.eval(expression)
            except BrowserError:
                value = None
            if value:
                return value
            time.sleep(0.1)
        raise BrowserError(f"timed out waiting for {expression!r}")

    def wait_ready(self, timeout: float = 20) -> str:
        """Wait until the viewer has rendered what its URL asks for (body[data-ready]); '1' or 'error'."""
        value = self.wait_for("document.body && document.body.getAttribute('data-ready')", timeout)
        return str(value)

    def press(self, key: str) -> None:
        """One key pressed and released as a keyboard sends it (the page's focused element gets keydown,
        keypress with its text, keyup): a character ("1", "s") or a key name ("Enter", "ArrowLeft",
        "Escape"). Typed text goes to the focused field."""
        named = {"Enter": (13, "\r"), "Escape": (27, ""), "ArrowLeft": (37, ""), "ArrowUp": (38, ""),
                 "ArrowRight": (39, ""), "ArrowDown": (40, ""), "Tab": (9, "")}  # fmt: skip
        if key in named:
            code, text = named[key]
            common = {"key": key, "code": key, "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code}
        else:
            text = key
            upper = key.upper()
            code = ord(upper) if len(key) == 1 else 0
            name = f"Digit{key}" if key.isdigit() else f"Key{upper}" if key.isalpha() else ""
            common = {"key": key, "code": name, "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code}
        self.call(
            "Input.dispatchKeyEvent",
            {"type": "keyDown", "text": text, **common} if text else {"type": "rawKeyDown", **common},
        )
        self.call("Input.dispatchKeyEvent", {"type": "keyUp", **common})

    def type(self, text: str) -> None:
        """Text typed into the focused field, one character at a time."""
        for char in text:
            self.call("Input.insertText", {"text": char})

    def screenshot(self) -> bytes:
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        return base64.b64decode(data)
