"""Benchmark: `janus run` against an OpenAI-compatible server, wall time vs the run's critical path.

A run against a server is bound by latency: its fastest possible time is its **critical path**, the chain of calls
that must wait for each other. Per method: every stream step's updater calls one after another (DC-RS: curator, then
solver), plus one round per Janus comparison (all its reads in flight together: ceil(reads / --concurrency) rounds),
plus one round for the held-out test (final and checkpoint memories together); a round holds at most --concurrency
requests and at most the server's parallel limit; the run's path is the longest method's, times the server's latency.
The path counts no jitter, slow tail or retry: in the ``faults`` shape what they add to the wall is in the ratio. Everything else (the other method, the other requests of a round) should
overlap. The goal: wall time (start-up excluded, as the run prints it) <= 1.3 x the critical path.

The stub server (``serve``, started here in its own process) answers every request after ``--latency`` seconds with
the scripted fake backend's replies (run/fake_llm.py: right or wrong by a hash of the prompt, so Janus sees real
flips; a cheatsheet for DC's curator), and can add a jitter U[0, J], a slow tail (share P of requests S seconds
slower), a failure rate (share F of attempts answered 500 after the latency: the client retries) and a parallel limit
(at most N requests served at once, the rest queue). It keeps every request's arrival/start/end: the table reports
the peak number in flight.

Shapes (``--shapes``; each run ``--repeats`` times, the 1-minute load average printed beside each):

    issue        dc_rs, --controller both, --trigger always (the issue's run)
    janus        dc_rs, --controller janus, --trigger always
    mmt          dc_rs, --controller both, the paper's MMT trigger
    recommended  dc_rs, --controller both, --janus-preset recommended (sequential test, speculative reads)
    expel        expel, --controller both, --trigger always
    faults       the issue's run with jitter 0.2 s, 2 % of requests 3 s slower and 5 % failed attempts
    limit16      the issue's run against a server that serves 16 requests at once

    python benchmarks/bench_server.py [--shapes issue,janus] [--repeats 2] [--latency 0.5] [--concurrency 64]
    python benchmarks/bench_server.py --llamacpp    # llama.cpp's own server: concurrency honoured, same run files

``--llamacpp`` starts llama.cpp's HTTP server (tests/llamacpp_server.py, SmolLM2-135M, 4 slots) behind a counting
proxy and makes the same small run with the methods side by side and one after another (temperature 0, no cache):
it prints the peak number of requests in flight (must be <= --concurrency) and whether every run file is identical.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

COMMON = ["--backend", "openai", "--model", "stub", "--dataset", "gsm8k", "--stream-size", "30", "--test-size", "30",
          "--warmup", "5", "--encoder", "hashing", "--no-cache"]
SHAPES = {
    "issue": (["--updater", "dc_rs", "--controller", "both", "--trigger", "always"], {}),
    "janus": (["--updater", "dc_rs", "--controller", "janus", "--trigger", "always"], {}),
    "mmt": (["--updater", "dc_rs", "--controller", "both"], {}),
    "recommended": (["--updater", "dc_rs", "--controller", "both", "--janus-preset", "recommended"], {}),
    "expel": (["--updater", "expel", "--controller", "both", "--trigger", "always"], {}),
    "faults": (["--updater", "dc_rs", "--controller", "both", "--trigger", "always"],
               {"jitter": 0.2, "tail_rate": 0.02, "tail_s": 3.0, "fail_rate": 0.05}),
    "limit16": (["--updater", "dc_rs", "--controller", "both", "--trigger", "always"], {"parallel_limit": 16}),
}


# ----------------------------------------------------------------------------------------------- the stub server
def serve(a) -> None:
    """The stub server (in its own process): prints its URL, serves until stdin closes, then prints its stats."""
    from openai_test_server import OpenAITestServer

    from janus_memory.run.fake_llm import scripted_backend
    from janus_memory.tasks import load_split

    tasks = []  # the run's own tasks (the scripted reply looks for each of them in the prompt: keep the list short)
    for split, limit in (("stream", a.stream_size), ("test", a.test_size)):
        tasks += load_split(a.dataset, split, data_dir=None, seed=a.split_seed, limit=limit).tasks
    responder = scripted_backend(tasks).reply
    with OpenAITestServer(latency_s=a.latency, jitter_s=a.jitter, tail_rate=a.tail_rate, tail_s=a.tail_s,
                          fail_rate=a.fail_rate, parallel_limit=a.parallel_limit or None, seed=a.seed,
                          responder=lambda messages: responder(messages)) as srv:
        print(srv.base_url, flush=True)
        sys.stdin.read()
        print(json.dumps({"requests": srv.requests, "max_inflight": srv.max_inflight,
                          "max_active": srv.max_active, "outcomes": dict(srv.outcomes),
                          "burst_spread_s": burst_spread(srv.timeline)}), flush=True)


def burst_spread(timeline: list) -> float | None:
    """Mean time between the first and the last arrival of a burst of 10 or more requests (a comparison or a test
    wave: arrivals less than 0.2 s apart), i.e. how long the client took to send one round."""
    arrivals = sorted(t[0] for t in timeline)
    bursts, cur = [], arrivals[:1]
    for t in arrivals[1:]:
        if t - cur[-1] < 0.2:
            cur.append(t)
        else:
            bursts.append(cur)
            cur = [t]
    bursts.append(cur)
    big = [b[-1] - b[0] for b in bursts if len(b) >= 10]
    return round(sum(big) / len(big), 4) if big else None


class Stub:
    """The stub server in a child process (``with Stub(latency=0.5) as s: s.url``)."""

    def __init__(self, **opts):
        self.opts = opts
        self.stats: dict = {}

    def __enter__(self) -> Stub:
        cmd = [sys.executable, __file__, "serve"]
        for k, v in self.opts.items():
            cmd += [f"--{k.replace('_', '-')}", str(v)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            self.proc.kill()
            raise RuntimeError("the stub server did not start")
        return self

    def __exit__(self, *exc) -> None:
        self.proc.stdin.close()
        try:
            self.stats = json.loads(self.proc.stdout.readline() or "{}")
        finally:
            self.proc.wait(timeout=30)


# ----------------------------------------------------------------------------------------------- critical path
def critical_rounds(run_dir: Path, budget: int, *, stream_only: bool = False) -> dict[str, int]:
    """{method: rounds on its critical path} (module docstring) from the run folder (``stream_only``: without the
    test wave)."""
    config = json.loads((run_dir / "config.json").read_text())
    checkpoints = len([f for f in config.get("checkpoints") or [] if f < 1.0])
    out = {}
    for mdir in sorted(p for p in run_dir.iterdir() if (p / "steps.jsonl").is_file()):
        rounds = 0
        for line in (mdir / "steps.jsonl").read_text().splitlines():
            rounds += len(json.loads(line)["llm_calls"])
        for line in (mdir / "decisions.jsonl").read_text().splitlines():
            reads = len(json.loads(line)["decision"].get("evaluations") or [])
            rounds += math.ceil(reads / budget)
        tests = len((mdir / "test.jsonl").read_text().splitlines()) * (1 + checkpoints)
        rounds += 0 if stream_only else math.ceil(tests / budget)
        out[mdir.name] = rounds
    return out


def load1() -> float:
    return os.getloadavg()[0]


def stream_seconds(output: str) -> dict[str, float]:
    """{method: seconds from its first step to its last} as the run's last step line of each method says."""
    out = {}
    for m in re.finditer(r"^\[(\S+)\] step\s+(\d+)/(\d+) .* ([\d.]+)s$", output, re.M):
        if m.group(2) == m.group(3):
            out[m.group(1)] = float(m.group(4))
    return out


def run_janus(url: str, args: list[str], out: Path, concurrency: int) -> tuple[float, str]:
    """One `janus run` (a child process, as a user runs it); returns (stream-and-test seconds, output)."""
    cmd = [sys.executable, "-m", "janus_memory.cli", "run", *COMMON, *args, "--base-url", url,
           "--concurrency", str(concurrency), "--out", str(out), "--overwrite"]
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    if p.returncode != 0:
        raise RuntimeError(f"janus run failed ({p.returncode}): {p.stderr[-2000:]}")
    m = re.search(r"stream and test ([\d.]+) s", p.stdout)
    if not m:
        raise RuntimeError("no wall-time line in the run's output:\n" + p.stdout[-2000:])
    return float(m.group(1)), p.stdout


def bench(a) -> list[dict]:
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="bench-server-"))
    try:
        for shape in a.shapes.split(","):
            args, server = SHAPES[shape]
            for rep in range(a.repeats):
                before = load1()
                with Stub(latency=a.latency, seed=rep, **server) as stub:
                    wall, output = run_janus(stub.url, args, tmp / f"{shape}-{rep}", a.concurrency)
                after = load1()
                # a round holds at most --concurrency requests, and at most the server's parallel limit
                budget = min(a.concurrency, server.get("parallel_limit") or a.concurrency)
                rounds = critical_rounds(tmp / f"{shape}-{rep}", budget)
                path = max(rounds.values()) * a.latency
                streams = stream_seconds(output)
                own = critical_rounds(tmp / f"{shape}-{rep}", budget, stream_only=True)
                row = {"shape": shape, "repeat": rep + 1, "wall_s": wall, "critical_path_s": path,
                       "ratio": wall / path, "rounds": rounds, "server": stub.stats, "load_before": before,
                       "load_after": after, "streams_s": streams, "stream_rounds": own}
                rows.append(row)
                each = ", ".join(f"{m} {t:.1f} s / {own.get(m, 0) * a.latency:.1f} s" for m, t in streams.items())
                print(f"{shape:<12} run {rep + 1}: wall {wall:6.1f} s (start-up excluded), critical path {path:5.1f} s "
                      f"({max(rounds.values())} rounds x {a.latency:g} s), ratio {wall / path:.2f}; stream vs own "
                      f"path: {each}; server: {stub.stats.get('requests')} requests, peak "
                      f"{stub.stats.get('max_inflight')} in flight, {stub.stats.get('outcomes')}, a round of 10+ sent in "
                      f"{stub.stats.get('burst_spread_s')} s; load {before:.2f} -> "
                      f"{after:.2f}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def table(rows: list[dict], a) -> str:
    """The markdown table of docs/perf.md: one line per shape, every repeat's ratio."""
    lines = ["| shape | critical path | wall (start-up excluded), each run | wall / path | server peak in flight "
             "| load (1 min) |", "|---|---|---|---|---|---|"]
    for shape in dict.fromkeys(r["shape"] for r in rows):
        rs = [r for r in rows if r["shape"] == shape]
        path = rs[0]["critical_path_s"]
        lines.append(f"| {shape} | {path:.1f} s ({max(rs[0]['rounds'].values())} rounds) | "
                     + ", ".join(f"{r['wall_s']:.1f} s" for r in rs) + " | "
                     + ", ".join(f"{r['ratio']:.2f}" for r in rs) + " | "
                     + ", ".join(str(r["server"].get("max_inflight")) for r in rs) + " | "
                     + ", ".join(f"{r['load_before']:.1f}-{r['load_after']:.1f}" for r in rs) + " |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------- llama.cpp server
class CountingProxy:
    """A 127.0.0.1 HTTP proxy in front of ``upstream`` counting the requests in flight through it."""

    def __init__(self, upstream: str):
        import urllib.request

        outer = self
        self.inflight = self.max_inflight = self.requests = 0
        self.lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *x):
                pass

            def _forward(self, method: str) -> None:
                with outer.lock:
                    outer.inflight += 1
                    outer.requests += 1
                    outer.max_inflight = max(outer.max_inflight, outer.inflight)
                try:
                    n = int(self.headers.get("Content-Length") or 0)
                    body = self.rfile.read(n) if n else None
                    req = urllib.request.Request(upstream + self.path, data=body, method=method,
                                                 headers={"Content-Type": "application/json"})
                    try:
                        with urllib.request.urlopen(req, timeout=600) as r:
                            status, data = r.status, r.read()
                    except urllib.error.HTTPError as e:
                        status, data = e.code, e.read()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                finally:
                    with outer.lock:
                        outer.inflight -= 1

            def do_POST(self):
                self._forward("POST")

            def do_GET(self):
                self._forward("GET")

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def llamacpp(a) -> int:
    from llamacpp_server import LlamaCppServer

    gguf = os.environ.get("JANUS_TEST_SMOLLM2_GGUF") or os.environ.get("JANUS_TEST_GGUF") or str(
        Path.home() / ".cache/janus-memory/test-models/SmolLM2-135M-Instruct.Q4_1.gguf")
    if not Path(gguf).is_file():
        print(f"no SmolLM2 GGUF at {gguf}: run `janus model fetch --test-models` first")
        return 2
    args = ["--backend", "openai", "--model", "smollm2", "--dataset", "gsm8k", "--stream-size", str(a.ll_steps),
            "--test-size", "2", "--warmup", "2", "--encoder", "hashing", "--no-cache", "--temperature", "0",
            "--solver-max-tokens", "16", "--curator-max-tokens", "16", "--updater", "dc_rs", "--controller", "both",
            "--trigger", "always", "--coverage-size", "2", "--boundary-size", "1", "--fresh-size", "1",
            "--concurrency", str(a.ll_concurrency), "--request-timeout", "600", "--quiet"]
    tmp = Path(tempfile.mkdtemp(prefix="bench-llamacpp-"))
    out = {}
    try:
        with LlamaCppServer(gguf, n_parallel=4, n_ctx=2048) as server:
            proxy = CountingProxy(server.url)
            try:
                for mode in ("off", "on"):
                    proxy.max_inflight = 0
                    t0, before = time.perf_counter(), load1()
                    cmd = [sys.executable, "-m", "janus_memory.cli", "run", *args, "--base-url", proxy.url + "/v1",
                           "--parallel-methods", mode, "--out", str(tmp / mode)]
                    p = subprocess.run(cmd, capture_output=True, text=True)
                    if p.returncode != 0:
                        print(p.stdout[-2000:], p.stderr[-2000:])
                        return 1
                    out[mode] = {"wall_s": time.perf_counter() - t0, "peak": proxy.max_inflight,
                                 "load": (before, load1())}
                    print(f"methods side by side {mode:>3}: {out[mode]['wall_s']:.1f} s, peak {proxy.max_inflight} "
                          f"requests in flight (--concurrency {a.ll_concurrency}), load {before:.2f} -> {load1():.2f}")
            finally:
                proxy.close()
        same, differ = 0, []
        for f in sorted(p for p in (tmp / "off").rglob("*") if p.is_file()):
            rel = f.relative_to(tmp / "off")
            if rel.name in ("run.sqlite", "summary.json", "config.json", "config.yaml", ".janus.lock", "COMPLETE"):
                continue
            other = tmp / "on" / rel
            if other.is_file() and other.read_bytes() == f.read_bytes():
                same += 1
            else:
                differ.append(str(rel))
        print(f"run files identical: {same}, different: {len(differ)} {differ[:5]}")
        ok = not differ and all(v["peak"] <= a.ll_concurrency for v in out.values())
        print("OK" if ok else "FAILED")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        ap = argparse.ArgumentParser(prog="bench_server.py serve")
        ap.add_argument("--latency", type=float, default=0.5)
        ap.add_argument("--jitter", type=float, default=0.0)
        ap.add_argument("--tail-rate", type=float, default=0.0)
        ap.add_argument("--tail-s", type=float, default=0.0)
        ap.add_argument("--fail-rate", type=float, default=0.0)
        ap.add_argument("--parallel-limit", type=int, default=0)
        ap.add_argument("--seed", type=int, default=0)
        ap.add_argument("--dataset", default="gsm8k")
        ap.add_argument("--stream-size", type=int, default=30)
        ap.add_argument("--test-size", type=int, default=30)
        ap.add_argument("--split-seed", type=int, default=0)
        serve(ap.parse_args(sys.argv[2:]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="issue,janus")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--json", help="write every measurement here")
    ap.add_argument("--llamacpp", action="store_true", help="llama.cpp's server: concurrency honoured, same files")
    ap.add_argument("--ll-steps", type=int, default=3)
    ap.add_argument("--ll-concurrency", type=int, default=3)
    a = ap.parse_args()
    if a.llamacpp:
        return llamacpp(a)
    print(f"stub server latency {a.latency:g} s, --concurrency {a.concurrency}, {os.cpu_count()} cores")
    rows = bench(a)
    print()
    print(table(rows, a))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
