"""Late rules kept by a bank updater under a noisy scripted model: the recommended controller with and without
re-offers, over many seeds of `rules_late`.

Each seed is `examples/late_rules.yaml` (ExpRAG showing its whole bank, the scripted rules model, a falsified rule at
step 7 and a wipe at step 11, warm-up 3, 12 stream and 8 held-out tickets) with that seed and ``--noise`` flipped
answers (`--model rules:NOISE`), run twice: the recommended preset as it is (a rolled-back record is offered again
whole, `seq_reoffer=3`) and with `seq_reoffer=0`. Per arm: held-out tickets right, stated rules the final memory
holds, injected candidates blocked, genuine candidates rolled back, re-offers deployed; paired differences with 95%
intervals (normal approximation over seeds). Scripted: it measures the controller's logic, not a model.

    PYTHONPATH=src python benchmarks/controller/late_rules_banks.py --seeds 40 --noise 0.2 --out /tmp/lrb
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
ARMS = {"reoffer": {}, "no_reoffer": {"seq_reoffer": 0}}


def one(base: dict, seed: int, noise: float, arm: str, out: Path) -> dict:
    from janus_memory.report.kept import method_kept
    from janus_memory.run.experiment import run_experiment
    from janus_memory.settings.config import RunConfig

    folder = out / f"s{seed}-{arm}"
    settings = {**base, "seed": seed, "model": f"rules:{noise}", "controller": "janus", "out": str(folder),
                "janus": {**base.get("janus", {}), **ARMS[arm]}}
    if not (folder / "COMPLETE").exists():
        run_experiment(RunConfig.parse(settings), log=lambda m: None, resume=(folder / "run.sqlite").exists())
    m = json.loads((folder / "summary.json").read_text(encoding="utf-8"))["methods"]["exprag+janus"]
    kept = method_kept(folder, "exprag+janus", janus=True)
    inj = m.get("injections") or {}
    return {"test": m["test_correct"], "held": len(kept["held"]), "stated": len(kept["stated"]),
            "lost": sorted(set(kept["stated"]) - set(kept["held"])), "blocked": inj.get("blocked"),
            "genuine_rolled_back": kept["rolled_back"], "reoffers_deployed": m.get("reoffers_deployed", 0)}


def interval(xs: list[float]) -> str:
    mean = statistics.fmean(xs)
    half = 1.96 * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan")
    return f"{mean:+.2f} [{mean - half:+.2f}, {mean + half:+.2f}]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--noise", type=float, default=0.2)
    ap.add_argument("--out", default="runs/late-rules-banks")
    a = ap.parse_args(argv)
    base = yaml.safe_load((ROOT / "examples" / "late_rules.yaml").read_text(encoding="utf-8"))
    out = Path(a.out)
    t0 = time.time()
    rows = []
    for s in range(a.first_seed, a.first_seed + a.seeds):
        rows.append({"seed": s, **{arm: one(base, s, a.noise, arm, out) for arm in ARMS}})
    n = len(rows)
    lines = [f"rules_late, scripted rules model at {a.noise:.0%} flipped answers, ExpRAG (whole bank), recommended, "
             f"seeds {a.first_seed}-{a.first_seed + n - 1} (n = {n}), {time.time() - t0:.0f} s", "",
             "| arm | held out right (of 8) | stated rules held | injected blocked (of 2) | genuine rolled back | "
             "re-offers deployed | seeds holding every rule |", "|---|---|---|---|---|---|---|"]
    for arm in ARMS:
        def col(k: str, arm: str = arm) -> list:
            return [r[arm][k] for r in rows]

        every = sum(r[arm]["held"] == r[arm]["stated"] for r in rows)
        lines.append(f"| {arm} | {statistics.fmean(col('test')):.2f} | {sum(col('held'))} of {sum(col('stated'))} | "
                     f"{statistics.fmean(col('blocked')):.2f} | {statistics.fmean(col('genuine_rolled_back')):.2f} | "
                     f"{statistics.fmean(col('reoffers_deployed')):.2f} | {every} of {n} |")
    lines += ["", "reoffer - no_reoffer, paired per seed (mean [95%]): held out "
              + interval([r["reoffer"]["test"] - r["no_reoffer"]["test"] for r in rows]) + "; rules held "
              + interval([r["reoffer"]["held"] - r["no_reoffer"]["held"] for r in rows])]
    text = "\n".join(lines)
    print(text)
    (out / "late_rules_banks.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    (out / "late_rules_banks.md").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
