"""A real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions API, with fault injection.

Used by tests/llm/test_llm_http.py and benchmarks/performance/bench_llm_concurrency.py. Standard library only
(``http.server.ThreadingHTTPServer``, one thread per connection, HTTP/1.1 keep-alive).

Answers: a last user message ``"What is A + B?"`` gets ``"<think>add A and B</think>The answer is <A+B>."``;
anything else gets ``"ECHO: <message>"``. Special messages: containing ``AUTH_FAIL`` -> 401,
``BAD_REQUEST`` -> 400 (both with an OpenAI-style error body), ``ALWAYS_500`` -> 500 on every attempt,
``NO_USAGE`` -> body without usage, ``CAP_CONTEXT`` -> usage.prompt_tokens capped at 2048 (Ollama's silent num_ctx cut, C22-B).

Load shape (benchmarks/performance/bench_server.py): ``jitter_s`` adds U[0, jitter_s] to every reply's latency, ``tail_rate`` /
``tail_s`` make that share of requests ``tail_s`` slower, ``fail_rate`` answers that share of attempts with a 500
after the latency, ``parallel_limit`` serves at most that many requests at once (the others queue, as on an engine
with that many sequence slots). Every draw is a function of (``seed``, request body, attempt), so a load shape is
reproducible. ``timeline`` keeps (arrival, start, end, status) per request (``perf_counter`` seconds).

Fault schedule (``faults=True``): deterministic per distinct request body (sha256 of the canonical JSON body
mod 10): 0 -> one 429 (Retry-After), 1 -> one 500, 2 -> one timeout (sleeps ``timeout_sleep_s`` before a
late reply), 3 -> one truncated JSON body (valid HTTP, cut JSON), 4 -> slow success (``slow_s``),
5 -> two 503s, 6 -> a 429 then a 500, 7-9 -> clean. Retries of the same body advance through its schedule.
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ADD = re.compile(r"What is (-?\d+) \+ (-?\d+)\?")

SCHEDULES = {
    0: ["429"],
    1: ["500"],
    2: ["timeout"],
    3: ["truncated"],
    4: ["slow"],
    5: ["503", "503"],
    6: ["429", "500"],
}


def body_key(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class _NoSlot:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class OpenAITestServer:
    """Context manager: ``with OpenAITestServer(faults=True) as srv: OpenAIBackend(srv.base_url, "test-model")``.

    Attributes: ``requests`` (total HTTP requests received), ``bodies`` (the last 50 JSON bodies), ``outcomes``
    (Counter of what was sent: "ok", "429", "500", "503", "timeout", "truncated", "slow", "401", "400"),
    ``latency_s`` (added to every reply), ``max_inflight`` (peak concurrent requests).
    """

    def __init__(self, *, faults: bool = False, latency_s: float = 0.0, timeout_sleep_s: float = 1.5,
                 slow_s: float = 0.3, retry_after: str = "0", retry_after_ms: str | None = "20", responder=None,
                 jitter_s: float = 0.0, tail_rate: float = 0.0, tail_s: float = 0.0, fail_rate: float = 0.0,
                 parallel_limit: int | None = None, seed: int = 0):
        self.responder = responder  # optional callable(messages) -> str replacing the built-in answers
        self.jitter_s, self.tail_rate, self.tail_s, self.fail_rate = jitter_s, tail_rate, tail_s, fail_rate
        self.parallel_limit, self.seed = parallel_limit, seed
        self._slots = threading.BoundedSemaphore(parallel_limit) if parallel_limit else None
        self.timeline: list[tuple[float, float, float, str]] = []
        self.active = 0
        self.max_active = 0
        self.faults = faults
        self.latency_s = latency_s
        self.timeout_sleep_s = timeout_sleep_s
        self.slow_s = slow_s
        self.retry_after = retry_after
        self.retry_after_ms = retry_after_ms
        self.requests = 0
        self.bodies: list[dict] = []
        self.outcomes: Counter = Counter()
        self.inflight = 0
        self.max_inflight = 0
        self._attempts: Counter = Counter()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> OpenAITestServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: avoid Nagle + delayed-ACK stalls

            def log_message(self, *a):  # silence
                pass

            def do_POST(self):
                outer._handle(self)

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # the default listen backlog of 5 drops bursts of new connections
            daemon_threads = True

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="openai-test-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> OpenAITestServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # ------------------------------------------------------------------ request handling
    def _send(self, h: BaseHTTPRequestHandler, status: int, payload: bytes, headers: dict | None = None) -> None:
        self._leave(h)  # before the reply goes out: a client may send its next request the moment it has read it
        try:
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(payload)))
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(payload)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            h.close_connection = True

    def _error(self, h, status: int, message: str, headers: dict | None = None) -> None:
        body = json.dumps({"error": {"message": message, "type": "test_error", "code": status}}).encode()
        self._send(h, status, body, headers)

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.requests += 1
            self.inflight += 1
            self.max_inflight = max(self.max_inflight, self.inflight)
        h.janus_in_flight = True  # type: ignore[attr-defined]
        try:
            self._handle_inner(h)
        finally:
            self._leave(h)

    def _leave(self, h: BaseHTTPRequestHandler) -> None:
        """The request stops counting as in flight (once): when its reply starts, or when its handler ends."""
        with self._lock:
            if getattr(h, "janus_in_flight", False):
                h.janus_in_flight = False  # type: ignore[attr-defined]
                self.inflight -= 1

    def _handle_inner(self, h: BaseHTTPRequestHandler) -> None:
        n = int(h.headers.get("Content-Length", "0") or 0)
        raw = h.rfile.read(n)
        if not h.path.rstrip("/").endswith("/chat/completions"):
            self._error(h, 404, f"unknown path {h.path}")
            return
        try:
            body = json.loads(raw)
            messages = body["messages"]
            last_user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        except Exception as e:  # noqa: BLE001
            self._error(h, 400, f"bad request body: {e}")
            return
        with self._lock:
            self.bodies.append(body)
            del self.bodies[:-50]
            load_attempt = self._attempts[("load", body_key(body))]
            self._attempts[("load", body_key(body))] += 1
        arrived = time.perf_counter()
        with self._slots or _NoSlot():
            self._served_with_load(h, body, messages, last_user, load_attempt, arrived)

    def _draw(self, body: dict, attempt: int, what: str) -> float:
        """A reproducible U[0, 1) draw for (seed, body, attempt, what)."""
        key = f"{self.seed}|{body_key(body)}|{attempt}|{what}".encode()
        return int(hashlib.sha256(key).hexdigest()[:13], 16) / 16 ** 13

    def _served_with_load(self, h, body: dict, messages: list, last_user: str, attempt: int, arrived: float) -> None:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        start = time.perf_counter()
        status = "ok"
        try:
            wait = self.latency_s + self.jitter_s * self._draw(body, attempt, "jitter")
            if self.tail_rate and self._draw(body, attempt, "tail") < self.tail_rate:
                wait, status = wait + self.tail_s, "slow"
            if wait:
                time.sleep(wait)
            if self.fail_rate and self._draw(body, attempt, "fail") < self.fail_rate:
                status = "500"
                self._count("500")
                self._error(h, 500, "injected failure (fail_rate)")
                return
            self._reply(h, body, messages, last_user)
        finally:
            with self._lock:
                self.active -= 1
                self.timeline.append((arrived, start, time.perf_counter(), status))

    def _reply(self, h, body: dict, messages: list, last_user: str) -> None:
        if "ALWAYS_500" in last_user:
            self._count("500")
            self._error(h, 500, "injected permanent 500")
            return
        if "AUTH_FAIL" in last_user:
            self._count("401")
            self._error(h, 401, "Incorrect API key provided: sk-test****")
            return
        if "BAD_REQUEST" in last_user:
            self._count("400")
            self._error(h, 400, "max_tokens is too large: 999999999")
            return
        fault = "ok"
        if self.faults:
            key = body_key(body)
            with self._lock:
                attempt = self._attempts[key]
                self._attempts[key] += 1
            sched = SCHEDULES.get(int(key, 16) % 10, [])
            if attempt < len(sched):
                fault = sched[attempt]
        self._count(fault)
        if fault in ("429", "500", "503"):
            hdrs = {}
            if fault == "429":
                hdrs["Retry-After"] = self.retry_after
                if self.retry_after_ms is not None:
                    hdrs["retry-after-ms"] = self.retry_after_ms
            self._error(h, int(fault), f"injected {fault}", hdrs)
            return
        if fault == "timeout":
            time.sleep(self.timeout_sleep_s)
        elif fault == "slow":
            time.sleep(self.slow_s)
        try:
            payload = self._completion(body, messages, last_user)
        except Exception as exc:  # a responder that raises makes the server fail this request with a 500
            self._count("500")
            self._error(h, 500, f"responder failed: {exc}")
            return
        data = json.dumps(payload).encode()
        if fault == "truncated":
            data = data[: len(data) // 2]
        self._send(h, 200, data)

    def _count(self, what: str) -> None:
        with self._lock:
            self.outcomes[what] += 1

    def _completion(self, body: dict, messages: list, last_user: str) -> dict:
        m = _ADD.search(last_user)
        if self.responder is not None:
            content = self.responder(messages)
        elif m:
            a, b = int(m.group(1)), int(m.group(2))
            content = f"<think>add {a} and {b}</think>The answer is {a + b}."
        else:
            content = f"ECHO: {last_user}"
        words = sum(len(str(x.get("content", "")).split()) for x in messages)
        prompt_tokens = words + 4 * len(messages) + 2
        if "CAP_CONTEXT" in last_user:
            prompt_tokens = min(prompt_tokens, 2048)
        out = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "test-model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(content.split()),
                      "total_tokens": prompt_tokens + len(content.split())},
        }
        if "NO_USAGE" in last_user:
            out.pop("usage")
        return out


def main() -> None:
    """Run standalone (used by the benchmark to keep server CPU out of the client's process):
    ``python -m janus_memory.testing.openai_stub --latency 0.2 [--faults]``; prints the base URL, serves until stdin
    closes."""
    import argparse
    import sys

    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--faults", action="store_true")
    ap.add_argument("--timeout-sleep", type=float, default=3.0)
    ap.add_argument("--slow", type=float, default=0.4)
    a = ap.parse_args()
    with OpenAITestServer(latency_s=a.latency, faults=a.faults, timeout_sleep_s=a.timeout_sleep, slow_s=a.slow) as srv:
        print(srv.base_url, flush=True)
        sys.stdin.read()
        print(f"requests={srv.requests} max_inflight={srv.max_inflight}", flush=True)


if __name__ == "__main__":
    main()
