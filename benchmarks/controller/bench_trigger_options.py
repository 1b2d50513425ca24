"""Trigger options (issue 16) on the memory world (issue 14 part 1): trigger rate, recall of harmful candidates,
final true accuracy and regret vs the oracle, evaluator calls, per trigger setting, mean and 95% CI over seeds.

Usage: python benchmarks/bench_trigger_options.py [--seeds 10] [--steps 300] [--workers 2]
Needs janus_memory.bench.world (the world branch). Until it is merged, point JANUS_WORLD_BENCH at its bench folder
(default /work/wt-world/src/janus_memory/bench); it is appended to the package path, nothing is copied.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import janus_memory.bench as bench_pkg
from janus_memory.controller import JanusConfig

if not (Path(bench_pkg.__path__[0]) / "world.py").exists():
    bench_pkg.__path__.append(os.environ.get("JANUS_WORLD_BENCH", "/work/wt-world/src/janus_memory/bench"))

from janus_memory.bench.grid import run_grid  # noqa: E402
from janus_memory.bench.policies import PolicySpec  # noqa: E402
from janus_memory.bench.world import WorldConfig  # noqa: E402

PAPER = JanusConfig()
SEL = JanusConfig(trigger="selective")
SETTINGS = {
    "mmt (paper)": PAPER,
    "mmt-magnitude": SEL.replace(retention_min=0.0, shrink_max=0.0, arm_warmup=False),
    "mmt-quantile": SEL.replace(retention_min=0.0, shrink_max=0.0, magnitude_ratio=0.0,
                                        tau_quantile=0.2, arm_warmup=False),
    "items": SEL.replace(use_mmt=False),
    "selective": SEL,
    "selective-noarm": SEL.replace(arm_warmup=False),
    "items+mmt": SEL.replace(magnitude_ratio=0.0),
    "items+quantile0.3": SEL.replace(magnitude_ratio=0.0, tau_quantile=0.3),
}
COLS = ("trigger_rate", "triggers", "trig_recall", "trig_recall_1pt", "trig_recall_dump", "recall", "final", "regret",
        "evaluator_calls", "destr_through")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", help="comma-separated setting names (default: all)")
    a = ap.parse_args()
    names = a.only.split(",") if a.only else list(SETTINGS)
    specs = [PolicySpec("blind", "blind"), PolicySpec("oracle", "oracle")]
    specs += [PolicySpec(name, "janus", SETTINGS[name]) for name in names]
    t0 = time.time()
    res = run_grid(WorldConfig(n_steps=a.steps), list(range(a.seeds)), specs, workers=a.workers)
    agg = res.agg
    print(f"memory world: {a.seeds} seeds x {a.steps} steps, {time.time() - t0:.0f} s; mean ± 95% CI")
    print("| policy | " + " | ".join(COLS) + " |")
    print("|" + "---|" * (len(COLS) + 1))
    for pol in [s.name for s in specs]:
        cells = []
        for c in COLS:
            m, ci, _ = agg[pol][c]
            cells.append("nan" if m != m else (f"{m:.2f} ± {ci:.2f}" if ci == ci else f"{m:.2f}"))
        print(f"| {pol} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
