"""Run-store growth (issue 17): per-step store cost and database bytes per step, step 10 vs step 10,000.

Measurements, printed as ratios measured in this one run (no thresholds are asserted here), with the 1-minute load
average at the start, after the synthetic part and at the end (the machine may be shared):

1. ``synthetic``: RunStore.commit_step with a checkpoint shaped like the real one (controller state: one task + one
   384-d float32 embedding appended per step as base64, momentum and k-means centroids rewritten every step; updater
   state: a retrieval bank gaining one record + embedding per step, a rewritten cheatsheet; counters) and the hints
   the real producers give (Janus.state_hints, RetrievalBank.state_hints; runner/ckpt_log.py). Median commit time and
   database bytes per step in a window of 21 steps around step 10, 1,000 and 10,000. Each window has its own run
   folder, first advanced untimed to the window; the windows' steps are then committed interleaved, so a load change
   on the machine hits every window alike. The same is measured without hints (every part compared: the store before
   this change) and for the pre-issue-17 behaviour (whole checkpoint rewritten every step) at smaller step counts.
2. ``fake backend``: a real ``janus run --backend fake`` (DC-RS + Janus, hashing encoder, trigger=always) of N steps,
   timing the store's event handler per step (``--real-steps``, default 300; 0 skips it). Sequential: early and late
   steps run at different times, so a load change shows in this ratio.

Usage: PYTHONPATH=src python benchmarks/bench_store.py [--steps 10000] [--real-steps 300]
"""
from __future__ import annotations

import argparse
import base64
import os
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
    """A growing checkpoint with the real one's shape (see the module docstring), and the producers' hints."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.rows: list[str] = []  # base64 of each 384-d float32 row (1,536 bytes: concatenation is exact base64)
        self.tasks: list[dict] = []
        self.bank: list[dict] = []
        self.token = object()  # the producers' "only grew" token (runner/ckpt_log.py); constant: nothing is restored

    def _emb(self) -> dict:
        return {"dtype": "<f4", "shape": [len(self.rows), DIM], "b64": "".join(self.rows)}

    def step(self, i: int) -> tuple[dict, dict, dict, str]:
        self.rows.append(base64.b64encode(self.rng.standard_normal(DIM).astype("<f4").tobytes()).decode("ascii"))
        self.tasks.append({"type": "task", "id": f"gsm8k:{i}", "question": f"question {i} " * 12, "answer": str(i)})
        self.bank.append({"task_id": f"gsm8k:{i}", "question": f"question {i} " * 12, "answer": f"answer {i} " * 20})
        cheatsheet = f"Version: {i}\n" + "strategy line\n" * 40
        ck = {"updater": {"format": 1, "updater": "dc_rs", "stats": {"steps": i},
                          "state": {"cheatsheet": cheatsheet, "bank": {"records": list(self.bank), "emb": self._emb()}}},
              "janus": {"format": 1, "step": i, "tasks": list(self.tasks), "ids": [t["id"] for t in self.tasks],
                        "embeddings": {"dim": DIM, "n": i, "data": self._emb()},
                        "momentum": _b64(self.rng.standard_normal(DIM)),
                        "coverage_model": {"kind": "kmeans", "centroids": _b64(self.rng.standard_normal((12, DIM)))},
                        "stats": {"triggers": i // 3, "accepts": i // 5}},
              "counters": {"n_correct": i // 2, "triggers": i // 3, "usage": {"solver": {"calls": i, "wall_s": i * 0.1}},
                           "wall_s": i * 0.37, "eval_checkpoints": {}}}
        decision = {"step": i, "task_id": f"gsm8k:{i}", "accept": i % 5 != 0, "triggered": True, "cosine": 0.93}
        record = {"step": i, "task_id": f"gsm8k:{i}", "output": "the answer is 42 " * 30, "usage": {"solver": {"calls": 1}}}
        return ck, decision, record, cheatsheet

    def hints(self, i: int) -> dict:
        """What Janus.state_hints and RetrievalBank.state_hints declare for this state."""
        t, chars = self.token, 4 * (i * DIM * 4 // 3)
        return {("updater", "state", "bank", "records"): (t, i), ("updater", "state", "bank", "emb", "b64"): (t, chars),
                ("janus", "tasks"): (t, i), ("janus", "ids"): (t, i), ("janus", "embeddings", "data", "b64"): (t, chars)}


def _file_bytes(root: Path) -> int:
    return sum((root / n).stat().st_size for n in (RunStore.DB, RunStore.DB + "-wal") if (root / n).exists())


class _Run:
    """One synthetic run folder advanced step by step."""

    def __init__(self, root: Path, mode: str):
        self.store, self.state, self.mode, self.i = RunStore.create(root), _State(), mode, 0

    def commit(self) -> tuple[float, float]:
        """Commit the next step; returns its store (wall, CPU) seconds (the state's own construction excluded)."""
        self.i += 1
        ck, dec, rec, mem = self.state.step(self.i)
        if self.mode == "whole":
            self.store.ckpt.forget()  # the pre-issue-17 behaviour: the whole checkpoint every step
        hints = self.state.hints(self.i) if self.mode == "hints" else None
        t, c = time.perf_counter(), time.process_time()
        self.store.commit_step("m", self.i, dec, rec, mem, ck, candidate=(mem, "p", None), hints=hints)
        return time.perf_counter() - t, time.process_time() - c

    def advance(self, to: int) -> None:
        """Commit untimed up to step ``to`` with durability off (no fsync: the steps before a window only build its
        database; the timed steps run with the store's own settings, synchronous=FULL and fsync'd memory files)."""
        real = os.fsync
        os.fsync = lambda fd: None
        self.store.db.execute("PRAGMA synchronous=OFF")
        try:
            while self.i < to:
                self.commit()
        finally:
            os.fsync = real
            self.store.db.execute("PRAGMA synchronous=FULL")

    def db_bytes(self) -> int:
        """The database's size in pages as this connection sees it (WAL content included; no checkpoint forced)."""
        db = self.store.db
        return db.execute("PRAGMA page_count").fetchone()[0] * db.execute("PRAGMA page_size").fetchone()[0]


def synthetic(windows: list[int], mode: str, half: int = 10) -> dict[int, tuple[float, float, float]]:
    """{window centre: (median commit wall ms, median commit CPU ms, db bytes per step)} for the steps centre-half ..
    centre+half.

    One run folder per window, each first advanced (untimed) to its window; then the windows' steps are committed
    interleaved (window A step, window B step, ...), so a change in the machine's load hits every window alike.
    CPU time (time.process_time) is the store's own work; wall time adds fsync and waiting for a busy CPU."""
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        runs = {w: _Run(Path(tmp) / f"run{w}", mode) for w in windows}
        for w, r in runs.items():
            r.advance(max(0, w - half - 1))
        times: dict[int, list[tuple[float, float]]] = {w: [] for w in windows}
        sizes: dict[int, list[int]] = {w: [r.db_bytes()] for w, r in runs.items()}
        for _ in range(2 * half + 1):
            for w, r in runs.items():
                times[w].append(r.commit())
                sizes[w].append(r.db_bytes())
        for r in runs.values():
            r.store.close()
    return {w: (statistics.median(t for t, _ in times[w]) * 1e3, statistics.median(c for _, c in times[w]) * 1e3,
                (sizes[w][-1] - sizes[w][1]) / (len(sizes[w]) - 2)) for w in windows}


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
        size = _file_bytes(Path(tmp) / "run")
    early = statistics.median(times[i] for i in range(5, 16))
    late = statistics.median(times[i] for i in range(n - 9, n + 1))
    return early * 1e3, late * 1e3, size


def _load() -> str:
    return "load average (1 min) " + (f"{os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "n/a")


def _print(title: str, res: dict[int, tuple[float, float, float]]) -> None:
    lo, hi = min(res), max(res)
    print(title)
    for w, (ms, cpu, b) in res.items():
        print(f"  step ~{w:>6}: store {ms:7.2f} ms/step wall, {cpu:7.2f} ms/step CPU; database {b / 1024:8.1f} KiB/step")
    print(f"  RATIO per-step store cost step {hi} / step {lo}: wall {res[hi][0] / res[lo][0]:.2f}, "
          f"CPU {res[hi][1] / res[lo][1]:.2f}")
    print(f"  RATIO database bytes/step step {hi} / step {lo}: {res[hi][2] / res[lo][2]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--whole-steps", type=int, default=1_000)
    ap.add_argument("--no-hints-steps", type=int, default=3_000,
                    help="also measure the store without the producers' hints (full comparison) up to this step")
    ap.add_argument("--real-steps", type=int, default=300)
    a = ap.parse_args()
    print(f"start: {_load()}", flush=True)
    hi = a.steps - 10
    _print(f"synthetic, delta store with the producers' hints ({a.steps} steps, windows interleaved):",
           synthetic(sorted({w for w in (10, 1000, hi) if w <= hi}), "hints"))
    if a.no_hints_steps:
        _print(f"synthetic, delta store without hints (every part compared; {a.no_hints_steps} steps):",
               synthetic([10, a.no_hints_steps - 10], "compare"))
    if a.whole_steps:
        _print(f"synthetic, whole-checkpoint rewrite (before issue 17, {a.whole_steps} steps):",
               synthetic([10, a.whole_steps - 10], "whole"))
    print(f"after synthetic: {_load()}", flush=True)
    if a.real_steps:
        e, l, size = real_run(a.real_steps)
        print(f"fake backend run, DC-RS + Janus, hashing encoder, {a.real_steps} steps: store {e:.2f} ms/step at steps "
              f"5-15, {l:.2f} ms/step at the last 10; RATIO {l / e:.2f}; run.sqlite {size / 2**20:.1f} MiB")
    print(f"end: {_load()}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
