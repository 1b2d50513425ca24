"""MiniLM window cap (issue 12 item 10): wall time to embed memories of 16 KB, 0.5 MB and 5 MB with the default cap
(32 windows), and the windows an uncapped encoder would embed for each. Run: python benchmarks/performance/bench_encoder_cap.py"""
from __future__ import annotations

import time

from janus_memory.encoders.onnx_minilm import STEP, MiniLMOnnxEncoder


def main() -> None:
    enc = MiniLMOnnxEncoder()
    unit = "".join(f"Entry {i:06d}: when the total is {i} apples, check the units first. " for i in range(5000))
    for size in (16_000, 500_000, 5_000_000):
        text = (unit * (size // len(unit) + 1))[:size]
        t0 = time.perf_counter()
        enc.encode([text])
        dt = time.perf_counter() - t0
        n_tok_est = len(enc.tokenizer.encode(text[:200_000], add_special_tokens=False).ids) * size / min(size, 200_000)
        print(f"{size:>9,} chars: {dt:6.2f} s with cap {enc.max_windows} ({len(enc.windows(text))} windows); "
              f"uncapped would embed ~{int(n_tok_est // STEP) + 1} windows")


if __name__ == "__main__":
    main()
