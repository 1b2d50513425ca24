"""Pool the per-seed lines of several ``bench_recommended.py --per-seed`` runs (issue 24, round 4 secondary).

Usage::

    PYTHONPATH=src python benchmarks/controller/pool_recommended.py rows.jsonl [more.jsonl ...] [--sets 0-19,20-39,40-59]

Per setting and policy (other than blind and always): gain share = mean(policy − blind) / mean(always − blind) and
call share = mean calls / mean always calls over every seed present, with 95% paired-bootstrap intervals
(``janus_memory.bench.metrics.boot_ratio``, 10,000 resamples), then the same per seed set named in ``--sets``. A
(setting, seed, policy) line seen twice must carry the same numbers (a re-run of a deterministic world); otherwise
the script stops. Lines with ``raw_calls`` count paid evaluations in ``calls`` (distinct (memory text, task)
evaluations); lines without it were written before that count existed and hold raw requests there: the two kinds
are not pooled together (the script stops), and the table says which count it read.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

import numpy as np

from janus_memory.bench.metrics import boot_ratio, mean_ci


def load(paths: list[str]) -> dict:
    rows: dict = defaultdict(dict)  # (setting, seed) -> policy -> (final, calls)
    kinds = set()
    for path in paths:
        with open(path) as fh:
            for line in fh:
                r = json.loads(line)
                kinds.add("raw_calls" in r)
                if len(kinds) > 1:
                    raise SystemExit("error: some lines count paid evaluations (they have raw_calls), others raw "
                                     "requests (written before the paid count): pool one kind at a time")
                key = (r["setting"], int(r["seed"]))
                val = (float(r["final"]), float(r["calls"]), r.get("genuine_rolled_back"), r.get("genuine"),
                       r.get("harm_through"))
                old = rows[key].get(r["policy"])
                if old is not None and old != val:
                    raise SystemExit(f"error: {key} {r['policy']} has two different results: {old} and {val}")
                rows[key][r["policy"]] = val
    rows["__count__"] = "paid evaluations" if kinds == {True} else "raw requests"
    return rows


def shares(rows: dict, setting: str, policy: str, seeds) -> tuple | None:
    keys = [k for k in sorted(rows) if k[0] == setting and k[1] in seeds
            and {"blind", "always", policy} <= set(rows[k])]
    if not keys:
        return None
    b, a, x = (np.array([rows[k][p][0] for k in keys]) for p in ("blind", "always", policy))
    c, ac = np.array([rows[k][policy][1] for k in keys]), np.array([rows[k]["always"][1] for k in keys])
    extra = {"minus_blind": mean_ci(x - b), "minus_always": mean_ci(x - a)}
    for j, name in ((2, "genuine_rolled_back"), (3, "genuine"), (4, "harm_through")):
        vals = [rows[k][policy][j] for k in keys]
        extra[name] = mean_ci(vals) if all(v is not None for v in vals) else None
        avals = [rows[k]["always"][j] for k in keys]
        extra["always_" + name] = mean_ci(avals) if all(v is not None for v in avals) else None
    return len(keys), boot_ratio(x - b, a - b, positive_den=True), boot_ratio(c, ac), extra


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="pool_recommended")
    p.add_argument("files", nargs="+")
    p.add_argument("--sets", default="", help="seed ranges reported apart, e.g. 0-19,20-39,40-59")
    args = p.parse_args(argv)
    rows = load(args.files)
    count = rows.pop("__count__")
    sets = [("all", range(0, 1 << 31))]
    for part in filter(None, args.sets.split(",")):
        lo, _, hi = part.partition("-")
        sets.append((part, range(int(lo), int(hi or lo) + 1)))
    settings = sorted({k[0] for k in rows}, key=lambda s: (s != "default", s))
    policies = sorted({q for v in rows.values() for q in v} - {"blind", "always"})
    print(f"| setting | policy | seeds | gain share [95%] | call share [95%] ({count}) | − blind (paired 95%) | "
          "− always (paired 95%) | genuine rolled back (of; always's) | harmful deployed (always's) |\n"
          "|---|---|---|---|---|---|---|---|---|")

    def ci(t) -> str:
        return "—" if t is None else f"{t[0]:+.2f} ± {t[1]:.2f}"

    def cnt(t) -> str:
        return "—" if t is None else f"{t[0]:.1f}"
    for st in settings:
        for pol in policies:
            for label, seeds in sets:
                got = shares(rows, st, pol, seeds)
                if got is None:
                    continue
                n, g, c, e = got
                print(f"| {st} | {pol} | {label} (n={n}) | {g[0]:.2f} [{g[1]:.2f}, {g[2]:.2f}] | "
                      f"{c[0]:.2f} [{c[1]:.2f}, {c[2]:.2f}] | {ci(e['minus_blind'])} | {ci(e['minus_always'])} | "
                      f"{cnt(e['genuine_rolled_back'])} (of {cnt(e['genuine'])}; {cnt(e['always_genuine_rolled_back'])})"
                      f" | {cnt(e['harm_through'])} ({cnt(e['always_harm_through'])}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
