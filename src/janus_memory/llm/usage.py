"""Usage accounting per role: backend calls, cache hits, prompt/completion tokens, wall time, money.

Roles used across the project: ``solver``, ``curator`` (memory updates), ``janus`` (evaluation-set replay),
``test`` (frozen held-out evaluation). Cache hits count in ``cache_hits`` only: they add no calls, no
tokens and no cost; the tokens the cached responses once took are kept apart in ``hit_prompt_tokens`` /
``hit_completion_tokens`` so a report can give a method's standalone cost (what it needs without the cache).
``estimated_tokens`` is True when any counted call had no server usage (C22-A).
``wall_s`` is the wall-clock time spent inside the client's chat/chat_many calls for that role.
``cost_usd`` uses ``prices = {model: (usd_per_1M_prompt, usd_per_1M_completion)}``; None when no price is known.

The model's own busy time (:meth:`UsageMeter.busy_seconds`, all roles together) is the length of the union of the
time intervals of the backend attempts that returned a reply (cache hits, in-flight sharing and failed attempts
excluded): overlapping calls count once, and a call waiting in the engine's queue behind another adds nothing. It is
what run/timing.py records as the measured speed of the embedded model (``wall_s`` above also counts cache hits
and waiting, so it is not a measurement of the model).

Listeners (:meth:`UsageMeter.add_listener`) are told of every reply as ``fn(role, cached, tokens)``, in the thread
that recorded it (the runner's test-phase progress, run/loop.py).

Scopes (:meth:`UsageMeter.scope`): the methods of one run share one client and run side by side, so a method's own
usage is not the difference of two snapshots of the shared meter. Inside ``with meter.scope(rank) as mine:`` every
record made on ``meter`` in that context (the thread that entered it, and the LLM calls it makes, which carry the
context into the client's event loop) also goes to ``mine``. ``rank`` is the method's place in the run order: a
response two methods both use is paid by the one listed first, as when the methods run one after another (the second
finds it in the response cache). When the later method happened to pay first, the earlier one's hit is turned into
the call and the later one's call into a hit (:meth:`UsageMeter.record_hit` with ``key``), so every method's calls,
hits and tokens do not depend on which thread asked first.
"""
from __future__ import annotations

import bisect
import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from janus_memory.values import Usage

# (parent meter, child meter, rank) of every scope entered in this context, innermost last
_SCOPES: contextvars.ContextVar[tuple] = contextvars.ContextVar("janus_usage_scopes", default=())

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
        self._payers: dict[str, tuple] = {}  # cache key -> (rank, child meter, role, usage, model) of a scoped call

    @contextlib.contextmanager
    def scope(self, rank: int = 0) -> Iterator[UsageMeter]:
        """A child meter that also receives every record made on this meter in the current context while the block
        runs (module docstring); ``rank``: the method's place in the run order (lower pays a shared response)."""
        child = UsageMeter(self.prices)
        token = _SCOPES.set(_SCOPES.get() + ((self, child, int(rank)),))
        try:
            yield child
        finally:
            _SCOPES.reset(token)

    def _scoped(self) -> tuple[UsageMeter, int] | tuple[None, None]:
        for parent, child, rank in reversed(_SCOPES.get()):
            if parent is self:
                return child, rank
        return None, None

    def _role(self, role: str) -> _RoleUsage:
        r = self._roles.get(role)
        if r is None:
            r = self._roles[role] = _RoleUsage()
        return r

    def record_call(self, role: str, usage: Usage, model: str = "", *, key: str | None = None) -> None:
        """One successful backend call (not a cache hit). ``key``: the request's cache key, remembered inside a
        :meth:`scope` so that an earlier-ranked method's later hit on it is counted as the call."""
        child, rank = self._scoped()
        with self._lock:
            self._add_call(role, usage, model, +1)
            if child is not None and key is not None:
                self._payers[key] = (rank, child, role, usage, model)
        self._tell(role, False, int(usage.prompt_tokens) + int(usage.completion_tokens))
        if child is not None:
            child.record_call(role, usage, model)

    def _add_call(self, role: str, usage: Usage, model: str, sign: int) -> None:
        """Count (sign +1) or take back (-1) one call; the caller holds the lock."""
        r = self._role(role)
        r.calls += sign
        r.prompt_tokens += sign * int(usage.prompt_tokens)
        r.completion_tokens += sign * int(usage.completion_tokens)
        r.estimated_tokens = r.estimated_tokens or bool(usage.estimated)
        price = self.prices.get(model)
        if price is not None:
            c = usage.prompt_tokens * price[0] / 1e6 + usage.completion_tokens * price[1] / 1e6
            r.cost_usd = (r.cost_usd or 0.0) + sign * c

    def _add_hit(self, role: str, usage: Usage | None, sign: int) -> None:
        r = self._role(role)
        r.cache_hits += sign
        if usage is not None:
            r.hit_prompt_tokens += sign * int(usage.prompt_tokens)
            r.hit_completion_tokens += sign * int(usage.completion_tokens)

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

    def record_hit(self, role: str, usage: Usage | None = None, *, key: str | None = None) -> None:
        """One response served by the cache (or by an identical request in flight); ``usage`` (the cached response's
        tokens) counts as hit tokens only. Inside a :meth:`scope`, a hit on ``key`` that a later-ranked method paid
        for in this run becomes this method's call and that method's hit (module docstring)."""
        child, rank = self._scoped()
        payer = None
        with self._lock:
            paid = self._payers.get(key) if key is not None and child is not None else None
            if paid is not None and paid[0] > rank and paid[1] is not child:
                assert key is not None and child is not None  # (paid is None otherwise)
                _, payer, p_role, p_usage, p_model = paid
                self._add_call(p_role, p_usage, p_model, -1)
                self._add_hit(p_role, p_usage, +1)
                self._add_call(role, p_usage, p_model, +1)
                self._payers[key] = (rank, child, role, p_usage, p_model)
            else:
                self._add_hit(role, usage, +1)
        if payer is not None:
            with payer._lock:
                payer._add_call(p_role, p_usage, p_model, -1)
                payer._add_hit(p_role, p_usage, +1)
            self._tell(role, False, int(p_usage.prompt_tokens) + int(p_usage.completion_tokens))
            child.record_call(role, p_usage, p_model)  # type: ignore[union-attr]  # (set when payer is)
            return
        self._tell(role, True, 0)
        if child is not None:
            child.record_hit(role, usage)

    def record_retry(self, role: str) -> None:
        with self._lock:
            self._role(role).retries += 1
        child, _ = self._scoped()
        if child is not None:
            child.record_retry(role)

    def record_error(self, role: str) -> None:
        with self._lock:
            self._role(role).errors += 1
        child, _ = self._scoped()
        if child is not None:
            child.record_error(role)

    def add_wall(self, role: str, seconds: float) -> None:
        with self._lock:
            self._role(role).wall_s += float(seconds)
        child, _ = self._scoped()
        if child is not None:
            child.add_wall(role, seconds)

    def snapshot(self) -> dict[str, dict]:
        """``{role: {calls, cache_hits, prompt_tokens, completion_tokens, estimated_tokens, wall_s, cost_usd,
        retries, errors}}`` (a copy)."""
        with self._lock:
            return {k: {f: getattr(v, f) for f in KEYS} for k, v in self._roles.items()}

    def total(self) -> dict:
        """The same keys summed over roles (``cost_usd`` None when no role has a cost)."""
        out: dict[str, Any] = {f: 0 for f in KEYS}
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
