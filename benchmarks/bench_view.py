"""Size and opening time of a `janus view` page for a synthetic long run (docs/measurements.md, "`janus view`: page
size and opening time", holds the numbers).

A synthetic run of N stream steps (default 10,000) with two methods, dc_rs and dc_rs+janus, shaped like a real one:
a cheatsheet of ~60 lines (~4 KB) where each step's candidate rewrites one line and adds one (the oldest line drops
out past 60), answers of ~700 characters, questions of ~350, the trigger firing on a quarter of the post-warm-up
steps with a 25-task evaluation set (12 coverage + 8 boundary + 5 fresh, both memories' verdicts and answers) and 40%
of those candidates rolled back. The step data goes through the same code as a run folder's (view.data.timeline:
flags, cosines, diffs, evaluation rows; page.render), then headless Chromium (tests/headless.py) opens the file.

    python benchmarks/bench_view.py [--steps 10000] [--out /tmp/bench_view] [--screenshot]

Prints the page size (and gzip size), Python build time, and in Chromium: navigation to load event, view.js's own
drawing time, and the time from a click on a step to its open detail; with the load average (the machine is shared).
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

WORDS = ("the of and to in is that for it with as was on be by this are or from at which but have an not they all "
         "number answer total each more than step check rule when use first then sum product ratio percent").split()


def sentence(rng: random.Random, n: int) -> str:
    out, size = [], 0
    while size < n:
        out.append(rng.choice(WORDS))
        size += len(out[-1]) + 1
    return " ".join(out).capitalize() + "."


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def synthetic_method(n: int, janus: bool, rng: random.Random, questions: dict) -> tuple[list, dict, list]:
    """(pairs, candidates by step, deployed versions) of one synthetic method."""
    lines = [f"- Rule {i}: {sentence(rng, 50)}" for i in range(20)]
    memory = "\n".join(lines)
    versions = [{"step": 0, "sha256": sha(memory), "text": memory}]
    pairs, cands, ids = [], {}, list(questions)
    for s in range(1, n + 1):
        cand_lines = list(lines)
        cand_lines[rng.randrange(len(cand_lines))] = f"- Rule {s}a: {sentence(rng, 55)}"
        cand_lines.append(f"- Rule {s}b: {sentence(rng, 60)}")
        cand_lines = cand_lines[-60:]
        cand = "\n".join(cand_lines)
        triggered = janus and s > 20 and rng.random() < 0.25
        rolled = triggered and rng.random() < 0.4
        dec = {"step": s, "task_id": ids[s - 1], "correct": rng.random() < 0.6, "old_memory_sha256": sha(memory),
               "candidate_memory_sha256": sha(cand), "candidate_rejected": None,
               "deployed": "previous" if rolled else "candidate",
               "decision": {"accept": not rolled, "triggered": triggered,
                            "phase": "warmup" if janus and s <= 20 else "stream",
                            "reason": ("old_better" if rolled else "new_ge_old") if triggered else (
                                "not_triggered" if janus and s > 20 else "no_controller"),
                            "cosine": rng.uniform(-0.6, 0.6) if janus and s > 21 else None}}
        if triggered:
            cov = rng.sample(ids[:s], min(12, s))
            bnd = rng.sample(ids[:s], min(8, s))
            fr = rng.sample(ids[:s], min(5, s))
            e = cov + bnd + fr
            oc = [rng.random() < 0.6 for _ in e]
            nc = [rng.random() < (0.4 if rolled else 0.7) for _ in e]
            dec["decision"].update(coverage=cov, boundary=bnd, fresh=fr, eval_ids=e, old_correct=oc, new_correct=nc,
                                   old_score=sum(oc) / len(e), new_score=sum(nc) / len(e), evaluator_calls=2 * len(e),
                                   evaluations=[{"task_id": t, "memory_sha256": m[:12],
                                                 "extracted": str(rng.randrange(999))}
                                                for m in (sha(memory), sha(cand)) for t in e])
        rec = {"step": s, "task_id": ids[s - 1], "output": sentence(rng, 650) + f" The answer is \\boxed{{{s}}}.",
               "extracted": str(s), "status": "ok"}
        pairs.append((dec, rec))
        cands[s] = {"step": s, "sha256": sha(cand), "text": cand}
        if not rolled:
            memory, lines = cand, cand_lines
            versions.append({"step": s, "sha256": sha(memory), "text": memory})
    return pairs, cands, versions


def synthesize(n: int, seed: int = 0) -> tuple[dict, list]:
    """({task id: (question, gold)}, [(name, janus, (pairs, candidates, versions)) per method])."""
    rng = random.Random(seed)
    questions = {f"synthetic:{i}": (sentence(rng, 350), str(i)) for i in range(n)}
    return questions, [(name, janus, synthetic_method(n, janus, rng, questions))
                       for name, janus in (("dc_rs", False), ("dc_rs+janus", True))]


def build(n: int, questions: dict, raw: list) -> dict:
    """The page data from the synthetic run, through view.data.timeline (flags, cosines, diffs, evaluation rows)."""
    from janus_memory.controller import JanusConfig
    from janus_memory.controller.describe import describe
    from janus_memory.report.paired import wilson
    from janus_memory.view import data as V

    tasks = V.TaskTable.from_texts(questions)
    methods = []
    for name, janus, (pairs, cands, versions) in raw:
        line = V.timeline(pairs, cands, versions, tasks)
        k = sum(1 for f in line["f"] if f & V.CORRECT)
        tok = [1200 * s + (3000 * s if janus else 0) for s in range(1, n + 1)]
        methods.append({"name": name, "label": name, "janus": janus, "n": n, "online": [k, n, *wilson(k, n)],
                        "test": [300, 500, *wilson(300, 500)], "triggers": None, "accepts": None, "rollbacks": None,
                        "trigger_rate": None, "tau": 0.0 if janus else None, "injections": None, "checkpoints": [],
                        "cost": {"needed_calls": 0, "needed_tokens": tok[-1], "paid_calls": 0, "paid_tokens": tok[-1],
                                 "cache_hits": 0, "roles": {}, "estimated": []},
                        **line, "tok_steps": list(range(1, n + 1)), "tok": tok})
    d = describe(JanusConfig.paper())
    header = {"dataset": "synthetic", "dataset_name": "synthetic", "updater": "dc_rs", "backend": "fake",
              "model": "synthetic", "encoder": "-", "identity": None, "preset": "paper",
              "setup": [["Run preset", "paper"], ["Janus preset", d.label], ["Janus warm-up", str(d.warmup)],
                        ["Janus trigger", d.trigger], ["Janus evaluation set", d.evaluation],
                        ["Janus decision", d.rule]],
              "stream_n": n, "test_n": 500, "stream_size": n, "test_size": 500, "seed": 0,
              "stream_order_seed": None, "janus_seed": 0,
              "inject": None, "wall_s": 0.0, "calls": 0, "paid_calls": 0, "tokens": 0, "paid_tokens": 0,
              "cost_usd": None, "version": "bench", "caption": f"synthetic run of {n:,} steps"}
    run = {"name": f"synthetic-{n}", "path": "/synthetic", "header": header, "methods": methods, "tasks": tasks.rows,
           "task_note": ""}
    return V.clean({"format": V.FORMAT, "runs": [run], "compare": [], "unfinished": []})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--out", default="/tmp/bench_view")
    ap.add_argument("--screenshot", action="store_true")
    args = ap.parse_args()
    from janus_memory.view.page import render

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ts = time.perf_counter()
    questions, raw = synthesize(args.steps)
    t0 = time.perf_counter()
    data = build(args.steps, questions, raw)
    t1 = time.perf_counter()
    html = render(data)
    t2 = time.perf_counter()
    page = out / f"view_{args.steps}.html"
    page.write_text(html, encoding="utf-8")
    raw = page.stat().st_size
    print(f"steps {args.steps:,} x 2 methods; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"page {raw / 2**20:.2f} MiB ({len(gzip.compress(html.encode(), 6)) / 2**20:.2f} MiB gzipped); "
          f"{raw / (2 * args.steps):,.0f} bytes per method step")
    print(f"python: synthesis {t0 - ts:.2f} s (not the view's); view step data {t1 - t0:.2f} s (flags, diffs, "
          f"evaluation rows), page render {t2 - t1:.2f} s")
    kind = "gzip+base64" if 'type="application/x-janus-gzip-base64"' in html[:200_000] else "JSON"
    print(f"data in the page: {kind}")
    from headless import Browser, find_chromium

    if find_chromium() is None:
        print("chromium not installed: no opening time")
        return
    with Browser() as b:
        t = time.perf_counter()
        load = b.open(str(page))
        ready = int(b.wait_for("document.body.dataset.ready", timeout=600))
        shown = time.perf_counter() - t
        marks = b.eval("document.querySelectorAll('#timeline i[data-s]').length")
        step = args.steps // 2
        t = time.perf_counter()
        b.click(f'#timeline .lane[data-m="1"] i[data-s="{step}"]')
        opened = b.eval("document.querySelector('#detail h2').textContent")
        click = time.perf_counter() - t
        errors = b.errors()
        print(f"chromium: load event after {load:.2f} s, page drawn after {shown:.2f} s (view.js: unpacking and "
              f"drawing {ready / 1000:.2f} s); "
              f"{marks:,} timeline marks; click on step {step:,} -> '{opened}' in {click:.2f} s; "
              f"console errors: {len(errors)}")
        if args.screenshot:
            b.screenshot(str(out / f"view_{args.steps}.png"))
            print(f"screenshot: {out / f'view_{args.steps}.png'}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
