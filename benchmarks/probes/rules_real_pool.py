"""Pool the real-model measurements of several seeds (each an ``--out`` folder of `rules_real_run.py`, read back):
per method the held-out tickets right, stated rules the final memory holds, injected candidates blocked, genuine
candidates rolled back and calls needed and paid, summed over the seeds; and paired comparisons on the pooled
held-out tickets (recommended against blind, always and paper; always against blind): difference, Newcombe 95%
interval, exact McNemar p. The tickets of one seed share one final memory, so the pooled interval treats answers as
independent that are not: it says how the final memories answered these tickets, not how another stream would go.

    python benchmarks/probes/rules_real_pool.py runs/late-real/seed0 runs/late-real/seed1 --out runs/late-real/pooled
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

METHODS = ("blind", "paper", "always", "recommended")
PAIRS = (("recommended", "blind"), ("recommended", "always"), ("recommended", "paper"), ("always", "blind"))


def verdicts(root: Path, run: str, method: str, seed: int) -> dict[str, bool]:
    rows = [json.loads(x) for x in (root / run / method / "test.jsonl").read_text(encoding="utf-8").splitlines()
            if x.strip()]
    return {f"{seed}:{r['task_id']}": bool(r["correct"]) for r in rows if r.get("memory", "final") in ("final", None)}


def main(argv: list[str] | None = None) -> int:
    from janus_memory.report.paired import paired_compare, wilson

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    total: dict[str, dict] = {}
    answers: dict[str, dict[str, bool]] = {m: {} for m in METHODS}
    seeds, walls = [], []
    for f in a.folders:
        root = Path(f)
        res = json.loads((root / "measurement.json").read_text(encoding="utf-8"))
        seed = res["settings"]["seed"]
        seeds.append(seed)
        walls.append(res.get("wall_s"))
        for name, m in res["methods"].items():
            t = total.setdefault(name, {"right": 0, "tasks": 0, "stated": 0, "held": 0, "blocked": 0, "injected": 0,
                                        "genuine": 0, "rolled_back": 0, "needed": 0, "paid": 0, "seeds": 0})
            kept = m["kept"]
            inj = m["injections"]
            t["seeds"] += 1
            t["right"] += m["test_correct"]
            t["tasks"] += m["test_tasks"]
            t["stated"] += len(kept["stated"] or [])
            t["held"] += len(kept["held"] or [])
            t["blocked"] += len(inj["blocked"] or [])
            t["injected"] += len(inj["blocked"] or []) + len(inj["deployed"] or [])
            t["genuine"] += kept["genuine"] or 0
            t["rolled_back"] += kept["rolled_back"] or 0
            t["needed"] += m["calls"]["total"]
            t["paid"] += m["calls"]["paid_here"]
            answers[name].update(verdicts(root, m["run"], m["method"], seed))
    lines = [f"Seeds {', '.join(map(str, seeds))} pooled ({len(seeds)} streams).", "",
             "| method | held out right | Wilson 95% | stated rules held | injected blocked | genuine rolled back | "
             "calls needed | calls paid |", "|---|---|---|---|---|---|---|---|"]
    for name in METHODS:
        if name not in total:
            continue
        t = total[name]
        lo, hi = wilson(t["right"], t["tasks"])
        gen = "—" if name == "blind" else f"{t['rolled_back']} of {t['genuine']}"
        lines.append(f"| {name} | {t['right']}/{t['tasks']} | {lo:.2f}-{hi:.2f} | {t['held']} of {t['stated']} | "
                     f"{t['blocked']} of {t['injected']} | {gen} | {t['needed']} | {t['paid']} |")
    lines += ["", "| paired (pooled tickets) | n | difference | Newcombe 95% | McNemar p |", "|---|---|---|---|---|"]
    paired = {}
    for x, y in PAIRS:
        if answers[x] and answers[y]:
            pc = paired_compare(answers[y], answers[x])
            paired[f"{x}-{y}"] = pc
            lines.append(f"| {x} − {y} | {pc['n']} | {pc['diff'] * 100:+.1f} pp | [{pc['ci95'][0] * 100:+.1f}, "
                         f"{pc['ci95'][1] * 100:+.1f}] | {pc['p_mcnemar']:.3g} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "pooled.json").write_text(json.dumps({"seeds": seeds, "methods": total, "paired": paired,
                                                     "wall_s": walls}, indent=1) + "\n", encoding="utf-8")
        (out / "pooled.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
