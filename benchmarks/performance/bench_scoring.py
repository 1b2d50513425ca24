"""Scoring throughput on each checker's full gold set, using both cores (prints items/s; no assertions).

    python benchmarks/performance/bench_scoring.py [--workers 2] [--data-dir PATH]

- MATH-500: every gold answer against the last \\boxed{} of its own solution, through MathFamily.score_many
  (extraction + math-verify worker processes), and once more through math-verify alone (no string shortcut).
- HumanEval: the 164 canonical solutions in the sandbox under the proof harness (bubblewrap if installed).
(benchmarks/probes/audit_scorers.py adds agreement, unparsed/fallback rates, real DC outputs and forged/invented inputs.)
- APIBench-HF: the 911 gold api_calls through the AST matcher.
- MMLU-Pro Eng+Phy: 2268 letter replies through the multiple-choice extractor.
"""
from __future__ import annotations

import argparse
import os
import sys
import time


def _mv_only(gold: str, pred: str) -> bool:
    from math_verify import parse, verify

    from janus_memory.tasks.verify_math import normalize_for_verify
    g = parse("$" + normalize_for_verify(gold) + "$", parsing_timeout=None)
    p = parse("$" + normalize_for_verify(pred) + "$", parsing_timeout=None)
    return bool(g and p and verify(g, p, timeout_seconds=None))


def _row(name, n, correct, secs, extra=""):
    print(f"{name:<34} {n:>5} items  {correct:>5} correct  {secs:7.2f} s  {n / secs:9.1f} items/s  {extra}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--data-dir", default=None)
    a = ap.parse_args()
    import logging
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    from janus_memory.tasks import get_family, load_split
    from janus_memory.tasks.data import find_source, read_jsonl
    from janus_memory.tasks.extract_math import extract_math_answer
    from janus_memory.tasks.sandbox import choose_backend
    from janus_memory.tasks.verify_math import MathVerifier, get_verifier

    w = a.workers
    print(f"cores={os.cpu_count()} workers={w} python={sys.version.split()[0]} sandbox={choose_backend('auto')}")

    # MATH-500
    sp = load_split("math500", "test", data_dir=a.data_dir)
    sols = [r["solution"] for r in read_jsonl(find_source(a.data_dir, "math500/test.jsonl", "MATH-500"))]
    fam = get_family("math500")
    get_verifier().check("1", "1")  # warm the worker processes (import + fork) outside the timing
    get_verifier().check_many([("1", "1")] * w)
    t = time.perf_counter()
    sc = fam.score_many(sp.tasks, sols, workers=w)
    _row("MATH-500 verify (family)", len(sc), sum(s.correct for s in sc), time.perf_counter() - t)
    pairs = [(tk.gold, extract_math_answer(s).answer) for tk, s in zip(sp.tasks, sols)]
    with MathVerifier(workers=w, comparator=_mv_only) as v:
        v.check_many([("1", "1")] * w)
        t = time.perf_counter()
        res = v.check_many(pairs)
        _row("MATH-500 math-verify only", len(res), sum(c for c, _ in res), time.perf_counter() - t,
             "(no exact-match shortcut, no strictness layer)")

    # HumanEval
    sp = load_split("humaneval", "all", data_dir=a.data_dir)
    fam = get_family("humaneval")
    outs = ["```python\n" + tk.meta["prompt"] + tk.gold + "```" for tk in sp.tasks]
    t = time.perf_counter()
    sc = fam.score_many(sp.tasks, outs, workers=w)
    reasons = sorted({s.detail.get("reason") for s in sc})
    _row("HumanEval canonical (proof harness)", len(sc), sum(s.correct for s in sc), time.perf_counter() - t,
         f"backend={sc[0].detail.get('backend')} reasons={reasons}")

    # APIBench-HF
    sp = load_split("apibench_hf", "all", data_dir=a.data_dir)
    fam = get_family("apibench_hf")
    _ = fam.database  # build the index outside the timing
    outs = [f"<<<domain>>>: {tk.meta['domain']}\n<<<api_call>>>: {tk.gold}\n<<<api_provider>>>: x" for tk in sp.tasks]
    t = time.perf_counter()
    sc = fam.score_many(sp.tasks, outs, workers=w)
    _row("APIBench-HF gold (AST)", len(sc), sum(s.correct for s in sc), time.perf_counter() - t)

    # MMLU-Pro
    tasks = load_split("mmlu_pro_eng", "all", data_dir=a.data_dir).tasks + load_split("mmlu_pro_phy", "all").tasks
    fam = get_family("mmlu_pro_eng")
    outs = [f"Working... so the answer is ({tk.gold})." for tk in tasks]
    t = time.perf_counter()
    sc = fam.score_many(tasks, outs, workers=w)
    _row("MMLU-Pro Eng+Phy letters", len(sc), sum(s.correct for s in sc), time.perf_counter() - t)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
