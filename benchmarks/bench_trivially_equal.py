"""How many memory updates in real Dynamic Cheatsheet trajectories are trivially equal to the memory they replace?

Reads ``shared/data/dc-trajectories/*.jsonl`` (one step per line: previous_cheatsheet, new_cheatsheet) and classifies
every step: ``identical`` (same text), ``trivially_equal`` (same canonical form, controller/equivalence.py, default
bookkeeping = version line), ``equal_ignoring_counts`` (also ignoring DC's ``** Count: N`` usage counters; not our
default) and ``different``. With ``skip_trivially_equal`` on, a triggered step in the first two classes costs no
evaluation, so the printed share is the upper bound of the saving (the share of triggers that land on such steps).

    python benchmarks/bench_trivially_equal.py [--data DIR]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from janus_memory.controller.equivalence import COUNT_LINE, DEFAULT_BOOKKEEPING, trivially_equal

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "dc-trajectories"


def classify(old: str, new: str) -> str:
    if old == new:
        return "identical"
    if trivially_equal(old, new):
        return "trivially_equal"
    if trivially_equal(old, new, DEFAULT_BOOKKEEPING + (COUNT_LINE,)):
        return "equal_ignoring_counts"
    return "different"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DIR)
    args = ap.parse_args(argv)
    files = sorted(args.data.glob("*.jsonl"))
    if not files:
        print(f"no trajectories in {args.data}", file=sys.stderr)
        return 2
    kinds = ("identical", "trivially_equal", "equal_ignoring_counts", "different")
    total = dict.fromkeys(kinds, 0)
    print(f"{'trajectory':<44} {'steps':>5} " + " ".join(f"{k:>21}" for k in kinds))
    for f in files:
        counts = dict.fromkeys(kinds, 0)
        rows = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
        for r in rows:
            counts[classify(r["previous_cheatsheet"], r["new_cheatsheet"])] += 1
        for k in kinds:
            total[k] += counts[k]
        print(f"{f.stem:<44} {len(rows):>5} " + " ".join(f"{counts[k]:>21}" for k in kinds))
    n = sum(total.values())
    print(f"{'all':<44} {n:>5} " + " ".join(f"{total[k]:>21}" for k in kinds))
    skip = total["identical"] + total["trivially_equal"]
    print(f"steps whose comparison skip_trivially_equal removes: {skip}/{n} = {skip / max(1, n):.3f} "
          f"(of which identical texts {total['identical']}, already cheap under same_memory_shortcut); "
          f"ignoring usage counts too: {skip + total['equal_ignoring_counts']}/{n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
