"""Run-store growth (issue 17): per-step store cost and database bytes per step, step 10 vs step 10,000.

Measurements, printed as ratios measured in this one run (no thresholds are asserted here), with the 1-minute load
average at the start, after the synthetic part and at the end (the machine may be shared):

1. ``synthetic``: RunStore.commit_step with a checkpoint shaped like the real one (controller state: one task + one
   384-d float32 embedding appended per step, momentum and k-means centroids rewritten every step; updater state: a
   retrieval bank gaining one record + embedding per step, a rewritten cheatsheet; counters) and the hints the real
   producers give (Janus.state_hints, RetrievalBank.state_hints; store/ckpt_log.py). The embedding matrices are
   handed over as the stream loop hands them (``rows``: RowsRef handles from a real EmbeddingStore and
   RetrievalBank, stored as new rows per step, store/ckpt_rows.py). Median commit time and database bytes per step
   in a window of 21 steps around step 10, 1,000 and 10,000. Each window has its own run folder, first advanced
   untimed to the window; the windows' steps are then committed interleaved, so a load change on the machine hits
   every window alike. For comparison, at smaller step counts: the matrices as growing base64 strings (``b64``: the
   store before store format 2), the same without hints (every part compared), and the pre-issue-17 behaviour (whole
   checkpoint rewritten every step).
2. ``fake backend``: a real ``janus run --backend fake`` (DC-RS + Janus, hashing encoder, trigger=always) of N steps
   (``--real-steps``, default 300; 0 skips it), timing per step everything the store costs: building the checkpoint
   (``Updater.snapshot(by_reference=True)``, ``Janus.state_dict(by_reference=True)``) plus the store's event
   handler, and the database bytes per step. Sequential: early and late steps run at different times, so a load
   change shows in this ratio.

3. ``memory text``: RunStore.commit_step with a memory text that grows by one ~1 KB item per step, appended
   (``append``: ReasoningBank's bank, ExpRAG, ACE ADDs) or inserted before the item nearest the middle (``middle``);
   the candidate is the memory plus the new item, deployed at 4 of 5 steps (the 5th is a rollback: the candidate is
   stored, the memory stays). The checkpoint is a constant small dict, so this measures the memory and candidate
   texts and the per-version memory files only. One run folder per window, started from the memory text a run has
   at that step (the database's earlier history is not built: with whole texts it would be ~100 GB at step 10,000),
   windows interleaved; each window is ``--text-window`` steps (80 = one whole cycle of the delta chain at 4 of 5
   deployed: every window holds the same number of keyframes). Printed per window: commit wall/CPU ms/step (median
   and mean), of which the sha256 of the deployed and candidate texts (measured apart, the floor every store pays),
   and the memory file written per deployed version (mean ms/step and bytes/step), and database bytes/step.

Usage: PYTHONPATH=src python benchmarks/performance/bench_store.py [--steps 10000] [--real-steps 300] [--text-modes append,middle]
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

from janus_memory.controller.evalset import EmbeddingStore
from janus_memory.rows import by_reference
from janus_memory.store.store import RunStore
from janus_memory.updaters.bank import RetrievalBank

DIM = 384


def _b64(a: np.ndarray) -> dict:
    return {"dtype": "<f4", "shape": list(a.shape), "b64": base64.b64encode(a.astype("<f4").tobytes()).decode("ascii")}


class _State:
    """A growing checkpoint with the real one's shape (see the module docstring), and the producers' hints.
    ``rows``: the matrices by reference (RowsRef from a real EmbeddingStore / RetrievalBank), as run/loop.py hands
    them over; else as growing base64 strings (the form before store format 2)."""

    def __init__(self, rows: bool, seed: int = 0):
        self.rng, self.use_rows = np.random.default_rng(seed), rows
        self.rows: list[str] = []  # b64 form: base64 of each 384-d float32 row (1,536 bytes: concatenation is exact)
        self.store, self.bank = EmbeddingStore(), RetrievalBank()
        self.tasks: list[dict] = []
        self.records: list[dict] = []
        self.token = object()  # the producers' "only grew" token (store/ckpt_log.py); constant: nothing is restored

    def _b64(self) -> dict:
        return {"dtype": "<f4", "shape": [len(self.rows), DIM], "b64": "".join(self.rows)}

    def _matrices(self, i: int, rec: dict) -> tuple[dict, dict]:
        """(controller embeddings, bank state) after appending step ``i``'s rows."""
        v = self.rng.standard_normal(DIM).astype("<f4")
        if self.use_rows:
            self.store.append(v)
            self.bank.add(rec, v)
            with by_reference():
                return self.store.state_dict(self.token), self.bank.state()
        self.rows.append(base64.b64encode(v.tobytes()).decode("ascii"))
        self.records.append(rec)
        return ({"dim": DIM, "n": i, "data": self._b64()},
                {"records": list(self.records), "dim": DIM, "emb_b64": self._b64()["b64"]})

    def step(self, i: int) -> tuple[dict, dict, dict, str]:
        self.tasks.append({"type": "task", "id": f"gsm8k:{i}", "question": f"question {i} " * 12, "answer": str(i)})
        emb, bank = self._matrices(i, {"task_id": f"gsm8k:{i}", "question": f"question {i} " * 12,
                                       "answer": f"answer {i} " * 20})
        cheatsheet = f"Version: {i}\n" + "strategy line\n" * 40
        ck = {"updater": {"format": 1, "updater": "dc_rs", "stats": {"steps": i},
                          "state": {"cheatsheet": cheatsheet, "bank": bank}},
              "janus": {"format": 1, "step": i, "tasks": list(self.tasks), "ids": [t["id"] for t in self.tasks],
                        "embeddings": emb, "momentum": _b64(self.rng.standard_normal(DIM)),
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
        bank_t = self.bank.state_hints()[("records",)][0] if self.use_rows else t
        return {("updater", "state", "bank", "records"): (bank_t, i),
                ("updater", "state", "bank", "emb_b64"): (bank_t, chars),
                ("janus", "tasks"): (t, i), ("janus", "ids"): (t, i), ("janus", "embeddings", "data", "b64"): (t, chars)}


def _file_bytes(root: Path) -> int:
    return sum((root / n).stat().st_size for n in (RunStore.DB, RunStore.DB + "-wal") if (root / n).exists())


class _Run:
    """One synthetic run folder advanced step by step."""

    def __init__(self, root: Path, mode: str):
        self.store, self.state, self.mode, self.i = RunStore.create(root), _State(rows=mode == "rows"), mode, 0

    def commit(self) -> tuple[float, float]:
        """Commit the next step; returns its store (wall, CPU) seconds (the state's own construction excluded)."""
        self.i += 1
        ck, dec, rec, mem = self.state.step(self.i)
        if self.mode == "whole":
            self.store.ckpt.forget()  # the pre-issue-17 behaviour: the whole checkpoint every step
        hints = self.state.hints(self.i) if self.mode in ("rows", "b64") else None
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


def real_run(n: int) -> dict:
    """A fake-backend run of n steps: per step, the store's cost (building the checkpoint + the store's event handler,
    ms) and the database's growth (bytes); medians over steps 5-15 ("early") and the last 10 ("late")."""
    from janus_memory.controller.janus import Janus
    from janus_memory.run import experiment
    from janus_memory.settings.config import RunConfig
    from janus_memory.store import store as store_mod
    from janus_memory.updaters.base import Updater

    cost: dict[int, float] = {}
    cpu: dict[int, float] = {}
    size: dict[int, int] = {}
    pending = [0.0, 0.0]  # wall, CPU
    originals = (store_mod.RunStore.on_event, Updater.snapshot, Janus.state_dict)

    def timing(fn):
        def wrapped(*a, **kw):
            t, c = time.perf_counter(), time.process_time()
            try:
                return fn(*a, **kw)
            finally:
                pending[0] += time.perf_counter() - t
                pending[1] += time.process_time() - c
        return wrapped

    def on_event(self, ev):
        t, c = time.perf_counter(), time.process_time()
        originals[0](self, ev)
        if type(ev).__name__ == "StepRecorded":
            cost[ev.step] = pending[0] + time.perf_counter() - t
            cpu[ev.step] = pending[1] + time.process_time() - c
            db = self.db
            size[ev.step] = db.execute("PRAGMA page_count").fetchone()[0] * db.execute("PRAGMA page_size").fetchone()[0]
        pending[:] = [0.0, 0.0]

    store_mod.RunStore.on_event, Updater.snapshot, Janus.state_dict = (
        on_event, timing(originals[1]), timing(originals[2]))
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        cfg = RunConfig(dataset="gsm8k", updater="dc_rs", controller="janus", backend="fake", encoder="hashing",
                        stream_size=n, test_size=2, out=str(Path(tmp) / "run"), cache_dir=str(Path(tmp) / "cache"),
                        janus={"warmup": 4, "coverage_size": 2, "boundary_size": 2, "fresh_size": 2, "trigger": "always"})
        try:
            experiment.run_experiment(cfg, log=lambda m: None)
        finally:
            store_mod.RunStore.on_event, Updater.snapshot, Janus.state_dict = originals
        total = _file_bytes(Path(tmp) / "run")
    n = max(cost)
    early, late = range(5, 16), range(n - 9, n + 1)
    growth = lambda r: statistics.median(size[i] - size[i - 1] for i in r)  # noqa: E731
    return {"n": n, "early_ms": statistics.median(cost[i] for i in early) * 1e3,
            "late_ms": statistics.median(cost[i] for i in late) * 1e3,
            "early_cpu": statistics.median(cpu[i] for i in early) * 1e3,
            "late_cpu": statistics.median(cpu[i] for i in late) * 1e3,
            "early_bytes": growth(early), "late_bytes": growth(late), "total": total}


def _item(i: int) -> str:
    """One memory item of ~1 KB (10 lines), as a ReasoningBank/ExpRAG entry would add."""
    lines = [f"## Memory item {i}: what worked on task gsm8k:{i}\n"]
    lines += [f"- lesson {k} of item {i}: restate the question, write each quantity with its unit, compute, check {k}\n"
              for k in range(9)]
    return "".join(lines)


class _TextRun:
    """A run folder whose memory text grows by one item per step (module docstring, part 3)."""

    def __init__(self, root: Path, mode: str, start: int):
        self.mode, self.i = mode, start
        self.text = "# Memory\n" + "".join(_item(j) for j in range(1, start + 1))
        self.store = RunStore.create(root)
        self.store.save_initial_memory("m", self.text)
        self.file_s, self.file_bytes = [0.0, 0.0], [0]  # memory files: wall s, CPU s; bytes
        real = self.store._write_memory_file

        def timed(method, step, sha, text):
            t, c = time.perf_counter(), time.process_time()
            try:
                return real(method, step, sha, text)
            finally:
                self.file_s[0] += time.perf_counter() - t
                self.file_s[1] += time.process_time() - c
                self.file_bytes[0] += len(text.encode("utf-8"))
        self.store._write_memory_file = timed

    def commit(self) -> tuple[float, ...]:
        """The next step: commit (wall s, CPU s), sha256 of its two texts (wall s, CPU s), memory file (wall s, CPU s,
        bytes)."""
        from janus_memory.store.jsonio import text_hash

        self.i += 1
        old = self.text
        if self.mode == "append":
            cand = old + _item(self.i)
        else:
            at = old.find("\n## ", len(old) // 2) + 1 or len(old)
            cand = old[:at] + _item(self.i) + old[at:]
        deploy = self.i % 5 != 0
        mem = cand if deploy else old
        dec = {"step": self.i, "accept": deploy, "triggered": True}
        rec = {"step": self.i, "output": "the answer is 42"}
        parent = text_hash(old)
        t, c = time.perf_counter(), time.process_time()
        text_hash(mem), text_hash(cand)
        h, hc = time.perf_counter() - t, time.process_time() - c
        self.file_s[:], self.file_bytes[0] = [0.0, 0.0], 0
        t, c = time.perf_counter(), time.process_time()
        self.store.commit_step("m", self.i, dec, rec, mem, {"step": self.i}, candidate=(cand, parent, None))
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        self.text = mem
        return wall, cpu, h, hc, self.file_s[0], self.file_s[1], self.file_bytes[0]

    def db_bytes(self) -> int:
        db = self.store.db
        return db.execute("PRAGMA page_count").fetchone()[0] * db.execute("PRAGMA page_size").fetchone()[0]


def text_growth(starts: list[int], mode: str, window: int) -> dict[int, dict]:
    """Per window start: medians and means over ``window`` steps (module docstring, part 3)."""
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        runs = {w: _TextRun(Path(tmp) / f"run{w}", mode, w) for w in starts}
        got: dict[int, list[tuple]] = {w: [] for w in starts}
        size0 = {w: r.db_bytes() for w, r in runs.items()}
        for _ in range(window):
            for w, r in runs.items():
                got[w].append(r.commit())
        out = {}
        for w, r in runs.items():
            g = got[w]
            col = lambda k, g=g: [x[k] for x in g]  # noqa: E731
            out[w] = {"chars": len(r.text), "wall_med": statistics.median(col(0)) * 1e3,
                      "wall_mean": statistics.fmean(col(0)) * 1e3, "cpu_med": statistics.median(col(1)) * 1e3,
                      "cpu_mean": statistics.fmean(col(1)) * 1e3, "sha_mean": statistics.fmean(col(2)) * 1e3,
                      "sha_cpu": statistics.fmean(col(3)) * 1e3, "file_mean": statistics.fmean(col(4)) * 1e3,
                      "file_cpu": statistics.fmean(col(5)) * 1e3, "file_bytes": sum(col(6)) / window,
                      "db_bytes": (r.db_bytes() - size0[w]) / window}
            r.store.close()
    return out


def _print_text(mode: str, window: int, res: dict[int, dict]) -> None:
    lo, hi = min(res), max(res)
    print(f"memory text, {mode} (~1 KB item per step, deployed at 4 of 5 steps; windows of {window} steps, interleaved):")
    for w, r in res.items():
        print(f"  steps {w + 1:>6}-{w + window:<6} (memory ~{r['chars'] / 2**20:6.2f} MiB): commit {r['wall_med']:8.2f} "
              f"ms/step wall median ({r['wall_mean']:8.2f} mean), CPU {r['cpu_med']:7.2f} median ({r['cpu_mean']:7.2f} "
              f"mean); of which sha256 of the 2 texts {r['sha_mean']:6.2f} wall {r['sha_cpu']:6.2f} CPU, memory file "
              f"{r['file_mean']:7.2f} wall {r['file_cpu']:6.2f} CPU ms/step ({r['file_bytes'] / 1024:9.1f} KiB/step); "
              f"database {r['db_bytes'] / 1024:9.1f} KiB/step")
    a, b = res[lo], res[hi]
    rest = lambda r, k, h, f: r[k] - r[h] - r[f]  # noqa: E731  (the store's cost without sha256 and memory file)
    print(f"  RATIO per-step store cost step {hi + window} / step {lo + window}: wall median {b['wall_med'] / a['wall_med']:.2f}"
          f", CPU mean {b['cpu_mean'] / a['cpu_mean']:.2f}; without sha256 and memory file (means): wall "
          f"{rest(b, 'wall_mean', 'sha_mean', 'file_mean') / rest(a, 'wall_mean', 'sha_mean', 'file_mean'):.2f}, CPU "
          f"{rest(b, 'cpu_mean', 'sha_cpu', 'file_cpu') / rest(a, 'cpu_mean', 'sha_cpu', 'file_cpu'):.2f}")
    print(f"  RATIO database bytes/step step {hi + window} / step {lo + window}: {b['db_bytes'] / a['db_bytes']:.2f}; "
          f"memory files bytes/step: {b['file_bytes'] / max(a['file_bytes'], 1):.2f}")


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
    ap.add_argument("--b64-steps", type=int, default=2_000,
                    help="also measure the store before format 2 (matrices as base64 strings, with hints) up to this step")
    ap.add_argument("--whole-steps", type=int, default=1_000)
    ap.add_argument("--no-hints-steps", type=int, default=0,
                    help="also measure the base64 form without the producers' hints (full comparison) up to this step")
    ap.add_argument("--real-steps", type=int, default=300)
    ap.add_argument("--text-modes", default="append,middle",
                    help="memory-text growth modes to measure (append, middle; empty: none)")
    ap.add_argument("--text-steps", type=int, default=None, help="last step of the memory-text windows (default --steps)")
    ap.add_argument("--text-window", type=int, default=80)
    ap.add_argument("--only-text", action="store_true", help="skip parts 1 and 2 (checkpoint measurements)")
    a = ap.parse_args()
    print(f"start: {_load()}", flush=True)
    if not a.only_text:
        _checkpoint_parts(a)
    last = a.text_steps or a.steps
    for mode in [m for m in a.text_modes.split(",") if m]:
        starts = sorted({w for w in (10, 1000, last - a.text_window) if 0 <= w <= last - a.text_window})
        _print_text(mode, a.text_window, text_growth(starts, mode, a.text_window))
        print(f"after memory text ({mode}): {_load()}", flush=True)
    print(f"end: {_load()}")
    sys.stdout.flush()


def _checkpoint_parts(a) -> None:
    hi = a.steps - 10
    _print(f"synthetic, rows store: matrices as new rows, producers' hints ({a.steps} steps, windows interleaved):",
           synthetic(sorted({w for w in (10, 1000, hi) if w <= hi}), "rows"))
    if a.b64_steps:
        _print(f"synthetic, matrices as growing base64 strings, hints (before store format 2; {a.b64_steps} steps):",
               synthetic([10, a.b64_steps - 10], "b64"))
    if a.no_hints_steps:
        _print(f"synthetic, base64 strings without hints (every part compared; {a.no_hints_steps} steps):",
               synthetic([10, a.no_hints_steps - 10], "compare"))
    if a.whole_steps:
        _print(f"synthetic, whole-checkpoint rewrite (before issue 17, {a.whole_steps} steps):",
               synthetic([10, a.whole_steps - 10], "whole"))
    print(f"after synthetic: {_load()}", flush=True)
    if a.real_steps:
        r = real_run(a.real_steps)
        print(f"fake backend run, DC-RS + Janus, hashing encoder (16,384-d), {r['n']} steps: store cost (checkpoint "
              f"built + stored) {r['early_ms']:.2f} ms/step at steps 5-15, {r['late_ms']:.2f} at the last 10; RATIO "
              f"{r['late_ms'] / r['early_ms']:.2f}; database {r['early_bytes'] / 1024:.1f} -> {r['late_bytes'] / 1024:.1f}"
              f" KiB/step, RATIO {r['late_bytes'] / r['early_bytes']:.2f}; run.sqlite {r['total'] / 2**20:.1f} MiB")
        print(f"  same, CPU time (not slowed by other load on the machine): {r['early_cpu']:.2f} ms/step at steps 5-15, "
              f"{r['late_cpu']:.2f} at the last 10; RATIO {r['late_cpu'] / r['early_cpu']:.2f}")


if __name__ == "__main__":
    main()
