"""Benchmark the text encoders: load time, texts/s on 2,000-character texts, windows per real memory,
and the cost of a repeat (cache hit).

Texts: MMLU-Pro questions+options concatenated to 2,000 characters (mmlu_pro/test.jsonl) and the
real DC cheatsheets (dc-trajectories), from JANUS_DATA_DIR or the data shipped in the package.
Usage: python benchmarks/performance/bench_encoders.py [--n 64]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from janus_memory.encoders import get_encoder
from janus_memory.tasks.data import find_source, read_jsonl


def texts_2000(n: int) -> list[str]:
    out, buf = [], ""
    for r in read_jsonl(find_source(None, "mmlu_pro/test.jsonl", "MMLU-Pro")):  # JANUS_DATA_DIR's, else shipped
        buf += r["question"] + " " + " ".join(r["options"]) + " "
        while len(buf) >= 2000:
            out.append(buf[:2000])
            buf = buf[2000:]
            if len(out) == n:
                return out
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=64)
    a = ap.parse_args()
    texts = texts_2000(a.n)
    sheets = [r["new_cheatsheet"] for r in
              read_jsonl(find_source(None, "dc-trajectories/aime_2025_claude-3-5-sonnet_dc-cu.jsonl", "DC-Cu"))][:10]
    for spec in ("minilm", "hashing"):
        t0 = time.perf_counter()
        enc = get_encoder(spec)
        load = time.perf_counter() - t0
        enc.encode(["warm up"])
        t0 = time.perf_counter()
        v = enc.encode(texts)
        dt = time.perf_counter() - t0
        t0 = time.perf_counter()
        enc.encode(texts)
        hit = time.perf_counter() - t0
        t0 = time.perf_counter()
        enc.encode(sheets)
        dts = time.perf_counter() - t0
        extra = ""
        if spec == "minilm":
            wins = [len(enc.inner.windows(s)) for s in sheets]
            extra = f", windows per cheatsheet {min(wins)}-{max(wins)} (mean chars {int(np.mean([len(s) for s in sheets]))})"
        print(f"{spec:8s} dim {enc.dim:6d}  load {load:.2f} s  {len(texts) / dt:8.1f} texts/s @2,000 chars  "
              f"repeat (cache) {hit * 1000:.1f} ms for {len(texts)}  cheatsheets {len(sheets) / dts:.1f}/s{extra}  "
              f"norms {np.linalg.norm(v, axis=1).min():.4f}")


if __name__ == "__main__":
    main()
