"""The tables `janus run` prints at the end (rich): one row per method, then LLM usage by role, then cost remarks.

Cost is given twice per method: *needed* (standalone: every LLM response the method used, whether this run paid for it
or the response cache served it; what the method costs on its own with an empty cache) and *paid* (backend calls this run
actually made). The Janus overhead (:func:`janus_overhead`, also used by the report's
token_overhead.png) compares the stream tokens ``X+janus`` needed with those of ``X``, so the method that happens to run
second (and finds the cache warm) does not look cheaper and the held-out test, the same for both, does not dilute it.
"""
from __future__ import annotations


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def method_cost(usage: dict) -> dict:
    """{"needed_calls", "needed_tokens", "paid_calls", "paid_tokens", "cache_hits"} of one method's per-role usage.

    Needed = paid + served by the cache (``hit_*_tokens``, kept by llm/usage.py)."""
    paid_calls = sum(r.get("calls") or 0 for r in usage.values())
    hits = sum(r.get("cache_hits") or 0 for r in usage.values())
    paid_tok = sum((r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0) for r in usage.values())
    hit_tok = sum((r.get("hit_prompt_tokens") or 0) + (r.get("hit_completion_tokens") or 0) for r in usage.values())
    return {"needed_calls": paid_calls + hits, "needed_tokens": paid_tok + hit_tok, "paid_calls": paid_calls,
            "paid_tokens": paid_tok, "cache_hits": hits}


def overhead_pct(base_tokens: int, janus_tokens: int) -> float | None:
    """Janus overhead in % of the base method's needed tokens: 100 * (janus - base) / base (None if base is 0)."""
    return None if not base_tokens else 100.0 * (janus_tokens - base_tokens) / base_tokens


OVERHEAD_BASIS = "stream tokens, cache hits included, held-out test excluded"


def janus_overhead(base_usage: dict, janus_usage: dict) -> dict:
    """The one definition of the Janus overhead, for the console and the report's plot: the tokens each method needed
    while building its memory (every role but ``test``: the held-out test costs both methods the same and grows with
    --test-size), cache hits included. Returns the two costs and ``pct`` (None when the base needed nothing)."""
    b = method_cost({k: v for k, v in (base_usage or {}).items() if k != "test"})
    j = method_cost({k: v for k, v in (janus_usage or {}).items() if k != "test"})
    return {"base": b, "janus": j, "pct": overhead_pct(b["needed_tokens"], j["needed_tokens"])}


def cost_remarks(methods: dict) -> list[str]:
    """Plain sentences: Janus overhead per base/+janus pair, and which methods' results came from the cache."""
    costs = {name: method_cost(m.get("usage") or {}) for name, m in methods.items()}
    out = []
    for name, c in costs.items():
        base_name = name[: -len("+janus")]
        if name.endswith("+janus") and base_name in costs:
            o = janus_overhead(methods[base_name].get("usage"), methods[name].get("usage"))
            if o["pct"] is not None:
                out.append(f"Janus overhead: {o['pct']:+.1f}% ({OVERHEAD_BASIS}): {name} needed "
                           f"{o['janus']['needed_tokens']:,} vs {o['base']['needed_tokens']:,} for {base_name} "
                           f"({o['janus']['needed_calls']:,} vs {o['base']['needed_calls']:,} LLM responses)")
    for name, c in costs.items():
        if c["needed_calls"] and not c["paid_calls"]:
            out.append(f"{name}: every response came from the response cache (0 paid calls); its results are replayed "
                       "from an earlier run with the same requests, and 'needed' is what it costs with an empty cache")
        elif c["cache_hits"]:
            out.append(f"{name}: {c['cache_hits']:,} of {c['needed_calls']:,} responses came from the response cache")
    return out


def print_summary(summary: dict, console) -> None:
    from rich.table import Table

    t = Table(title=f"{summary['dataset']} / {summary['updater']}")
    cols = ("method", "online acc", "test acc", "triggers", "accepts", "rollbacks", "LLM calls needed", "tokens needed",
            "calls paid", "tokens paid")
    for col in cols:
        t.add_column(col, justify="right" if col != "method" else "left")
    for name, m in summary["methods"].items():
        c = method_cost(m["usage"])
        t.add_row(name, _fmt(m["online_accuracy"]), f"{_fmt(m['test_accuracy'])} ({m['test_correct']}/{m['test_tasks']})",
                  *("-" if m[k] is None else str(m[k]) for k in ("triggers", "accepts", "rollbacks")),
                  f"{c['needed_calls']:,}", f"{c['needed_tokens']:,}", f"{c['paid_calls']:,}", f"{c['paid_tokens']:,}")
    console.print(t)
    print_injections(summary, console)
    u = Table(title="LLM usage by role (whole run)", caption="paid = backend calls; cache hits = served by the response cache")
    for col in ("role", "calls paid", "cache hits", "prompt tokens paid", "completion tokens paid", "wall s"):
        u.add_column(col, justify="right" if col != "role" else "left")
    for role, r in summary["usage_total"].items():
        u.add_row(role, str(r.get("calls", 0)), str(r.get("cache_hits", 0)), str(r.get("prompt_tokens", 0)),
                  str(r.get("completion_tokens", 0)), f"{r.get('wall_s', 0):.1f}")
    console.print(u)
    for line in cost_remarks(summary["methods"]):
        console.print(line, markup=False, soft_wrap=True)
    eng = summary.get("engine")
    if eng and eng.get("calls"):
        console.print(f"embedded engine: {eng['calls']} calls this session, prompt {eng.get('prompt_tok_s', 0):.1f} "
                      f"tok/s, generation {eng.get('gen_tok_s', 0):.1f} tok/s, {eng.get('cached_prompt_tokens', 0)} "
                      "prompt tokens reused from the KV cache", markup=False, soft_wrap=True)


def print_injections(summary: dict, console) -> None:
    """Per method: injected harmful candidates, how many were deployed / blocked, and for each blocked one whether
    the trigger fired and how the evaluation set E scored the old and the injected memory (runs with --inject only)."""
    from rich.table import Table

    rows = {name: m["injections"] for name, m in summary["methods"].items() if m.get("injections")}
    if not rows:
        return
    t = Table(title=f"injected harmful candidates ({next(iter(rows.values()))['plan']})")
    for col in ("method", "injected", "deployed", "blocked", "blocked: trigger fired, E score old vs injected"):
        t.add_column(col, justify="left" if col == "method" or col.startswith("blocked:") else "right")
    for name, s in rows.items():
        detail = "; ".join(f"{b['kind']}@{b['step']}: " + ("fired" if b["triggered"] else "not fired")
                           + (f", {b['old_score']:.2f} vs {b['new_score']:.2f}"
                              if b["old_score"] is not None and b["new_score"] is not None else "")
                           for b in s["blocked_steps"]) or "-"
        t.add_row(name, str(s["injected"]), str(s["deployed"]), str(s["blocked"]), detail)
    console.print(t)
