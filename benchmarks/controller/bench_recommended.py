"""The recommended controller against always-compare, per world setting.

Usage::

    PYTHONPATH=src python benchmarks/controller/bench_recommended.py --first-seed 2000 --seeds 60   # judging: 7 settings
    ... --only blind,always --per-seed base.jsonl     # some rows only; pool_recommended.py joins the lines
    ... --variants 'n8=seq_max_pairs=8;lead2=seq_rollback_lead=2' --lead-to-deploy   # frontier rows
    PYTHONPATH=src python benchmarks/controller/bench_recommended.py --tuning         # tuning: default world, seeds 100-119
    PYTHONPATH=src python benchmarks/controller/bench_recommended.py --settings default --seeds 5 --caps 4,8   # + frontier rows
    ... --json out.json                                                    # also write every number

Per setting, from one run: final true accuracy (mean ± 95% t-interval over seeds) of blind, always (compare at every
step, paper rule), the paper preset (``janus``) and ``recommended`` (``JanusConfig.recommended()``); paired 95%
intervals of (recommended − blind) and (always − blind); **gain share** = mean(rec − blind) / mean(always − blind)
and **call share** = mean rec paid evaluations / mean always paid evaluations, each with a 95% paired bootstrap
interval over seeds (10,000 resamples, fixed generator seed). Paid evaluations are the distinct (memory text, task)
evaluations, what a run behind a response cache pays (every request under ``eval_noise="fresh"``); the raw requests
and their share are printed beside, labelled. ``--caps`` adds ``recommended`` variants with a fixed cap of that many
tasks (``seq_max_pairs``, no adaptive extension). Goal (issue 36): gain share >= 1.00 at call share <= 0.25 on every
judged setting (issue 24's was >= 0.90 at <= 0.25 of the raw requests).

The judged settings were fixed in docs/bench.md before their results were seen: the default world, S1 (a low-noise
evaluator, ``coupling=1.0``), S2 (more harmful candidates, the harsher mix), S3 (``eval_noise="fresh"``: every
evaluation a new draw) and, since issue 36, S4 (no rewordings: the mix general .6, specific .2, overwrite .15,
dump .05), and S5 / S6 (late knowledge: 40% of the candidates drawn help only topics still to come; S6 under fresh
noise on tasks nearer 50/50). The settings are ``janus_memory.bench.world.SETTINGS``. Constants are tuned on seeds 100
and above only (``benchmarks/controller/tune_recommended.py``, which refuses the
judged seeds).

Prints the CPU seconds and the load average (the machine is shared; no timing goal).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import time

import numpy as np

from janus_memory.bench.grid import run_grid
from janus_memory.bench.metrics import boot_ratio as _boot_ratio
from janus_memory.bench.metrics import mean_ci, paired
from janus_memory.bench.policies import PolicySpec
from janus_memory.bench.world import SETTINGS as WORLD_SETTINGS
from janus_memory.bench.world import WorldConfig, json_value
from janus_memory.controller import JanusConfig
from janus_memory.controller.config import RECOMMENDED_HYBRID_BOUNDARY_FIRST, RECOMMENDED_LEAD_TO_DEPLOY

SHORT = {"default": "default", "s1": "S1 coupling=1.0", "s2": "S2 harsh mix", "s3": "S3 eval_noise=fresh",
         "s4": "S4 no rewordings", "s5": "S5 late knowledge", "s6": "S6 late knowledge, fresh noise"}
# the named world settings (janus_memory.bench.world.SETTINGS, `janus bench world --setting`) under their table names
SETTINGS = {SHORT[k]: v for k, v in WORLD_SETTINGS.items()}
BOOT = 10_000
GOAL_GAIN, GOAL_CALLS = 1.0, 0.25  # issue 36: >= 100% of always's gain over blind at <= 25% of its paid evaluations


# the paper's hybrid set read boundary first ("informative" order), recommended() until 2026-12-04 (judged on seeds
# 0-19; every setting it had, so a later change of recommended() cannot leak into this row)
HYBRID_BOUNDARY_FIRST = dict(RECOMMENDED_HYBRID_BOUNDARY_FIRST)
# the first recommended controller (before the adaptive cap): the hybrid set with a fixed cap 9 and
# the scikit-learn k-means
HYBRID_FIXED_CAP = dict(HYBRID_BOUNDARY_FIRST, seq_max_pairs=9, seq_extend_pairs=0, near_copy_similarity=0.0,
                        clustering="sklearn")


def policies(caps: list[int], with_paper: bool = True, hybrid_fixed_cap: bool = False,
             hybrid_boundary_first: bool = False, lead_to_deploy: bool = False) -> list[PolicySpec]:
    paper = JanusConfig()
    out = [PolicySpec("blind", "blind"), PolicySpec("always", "janus", paper.replace(trigger="always"))]
    if with_paper:
        out.append(PolicySpec("janus", "janus", paper))
    out.append(PolicySpec("recommended", "janus", JanusConfig.recommended()))
    rec = JanusConfig.recommended()
    if hybrid_fixed_cap and JanusConfig.recommended(**HYBRID_FIXED_CAP) != rec:
        out.append(PolicySpec("rec-hybrid-cap9", "janus", JanusConfig.recommended(**HYBRID_FIXED_CAP)))
    if hybrid_boundary_first:
        if JanusConfig.recommended(**HYBRID_BOUNDARY_FIRST) != rec:
            out.append(PolicySpec("rec-hybrid", "janus", JanusConfig.recommended(**HYBRID_BOUNDARY_FIRST)))
        else:
            print("note: --hybrid-boundary-first adds no row: recommended() is that controller", file=sys.stderr)
    if lead_to_deploy:
        out.append(PolicySpec("old", "janus", JanusConfig(**RECOMMENDED_LEAD_TO_DEPLOY)))
    for c in caps:  # the frontier: the recommended controller with a fixed cap of c tasks (no adaptive extension)
        if c != rec.seq_max_pairs or rec.seq_extend_pairs:
            out.append(PolicySpec(f"rec-cap{c}", "janus",
                                  JanusConfig.recommended(seq_max_pairs=c, seq_extend_pairs=0, seq_recent_pairs=0)))
    return out


def boot_ratio(num: np.ndarray, den: np.ndarray, seed: int = 24,
               positive_den: bool = False) -> tuple[float, float, float]:
    """mean(num) / mean(den) and its 95% percentile interval (janus_memory.bench.metrics.boot_ratio, BOOT resamples;
    ``positive_den``: NaN unless the denominator's mean is above 0, for gain shares)."""
    return _boot_ratio(num, den, seed=seed, n_boot=BOOT, positive_den=positive_den)


def summarise(result, names: list[str]) -> dict:
    ps = result.per_seed
    fin = {n: np.array([m["final"] for m in ps[n]]) for n in names}
    calls = {n: np.array([m["evaluator_calls"] for m in ps[n]], dtype=float) for n in names}
    raw = {n: np.array([m["raw_calls"] for m in ps[n]], dtype=float) for n in names}
    out = {"n": len(result.seeds), "policies": {}}
    g_all = fin["always"] - fin["blind"]
    for n in names:
        row = {"final": mean_ci(fin[n]), "calls": mean_ci(calls[n]), "raw_calls": mean_ci(raw[n]),
               "auc": mean_ci([m["auc"] for m in ps[n]]),
               "genuine_rolled_back": mean_ci([m["genuine_rolled_back"] for m in ps[n]]),
               "genuine": mean_ci([m["genuine"] for m in ps[n]]),
               "harm_through": mean_ci([m["harm_through"] for m in ps[n]])}
        if n not in ("blind", "always"):
            row["minus_blind"] = paired(ps, n, "blind")
            row["gain_share"] = boot_ratio(fin[n] - fin["blind"], g_all, positive_den=True)
            row["call_share"] = boot_ratio(calls[n], calls["always"])
            row["raw_share"] = boot_ratio(raw[n], raw["always"])
        if n == "always":
            row["minus_blind"] = paired(ps, n, "blind")
        out["policies"][n] = row
    return out


def fmt_ci(t) -> str:
    m, h, _ = t
    return f"{m:.1f} ± {h:.1f}" if math.isfinite(h) else f"{m:.1f}"


def fmt_share(t) -> str:
    e, lo, hi = t
    return f"{e:.2f} [{lo:.2f}, {hi:.2f}]" if math.isfinite(e) else "n/a"


def table(name: str, s: dict) -> str:
    lines = [f"#### {name} ({s['n']} seeds)", "",
             "| policy | final acc | − blind (paired) | paid evaluations | raw requests | gain share [95%] | "
             "call share [95%] (paid) | raw share | genuine rolled back (of) | harmful deployed |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for n, r in s["policies"].items():
        mb = r.get("minus_blind")
        diff = f"{mb['mean']:+.1f} ± {mb['ci']:.1f}" if mb else "—"
        gs = fmt_share(r["gain_share"]) if "gain_share" in r else ("1.00" if n == "always" else "—")
        cs = fmt_share(r["call_share"]) if "call_share" in r else ("1.00" if n == "always" else "—")
        rs = f"{r['raw_share'][0]:.2f}" if "raw_share" in r else ("1.00" if n == "always" else "—")
        lines.append(f"| {n} | {fmt_ci(r['final'])} | {diff} | {r['calls'][0]:.0f} | {r['raw_calls'][0]:.0f} | {gs} | "
                     f"{cs} | {rs} | {r['genuine_rolled_back'][0]:.1f} ({r['genuine'][0]:.1f}) | "
                     f"{r['harm_through'][0]:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench_recommended")
    p.add_argument("--settings", default="default,s1,s2,s3,s4,s5,s6",
                   help="comma-separated: default,s1,s2,s3,s4,s5,s6")
    p.add_argument("--variants", default="", help="extra rows: 'NAME=key=value,key=value;...' (JanusConfig overrides "
                   "on recommended(); the frontier)")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--tuning", action="store_true", help="the tuning run: default world, seeds 100-119")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--caps", default="", help="extra seq_max_pairs values for the frontier, e.g. 4,8,12")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--no-paper", action="store_true", help="leave out the paper preset's row (saves CPU)")
    p.add_argument("--hybrid-fixed-cap", action="store_true", help="add the first recommended controller's row (the "
                   "hybrid set, fixed cap 9, "
                   "scikit-learn k-means)")
    p.add_argument("--hybrid-boundary-first", action="store_true", help="add the row of the recommended controller "
                   "on the paper's hybrid set (boundary-first "
                   "order)")
    p.add_argument("--lead-to-deploy", action="store_true", help="add the row of the controller recommended before "
                   "(every candidate had to lead; named old)")
    p.add_argument("--only", default="", help="run only these rows (comma-separated names); without blind and always "
                   "no table is printed: write --per-seed lines and pool them (pool_recommended.py)")
    p.add_argument("--json", help="write all numbers here")
    p.add_argument("--per-seed", help="append one JSON line per (setting, seed, policy): final accuracy and calls, "
                   "so seed sets can be pooled later (benchmarks/controller/pool_recommended.py)")
    args = p.parse_args(argv)
    if args.tuning:
        args.settings, args.first_seed = "default", 100
    caps = [int(c) for c in args.caps.split(",") if c.strip()]
    specs = policies(caps, with_paper=not args.no_paper, hybrid_fixed_cap=args.hybrid_fixed_cap,
                     hybrid_boundary_first=args.hybrid_boundary_first, lead_to_deploy=args.lead_to_deploy)
    for part in filter(None, (v.strip() for v in args.variants.split(";"))):
        vname, _, opts = part.partition("=")
        over = {k.strip(): json_value(v) for k, _, v in (kv.partition("=") for kv in opts.split(",") if kv.strip())}
        specs.append(PolicySpec(vname.strip(), "janus", JanusConfig.recommended(**over)))
    if args.only:  # e.g. the baselines now, the controller's rows later; pool_recommended.py joins the lines
        keep = {n.strip() for n in args.only.split(",")}
        specs = [s for s in specs if s.name in keep]
    names = [s.name for s in specs]
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    t0 = time.time()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    report = {"seeds": seeds, "recommended": JanusConfig.recommended().to_dict(), "settings": {}}
    for key in args.settings.split(","):
        name = SHORT.get(key.strip().lower(), key.strip())
        if name not in SETTINGS:
            print(f"error: unknown setting {key!r}; known: {', '.join(SHORT)}", file=sys.stderr)
            return 2
        wc = WorldConfig.from_dict({**WorldConfig().to_dict(), "n_steps": args.steps, **SETTINGS[name]})
        res = run_grid(wc, seeds, specs, workers=args.workers)
        if args.per_seed:
            with open(args.per_seed, "a") as fh:
                for n in names:
                    for seed, m in zip(res.seeds, res.per_seed[n]):
                        fh.write(json.dumps({"setting": name, "seed": int(seed), "policy": n, "final": m["final"],
                                             "calls": m["evaluator_calls"], "raw_calls": m["raw_calls"],
                                             "genuine": m["genuine"], "genuine_rolled_back": m["genuine_rolled_back"],
                                             "harm_through": m["harm_through"]}) + "\n")
        if not {"blind", "always"} <= set(names):
            print(f"{name}: {len(seeds)} seeds done, {time.time() - t0:.0f} s", flush=True)
            continue
        s = summarise(res, names)
        report["settings"][name] = s
        print(table(name, s), "\n", flush=True)
    rows = ["| setting | rec − blind | always − blind | gain share [95%] | call share [95%] (paid) | raw share | "
            "goal met |", "|---|---|---|---|---|---|---|"]
    for name, s in report["settings"].items():
        r, a = s["policies"]["recommended"], s["policies"]["always"]
        ok = r["gain_share"][0] >= GOAL_GAIN and r["call_share"][0] <= GOAL_CALLS  # NaN share: not met
        rows.append(f"| {name} | {r['minus_blind']['mean']:+.1f} ± {r['minus_blind']['ci']:.1f} | "
                    f"{a['minus_blind']['mean']:+.1f} ± {a['minus_blind']['ci']:.1f} | {fmt_share(r['gain_share'])} | "
                    f"{fmt_share(r['call_share'])} | {r['raw_share'][0]:.2f} | {'yes' if ok else 'no'} |")
    print("\n".join(rows))
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) + (c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime)
    load = os.getloadavg()
    print(f"\n{len(seeds)} seeds x {args.steps} steps x {len(specs)} policies per setting; wall {time.time() - t0:.0f} s, "
          f"CPU {cpu:.0f} s; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
