"""Headless Chromium (Debian's) driven over its DevTools pipe, for the pages' browser test.

`--remote-debugging-pipe` makes Chromium read DevTools Protocol commands from file
descriptor 3 and write answers and events to 4, each a JSON text ended by a NUL byte. With it
the test logs in through the login form as a person does (Chromium's command line can
neither post a form nor set a cookie), waits for each page's load event (images included),
reads the DOM after rendering and takes full-page screenshots. Standard library only.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any, Optional

FLAGS = ("--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
         "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--disable-extensions", "--mute-audio", "--no-proxy-server")
WIDTH = 1280
TIMEOUT_S = 60.0
LOWEST_FD = 10  # the pipe ends are moved above 3 and 4 before the shell maps them there


class BrowserError(Exception):
    """Chromium answered a command with an error, exited, or said nothing in time."""


class Chromium:
    def __init__(self, binary: str, scratch: Path) -> None:
        profile = scratch / "chromium-profile"
        profile.mkdir(parents=True, exist_ok=True)
        self.log = scratch / "chromium.log"
        commands_r, commands_w = _high_pipe()
        answers_r, answers_w = _high_pipe()
        # bash (dash maps only fds 0-9) puts the pipe ends at 3 and 4, where Chromium reads.
        script = (f'exec "$0" "$@" 3<&{commands_r} 4>&{answers_w} '
                  f"{commands_r}<&- {answers_w}>&-")
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                ["/bin/bash", "-c", script, binary, *FLAGS, f"--user-data-dir={profile}"],
                pass_fds=(commands_r, answers_w), stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, HOME=str(scratch)))
        os.close(commands_r)
        os.close(answers_w)
        self._commands = os.fdopen(commands_w, "wb", buffering=0)
        self._answers = os.fdopen(answers_r, "rb", buffering=0)
        self._inbox: queue.Queue[Optional[dict[str, Any]]] = queue.Queue()
        self._events: list[dict[str, Any]] = []
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.session = ""
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send("Target.attachToTarget",
                             {"targetId": target["targetId"], "flatten": True}, session=False)
        self.session = attached["sessionId"]
        self.send("Page.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": WIDTH, "height": 1000, "deviceScaleFactor": 1, "mobile": False})

    def send(self, method: str, params: Optional[dict[str, Any]] = None, *,
             session: bool = True) -> dict[str, Any]:
        """The result of one command; BrowserError for an error or no answer in time."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method,
                                   "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        self._commands.write(json.dumps(message).encode() + b"\0")
        while True:
            answer = self._take(method)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            self._events.append(answer)

    def open(self, url: str) -> None:
        """Goes to `url` and waits for its load event (its images loaded or failed)."""
        self._events.clear()
        answer = self.send("Page.navigate", {"url": url})
        if answer.get("errorText"):
            raise BrowserError(f"navigating to {url}: {answer['errorText']}")
        self.wait_for("Page.loadEventFired")

    def wait_for(self, event: str) -> None:
        while not any(e.get("method") == event for e in self._events):
            self._events.append(self._take(event))
        self._events.clear()

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (the test's, not the page's)."""
        result = self.send("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"evaluating {expression[:60]!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def submit_login(self, username: str, password: str) -> None:
        """Fills the login form the page shows and submits it; waits for the next page."""
        self._events.clear()
        self.evaluate(
            f"document.getElementById('id_username').value = {json.dumps(username)};"
            f"document.getElementById('id_password').value = {json.dumps(password)};"
            # the password's own form: the header's logout form is a POST form too
            "document.getElementById('id_password').form"
            ".querySelector('button[type=submit]').click(); true")
        self.wait_for("Page.loadEventFired")

    def dom(self) -> str:
        return str(self.evaluate("document.documentElement.outerHTML"))

    def screenshot(self, target: Path) -> tuple[int, int]:
        """The whole page, WIDTH wide, as PNG at `target`; its (width, height) in pixels."""
        height = int(self.evaluate("document.documentElement.scrollHeight"))
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": WIDTH, "height": height, "deviceScaleFactor": 1, "mobile": False})
        shot = self.send("Page.captureScreenshot", {"format": "png"})
        target.write_bytes(base64.b64decode(shot["data"]))
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": WIDTH, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
        return WIDTH, height

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):  # it may go before it answers
            self.send("Browser.close", session=False)
        self._commands.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._answers.close()

    def _take(self, waiting_for: str) -> dict[str, Any]:
        try:
            message = self._inbox.get(timeout=TIMEOUT_S)
        except queue.Empty:
            raise BrowserError(f"no answer to {waiting_for} within {TIMEOUT_S:g} s") from None
        if message is None:
            said = self.log.read_text(errors="replace")[-1500:]
            raise BrowserError(f"Chromium closed its pipe waiting for {waiting_for}: {said}")
        return message

    def _read(self) -> None:
        pending = b""
        while True:
            chunk = self._answers.read(65536)
            if not chunk:
                self._inbox.put(None)
                return
            pending += chunk
            *messages, pending = pending.split(b"\0")
            for message in messages:
                self._inbox.put(json.loads(message))


def _high_pipe() -> tuple[int, int]:
    """A pipe whose ends are at LOWEST_FD or above, closed on exec unless passed."""
    ends = []
    for end in os.pipe():
        ends.append(fcntl.fcntl(end, fcntl.F_DUPFD_CLOEXEC, LOWEST_FD))
        os.close(end)
    return ends[0], ends[1]
