"""Benchmark of the Janus controller's own cost (not a test). Run: ``python benchmarks/performance/bench_controller.py``.

Prints, measured in one run with a fake evaluator and random 384-dim embeddings:
  1. controller overhead per step (wall time of ``Janus.decide`` minus the time spent inside the evaluator;
     encoder and LLM excluded) at 1k, 10k and 100k seen tasks, faithful (full re-clustering) vs incremental
     clustering: median and p99 over all measured steps, and the median over triggered steps;
  2. evaluator calls per trigger, full vs exact early-stopped evaluation, replayed over a recorded decision
     sequence (same evaluation sets), with the number of changed decisions, for two fake evaluators.
Targets from the brief: incremental overhead at 100k within 2x of 1k and < 5 ms median; early stopping saves
>= 30 % of evaluator calls with zero changed decisions. Options: --quick (smaller sizes), --sizes 1000,10000.
"""
from __future__ import annotations

import argparse
import sys
import time
import zlib

import numpy as np

from janus_memory.controller import Janus, JanusConfig, StepInput, compare
from janus_memory.controller.trigger import TriggerPolicy
from janus_memory.values import Task

DIM = 384


def unit(v):
    return (v / np.linalg.norm(v)).astype(np.float32)


class TimedEvaluator:
    """Fake evaluator (pseudo-random correctness) that accounts for its own time."""

    def __init__(self):
        self.seconds = 0.0

    def __call__(self, mem, tasks):
        t0 = time.perf_counter()
        h = zlib.crc32(mem.encode())
        out = [((h ^ zlib.crc32(t.id.encode())) & 3) != 0 for t in tasks]
        self.seconds += time.perf_counter() - t0
        return out


def fill(cfg: JanusConfig, n_seen: int, rng) -> tuple[Janus, TimedEvaluator, np.ndarray]:
    """Feed ``n_seen`` tasks with the trigger off, switch to MMT and absorb them with one (unmeasured) trigger."""
    ev = TimedEvaluator()
    j = Janus(cfg, ev)
    j._policy = TriggerPolicy("never", warmup=cfg.warmup)  # benchmark-only: fast fill without comparisons
    mem = unit(rng.normal(size=DIM))
    Q = rng.normal(size=(n_seen, DIM)).astype(np.float32)
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    for i in range(n_seen):
        j.decide(StepInput(Task(f"t{i}", "bench", "", ""), Q[i], "m", "m", mem, mem))
    j._policy = TriggerPolicy("always", warmup=cfg.warmup)
    j.decide(StepInput(Task(f"t{n_seen}", "bench", "", ""), unit(rng.normal(size=DIM)), "m", "m2", mem,
                       unit(mem + rng.normal(size=DIM))))
    j._policy = TriggerPolicy("mmt", warmup=cfg.warmup)
    return j, ev, mem


def measure(cfg: JanusConfig, n_seen: int, steps: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    j, ev, mem = fill(cfg, n_seen, rng)
    times, trig = [], []
    mem_text = "m2"
    for s in range(steps):
        q = unit(rng.normal(size=DIM))
        cand = unit(mem + 0.5 * rng.normal(size=DIM))
        inp = StepInput(Task(f"s{s}", "bench", "", ""), q, mem_text, f"c{s}", mem, cand)
        e0 = ev.seconds
        t0 = time.perf_counter()
        d = j.decide(inp)
        dt = time.perf_counter() - t0 - (ev.seconds - e0)
        times.append(dt * 1e3)
        if d.triggered:
            trig.append(dt * 1e3)
        if d.accept:
            mem, mem_text = cand, f"c{s}"
    t = np.array(times)
    return dict(n_seen=n_seen + 1, steps=steps, triggers=len(trig), median_ms=float(np.median(t)),
                p99_ms=float(np.percentile(t, 99)), trig_median_ms=float(np.median(trig)) if trig else float("nan"))


# ----------------------------------------------------------------------------- early stopping


def _u(*parts):
    return zlib.crc32("|".join(parts).encode()) / 2**32


class IndependentQuality:
    """Each memory has a quality q in [0.2, 0.9]; correctness independent per (memory, task)."""

    def __call__(self, mem, tasks):
        q = 0.2 + 0.7 * _u("q", mem)
        return [_u(mem, t.id) < q for t in tasks]


class SharedDifficulty:
    """Realistic near-ties: task difficulty u(t) shared by all memories; a candidate's quality is its parent's
    +- 0.05 (memory text 'parent>child'), so old and new agree on most tasks."""

    def quality(self, mem):
        q = 0.55
        for part in mem.split(">")[1:]:
            q += 0.1 * (_u("d", part) - 0.5)
        return q

    def __call__(self, mem, tasks):
        q = self.quality(mem)
        return [_u("task", t.id) < q for t in tasks]


def early_stop_replay(ev_factory, n_steps=520, seed=1, chain=False):
    rng = np.random.default_rng(seed)
    j = Janus(JanusConfig(), ev_factory())
    mem, mem_vec = "m", unit(rng.normal(size=DIM))
    tasks, recorded = {}, []
    for i in range(n_steps):
        t = Task(f"t{i}", "bench", "", "")
        tasks[t.id] = t
        cand = f"{mem}>{i}" if chain else f"m{i}"
        cand_vec = unit(mem_vec + 0.7 * rng.normal(size=DIM))
        d = j.decide(StepInput(t, unit(rng.normal(size=DIM)), mem, cand, mem_vec, cand_vec))
        if d.triggered:
            recorded.append(([tasks[x] for x in d.eval_ids], mem, cand, d.accept, d.evaluator_calls))
        if d.accept:
            mem, mem_vec = cand, cand_vec
    out = {}
    full = sum(r[4] for r in recorded)
    for rnd in (5, 1):
        calls = changed = 0
        for entries, old, new, acc, _ in recorded:
            c = compare(ev_factory(), entries, old, new, early_stop=True, round_size=rnd)
            calls += c.calls
            changed += c.accept != acc
        out[rnd] = (calls, changed)
    return len(recorded), full, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--quick", action="store_true", help="sizes 1000,10000 only")
    args = ap.parse_args(argv)
    sizes = [1000, 10000] if args.quick else [int(s) for s in args.sizes.split(",")]
    t_start = time.perf_counter()
    print(f"# Janus controller overhead per step (ms; encoder/LLM/evaluator excluded), dim={DIM}")
    print(f"{'mode':<12}{'seen':>8}{'steps':>7}{'trig':>6}{'median':>9}{'p99':>9}{'trig-med':>10}")
    res = {}
    for mode in ("incremental", "full"):
        for n in sizes:
            if mode == "full":
                steps = 200 if n <= 1000 else 30 if n <= 10000 else 6
            else:
                steps = 400
            cfg = JanusConfig(clustering=mode)
            r = measure(cfg, n, steps)
            res[(mode, n)] = r
            print(f"{mode:<12}{r['n_seen']:>8}{r['steps']:>7}{r['triggers']:>6}{r['median_ms']:>9.3f}"
                  f"{r['p99_ms']:>9.3f}{r['trig_median_ms']:>10.3f}", flush=True)
    lo, hi = min(sizes), max(sizes)
    a, b = res[("incremental", lo)], res[("incremental", hi)]
    ratio = b["median_ms"] / a["median_ms"]
    tratio = b["trig_median_ms"] / a["trig_median_ms"]
    print(f"incremental median ratio {hi}/{lo} seen: {ratio:.2f}x (triggered steps: {tratio:.2f}x); "
          f"median at {hi}: {b['median_ms']:.3f} ms -> target (<=2x and <5 ms): "
          f"{'MET' if ratio <= 2 and b['median_ms'] < 5 else 'NOT MET'}")
    f = res[("full", hi)]
    print(f"faithful triggered-step median at {hi} seen: {f['trig_median_ms']:.1f} ms "
          f"({f['trig_median_ms'] / max(b['trig_median_ms'], 1e-9):.0f}x the incremental one)")

    print("\n# Exact early stopping, replayed over a recorded decision sequence (faithful config, 500 post-warm-up steps)")
    for name, factory, chain in (("independent quality", IndependentQuality, False),
                                 ("shared difficulty (near-ties)", SharedDifficulty, True)):
        n_trig, full, out = early_stop_replay(factory, chain=chain)
        for rnd, (calls, changed) in out.items():
            saved = 1 - calls / full
            print(f"{name:<31} triggers={n_trig:>4} full calls/trigger={full / n_trig:6.2f} "
                  f"early-stop(round={rnd}) calls/trigger={calls / n_trig:6.2f} saved={saved:6.1%} "
                  f"changed decisions={changed}")
    print(f"\ntotal wall time {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
