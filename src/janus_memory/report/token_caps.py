"""Right-sizing the solver's token cap from answers a real model already wrote.

Reads finished or unfinished run folders and collects every single-call solve they recorded: the stream solves
(``<method>/steps.jsonl``, steps with exactly one ``solver`` call) and Janus's evaluation solves (the
``evaluations`` of ``<method>/decisions.jsonl``), each with its generated token count and whether it was scored
correct. Identical solves (the two methods of a ``--controller both`` run share their first steps) count once.

For every cap at or below the smallest cap the runs used, it prints what that cap would have given, exactly for
greedy decoding: an answer that fits keeps its score, an answer longer than the cap would have been cut before its
final line and is counted wrong (a model that states the answer early and goes on is counted wrong too: the
printed accuracy is a lower bound by those few). Generation time is proportional to generated tokens, so the mean
generated tokens per solve is the time. A cap above the recorded one cannot be judged from these answers: the
truncated share at the recorded cap says how much it could still gain.

    python -m janus_memory.report.token_caps RUN_DIR [RUN_DIR ...] [--caps 192,256,320,384,448]

(``benchmarks/probes/token_caps.py`` runs the same.)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from janus_memory.report.paired import wilson


def _key(*parts) -> str:
    return hashlib.sha256("\x00".join(str(p) for p in parts).encode()).hexdigest()


def collect(run_dirs: list[Path]) -> tuple[list[tuple[int, bool, str]], list[int]]:
    """[(generated tokens, correct, status)] of every distinct single-call solve, and the solver caps the runs used."""
    rows: dict[str, tuple[int, bool, str]] = {}
    caps: list[int] = []
    for run in run_dirs:
        cfg = json.loads((run / "config.json").read_text())
        cap = (cfg.get("llm") or {}).get("solver_max_tokens", cfg.get("solver_max_tokens"))
        if cap is not None:
            caps.append(int(cap))
        for steps in sorted(run.glob("*/steps.jsonl")):
            for line in steps.read_text().splitlines():
                s = json.loads(line)
                solver = [c for c in s.get("llm_calls") or [] if c.get("role") == "solver"]
                if len(solver) == 1:
                    rows[_key("stream", s["task_id"], s.get("output", ""))] = (
                        int(solver[0]["completion_tokens"]), bool(s["correct"]), s.get("status", ""))
        for decisions in sorted(run.glob("*/decisions.jsonl")):
            for line in decisions.read_text().splitlines():
                d = json.loads(line).get("decision") or {}
                for e in d.get("evaluations") or []:
                    rows[_key("eval", e["task_id"], e["memory_sha256"], e.get("completion_tokens"),
                              e.get("extracted"), e.get("status"))] = (
                        int(e["completion_tokens"]), bool(e["correct"]), e.get("status", ""))
    return list(rows.values()), caps


def at_cap(rows: list[tuple[int, bool, str]], cap: int) -> dict:
    """What ``cap`` would have given on these answers (module docstring)."""
    n = len(rows)
    k = sum(1 for t, ok, _ in rows if ok and t <= cap)
    lo, hi = wilson(k, n)
    return {"cap": cap, "n": n, "correct": k, "accuracy": k / n if n else float("nan"), "ci95": (lo, hi),
            "cut": sum(1 for t, _, _ in rows if t > cap),
            "mean_generated": sum(min(t, cap) for t, _, _ in rows) / n if n else float("nan")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--caps", default="192,256,320,384,448")
    a = ap.parse_args(argv)
    rows, caps = collect(a.runs)
    if not rows:
        print("no single-call solves found in these folders", file=sys.stderr)
        return 1
    recorded = min(caps) if caps else max(t for t, _, _ in rows)
    wanted = sorted({int(c) for c in a.caps.split(",")})
    toks = sorted(t for t, _, _ in rows)
    n = len(rows)
    print(f"{n} distinct solves from {len(a.runs)} run folder(s); recorded solver cap {recorded}; generated tokens: "
          f"median {toks[n // 2]}, p90 {toks[min(n - 1, int(n * 0.9))]}, max {toks[-1]}; "
          f"{sum(1 for _, _, s in rows if s == 'truncated')} hit the recorded cap")
    base = at_cap(rows, recorded)
    print(f"{'cap':>5} {'accuracy':>9} {'95% CI':>15} {'cut':>5} {'mean gen tok':>13} {'time vs recorded':>17}")
    for cap in wanted:
        if cap > recorded:
            print(f"{cap:>5}  (above the recorded cap {recorded}: not judged from these answers)")
            continue
        r = at_cap(rows, cap)
        lo, hi = r["ci95"]
        print(f"{cap:>5} {r['accuracy']:>9.3f} {f'[{lo:.3f}, {hi:.3f}]':>15} {r['cut']:>5} "
              f"{r['mean_generated']:>13.1f} {r['mean_generated'] / base['mean_generated']:>16.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
