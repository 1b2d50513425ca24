"""How many memory updates in real Dynamic Cheatsheet trajectories are trivially equal to the memory they replace?

Reads ``dc-trajectories/*.jsonl`` (shipped in the package, or JANUS_DATA_DIR's; one step per line: previous_cheatsheet,
new_cheatsheet) and classifies every step: ``identical`` (same text), ``trivially_equal`` (same canonical form,
controller/equivalence.py, default bookkeeping = version line), ``equal_ignoring_counts`` (also ignoring DC's
``** Count: N`` usage counters; not our default) and ``different``. With ``skip_trivially_equal`` on, a triggered step
in the first two classes costs no evaluation, so the printed share is the upper bound of the saving (the share of
triggers that land on such steps).

``equal_ignoring_counts`` applies what ``JanusConfig.ignore_usage_counters`` adds: DC's ``** Count: N`` lines and
ACE's ``helpful=N harmful=N`` bullet counters are bookkeeping too.

``--runs RUN_DIR ...`` classifies the (old memory, candidate) pair of every step of every Janus method of our own run
folders instead, and counts what each option would have saved where it matters: at the steps whose trigger fired
(a comparison: ``evaluator_calls`` solves).

    python benchmarks/controller/bench_trivially_equal.py [--data DIR]
    python benchmarks/controller/bench_trivially_equal.py --runs RUN_DIR [RUN_DIR ...]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from janus_memory.controller.equivalence import COUNTER_BOOKKEEPING, COUNTER_INLINE, trivially_equal
from janus_memory.tasks.data import read_jsonl, resolve_data_dir

DEFAULT_DIR = resolve_data_dir(None) / "dc-trajectories"  # JANUS_DATA_DIR's, else the copy shipped in the package


def classify(old: str, new: str) -> str:
    if old == new:
        return "identical"
    if trivially_equal(old, new):
        return "trivially_equal"
    if trivially_equal(old, new, COUNTER_BOOKKEEPING, COUNTER_INLINE):
        return "equal_ignoring_counts"
    return "different"


KINDS = ("identical", "trivially_equal", "equal_ignoring_counts", "different")


def classify_runs(run_dirs: list[Path]) -> list[dict]:
    """Per Janus method of each run folder: steps and fired comparisons by class, and their evaluator calls."""
    from janus_memory.bench.replay import load_run_folder
    from janus_memory.store.reader import RunReader

    out = []
    for run in run_dirs:
        reader = RunReader(run)
        for traj in load_run_folder(run):
            method = traj.name.split("/", 1)[1]
            if not method.endswith("+janus"):
                continue
            decisions = {d["step"]: d.get("decision") or {} for d in reader.decisions(method)}
            row = {"run": run.name, "method": method, "steps": dict.fromkeys(KINDS, 0),
                   "fired": dict.fromkeys(KINDS, 0), "calls": dict.fromkeys(KINDS, 0)}
            for st in traj.steps:
                kind = classify(st.before, st.after)
                row["steps"][kind] += 1
                d = decisions.get(st.step, {})
                if d.get("triggered"):
                    row["fired"][kind] += 1
                    row["calls"][kind] += int(d.get("evaluator_calls") or 0)
            out.append(row)
    return out


def main_runs(run_dirs: list[Path]) -> int:
    rows = classify_runs(run_dirs)
    if not rows:
        print("no Janus method in these run folders", file=sys.stderr)
        return 2
    print(f"{'run/method':<34} {'steps':>5} {'fired':>5}   fired by class (identical / trivially_equal / "
          "equal_ignoring_counts / different), evaluator calls in brackets")
    for r in rows:
        by = " / ".join(f"{r['fired'][k]} [{r['calls'][k]}]" for k in KINDS)
        print(f"{r['run'] + '/' + r['method']:<34} {sum(r['steps'].values()):>5} {sum(r['fired'].values()):>5}   {by}")
        saved = sum(r["calls"][k] for k in ("identical", "trivially_equal"))
        saved_c = saved + r["calls"]["equal_ignoring_counts"]
        total = sum(r["calls"].values())
        print(f"{'':<34} evaluator calls {total}: skip_trivially_equal saves {saved}, "
              f"with ignore_usage_counters {saved_c}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--runs", type=Path, nargs="+", help="our run folders instead of DC trajectories")
    args = ap.parse_args(argv)
    if args.runs:
        return main_runs(args.runs)
    files = sorted(f for pat in ("*.jsonl", "*.jsonl.xz", "*.jsonl.gz") for f in args.data.glob(pat))
    if not files:
        print(f"no trajectories in {args.data}", file=sys.stderr)
        return 2
    kinds = KINDS
    total = dict.fromkeys(kinds, 0)
    print(f"{'trajectory':<44} {'steps':>5} " + " ".join(f"{k:>21}" for k in kinds))
    for f in files:
        counts = dict.fromkeys(kinds, 0)
        rows = read_jsonl(f)
        for r in rows:
            counts[classify(r["previous_cheatsheet"], r["new_cheatsheet"])] += 1
        for k in kinds:
            total[k] += counts[k]
        print(f"{f.name.split('.jsonl')[0]:<44} {len(rows):>5} " + " ".join(f"{counts[k]:>21}" for k in kinds))
    n = sum(total.values())
    print(f"{'all':<44} {n:>5} " + " ".join(f"{total[k]:>21}" for k in kinds))
    skip = total["identical"] + total["trivially_equal"]
    print(f"steps whose comparison skip_trivially_equal removes: {skip}/{n} = {skip / max(1, n):.3f} "
          f"(of which identical texts {total['identical']}, already cheap under same_memory_shortcut); "
          f"ignoring usage counts too: {skip + total['equal_ignoring_counts']}/{n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
