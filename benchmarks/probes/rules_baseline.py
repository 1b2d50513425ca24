"""How much a model needs its memory on the generated `rules` tickets: the later tasks (recall and combo, which need
rules only earlier tickets stated) solved three ways with the same solver prompt:

* no memory       the cheatsheet is "(empty)";
* gold sheet      the cheatsheet is the world's rule sheet (every rule, stated as the tickets state it);
* one rule false  the gold sheet with one rule the task needs given another value (the first of its rules that has
                  a number; inject.falsify.falsified_value, seeded by the task id).

For the third, an answer is counted as *following the false rule* when it equals the answer under the falsified rule
(tasks.rules.answer_under): the model read the sheet and used what it said.

The solver prompt is DC's small-preset one (the demo's and `--preset small`'s): system = instructions, user = the
cheatsheet and then the task (tasks/prompts/rules.txt). Temperature 0, solver cap 384 tokens (the demo's and the
measurement's). Answers go through the response cache, so a rerun pays only for requests it has not made before.

Usage:
  python benchmarks/probes/rules_baseline.py [--dataset rules] [--seed 0] [--split test] [--tasks 30] [--max-tokens 384]
                                      [--model-path GGUF] [--out benchmarks/results/rules_baseline.json]

Prints one line per task as it goes, then per condition: correct / n with a Wilson 95% interval, the paired
differences (gold vs none, false vs gold) with Newcombe 95% intervals, and, under the false rule, how many answers
followed it. The JSON file holds every answer. Results and their command: docs/measurements.md ("The rules family").
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from janus_memory.inject.falsify import falsified_value
from janus_memory.report.paired import paired_compare, wilson
from janus_memory.tasks import load_split
from janus_memory.tasks.rules import KINDS, _rng, answer_under, make_world


def false_rule(task, values: dict) -> tuple[str, dict, dict]:
    """(rule key, the values of all rules with it falsified, the falsified rule's values) for ``task``: the first of
    the rules it needs whose falsified value (seeded by the task id) changes its answer (else the first that has a
    number)."""
    g = _rng("baseline-false", task.id)
    options = []
    for key in task.meta["rules"]:
        if not values[key]:
            continue  # the precedence rule states no number
        name = next(iter(values[key]))
        new = {**values, key: {**values[key], name: falsified_value(values[key][name], g)}}
        options.append((key, new, new[key]))
        if answer_under(task, new) != int(task.gold):
            return options[-1]
    return options[0]


def build(args):
    from janus_memory.run.build import build_context, load_splits
    from janus_memory.settings.config import RunConfig

    llm = {"backend": "local", "temperature": 0.0}
    if args.model_path:
        llm["model_path"] = args.model_path
    cfg = RunConfig.parse({"preset": "small", "dataset": args.dataset, "seed": args.seed, "updater": "dc_rs",
                           "controller": "none", "solver_max_tokens": args.max_tokens, "encoder": "hashing:64",
                           "out": "/tmp/janus-rules-baseline", **llm})
    splits = load_splits(cfg)
    ctx = build_context(cfg, log=lambda m: None, splits=splits)
    return ctx, ctx.make_updater()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="rules", choices=("rules", "rules_small"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", default="test", choices=("test", "stream"))
    ap.add_argument("--tasks", type=int, default=30)
    ap.add_argument("--max-tokens", type=int, default=384)
    ap.add_argument("--model-path", default=None)
    ap.add_argument("--out", default="benchmarks/results/rules_baseline.json")
    a = ap.parse_args(argv)
    if a.tasks < 1:
        ap.error("--tasks must be >= 1")
    split = load_split(a.dataset, a.split, seed=a.seed)
    tasks = [t for t in split.tasks if t.meta["kind"] != "intro"][:a.tasks]
    world = make_world(a.dataset, a.seed)
    load0 = os.getloadavg()
    t0 = time.time()
    ctx, up = build(a)
    rows = []
    try:
        for t in tasks:
            key, false_values, changed = false_rule(t, world.values)
            false_sheet = world.sheet({key: KINDS[key].text(changed)})
            row = {"id": t.id, "kind": t.meta["kind"], "type": t.meta["question_type"], "gold": int(t.gold),
                   "false_rule": KINDS[key].text(changed), "false_gold": answer_under(t, false_values)}
            for cond, sheet in (("none", "(empty)"), ("gold", world.sheet()), ("false", false_sheet)):
                (res, score), = up.solve_with_memory(sheet, [t], role="test")
                row[cond] = {"correct": bool(score.correct), "extracted": score.extracted, "status": score.status,
                             "tokens": res.usage.completion_tokens, "cached": res.cached, "text": res.text}
            f = row["false"]
            row["false_changes_answer"] = row["false_gold"] != row["gold"]
            row["false"]["followed"] = (row["false_changes_answer"] and f["extracted"] is not None
                                        and f["extracted"] == str(row["false_gold"]))
            rows.append(row)
            print(f"{t.id} {t.meta['question_type']:<18} gold {t.gold:>4}  none {row['none']['extracted']!s:>5} "
                  f"gold-sheet {row['gold']['extracted']!s:>5}  false({row['false_gold']}) {f['extracted']!s:>5}"
                  f"{' followed' if f['followed'] else ''}", flush=True)
    except KeyboardInterrupt:
        print(f"interrupted after {len(rows)} tasks; the answers so far are in the response cache", file=sys.stderr)
        if not rows:
            return 130
    wall = time.time() - t0
    load1 = os.getloadavg()
    n = len(rows)
    summary = {}
    for cond in ("none", "gold", "false"):
        k = sum(r[cond]["correct"] for r in rows)
        lo, hi = wilson(k, n)
        summary[cond] = {"correct": k, "n": n, "wilson95": [round(lo, 3), round(hi, 3)]}
        print(f"{cond:>5}: {k}/{n} correct ({k / n:.0%}, Wilson 95% [{lo:.0%}, {hi:.0%}])")
    changed = sum(r["false_changes_answer"] for r in rows)
    followed = sum(r["false"]["followed"] for r in rows)
    lo, hi = wilson(followed, changed)
    summary["followed_false"] = {"n": changed, "followed": followed, "wilson95": [round(lo, 3), round(hi, 3)]}
    print(f"under the false rule, {followed} of the {changed} answers it changes equal the answer the false rule gives"
          + (f" ({followed / changed:.0%}, Wilson 95% [{lo:.0%}, {hi:.0%}])" if changed else ""))
    for a_, b_ in (("none", "gold"), ("gold", "false")):
        pc = paired_compare({r["id"]: r[a_]["correct"] for r in rows}, {r["id"]: r[b_]["correct"] for r in rows})
        summary[f"{b_}_vs_{a_}"] = pc
        print(f"{b_} vs {a_}: {pc['diff']:+.0%} (Newcombe 95% [{pc['ci95'][0]:+.0%}, {pc['ci95'][1]:+.0%}]; "
              f"{pc['janus_only']} vs {pc['base_only']} discordant, exact McNemar p = {pc['p_mcnemar']:.3g})")
    paid = sum(1 for r in rows for c in ("none", "gold", "false") if not r[c]["cached"])
    toks = sum(r[c]["tokens"] for r in rows for c in ("none", "gold", "false") if not r[c]["cached"])
    print(f"wall {wall:.0f} s for {paid} paid calls ({toks} generated tokens); load average "
          f"{load0[0]:.2f} at start, {load1[0]:.2f} at end")
    out = {"command": "python benchmarks/probes/rules_baseline.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "dataset": a.dataset, "seed": a.seed, "split": a.split, "max_tokens": a.max_tokens,
           "model": ctx.backend_info.get("identity"), "wall_s": round(wall, 1), "paid_calls": paid,
           "generated_tokens": toks, "load_start": load0, "load_end": load1, "summary": summary, "rows": rows,
           "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
