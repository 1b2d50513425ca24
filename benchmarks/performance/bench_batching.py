"""Embedded engine: aggregate generation throughput at 1, 2 and 4 llama.cpp slots on demo-style prompts.

Each request is the DC-RS solving prompt of the demo (our generator system prompt; user message = cheatsheet first,
then a GSM8K test question), all sharing one cheatsheet, as in Janus's evaluation of one memory. For every slot
count a fresh engine is loaded, one untimed warm-up request fills slot 0 with the cheatsheet prefix, then
``--requests`` prompts are sent through ``LLMClient.chat_many`` (concurrency = slots, no response cache).
Printed per measurement: wall time, generated tokens, aggregate generated tokens/s (generated / wall), the prompt
tokens computed vs served from the KV cache (memory-first layout), and the 1-minute load average before and
after (the machine is shared: compare only ratios taken within one repeat). Repeats alternate the slot order.

    python benchmarks/performance/bench_batching.py [--model PATH] [--slots 1,2,4] [--requests 4] [--max-tokens 48]
                                        [--repeats 2] [--out results.json]
"""
from __future__ import annotations

import argparse
import json
import os
import time

from janus_memory.llm import LLMClient
from janus_memory.llm.local import LocalBackend, default_gguf
from janus_memory.tasks.base import get_family, load_split
from janus_memory.updaters.base import fill, load_prompt

# a cheatsheet in the shape our DC-RS curator writes (our own words), ~300 tokens
CHEATSHEET = """Version: 4
## General Problem-Solving Heuristics
- Write down every quantity with its unit before computing; convert to one unit first (use when: rates, money, time)
- Translate each sentence into one equation and solve them in the order the story gives them (use when: word problems)
- For "how many more/less", compute both totals, then subtract; never subtract parts (use when: comparisons)
- Percent of a percent multiplies: 20% off then 10% off is 0.8 * 0.9 of the price (use when: discounts, growth)
- Per-item cost times count, then add fixed fees once (use when: shopping, bills)
- Check the final number against the question: total vs. remainder vs. per-person (use when: any multi-step problem)
- Average = total / count; to find a missing value, work from the total (use when: averages)
- Time problems: convert hours and minutes to minutes, compute, convert back (use when: schedules, speeds)"""


def demo_messages(questions: list, family) -> list[list[dict]]:
    system = load_prompt("dc_generator_system")
    user_t = load_prompt("dc_generator_user")
    return [[{"role": "system", "content": system},
             {"role": "user", "content": fill(user_t, CHEATSHEET=CHEATSHEET, EXAMPLES="", TASK=family.prompt(t))}]
            for t in questions]


def load1() -> float:
    return os.getloadavg()[0]


def measure(model: str, slots: int, batch: list, warm: list, max_tokens: int, n_ctx: int) -> dict:
    b = LocalBackend(model, n_ctx=n_ctx, n_threads=2, n_parallel=slots)
    client = LLMClient(b, cache=None, concurrency=slots, max_retries=0)
    client.chat(warm, max_tokens=4, temperature=0.0)  # load + cheatsheet prefix in slot 0
    s0 = b.stats.as_dict()
    load_before = load1()
    t0 = time.perf_counter()
    out = client.chat_many(batch, max_tokens=max_tokens, temperature=0.0)
    wall = time.perf_counter() - t0
    s1 = b.stats.as_dict()
    b.close()
    gen = s1["gen_tokens"] - s0["gen_tokens"]
    computed = s1["prompt_tokens"] - s0["prompt_tokens"]
    cached = s1["cached_prompt_tokens"] - s0["cached_prompt_tokens"]
    return {"slots": slots, "requests": len(batch), "wall_s": round(wall, 2), "gen_tokens": gen,
            "gen_tok_s": round(gen / wall, 3), "prompt_computed": computed, "prompt_cached": cached,
            "prompt_reuse": round(cached / max(1, cached + computed), 3),
            "finish": [r.finish_reason for r in out], "load_before": load_before, "load_after": load1()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="GGUF path (default: the embedded model, `janus model path`)")
    ap.add_argument("--slots", default="1,2,4")
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--n-ctx", type=int, default=1536, help="context per slot")
    ap.add_argument("--out", default=None, help="write all measurements as JSON here")
    a = ap.parse_args(argv)
    model = a.model or str(default_gguf())
    slots = [int(s) for s in a.slots.split(",")]
    family = get_family("gsm8k")
    tasks = load_split("gsm8k", "test", seed=0, limit=a.requests + 1).tasks
    msgs = demo_messages(tasks, family)
    warm, batch = msgs[0], msgs[1:1 + a.requests]
    print(f"model {os.path.basename(model)}; {a.requests} requests x {a.max_tokens} max tokens; slots {slots}")
    rows = []
    for rep in range(a.repeats):
        order = slots if rep % 2 == 0 else list(reversed(slots))
        res = {}
        for s in order:
            res[s] = measure(model, s, batch, warm, a.max_tokens, a.n_ctx)
            print(f"  measured: {json.dumps(res[s])}", flush=True)
        base = res[slots[0]]["gen_tok_s"]
        for s in slots:
            r = dict(res[s], repeat=rep, ratio_vs_first=round(res[s]["gen_tok_s"] / base, 3) if base else None)
            rows.append(r)
            print(f"rep {rep} slots {s}: wall {r['wall_s']:.1f} s, gen {r['gen_tokens']} tok, "
                  f"{r['gen_tok_s']:.2f} tok/s (x{r['ratio_vs_first']} vs {slots[0]} slot), prompt computed "
                  f"{r['prompt_computed']} / cached {r['prompt_cached']} (reuse {r['prompt_reuse']:.2f}), "
                  f"load {r['load_before']:.1f}->{r['load_after']:.1f}", flush=True)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
