"""A small Chrome DevTools Protocol client over a pipe (``chromium --remote-debugging-pipe``): no port is opened.

Used by tests/view/test_view_browser.py and benchmarks/performance/bench_view.py to open a `janus view` page as a person would:
navigate to the file, read console errors and exceptions, click an element with real mouse events, read the DOM
and take screenshots. The browser runs in its own process group and ``close()`` (also on any error, via ``with``)
kills that whole group, so no renderer or GPU process is left behind.
"""
from __future__ import annotations

import base64
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class CDPError(RuntimeError):
    pass


class Browser:
    """``with Browser() as b: b.open(path); b.eval("1+1"); b.click("#x"); b.screenshot(png_path)``."""

    def __init__(self, width: int = 1300, height: int = 900, timeout: float = 60.0):
        exe = find_chromium()
        if exe is None:
            raise CDPError("chromium not found")
        self.timeout = timeout
        self.width, self.height = width, height
        self.profile = tempfile.mkdtemp(prefix="janus-view-chromium-")
        cmd_r, cmd_w = os.pipe()   # we write commands -> browser reads fd 3
        resp_r, resp_w = os.pipe()  # browser writes fd 4 -> we read

        def child_fds():  # in the child: the command pipe at fd 3, the response pipe at fd 4
            a, b = os.dup(cmd_r), os.dup(resp_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                f"--user-data-dir={self.profile}", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
                "--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider",
                f"--window-size={width},{height}", "about:blank"]
        self.proc = subprocess.Popen(args, preexec_fn=child_fds, start_new_session=True, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                                     pass_fds=(3, 4))
        os.close(cmd_r)
        os.close(resp_w)
        self._w, self._r = cmd_w, resp_r
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []
        self.session = None
        try:
            target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                self.send(f"{domain}.enable")
            self.set_viewport(width, height)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ protocol
    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError("no answer from chromium in time")
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise CDPError("chromium closed the pipe")
                self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def send(self, method: str, params: dict | None = None, *, timeout: float | None = None) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise CDPError(f"{method}: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def wait_event(self, method: str, timeout: float | None = None) -> dict:
        deadline = time.monotonic() + (timeout or self.timeout)
        for i, e in enumerate(self.events):
            if e["method"] == method:
                return self.events.pop(i)
        while True:
            m = self._read_message(deadline)
            if m.get("method") == method:
                return m
            if "method" in m:
                self.events.append(m)

    # ------------------------------------------------------------------ page
    def open(self, path: str, *, hash_: str = "") -> float:
        """Navigate to the file and wait for the load event; returns the seconds it took."""
        t0 = time.monotonic()
        url = "file://" + os.path.abspath(path) + hash_
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")
        return time.monotonic() - t0

    def eval(self, expression: str):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise CDPError(f"evaluate failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0):
        """Poll ``expression`` until it is truthy; its value (CDPError after ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.eval(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise CDPError(f"{expression} still false after {timeout} s")
            time.sleep(0.05)

    def click(self, selector: str) -> None:
        """A real mouse click (pressed + released) at the middle of the first element matching ``selector``."""
        where = (f"(function(){{var e=document.querySelector({json.dumps(selector)}); if(!e) return null;"
                 "e.scrollIntoView({block:'center'}); var r=e.getBoundingClientRect();"
                 "return [r.left+r.width/2, r.top+r.height/2];})()")
        box = self.eval(where)
        for _ in range(40):  # a page still laying out (a loaded machine) moves the element: click where it settled
            if box is None:
                break
            time.sleep(0.05)
            again = self.eval(where)
            if again == box:
                break
            box = again
        if box is None:
            raise CDPError(f"no element {selector}")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left",
                                                   "clickCount": 1})

    KEYS = {"Tab": 9, "Enter": 13, " ": 32, "End": 35, "Home": 36, "ArrowLeft": 37, "ArrowUp": 38, "ArrowRight": 39,
            "ArrowDown": 40}

    def key(self, key: str) -> None:
        """A real key press (down + up) sent to the focused element: Tab, Enter, space, Home, End or an arrow key."""
        code = self.KEYS[key]
        down = {"type": "keyDown", "key": key, "code": "Space" if key == " " else key, "windowsVirtualKeyCode": code,
                "nativeVirtualKeyCode": code}
        if key in ("Enter", " "):
            down.update(type="keyDown", text="\r" if key == "Enter" else " ")
        self.send("Input.dispatchKeyEvent", down)
        self.send("Input.dispatchKeyEvent", {**down, "type": "keyUp", "text": ""})

    def set_viewport(self, width: int, height: int) -> None:
        """The page's window size in CSS pixels (as a browser window of that size; resize events fire)."""
        self.width, self.height = width, height
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                         "mobile": False})

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (CSP violations, failed loads) seen so far."""
        try:
            self.send("Runtime.evaluate", {"expression": "0"})  # drain pending events
        except CDPError:
            pass
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif e["method"] == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("exception: " + str((d.get("exception") or {}).get("description") or d.get("text")))
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log: " + str(p["entry"].get("text")) + " " + str(p["entry"].get("url", "")))
        return out

    def screenshot(self, path: str, *, full: bool = True) -> None:
        """A PNG of the viewport, or (``full``) of the whole page: the window is made as tall as the page for the
        shot (up to 12,000 px), so parts drawn only near the viewport (``content-visibility: auto``) are drawn too,
        then set back."""
        params = {"format": "png"}
        width, height = self.width, self.height
        if full:
            h = self.eval("document.documentElement.scrollHeight")
            self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": min(h, 12000),
                                                             "deviceScaleFactor": 1, "mobile": False})
            self.eval("new Promise(function (r) { requestAnimationFrame(function () { requestAnimationFrame(r); }); })")
        try:
            data = self.send("Page.captureScreenshot", params)["data"]
        finally:
            if full:
                self.set_viewport(width, height)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    # ------------------------------------------------------------------ end
    def close(self) -> None:
        for fd in (getattr(self, "_w", None), getattr(self, "_r", None)):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._w = self._r = None  # type: ignore[assignment]  # closed: nothing is read or written after close()
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the browser and every process it started
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # helpers that outlived the main process: until the group is empty
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                break
            time.sleep(0.05)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
