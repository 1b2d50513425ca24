"""Run-store growth (issue 17): per-step store cost and database bytes per step, step 10 vs step 10,000.

Two measurements, printed as ratios measured in this one run (no thresholds are asserted here):

1. ``synthetic``: RunStore.commit_step driven for 10,000 steps with a checkpoint shaped like the real one (controller
   state: one task + one 384-d float32 embedding appended per step as base64, momentum and k-means centroids rewritten
   every step; updater state: a retrieval bank gaining one record + embedding per step, a rewritten cheatsheet;
   counters). Median commit time and database bytes per step in a window around step 10 and around step 10,000.
   The same is measured for the pre-issue-17 behaviour (whole checkpoint rewritten every step) up to step 1,000 only
   (beyond that it is too slow to wait for: that is the point).
2. ``fake backend``: a real ``janus run --backend fake`` (DC-RS + Janus, hashing encoder, trigger=always) of N steps,
   timing the store's event handler per step (``--real-steps``, default 300; 0 skips it).

Usage: PYTHONPATH=src python benchmarks/bench_store.py [--steps 10000] [--real-steps 300]
"""
from __future__ import annotations

import argparse
import base64
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from janus_memory.runner.store import RunStore

DIM = 384


def _b64(a: np.ndarray) -> dict:
    return {"dtype": "<f4", "shape": list(a.shape), "b64": base64.b64encode(a.astype("<f4").tobytes()).decode("ascii")}


class _State:
    """A growing checkpoint with the real one's shape (see the module docstring)."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.emb = np.zeros((0, DIM), np.float32)
        self.tasks: list[dict] = []
        self.bank: list[dict] = []

    def step(self, i: int) -> tuple[dict, dict, dict, str]:
        v = self.rng.standard_normal(DIM).astype(np.float32)
        self.emb = np.vstack([self.emb, v[None]])
        self.tasks.append({"type": "task", "id": f"gsm8k:{i}", "question": f"question {i} " * 12, "answer": str(i)})
        self.bank.append({"task_id": f"gsm8k:{i}", "question": f"question {i} " * 12, "answer": f"answer {i} " * 20})
        cheatsheet = f"Version: {i}\n" + "strategy line\n" * 40
        ck = {"updater": {"format": 1, "updater": "dc_rs", "stats": {"steps": i},
                          "state": {"cheatsheet": cheatsheet, "bank": {"records": list(self.bank), "emb": _b64(self.emb)}}},
              "janus": {"format": 1, "step": i, "tasks": list(self.tasks), "ids": [t["id"] for t in self.tasks],
                        "embeddings": {"dim": DIM, "n": i, "data": _b64(self.emb)},
                        "momentum": _b64(self.rng.standard_normal(DIM)),
                        "coverage_model": {"kind": "kmeans", "centroids": _b64(self.rng.standard_normal((12, DIM)))},
                        "stats": {"triggers": i // 3, "accepts": i // 5}},
              "counters": {"n_correct": i // 2, "triggers": i // 3, "usage": {"solver": {"calls": i, "wall_s": i * 0.1}},
                           "wall_s": i * 0.37, "eval_checkpoints": {}}}
        decision = {"step": i, "task_id": f"gsm8k:{i}", "accept": i % 5 != 0, "triggered": True, "cosine": 0.93}
        record = {"step": i, "task_id": f"gsm8k:{i}", "output": "the answer is 42 " * 30, "usage": {"solver": {"calls": 1}}}
        return ck, decision, record, cheatsheet


def _db_bytes(root: Path) -> int:
    return sum((root / n).stat().st_size for n in (RunStore.DB, RunStore.DB + "-wal") if (root / n).exists())


def synthetic(steps: int, windows: list[int], whole: bool) -> dict[int, tuple[float, float]]:
    """{window centre: (median commit ms, db bytes per step)} for steps around each centre."""
    out: dict[int, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        store = RunStore.create(Path(tmp) / "run")
        st, times, sizes = _State(), {}, {}
        for i in range(1, steps + 1):
            ck, dec, rec, mem = st.step(i)
            if whole:
                store._ck.clear()  # the pre-issue-17 behaviour: the whole checkpoint every step
            t = time.perf_counter()
            store.commit_step("m", i, dec, rec, mem, ck, candidate=(mem, "p", None))
            times[i] = time.perf_counter() - t
            if any(abs(i - w) <= 10 for w in windows) or i in windows:
                store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                sizes[i] = _db_bytes(store.root)
        store.close()
    for w in windows:
        lo, hi = max(2, w - 10), min(steps, w + 10)
        out[w] = (statistics.median(times[i] for i in range(lo, hi + 1)) * 1e3, (sizes[hi] - sizes[lo]) / (hi - lo))
    return out


def real_run(n: int) -> tuple[float, float, int]:
    """(median store ms per step over steps 5-15, over the last 10 steps, db bytes) of a fake-backend run of n steps."""
    from janus_memory.runner.config import RunConfig
    from janus_memory.runner import experiment, store as store_mod

    times: dict[int, float] = {}
    orig = store_mod.RunStore.on_event

    def timed(self, ev):
        t = time.perf_counter()
        orig(self, ev)
        if type(ev).__name__ == "StepRecorded":
            times[ev.step] = time.perf_counter() - t

    store_mod.RunStore.on_event = timed
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        cfg = RunConfig(dataset="gsm8k", updater="dc_rs", controller="janus", backend="fake", encoder="hashing",
                        stream_size=n, test_size=2, out=str(Path(tmp) / "run"), cache_dir=str(Path(tmp) / "cache"),
                        janus={"warmup": 4, "coverage_size": 2, "boundary_size": 2, "fresh_size": 2, "trigger": "always"})
        try:
            experiment.run_experiment(cfg, log=lambda m: None)
        finally:
            store_mod.RunStore.on_event = orig
        size = _db_bytes(Path(tmp) / "run")
    early = statistics.median(times[i] for i in range(5, 16))
    late = statistics.median(times[i] for i in range(n - 9, n + 1))
    return early * 1e3, late * 1e3, size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--whole-steps", type=int, default=1_000)
    ap.add_argument("--real-steps", type=int, default=300)
    a = ap.parse_args()
    hi = a.steps - 10
    res = synthetic(a.steps, [10, 1000, hi], whole=False)
    print(f"synthetic, delta store ({a.steps} steps):")
    for w, (ms, b) in res.items():
        print(f"  step ~{w:>6}: store {ms:7.2f} ms/step, database {b / 1024:8.1f} KiB/step")
    print(f"  RATIO per-step store cost step {hi} / step 10: {res[hi][0] / res[10][0]:.2f}")
    print(f"  RATIO database bytes/step step {hi} / step 10: {res[hi][1] / res[10][1]:.2f}")
    if a.whole_steps:
        wh = a.whole_steps - 10
        old = synthetic(a.whole_steps, [10, wh], whole=True)
        print(f"synthetic, whole-checkpoint rewrite (before issue 17, {a.whole_steps} steps):")
        for w, (ms, b) in old.items():
            print(f"  step ~{w:>6}: store {ms:7.2f} ms/step, database {b / 1024:8.1f} KiB/step")
        print(f"  RATIO per-step store cost step {wh} / step 10: {old[wh][0] / old[10][0]:.2f}")
    if a.real_steps:
        e, l, size = real_run(a.real_steps)
        print(f"fake backend run, DC-RS + Janus, hashing encoder, {a.real_steps} steps: store {e:.2f} ms/step at steps "
              f"5-15, {l:.2f} ms/step at the last 10; RATIO {l / e:.2f}; run.sqlite {size / 2**20:.1f} MiB")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
