"""Which updater's memory keeps the team's rules on a model: DC-RS, DC-Cu, ExpRAG and ACE on the first tickets of a
generated `rules` stream, blind (no Janus, nothing injected), then the held-out tickets with each final memory.

Per updater it reports: the held-out tickets right (n, Wilson 95%), which of the world's rule numbers the final
memory holds (a rule is *kept* when the number its statement gives appears in the memory text), the memory's size,
and the calls paid. A memory that keeps no number leaves the later tickets to guessing: the rules are made up per
seed. The demo's real act uses the updater this picks (settings.config.real_demo_config: ExpRAG).

One `janus run` per updater, one folder each under ``--out``, sharing the response cache; a rerun reads finished
folders back and resumes the others, so it pays only for what it has not asked before. Ctrl-C keeps every step.

Usage (results and command: docs/measurements.md, "The rules family"):
  python benchmarks/probes/rules_updaters.py --out runs/rules-updaters            # embedded model, rules_small 4 + 5
  python benchmarks/probes/rules_updaters.py --backend fake --out /tmp/ru           # plumbing in seconds (numbers mean nothing)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

UPDATERS = ("dc_rs", "dc_cu", "exprag", "ace")


def settings(a, updater: str) -> dict:
    llm = {"backend": a.backend, "temperature": 0.0}
    if a.model_path:
        llm["model_path"] = a.model_path
    s = dict(preset="small", dataset=a.dataset, seed=a.seed, stream_size=a.stream, test_size=a.test, updater=updater,
             controller="none", encoder=a.encoder, solver_max_tokens=384, curator_max_tokens=320,
             out=str(Path(a.out) / updater), **llm)
    if updater == "exprag":
        s["updater_config"] = {"top_k": 8}  # every record shown, as in the demo
    return s


def main(argv: list[str] | None = None) -> int:
    from rules_real_run import run_one

    from janus_memory.inject.falsify import kept_rules
    from janus_memory.report.paired import wilson
    from janus_memory.store.reader import RunReader

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="local", choices=("local", "fake", "openai"))
    ap.add_argument("--model-path", default=None)
    ap.add_argument("--dataset", default="rules_small", choices=("rules", "rules_small"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stream", type=int, default=4)
    ap.add_argument("--test", type=int, default=5)
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--updaters", default=",".join(UPDATERS))
    ap.add_argument("--out", default="runs/rules-updaters")
    a = ap.parse_args(argv)
    log = lambda m: print(m, flush=True)  # noqa: E731
    load0, t0 = os.getloadavg()[0], time.time()
    rows = {}
    try:
        for up in a.updaters.split(","):
            log(f"== {up}: {Path(a.out) / up}")
            summary = run_one(settings(a, up), log)
            m = summary["methods"][up]
            versions = RunReader(Path(a.out) / up).memory_versions()[0].get(up) or []
            memory = versions[-1]["text"] if versions else ""
            usage = m.get("usage") or {}
            k, n = m["test_correct"], m["test_tasks"]
            rows[up] = {"test_correct": k, "test_tasks": n, "wilson95": [round(x, 3) for x in wilson(k, n)],
                        "kept": kept_rules(memory, a.dataset, a.seed), "memory_chars": len(memory),
                        "paid_calls": sum(int((u or {}).get("calls", 0)) for u in usage.values()),
                        "memory": memory}
    except KeyboardInterrupt:
        log("interrupted: every committed step is kept; the same command continues")
        return 130
    wall, load1 = time.time() - t0, os.getloadavg()[0]
    lines = [f"dataset {a.dataset} seed {a.seed}: stream {a.stream}, test {a.test}, backend {a.backend}; wall "
             f"{wall / 60:.1f} min, load average {load0:.2f} at start, {load1:.2f} at end", "",
             "| updater | held-out right | Wilson 95% | rules whose number the final memory holds | memory chars | "
             "calls paid |", "|---|---|---|---|---|---|"]
    for up, r in rows.items():
        kept = [k for k, v in r["kept"].items() if v]
        lo, hi = r["wilson95"]
        lines.append(f"| {up} | {r['test_correct']}/{r['test_tasks']} | {lo:.2f}-{hi:.2f} | "
                     f"{len(kept)} of {len(r['kept'])}{' (' + ', '.join(kept) + ')' if kept else ''} | "
                     f"{r['memory_chars']} | {r['paid_calls']} |")
    md = "\n".join(lines) + "\n"
    print(md)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    record = {"command": "python benchmarks/probes/rules_updaters.py " + " ".join(sys.argv[1:] if argv is None else argv),
              "settings": vars(a), "wall_s": round(wall, 1), "load_start": load0, "load_end": load1,
              "when": time.strftime("%Y-%m-%dT%H:%M:%S"), "updaters": rows}
    (out / "updaters.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    (out / "updaters.md").write_text(md, encoding="utf-8")
    log(f"wrote {out / 'updaters.json'} and {out / 'updaters.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
