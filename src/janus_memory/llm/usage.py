"""Usage accounting per role: backend calls, cache hits, prompt/completion tokens, wall time, money.

Roles used across the project: ``solver``, ``curator`` (memory updates), ``janus`` (evaluation-set replay),
``test`` (frozen held-out evaluation). Cache hits count in ``cache_hits`` only: they add no calls, no
tokens and no cost; the tokens the cached responses once took are kept apart in ``hit_prompt_tokens`` /
``hit_completion_tokens`` so a report can give a method's standalone cost (what it needs without the cache). ``estimated_tokens`` is True when any counted call had no server usage (C22-A).
``wall_s`` is the wall-clock time spent inside the client's chat/chat_many calls for that role.
``cost_usd`` uses ``prices = {model: (usd_per_1M_prompt, usd_per_1M_completion)}``; None when no price is known.

The model's own busy time (:meth:`UsageMeter.busy_seconds`, all roles together) is the length of the union of the
time intervals of the backend attempts that returned a reply (cache hits, in-flight sharing and failed attempts
excluded): overlapping calls count once, and a call waiting in the engine's queue behind another adds nothing. It is
what run/timing.py records as the measured speed of the embedded model (``wall_s`` above also counts cache hits
and waiting, so it is not a measurement of the model).

Listeners (:meth:`UsageMeter.add_listener`) are told of every reply as ``fn(role, cached, tokens)``, in the thread
that recorded it (the runner's test-phase progress, run/loop.py).
"""
from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
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
        self._busy: list[float] = []  # sorted, disjoint busy intervals, flattened: [start0, end0, start1, end1, ...]
        self._busy_s = 0.0
        self._listeners: list[Callable[[str, bool, int], None]] = []

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
        self._tell(role, False, int(usage.prompt_tokens) + int(usage.completion_tokens))

    def add_busy(self, start: float, end: float) -> None:
        """The model worked on one reply from ``start`` to ``end`` (``time.perf_counter`` seconds)."""
        if not end > start:
            return
        with self._lock:
            b = self._busy
            i = bisect.bisect_left(b, start)  # b[i-1] < start <= b[i]
            j = bisect.bisect_right(b, end)  # b[j-1] <= end < b[j]
            lo = b[i - 1] if i % 2 else start  # start falls inside an interval: extend from its start
            hi = b[j] if j % 2 else end  # end falls inside an interval: extend to its end
            lo_i, hi_j = i - (i % 2), j + (j % 2)
            self._busy_s -= sum(b[k + 1] - b[k] for k in range(lo_i, hi_j, 2))
            b[lo_i:hi_j] = [lo, hi]
            self._busy_s += hi - lo

    def busy_seconds(self) -> float:
        """Seconds during which at least one backend call that returned a reply was running (module docstring)."""
        with self._lock:
            return self._busy_s

    def add_listener(self, fn: Callable[[str, bool, int], None]) -> None:
        with self._lock:
            self._listeners.append(fn)

    def remove_listener(self, fn: Callable[[str, bool, int], None]) -> None:
        with self._lock:
            if fn in self._listeners:
                self._listeners.remove(fn)

    def _tell(self, role: str, cached: bool, tokens: int) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for fn in listeners:
            fn(role, cached, tokens)

    def record_hit(self, role: str, usage: Usage | None = None) -> None:
        """One response served by the cache; ``usage`` (the cached response's tokens) counts as hit tokens only."""
        with self._lock:
            r = self._role(role)
            r.cache_hits += 1
            if usage is not None:
                r.hit_prompt_tokens += int(usage.prompt_tokens)
                r.hit_completion_tokens += int(usage.completion_tokens)
        self._tell(role, True, 0)

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
