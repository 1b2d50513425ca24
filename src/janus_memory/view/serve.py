"""`janus view --serve`: the written page over HTTP on 127.0.0.1 only, until Ctrl-C (or SIGTERM).

Bounded on purpose: it binds the loopback address only, answers GET/HEAD of ``/`` (and ``/view.html``) with the one
page read into memory when serving starts, 404 for any other path, 405 for any other method; one request at a time
(no thread per request), a 10-second socket timeout per connection so a client that connects and sends nothing
cannot hold it, and no directory listing or file access beyond the page.

The Host header must name this server: ``127.0.0.1``, ``localhost`` or ``[::1]`` with the bound port (:func:`host_ok`).
A web page elsewhere can point a name of its own at 127.0.0.1 (DNS rebinding) and then read the answers as same-origin;
its requests carry its own name as Host and get 421 with no page.
"""
from __future__ import annotations

import signal
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

from ..errors import OutputError

HOST = "127.0.0.1"


_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def host_ok(host: str | None, port: int) -> bool:
    """Whether a request's Host header names this server: a loopback name with the bound port, nothing else (no
    other name, no missing or default port, no userinfo or trailing dot)."""
    if not host:
        return False
    name, sep, given = host.strip().rpartition(":")
    return bool(sep) and name.lower() in _LOOPBACK_NAMES and given == str(port)


def make_server(page: Path, port: int = 0) -> HTTPServer:
    """A server for ``page`` on 127.0.0.1:``port`` (0 = a free port); OutputError when the port cannot be bound."""
    body = Path(page).read_bytes()

    class Handler(BaseHTTPRequestHandler):
        timeout = 10
        server_version = "janus-view"
        sys_version = ""

        def _head(self) -> bool:
            hosts = self.headers.get_all("Host") or []
            if len(hosts) != 1 or not host_ok(hosts[0], getattr(self.server, "server_port", -1)):
                self.send_error(421, "this server answers only to 127.0.0.1, localhost or [::1] with its port")
                return False
            if self.path.split("?", 1)[0].split("#", 1)[0] not in ("/", "/view.html"):
                self.send_error(404, "only the page is served here")
                return False
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            return True

        def do_GET(self):  # noqa: N802 (http.server's names)
            if self._head():
                self.wfile.write(body)

        def do_HEAD(self):  # noqa: N802
            self._head()

        def _refuse(self):
            self.send_error(405, "only GET and HEAD")

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse  # noqa: N815

        def log_message(self, fmt, *args):  # one short line per request on stderr
            print(f"view: {self.address_string()} {fmt % args}", file=sys.stderr)

    try:
        return HTTPServer((HOST, port), Handler)
    except OSError as e:
        raise OutputError(f"cannot serve on {HOST}:{port}: {e.strerror or e}; choose another with --port") from None


def serve(page: Path, port: int = 0, *, say=print) -> int:
    """Serve ``page`` until Ctrl-C or SIGTERM; returns 0 after closing the socket."""
    server = make_server(page, port)
    host, bound = server.server_address[:2]
    say(f"serving {page} at http://{host}:{bound}/ (Ctrl-C stops)")  # type: ignore[str-bytes-safe]  # an IPv4 host is a str
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum, frame):
        raise KeyboardInterrupt

    import threading

    main = threading.current_thread() is threading.main_thread()
    if main and previous in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, on_term)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        if main and previous is not None:
            signal.signal(signal.SIGTERM, previous)
    say("stopped serving")
    return 0
