"""Tuning frontier of the recommended controller's variants on TUNING seeds only (issue 24, round 2).

Usage::

    PYTHONPATH=src python benchmarks/controller/tune_recommended.py --variants "cap9=;ext=seq_max_pairs=6,seq_extend_pairs=14"
    ... --settings default,s1 --first-seed 100 --seeds 20 --cache benchmarks/results/tuning_baselines.json

Each variant is ``NAME=key=value,key=value`` (JanusConfig overrides on ``JanusConfig.recommended()``; values are
JSON scalars, an empty list = the recommended preset itself); variants are separated by ``;``. Per setting (the
same four as ``bench_recommended.py``) and seed, blind and always (paper preset, ``trigger=always``) are run once and
kept in ``--cache`` (their numbers do not depend on the variants), then every variant runs on the same worlds.
Prints, per setting, each variant's final accuracy, gain share = mean(variant − blind) / mean(always − blind) and
call share = mean paid evaluations / mean always paid evaluations (distinct (memory text, task) evaluations: what a
cached run pays; the raw-request share beside), with 95% paired-bootstrap intervals over seeds (as
``bench_recommended.py``), then one summary row per variant over the settings. Refuses judged seeds (0-79 and
300-359): the judged run is ``bench_recommended.py``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_recommended import SETTINGS, SHORT, boot_ratio, fmt_share  # noqa: E402

from janus_memory.bench.grid import run_seed  # noqa: E402
from janus_memory.bench.policies import PolicySpec  # noqa: E402
from janus_memory.bench.world import WorldConfig, json_value  # noqa: E402
from janus_memory.controller import JanusConfig  # noqa: E402

# seeds already used to judge a recommended controller, never to tune one (docs/bench.md §3, docs/measurements.md):
# 0-79 the earlier judged rows, 300-359 the count of paid evaluations, 2000-2059 the guard that keeps learning (tuned
# on 200-203), 3000-3059 the loss test and re-offers of additions (tuned on 220-239)
JUDGED = set(range(0, 80)) | set(range(300, 360)) | set(range(2000, 2060)) | set(range(3000, 3060))


def parse_variants(text: str) -> list[PolicySpec]:
    out = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, _, opts = part.partition("=")
        over = {}
        for kv in filter(None, (o.strip() for o in opts.split(","))):
            k, sep, v = kv.partition("=")
            if not sep:
                raise ValueError(f"variant option {kv!r} is not key=value")
            over[k.strip()] = json_value(v)
        out.append(PolicySpec(name.strip(), "janus", JanusConfig.recommended(**over)))
    return out


def baselines(wc: WorldConfig, setting: str, seed: int, cache: dict) -> dict:
    """blind's and always's final accuracy, paid evaluations (``calls``) and raw requests on one seed, cached under a
    key that names the count (entries written before the paid count existed held raw requests as ``calls``)."""
    key = f"{setting}|{seed}|{wc.n_steps}|paid"
    if key not in cache:
        specs = [PolicySpec("blind", "blind"),
                 PolicySpec("always", "janus", JanusConfig().replace(trigger="always"))]
        m = run_seed(wc, seed, specs, keep_arrays=False)["metrics"]
        cache[key] = {n: {"final": m[n]["final"], "calls": m[n]["evaluator_calls"], "raw_calls": m[n]["raw_calls"]}
                      for n in ("blind", "always")}
    return cache[key]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="tune_recommended")
    p.add_argument("--variants", required=True)
    p.add_argument("--settings", default="default")
    p.add_argument("--first-seed", type=int, default=100)
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--cache", default=str(Path(__file__).resolve().parents[1] / "results" / "tuning_baselines.json"))
    p.add_argument("--json", help="append every number here (one JSON object per line)")
    p.add_argument("--per-seed", help="append one JSON line per (setting, seed, variant) as each seed finishes")
    args = p.parse_args(argv)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    if any(s in JUDGED or not 100 <= s < 300 for s in seeds):
        print("error: seeds 0-79 and 300-359 are judged seeds (docs/bench.md §3); tune on 100-299", file=sys.stderr)
        return 2
    specs = parse_variants(args.variants)
    cache_path = Path(args.cache)
    t0, c0 = time.time(), resource.getrusage(resource.RUSAGE_SELF)
    summary: dict = {}
    for key in args.settings.split(","):
        setting = SHORT.get(key.strip().lower(), key.strip())
        wc = WorldConfig.from_dict({**WorldConfig().to_dict(), "n_steps": args.steps, **SETTINGS[setting]})
        fin = {n: [] for n in ["blind", "always"] + [s.name for s in specs]}
        calls = {n: [] for n in fin}
        raw = {n: [] for n in fin}
        for seed in seeds:
            cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
            base = baselines(wc, setting, seed, cache)
            fresh = json.loads(cache_path.read_text()) if cache_path.exists() else {}  # another process may have added
            fresh.update(cache)
            tmp = cache_path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(fresh, indent=0, sort_keys=True))
            os.replace(tmp, cache_path)
            for n in ("blind", "always"):
                fin[n].append(base[n]["final"])
                calls[n].append(base[n]["calls"])
                raw[n].append(base[n]["raw_calls"])
            m = run_seed(wc, seed, specs, keep_arrays=False)["metrics"]
            for s in specs:
                fin[s.name].append(m[s.name]["final"])
                calls[s.name].append(m[s.name]["evaluator_calls"])
                raw[s.name].append(m[s.name]["raw_calls"])
            if args.per_seed:  # one line per (setting, seed, variant): partial results can be read while it runs
                with open(args.per_seed, "a") as fh:
                    for s in specs:
                        fh.write(json.dumps({"setting": setting, "seed": seed, "variant": s.name,
                                             "final": m[s.name]["final"], "calls": m[s.name]["evaluator_calls"],
                                             "raw_calls": m[s.name]["raw_calls"],
                                             "blind": base["blind"]["final"], "always": base["always"]["final"],
                                             "always_calls": base["always"]["calls"],
                                             "always_raw_calls": base["always"]["raw_calls"]}) + "\n")
        f = {n: np.array(v, float) for n, v in fin.items()}
        c = {n: np.array(v, float) for n, v in calls.items()}
        r = {n: np.array(v, float) for n, v in raw.items()}
        g_all = f["always"] - f["blind"]
        print(f"#### {setting}, seeds {seeds[0]}-{seeds[-1]} (tuning); blind {f['blind'].mean():.1f}, always "
              f"{f['always'].mean():.1f} ({c['always'].mean():.0f} paid evaluations, {r['always'].mean():.0f} raw "
              "requests)\n")
        print("| variant | final | gain share [95%] | call share [95%] (paid) | raw share | paid | raw |\n"
              "|---|---|---|---|---|---|---|")
        for s in specs:
            gs = boot_ratio(f[s.name] - f["blind"], g_all, positive_den=True)
            cs = boot_ratio(c[s.name], c["always"])
            rs = r[s.name].mean() / r["always"].mean()
            summary.setdefault(s.name, {})[setting] = (gs[0], cs[0])
            print(f"| {s.name} | {f[s.name].mean():.1f} | {fmt_share(gs)} | {fmt_share(cs)} | {rs:.2f} | "
                  f"{c[s.name].mean():.0f} | {r[s.name].mean():.0f} |", flush=True)
            if args.json:
                with open(args.json, "a") as fh:
                    fh.write(json.dumps({"setting": setting, "seeds": seeds, "variant": s.name,
                                         "config": {k: v for k, v in s.config.to_dict().items()
                                                    if v != JanusConfig.recommended().to_dict()[k]},
                                         "gain_share": gs, "call_share": cs, "raw_share": rs,
                                         "final": float(f[s.name].mean()), "calls": float(c[s.name].mean()),
                                         "raw_calls": float(r[s.name].mean())}) + "\n")
        print()
    if len(summary) and len(next(iter(summary.values()))) > 1:
        names = list(next(iter(summary.values())))
        print("| variant | " + " | ".join(names) + " | smallest gain share | largest call share |\n"
              "|---|" + "---|" * (len(names) + 2))
        for v, row in summary.items():
            cells = [f"{g:.2f} @ {c_:.3f}" for g, c_ in row.values()]
            print(f"| {v} | " + " | ".join(cells) + f" | {min(g for g, _ in row.values()):.2f} | "
                  f"{max(c_ for _, c_ in row.values()):.3f} |")
        print()
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    load = os.getloadavg()
    print(f"wall {time.time() - t0:.0f} s, CPU {c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime:.0f} s; "
          f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
