"""Know the limit: this machine's memory bandwidth and generation tokens/s as a fraction of bandwidth / model bytes.

Decoding one token of a dense model reads every weight once, so single-stream generation cannot beat
``bandwidth / model_bytes`` tokens/s (KV-cache reads and compute only lower it). A batched decode step reads the
weights once for all active sequences, so ``b`` slots can reach up to ``b`` times that until compute binds.

Bandwidth: best of ``--repeats`` numpy copies of a ``--mib`` MiB float64 array (``np.copyto``), counting read + write
bytes (2 x size), in one thread and in ``--threads`` threads (separate halves). Generation: the embedded engine on
``--model`` (default: the embedded GGUF), one stream, then ``--slots`` concurrent streams, ``--max-tokens`` each,
unless ``--gen-tok-s``/``--batched-tok-s`` give numbers measured elsewhere (e.g. bench_batching.py --out).
The 1-minute load average is printed with each measurement: the machine may be shared.

    python benchmarks/performance/bench_bandwidth.py [--mib 512] [--model PATH] [--slots 4] [--max-tokens 32]
"""
from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path

import numpy as np


def copy_bandwidth(mib: int, repeats: int, threads: int = 1) -> float:
    """Best read+write bytes/s of copying ``mib`` MiB (split over ``threads`` threads; numpy releases the GIL)."""
    n = mib * (1 << 20) // 8
    src = np.ones(n, dtype=np.float64)
    dst = np.empty_like(src)
    parts = np.array_split(np.arange(n), threads)
    bounds = [(int(p[0]), int(p[-1]) + 1) for p in parts if len(p)]
    best = 0.0
    for _ in range(repeats):
        ts = [threading.Thread(target=lambda lo=lo, hi=hi: np.copyto(dst[lo:hi], src[lo:hi])) for lo, hi in bounds]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        dt = time.perf_counter() - t0
        best = max(best, 2 * src.nbytes / dt)
    return best


def generation_tok_s(model: str, slots: int, max_tokens: int) -> float:
    """Aggregate generated tokens/s (engine decode time) of ``slots`` concurrent short prompts."""
    from janus_memory.llm import LLMClient
    from janus_memory.llm.local import LocalBackend

    b = LocalBackend(model, n_ctx=512, n_threads=2, n_parallel=slots)
    client = LLMClient(b, concurrency=slots, max_retries=0)
    client.chat([{"role": "user", "content": "Say OK."}], max_tokens=2)  # load
    g0 = b.stats.gen_tokens
    t0 = time.perf_counter()
    client.chat_many([[{"role": "user", "content": f"Count from {i} upward, one number per line."}]
                      for i in range(slots)], max_tokens=max_tokens, temperature=0.0)
    wall = time.perf_counter() - t0
    gen = b.stats.gen_tokens - g0
    b.close()
    return gen / wall


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default=None)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--gen-tok-s", type=float, default=None, help="single-stream tok/s measured elsewhere")
    ap.add_argument("--batched-tok-s", type=float, default=None, help="aggregate batched tok/s measured elsewhere")
    a = ap.parse_args(argv)
    bw1 = copy_bandwidth(a.mib, a.repeats, 1)
    bwn = copy_bandwidth(a.mib, a.repeats, a.threads)
    bw = max(bw1, bwn)
    print(f"copy bandwidth ({a.mib} MiB, read+write): 1 thread {bw1 / 1e9:.2f} GB/s, {a.threads} threads "
          f"{bwn / 1e9:.2f} GB/s (load {os.getloadavg()[0]:.1f})")
    if a.model is None:
        from janus_memory.llm.local import default_gguf

        try:
            a.model = str(default_gguf())
        except FileNotFoundError as e:
            print(f"no model: {e}")
            return 0
    model_bytes = Path(a.model).stat().st_size
    limit = bw / model_bytes
    print(f"model {Path(a.model).name}: {model_bytes / 1e9:.3f} GB -> single-stream limit {limit:.2f} tok/s")
    single = a.gen_tok_s if a.gen_tok_s is not None else generation_tok_s(a.model, 1, a.max_tokens)
    print(f"single-stream generation {single:.2f} tok/s = {single / limit:.3f} of the bandwidth limit "
          f"(load {os.getloadavg()[0]:.1f})")
    batched = a.batched_tok_s if a.batched_tok_s is not None else generation_tok_s(a.model, a.slots, a.max_tokens)
    print(f"batched ({a.slots} slots) {batched:.2f} tok/s = {batched / limit:.3f} of the single-stream limit, "
          f"{batched / (a.slots * limit):.3f} of the {a.slots}-slot limit; batched/single = {batched / single:.2f} "
          f"(load {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
