"""Benchmark: LLMClient concurrency against the local OpenAI-compatible test server.

200 requests, fixed 200 ms server latency, concurrency 16, no cache. Prints
ratio = wall time / ideal, ideal = 200 x 0.2 s / 16 = 2.5 s. Target: ratio <= 1.2.
Also runs the same batch with fault injection (429/500/503/timeouts/truncated JSON) for information.

Usage: python benchmarks/performance/bench_llm_concurrency.py [--n 200] [--concurrency 16] [--latency 0.2] [--faults]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time

from janus_memory.llm import LLMClient, OpenAIBackend
from janus_memory.testing.openai_stub import OpenAITestServer


def _measure(base_url: str, n: int, concurrency: int, latency: float) -> dict:
    client = LLMClient(OpenAIBackend(base_url, "bench-model", timeout=2.0), concurrency=concurrency,
                       backoff_base_s=0.05)
    batch = [[{"role": "user", "content": f"What is {i} + 1?"}] for i in range(n)]
    t0 = time.perf_counter()
    out = client.chat_many(batch, role="solver")
    wall = time.perf_counter() - t0
    ok = sum(r.text == f"The answer is {i + 1}." for i, r in enumerate(out))
    ideal = n * latency / concurrency
    return {"wall_s": wall, "ideal_s": ideal, "ratio": wall / ideal, "correct": ok, "n": n,
            "retries": client.usage.snapshot()["solver"]["retries"]}


def run(n: int, concurrency: int, latency: float, faults: bool, separate: bool = True) -> dict:
    """separate=True runs the server in its own process (like a real server); False shares this process's GIL."""
    if not separate:
        with OpenAITestServer(latency_s=latency, faults=faults, timeout_sleep_s=3.0, slow_s=0.4) as srv:
            r = _measure(srv.base_url, n, concurrency, latency)
            r.update(requests=srv.requests, max_inflight=srv.max_inflight)
            return r
    cmd = [sys.executable, "-m", "janus_memory.testing.openai_stub", "--latency", str(latency)] + (["--faults"] if faults else [])
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        r = _measure(url, n, concurrency, latency)
        proc.stdin.close()
        tail = proc.stdout.read()
        stats = dict(kv.split("=") for kv in tail.split())
        r.update(requests=int(stats["requests"]), max_inflight=int(stats["max_inflight"]))
        return r
    finally:
        proc.wait(timeout=10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--faults", action="store_true", help="also run with fault injection")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--same-process", action="store_true", help="server threads in this process (shares the GIL)")
    a = ap.parse_args()
    ratios = []
    sep = not a.same_process
    print(f"server in {'a separate process' if sep else 'this process'}; n={a.n} concurrency={a.concurrency} "
          f"latency={a.latency}s")
    for k in range(a.repeats):
        r = run(a.n, a.concurrency, a.latency, False, sep)
        ratios.append(r["ratio"])
        print(f"run {k + 1}: wall {r['wall_s']:.3f} s, ideal {r['ideal_s']:.3f} s, ratio {r['ratio']:.3f}, "
              f"correct {r['correct']}/{r['n']}, server peak in-flight {r['max_inflight']}")
    print(f"RATIO (best of {a.repeats}) = {min(ratios):.3f}  median = {sorted(ratios)[len(ratios) // 2]:.3f}  "
          f"(target <= 1.2)")
    if a.faults:
        r = run(a.n, a.concurrency, a.latency, True, sep)
        print(f"with faults: wall {r['wall_s']:.3f} s, ratio {r['ratio']:.3f}, correct {r['correct']}/{r['n']}, "
              f"HTTP requests {r['requests']}, retries {r['retries']}")


if __name__ == "__main__":
    main()
