"""Request timeout, retries and the overall per-request deadline against real local servers:
one that accepts and never answers, one that sends headers and then drips one byte at a time forever, and the
OpenAI test server for the success path. Bounds in these tests are generous ceilings on what would otherwise be
unbounded (a hung request), not timing measurements."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from janus_memory.llm import DeadlineExceeded, LLMClient, OpenAIBackend, RetriesExhausted
from janus_memory.llm.base import TransientLLMError
from janus_memory.testing.openai_stub import OpenAITestServer

MSG = [{"role": "user", "content": "What is 2 + 3?"}]


class BadServer:
    """Raw TCP server on 127.0.0.1: mode "hang" reads the request and never replies; mode "drip" sends a 200 with a
    large Content-Length and then one byte every ``drip_s`` until the client goes away."""

    def __init__(self, mode: str, drip_s: float = 0.05):
        self.mode, self.drip_s = mode, drip_s
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.connections = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def __enter__(self):
        self._acceptor.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self.sock.close()
        self._acceptor.join(timeout=5)
        for t in self._threads:
            t.join(timeout=5)

    def _accept(self):
        self.sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            self.connections += 1
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(t)
            t.start()

    def _serve(self, conn: socket.socket):
        with conn:
            conn.settimeout(0.05)
            try:
                conn.recv(65536)
            except (socket.timeout, OSError):
                pass
            try:
                if self.mode == "drip":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
                while not self._stop.wait(self.drip_s):
                    if self.mode == "drip":
                        conn.sendall(b" ")
                    else:
                        try:
                            if conn.recv(1) == b"":
                                return  # client closed
                        except socket.timeout:
                            pass
            except OSError:
                return  # client went away




@pytest.mark.parametrize("mode", ["hang", "drip"])
def test_attempt_timeout_is_wall_clock_and_retried_then_exhausted(mode):
    with BadServer(mode) as srv:
        client = LLMClient(OpenAIBackend(srv.base_url, "m", timeout=0.3), max_retries=2, backoff_base_s=0.01)
        t0 = time.monotonic()
        with pytest.raises(RetriesExhausted) as ei:
            client.chat(MSG)
        elapsed = time.monotonic() - t0
    e = ei.value
    assert type(e) is RetriesExhausted
    assert e.attempts == 3
    assert isinstance(e.last_error, TransientLLMError)
    assert str(e.last_error) == "timeout: no complete reply within 0.3s"
    assert srv.connections == 3
    assert elapsed < 20  # without the wall-clock limit a dripping body never ends
    assert client.usage.snapshot()["solver"]["calls"] == 0


@pytest.mark.parametrize("mode", ["hang", "drip"])
def test_overall_deadline_cuts_retries_short(mode):
    with BadServer(mode) as srv:
        client = LLMClient(OpenAIBackend(srv.base_url, "m", timeout=0.4), max_retries=1000, backoff_base_s=0.01,
                           backoff_max_s=0.01, deadline_s=1.0)
        t0 = time.monotonic()
        with pytest.raises(DeadlineExceeded) as ei:
            client.chat(MSG)
        elapsed = time.monotonic() - t0
    e = ei.value
    assert isinstance(e, RetriesExhausted)  # runners that end cleanly on RetriesExhausted handle it unchanged
    assert e.deadline_s == 1.0
    assert 2 <= e.attempts <= 4  # ~0.4 s per attempt inside a 1 s deadline
    assert str(e).startswith(f"LLM request exceeded its 1s deadline after {e.attempts} attempt(s) (")
    assert "\n" not in str(e)
    assert elapsed < 20


def test_deadline_longer_than_one_hung_attempt_cancels_it():
    with BadServer("hang") as srv:  # backend timeout 30 s, deadline 0.5 s: the deadline cancels the attempt itself
        client = LLMClient(OpenAIBackend(srv.base_url, "m", timeout=30), max_retries=6, deadline_s=0.5)
        with pytest.raises(DeadlineExceeded) as ei:
            client.chat(MSG)
    assert ei.value.attempts == 1
    assert "attempt cancelled at the deadline" in str(ei.value)
    assert isinstance(ei.value.last_error, TimeoutError)


def test_backoff_that_would_pass_the_deadline_is_not_started():
    with OpenAITestServer() as srv:  # ALWAYS_500 + a 60 s backoff and a 5 s deadline: fail after 1 attempt, no wait
        client = LLMClient(OpenAIBackend(srv.base_url, "m", timeout=5), max_retries=3, backoff_base_s=60,
                           backoff_max_s=60, deadline_s=5)
        slept: list[float] = []

        async def fake_sleep(d):
            slept.append(d)

        client._sleep = fake_sleep
        with pytest.raises(DeadlineExceeded) as ei:
            client.chat([{"role": "user", "content": "ALWAYS_500"}])
    assert slept == []
    assert ei.value.attempts == 1
    assert "no time left for a retry" in str(ei.value)
    assert "HTTP 500: injected permanent 500" in str(ei.value)
    assert srv.requests == 1


def test_deadline_does_not_change_a_normal_reply():
    with OpenAITestServer() as srv:
        client = LLMClient(OpenAIBackend(srv.base_url, "m", timeout=5), deadline_s=10)
        r = client.chat(MSG)
    assert r.text == "The answer is 5."


@pytest.mark.parametrize("bad", [0, -1.0])
def test_invalid_limits_are_refused(bad):
    with pytest.raises(ValueError, match="deadline_s must be > 0"):
        LLMClient(OpenAIBackend("http://127.0.0.1:9/v1", "m"), deadline_s=bad)
    with pytest.raises(ValueError, match="timeout must be > 0"):
        OpenAIBackend("http://127.0.0.1:9/v1", "m", timeout=bad)


# ---------------------------------------------------------------- item 5: unusable --cache-dir -> one line
def test_cache_dir_that_is_a_file_gives_one_line_error(tmp_path):
    from janus_memory.llm.cache import CacheError, ResponseCache

    f = tmp_path / "notadir"
    f.write_text("x")
    with pytest.raises(CacheError) as ei:
        ResponseCache(f)
    assert str(ei.value) == (f"cache folder {f} is a file, not a folder: pass a folder (or a .sqlite file path) "
                             "with --cache-dir, or --no-cache")
    bad = tmp_path / "c.sqlite"
    bad.write_bytes(b"this is not an sqlite database at all" * 100)
    with pytest.raises(CacheError) as ei:
        ResponseCache(bad)
    assert str(ei.value) == (f"response cache {bad} is unusable (file is not a database): pass another --cache-dir, "
                             "or --no-cache")
    inside_file = f / "sub"  # a path below a regular file
    with pytest.raises(CacheError) as ei:
        ResponseCache(inside_file)
    assert str(ei.value).startswith(f"response cache {inside_file / 'responses.sqlite'} is unusable (")
    assert "\n" not in str(ei.value)
