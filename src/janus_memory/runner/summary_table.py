"""The tables `janus run` prints at the end (rich): one row per method, then LLM usage by role."""
from __future__ import annotations


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def print_summary(summary: dict, console) -> None:
    from rich.table import Table

    t = Table(title=f"{summary['dataset']} / {summary['updater']}")
    for col in ("method", "online acc", "test acc", "triggers", "accepts", "rollbacks", "LLM calls", "cache hits", "tokens"):
        t.add_column(col, justify="right" if col != "method" else "left")
    for name, m in summary["methods"].items():
        calls = sum(r.get("calls", 0) for r in m["usage"].values())
        hits = sum(r.get("cache_hits", 0) for r in m["usage"].values())
        toks = sum((r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0) for r in m["usage"].values())
        t.add_row(name, _fmt(m["online_accuracy"]), f"{_fmt(m['test_accuracy'])} ({m['test_correct']}/{m['test_tasks']})",
                  *("-" if m[k] is None else str(m[k]) for k in ("triggers", "accepts", "rollbacks")),
                  str(calls), str(hits), str(toks))
    console.print(t)
    print_injections(summary, console)
    u = Table(title="LLM usage by role (whole run)")
    for col in ("role", "calls", "cache hits", "prompt tokens", "completion tokens", "wall s"):
        u.add_column(col, justify="right" if col != "role" else "left")
    for role, r in summary["usage_total"].items():
        u.add_row(role, str(r.get("calls", 0)), str(r.get("cache_hits", 0)), str(r.get("prompt_tokens", 0)),
                  str(r.get("completion_tokens", 0)), f"{r.get('wall_s', 0):.1f}")
    console.print(u)
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
