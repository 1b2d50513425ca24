"""Start llama.cpp's own OpenAI-compatible HTTP server (the C++ server engine shipped in the xllamacpp wheel) on
127.0.0.1 in a child process, for tests that need a real server nobody here wrote.

The child loads the GGUF, prints ``{"url": ...}`` on stdout and then blocks on its stdin: when the parent closes
the pipe (or dies), the child exits. :class:`LlamaCppServer` closes stdin, waits, and kills the child if it
does not leave within ``stop_timeout_s``; ``proc.returncode`` is set afterwards (the child is reaped).
Standalone: ``python -m janus_memory.testing.llamacpp_server model.gguf --parallel 4`` prints the URL and serves
until Ctrl-D.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

CHILD = r"""
import json, sys
import xllamacpp as xlc
path, n_parallel, n_ctx, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
p = xlc.CommonParams()
p.model.path = path
p.n_parallel = n_parallel
p.n_ctx = n_ctx * n_parallel
p.cont_batching = True
p.cpuparams.n_threads = threads
p.cpuparams_batch.n_threads = threads
p.hostnames = ["127.0.0.1"]
p.port = 0
p.endpoint_metrics = True
p.verbosity = -1
srv = xlc.Server(p)
print(json.dumps({"url": srv.listening_address}), flush=True)
sys.stdin.read()  # serve until the parent closes the pipe
"""


class LlamaCppServer:
    """Context manager: ``with LlamaCppServer(gguf, n_parallel=4) as s: s.base_url`` (ends with ``/v1``)."""

    def __init__(self, gguf: str | os.PathLike, *, n_parallel: int = 1, n_ctx: int = 1024, threads: int = 2,
                 start_timeout_s: float = 300.0, stop_timeout_s: float = 20.0):
        self.gguf = str(gguf)
        self.n_parallel = n_parallel
        self.n_ctx = n_ctx
        self.threads = threads
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.proc: subprocess.Popen | None = None
        self.url = ""

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def start(self) -> LlamaCppServer:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, self.gguf, str(self.n_parallel), str(self.n_ctx), str(self.threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None  # stdout=PIPE
        line = self.proc.stdout.readline()  # blocks until the model is loaded (or the child died)
        if not line:
            self.stop()
            raise RuntimeError(f"llama.cpp server child exited with code {self.proc.returncode} before listening")
        self.url = json.loads(line)["url"].rstrip("/")
        deadline = time.monotonic() + self.start_timeout_s
        while self.health() != 200:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError("llama.cpp server did not become healthy")
            time.sleep(0.2)
        return self

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as r:
                return r.status, r.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode("utf-8", "replace")

    def health(self) -> int | None:
        try:
            return self.get("/health")[0]
        except OSError:
            return None

    def metrics(self) -> dict[str, float]:
        """Prometheus metrics as ``{name: value}`` (``llamacpp:`` prefix removed)."""
        out = {}
        for line in self.get("/metrics")[1].splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                out[name.split(":", 1)[-1]] = float(value)
        return out

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=self.stop_timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


if __name__ == "__main__":  # pragma: no cover - manual use
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("gguf")
    ap.add_argument("--parallel", type=int, default=1)
    ap.add_argument("--ctx", type=int, default=2048)
    a = ap.parse_args()
    with LlamaCppServer(a.gguf, n_parallel=a.parallel, n_ctx=a.ctx) as s:
        print(s.base_url, flush=True)
        sys.stdin.read()
