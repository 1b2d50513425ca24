"""Arithmetic on per-role LLM usage dicts ``{role: {"calls", "cache_hits", "prompt_tokens", ...}}``."""
from __future__ import annotations


def usage_delta(after: dict, before: dict) -> dict:
    """``after - before`` per role and numeric field; roles with no calls and no cache hits are dropped."""
    out = {}
    for role, a in after.items():
        b = before.get(role, {})
        d = {}
        for k, v in a.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                d[k] = v - (b.get(k) or 0)
            else:
                d[k] = v
        if d.get("calls") or d.get("cache_hits"):
            out[role] = d
    return out


def add_usage(a: dict, b: dict) -> dict:
    """Sum two per-role usage dicts (numeric fields added, flags or-ed)."""
    out = {role: dict(v) for role, v in a.items()}
    for role, v in b.items():
        cur = out.setdefault(role, {})
        for k, x in v.items():
            if isinstance(x, bool):
                cur[k] = bool(cur.get(k)) or x
            elif isinstance(x, (int, float)):
                cur[k] = (cur.get(k) or 0) + x
            elif x is not None:
                cur[k] = x
    return out


def step_usage(calls, evaluations) -> dict:
    """Tokens of the responses one step used, by role, counted from the responses themselves (cache hits included),
    so a step record is identical in resumed and uninterrupted runs."""
    usage: dict = {}
    for c in calls:
        u = usage.setdefault(c.role, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
        u["calls"] += 1
        u["prompt_tokens"] += c.result.usage.prompt_tokens
        u["completion_tokens"] += c.result.usage.completion_tokens
    for e in evaluations:
        u = usage.setdefault("janus", {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
        u["calls"] += 1
        u["prompt_tokens"] += e.get("prompt_tokens", 0)
        u["completion_tokens"] += e.get("completion_tokens", 0)
    return usage


def total_tokens(snapshot: dict) -> int:
    return sum((r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0) for r in snapshot.values())


def sum_method_usage(methods: dict) -> dict:
    total: dict = {}
    for m in methods.values():
        total = add_usage(total, m.get("usage") or {})
    return total
