"""Usage accounting per role: backend calls, cache hits, prompt/completion tokens, wall time, money.

Roles used across the project: ``solver``, ``curator`` (memory updates), ``janus`` (evaluation-set replay),
``test`` (frozen held-out evaluation). Cache hits count in ``cache_hits`` only: they add no calls, no
tokens and no cost; the tokens the cached responses once took are kept apart in ``hit_prompt_tokens`` /
``hit_completion_tokens`` so a report can give a method's standalone cost (what it needs without the cache). ``estimated_tokens`` is True when any counted call had no server usage (C22-A).
``wall_s`` is the wall-clock time spent inside the client's chat/chat_many calls for that role.
``cost_usd`` uses ``prices = {model: (usd_per_1M_prompt, usd_per_1M_completion)}``; None when no price is known.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from janus_memory.types import Usage

KEYS = ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "estimated_tokens", "wall_s", "cost_usd",
        "retries", "errors", "hit_prompt_tokens", "hit_completion_tokens")


@dataclass
class _RoleUsage:
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated_tokens: bool = False
    wall_s: float = 0.0
    cost_usd: float | None = None
    retries: int = 0
    errors: int = 0
    hit_prompt_tokens: int = 0
    hit_completion_tokens: int = 0


class UsageMeter:
    """Thread-safe per-role usage counters."""

    def __init__(self, prices: dict[str, tuple[float, float]] | None = None):
        self.prices = dict(prices or {})
        self._lock = threading.Lock()
        self._roles: dict[str, _RoleUsage] = {}

    def _role(self, role: str) -> _RoleUsage:
        r = self._roles.get(role)
        if r is None:
            r = self._roles[role] = _RoleUsage()
        return r

    def record_call(self, role: str, usage: Usage, model: str = "") -> None:
        """One successful backend call (not a cache hit)."""
        with self._lock:
            r = self._role(role)
            r.calls += 1
            r.prompt_tokens += int(usage.prompt_tokens)
            r.completion_tokens += int(usage.completion_tokens)
            r.estimated_tokens = r.estimated_tokens or bool(usage.estimated)
            price = self.prices.get(model)
            if price is not None:
                c = usage.prompt_tokens * price[0] / 1e6 + usage.completion_tokens * price[1] / 1e6
                r.cost_usd = (r.cost_usd or 0.0) + c

    def record_hit(self, role: str, usage: Usage | None = None) -> None:
        """One response served by the cache; ``usage`` (the cached response's tokens) counts as hit tokens only."""
        with self._lock:
            r = self._role(role)
            r.cache_hits += 1
            if usage is not None:
                r.hit_prompt_tokens += int(usage.prompt_tokens)
                r.hit_completion_tokens += int(usage.completion_tokens)

    def record_retry(self, role: str) -> None:
        with self._lock:
            self._role(role).retries += 1

    def record_error(self, role: str) -> None:
        with self._lock:
            self._role(role).errors += 1

    def add_wall(self, role: str, seconds: float) -> None:
        with self._lock:
            self._role(role).wall_s += float(seconds)

    def snapshot(self) -> dict[str, dict]:
        """``{role: {calls, cache_hits, prompt_tokens, completion_tokens, estimated_tokens, wall_s, cost_usd,
        retries, errors}}`` (a copy)."""
        with self._lock:
            return {k: {f: getattr(v, f) for f in KEYS} for k, v in self._roles.items()}

    def total(self) -> dict:
        """The same keys summed over roles (``cost_usd`` None when no role has a cost)."""
        out = {f: 0 for f in KEYS}
        out["estimated_tokens"] = False
        out["wall_s"] = 0.0
        out["cost_usd"] = None
        for v in self.snapshot().values():
            for f in KEYS:
                if f == "estimated_tokens":
                    out[f] = out[f] or v[f]
                elif f == "cost_usd":
                    if v[f] is not None:
                        out[f] = (out[f] or 0.0) + v[f]
                else:
                    out[f] += v[f]
        return out
