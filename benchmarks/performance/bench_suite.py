"""Suite time per test file (issue 29): the per-file table from two pytest junit files, before and after.

Each junit testcase's time is setup + call + teardown (pytest's default ``junit_duration_report = total``), so a
module-scoped fixture's cost lands on the module's first test and a file's sum is what the file costs. Under
pytest-xdist the files run side by side: the per-file sums then add up to more than the wall time (each worker's
share of the 2 cores), so compare the wall times (the first line of each junit's ``testsuite``: ``time``) for the
suite and the per-file sums for where the time went.

Usage: python benchmarks/performance/bench_suite.py BEFORE.xml AFTER.xml [--top 20] [--markdown]
Measure (a quiet machine; note ``uptime`` beside it):
    PYTHONPATH=$PWD/src python -m pytest -p no:cacheprovider --durations=0 --junitxml=/tmp/after.xml
"""
from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from collections import defaultdict


def module_of(classname: str) -> str:
    """``tests.test_x.TestY`` -> ``test_x.py`` (the first dotted part that names a test module)."""
    for part in classname.split("."):
        if part.startswith("test_"):
            return part + ".py"
    return classname


def read(path: str) -> tuple[float, dict[str, float], dict[str, int], dict[str, int]]:
    """Wall time of the run, and per file: summed seconds, test count, outcome counts (failed/skipped/passed)."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    wall = sum(float(s.get("time", 0.0)) for s in suites)
    secs: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    outcome: dict[str, int] = defaultdict(int)
    for case in root.iter("testcase"):
        name = module_of(case.get("classname", ""))
        secs[name] += float(case.get("time", 0.0))
        count[name] += 1
        kinds = {child.tag for child in case}
        outcome["failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed"] += 1
    return wall, dict(secs), dict(count), dict(outcome)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    a = ap.parse_args(argv)
    wall_b, secs_b, n_b, out_b = read(a.before)
    wall_a, secs_a, n_a, out_a = read(a.after)
    files = sorted(set(secs_b) | set(secs_a), key=lambda f: -secs_b.get(f, 0.0))[: a.top]
    rows = [(f, n_b.get(f, 0), secs_b.get(f, 0.0), n_a.get(f, 0), secs_a.get(f, 0.0)) for f in files]
    if a.markdown:
        print("| file | tests before | s before | tests after | s after | after/before |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for f, nb, sb, na, sa in rows:
            print(f"| {f} | {nb} | {sb:.1f} | {na} | {sa:.1f} | {sa / sb if sb else float('nan'):.2f} |")
    else:
        print(f"{'file':38} {'n':>5} {'before s':>9} {'n':>5} {'after s':>9} {'ratio':>6}")
        for f, nb, sb, na, sa in rows:
            print(f"{f:38} {nb:5d} {sb:9.1f} {na:5d} {sa:9.1f} {sa / sb if sb else float('nan'):6.2f}")
    sum_b, sum_a = sum(secs_b.values()), sum(secs_a.values())
    print(f"tests: before {sum(n_b.values())} {out_b}, after {sum(n_a.values())} {out_a}")
    print(f"per-file sums (all files): before {sum_b:.1f} s, after {sum_a:.1f} s ({sum_a / sum_b:.2f})")
    print(f"wall (junit testsuite time): before {wall_b:.1f} s, after {wall_a:.1f} s ({wall_a / wall_b:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
