"""LLMClient: response cache + retries + bounded concurrency + usage accounting, over any backend.

Synchronous API (``chat``, ``chat_many``) for the runner's main thread: each call runs its own short-lived
asyncio event loop (``asyncio.run``) and closes the backend's per-loop resources before returning, so no
event loop or thread is left behind. When called from a thread that already runs an event loop, the work is
done in a helper thread that is joined before returning. Async callers use ``achat``/``achat_many``.

Retry policy (per request): transient errors (HTTP 429, 5xx, timeouts, connection errors, malformed bodies)
are retried up to ``max_retries`` times with exponential backoff ``backoff_base_s * 2**attempt`` (capped at
``backoff_max_s``) times a jitter factor in [0.5, 1]; a server Retry-After (capped at ``max_retry_after_s``)
is a lower bound on the wait. After the limit: :class:`RetriesExhausted` naming the attempts and the last
error. Non-retryable errors (400, 401, ...) raise :class:`FatalLLMError` at once with the server's message.
The concurrency slot is released while waiting to retry.

Overall deadline (``deadline_s``, default None = none): the wall time one request may take over
all its attempts and backoff waits, counted from the moment its first attempt starts (time queued for a
concurrency slot before that is not counted). An attempt still running at the deadline is cancelled; a backoff
wait that would end past it is not started. Either way :class:`DeadlineExceeded` (a :class:`RetriesExhausted`)
is raised naming the attempts made and the last error. The per-attempt limit is the backend's own ``timeout``
(for :class:`OpenAIBackend` a wall-clock limit on the whole attempt, so a server dripping bytes is cut off too).

Silent prompt truncation (C22-B): when the server reports ``prompt_tokens`` below 90% of a conservative
local lower bound (word count), the client raises :class:`ContextTruncated` (not retried, not cached, tokens
still counted): the caller must raise the server's context window; the answer is never returned as valid.

Session (:meth:`LLMClient.session`): for the length of a ``with`` block the client keeps ONE event loop in a helper
thread, and every sync call from any thread (the methods of a run side by side, a test wave of several memories) is
run on it. So the ``concurrency`` bound is one budget for all of them, identical requests in flight are sent once
whoever asks, and the backend's HTTP connections stay open between calls instead of being made for every call.
Outside a session every sync call runs its own short-lived loop, as described above.

One class: the client's configuration, the response cache and in-flight sharing, the request loop (attempts,
retries with backoff, the overall deadline), the usage accounting of a reply, and the sync/async API.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import random
import threading
import time
import warnings
import weakref
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from janus_memory.errors import escape_lone_surrogates
from janus_memory.interrupts import check_stop, deliver_deferred, raise_if_deferred, sync_entry
from janus_memory.llm.base import (
    ChatBackend,
    ChatRequest,
    ContextTruncated,
    DeadlineExceeded,
    FatalLLMError,
    RetriesExhausted,
    TransientLLMError,
    validate_messages,
)
from janus_memory.llm.cache import ResponseCache, answered_by, request_key
from janus_memory.llm.reasoning import is_context_truncated
from janus_memory.llm.session import Session
from janus_memory.llm.usage import UsageMeter
from janus_memory.values import ChatResult


async def _entered(factory: Callable[[], Awaitable[Any]]) -> Any:
    await deliver_deferred()  # an interrupt recorded before the loop ran stops it here, before factory() runs
    return await factory()


def _run_sync(factory: Callable[[], Awaitable[Any]]) -> Any:
    """Run a coroutine to completion from sync code, with or without a running loop in this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        # A Ctrl-C between making a coroutine and asyncio.run starting it would drop the coroutine unstarted
        # ("never awaited"): inside sync_entry the handler only records it; it is raised at the loop's first
        # callback (before factory() makes any coroutine) or after the loop (janus_memory/interrupts.py)
        with sync_entry():
            value = asyncio.run(_entered(factory))
        raise_if_deferred()
        return value
    box: dict[str, Any] = {}
    context = contextvars.copy_context()  # the caller's usage scope and stop signal go with the call

    def target() -> None:
        try:
            box["value"] = context.run(asyncio.run, factory())  # type: ignore[arg-type]  # typeshed's Context.run overloads
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    t = threading.Thread(target=target, name="janus-llm-sync", daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def issue_order(reqs: list[ChatRequest]) -> list[int]:
    """Indices of ``reqs`` in the order to issue them so that requests sharing a prompt prefix run back to back.

    Sorting the rendered prompts (role + content of each message, in order) lexicographically puts every two
    prompts with a long common prefix next to each other (ties keep the input order), so an engine that caches
    the previous prompt's KV (llama.cpp ``cache_prompt``, vLLM/SGLang prefix caching) reads a shared memory once
    per run instead of once per switch. Used by ``chat_many`` for backends that declare ``prefix_cache = True``;
    results are always returned in input order."""
    def key(i: int) -> str:
        return "\x00".join(f"{m['role']}\x01{m['content']}" for m in reqs[i].messages)

    return sorted(range(len(reqs)), key=key)


class _DeadlineHit(Exception):
    """Internal: the overall deadline ran out during an attempt."""


class LLMClient:
    """Front door of the LLM layer (see module docstring for the retry and truncation policies).

    Args:
        backend: a :class:`ChatBackend` (OpenAIBackend, LocalBackend, FakeBackend).
        cache: a :class:`ResponseCache` or None (no persistent cache).
        concurrency: max in-flight backend calls per event loop (``--concurrency N``), >= 1.
        max_retries: retries after the first attempt for transient errors (>= 0).
        backoff_base_s, backoff_max_s: exponential backoff parameters (seconds).
        prices: ``{model: (usd_per_1M_prompt_tokens, usd_per_1M_completion_tokens)}`` for ``cost_usd``.
        max_retry_after_s: cap on a server's Retry-After.
        check_context: raise ContextTruncated on C22-B (default True).
        deadline_s: overall wall-time limit of one request over all attempts and waits (None = no limit).
        shared_budget: a :class:`~janus_memory.llm.budget.SharedBudget` that every request also takes a slot of
            (the worker processes of a sweep sharing one endpoint); None = this client's ``concurrency`` only.
    """

    def __init__(
        self,
        backend: ChatBackend,
        cache: ResponseCache | None = None,
        concurrency: int = 4,
        max_retries: int = 6,
        backoff_base_s: float = 0.5,
        prices: dict[str, tuple[float, float]] | None = None,
        *,
        backoff_max_s: float = 30.0,
        max_retry_after_s: float = 120.0,
        check_context: bool = True,
        deadline_s: float | None = None,
        shared_budget: Any = None,
    ):
        if int(concurrency) < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        if int(max_retries) < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if deadline_s is not None and not float(deadline_s) > 0:
            raise ValueError(f"deadline_s must be > 0 seconds or None, got {deadline_s}")
        self.deadline_s = None if deadline_s is None else float(deadline_s)
        self.backend = backend
        self.cache = cache
        self.concurrency = int(concurrency)
        self.max_retries = int(max_retries)
        self.backoff_base_s = float(backoff_base_s)
        self.backoff_max_s = float(backoff_max_s)
        self.max_retry_after_s = float(max_retry_after_s)
        self.check_context = check_context
        self.usage = UsageMeter(prices)
        self._inflight: dict[str, tuple[Any, Any]] = {}  # cache key -> (event loop, task) of requests in flight
        self._rng = random.Random()
        self._sems: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()
        self._sem_lock = threading.Lock()
        self._sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep  # replaceable in tests
        self.shared_budget = shared_budget
        self._session: Session | None = None
        self._session_lock = threading.Lock()
        self._in_flight = 0
        # which model answers (cache.answered_by): the one the server reported in this run's first live reply; the
        # models of the answers replayed from the cache before it; responses per (model, cached) for the run folder
        self.live_model: str | None = None
        self._replayed_models: set[str] = set()
        self.answered: dict[str, dict[str, int]] = {}
        self.other_model_entries = 0
        self._model_lock = threading.Lock()
        self._probe_done = False
        self._probes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

    # ------------------------------------------------------------------ helpers
    def _sem(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        with self._sem_lock:
            s = self._sems.get(loop)
            if s is None:
                s = self._sems[loop] = asyncio.Semaphore(self.concurrency)
            return s

    @contextlib.asynccontextmanager
    async def _slot(self):
        """One request slot: the loop's ``concurrency`` bound, then the shared budget's (when set)."""
        async with self._sem():
            if self.shared_budget is not None:
                await self.shared_budget.acquire()
            with self._sem_lock:
                self._in_flight += 1
            try:
                yield
            finally:
                with self._sem_lock:
                    self._in_flight -= 1
                if self.shared_budget is not None:
                    self.shared_budget.release()

    def in_flight(self) -> int:
        """Requests of this client holding a slot now (sent to the backend, or about to be)."""
        with self._sem_lock:
            return self._in_flight

    @contextlib.contextmanager
    def session(self) -> Iterator[LLMClient]:
        """Keep one event loop for the client in a helper thread while the block runs (module docstring); nested
        sessions share it. On leaving, calls still waiting are cancelled, the backend's connections closed and the
        thread joined."""
        with self._session_lock:
            if self._session is not None:
                self._session.depth += 1
                outer = False
            else:
                self._session = Session(self)
                outer = True
        try:
            yield self
        finally:
            with self._session_lock:
                sess = self._session
                sess.depth -= 1
                if outer:
                    self._session = None
            if outer:
                sess.close()

    def stop_session(self) -> None:
        """Cancel every call waiting in the session (their threads raise ``Stopping``) and refuse new ones until the
        session ends: a run that stops (Ctrl-C, an error in another method) unblocks its method threads."""
        sess = self._session
        if sess is not None:
            sess.stop()

    def _sync(self, make: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``make()`` for a sync caller: on the session's loop when one is open, else on a loop of its own. A
        thread whose work was called off (interrupts.stoppable) gets Stopping instead of a new request."""
        check_stop()
        sess = self._session
        if sess is not None and not sess.on_loop_thread():
            return sess.run(make)
        return _run_sync(lambda: self._with_close(make()))

    @staticmethod
    def _request(messages: Any, params: dict) -> ChatRequest:
        msgs = validate_messages(messages)
        unknown = set(params) - {"temperature", "max_tokens", "top_p", "stop", "seed", "presence_penalty",
                                 "frequency_penalty", "extra_body"}
        if unknown:
            raise TypeError(f"unknown chat parameter(s): {sorted(unknown)}")
        mt = params.get("max_tokens", 512)
        if mt is not None and (not isinstance(mt, int) or mt < 1):
            raise ValueError(f"max_tokens must be a positive int or None, got {mt!r}")
        t = params.get("temperature", 0.0)
        if t is not None and not (0.0 <= float(t) <= 2.0):
            raise ValueError(f"temperature must be in [0, 2], got {t!r}")
        stop = params.get("stop")
        if isinstance(stop, (list, tuple)):
            params = dict(params, stop=list(stop))
        return ChatRequest(messages=msgs, **params)

    async def _one(self, req: ChatRequest, role: str, sample: int) -> ChatResult:
        if sample:
            req = dataclasses.replace(req, sample=sample)
        key = None
        if self.cache is not None:
            key = request_key(self.backend.identity, req, sample)
            hit = self.cache.get(key)
            if hit is not None and self.live_model is None and not self._probe_done:
                await self._learn_model()
            hit = self._replayable(key, hit)
            if hit is not None:
                self.usage.record_hit(role, getattr(hit, "usage", None), key=key)
                return hit
            # an identical request already in flight on this event loop (e.g. a task listed twice in one batch):
            # wait for it and count a cache hit, exactly as if the two had been sent one after the other
            loop = asyncio.get_running_loop()
            shared = self._inflight.get(key)
            if shared is not None and shared[0] is loop:
                res = await asyncio.shield(shared[1])
                self.usage.record_hit(role, getattr(res, "usage", None), key=key)
                return res
            task = asyncio.ensure_future(self._fetch(req, role, key))
            self._inflight[key] = (loop, task)
            try:
                return await task
            finally:
                if self._inflight.get(key, (None, None))[1] is task:
                    del self._inflight[key]
        return await self._fetch(req, role, key)

    async def _learn_model(self) -> None:
        """Before the first answer is replayed from the cache: ask the server which model answers now (the backend's
        ``probe_model``, one short uncached request), so another model's stored answers are never replayed. Once per
        client; a backend without it (embedded, fake) or a failed probe leaves it to the first live reply."""
        probe = getattr(self.backend, "probe_model", None)
        if probe is None:
            self._probe_done = True
            return
        loop = asyncio.get_running_loop()
        task = self._probes.get(loop)
        if task is None:
            task = self._probes[loop] = asyncio.ensure_future(probe())
        try:
            model = await asyncio.shield(task)
        except Exception as e:  # noqa: BLE001 - the probe is advisory: the first live reply still checks
            if not self._probe_done:
                warnings.warn(f"could not ask {self.backend.identity} which model answers ({type(e).__name__}: {e}); "
                              "answers from the response cache are replayed until the first live reply",
                              RuntimeWarning, stacklevel=2)
            self._probe_done = True
            return
        with self._model_lock:
            if self.live_model is None:
                self.live_model = model
            self._probe_done = True

    def _replayable(self, key: str, hit: ChatResult | None) -> ChatResult | None:
        """``hit`` unless it was answered by another model than the one this run's server reports (then the entry is
        forgotten, so the live answer replaces it, and the first such entry is warned about)."""
        if hit is None:
            return None
        model = answered_by(hit)
        with self._model_lock:
            live = self.live_model
            if live is None or not hit.model or model == live:
                self._replayed_models.add(model)
                self._count(model, cached=True)
                return hit
            self.other_model_entries += 1
            first = self.other_model_entries == 1
        self.cache.forget(key)  # type: ignore[union-attr]  # (called with a cache only)
        if first:
            warnings.warn(f"response cache {self.cache.path}: answers stored for model {model!r} are not replayed: the "  # type: ignore[union-attr]
                          f"server at {self.backend.identity} now answers as {live!r}; they are asked again",
                          RuntimeWarning, stacklevel=2)
        return None

    def _count(self, model: str, *, cached: bool) -> None:
        row = self.answered.setdefault(model, {"live": 0, "cached": 0})
        row["cached" if cached else "live"] += 1

    def _live_answer(self, res: ChatResult) -> None:
        """Record the model that gave a live reply; a run whose replies come from two models is warned about once
        (the server swapped its model, or the cache replayed another model's answers before the first live one)."""
        model = answered_by(res)
        with self._model_lock:
            self._count(model, cached=False)
            before, self.live_model = self.live_model, model
            others = sorted({m for m in self._replayed_models if m and m != model}) if before is None else (
                [before] if before != model else [])
            if others:
                self._replayed_models.clear()
        if others:
            how = "replayed from the response cache" if before is None else "from the same server earlier"
            warnings.warn(f"this run mixes models: answers of {', '.join(map(repr, others))} ({how}) and now of "
                          f"{model!r} from {self.backend.identity}; for one model's results rerun with --no-cache or "
                          "another --cache-dir", RuntimeWarning, stacklevel=2)

    def _accept(self, res: ChatResult, req: ChatRequest, role: str, key: str | None, t0: float) -> ChatResult:
        res.latency_s = time.perf_counter() - t0
        # a lone surrogate (a "\\ud800" JSON escape without its pair) fits no UTF-8 file or SQLite text: from here on
        # (cache, run database, exports, report, page) every reply holds its visible escape instead (errors.py)
        for f in ("text", "reasoning", "model", "fingerprint"):
            setattr(res, f, escape_lone_surrogates(getattr(res, f)))
        self._live_answer(res)
        self.usage.add_busy(t0, t0 + res.latency_s)  # the model's busy time (llm/usage.py; run/timing.py)
        self.usage.record_call(role, res.usage, getattr(self.backend, "model", ""), key=key)
        if self.check_context and not res.usage.estimated:
            trunc, lb = is_context_truncated(res.usage.prompt_tokens, req.messages)
            if trunc:
                self.usage.record_error(role)
                raise ContextTruncated(
                    f"server reported {res.usage.prompt_tokens} prompt tokens but the prompt has at least "
                    f"{lb} words: the server cut the prompt (raise its context window, e.g. num_ctx)",
                    reported=res.usage.prompt_tokens, expected_min=lb, result=res)
        if self.cache is not None and key is not None:
            self.cache.put(key, res, backend=self.backend.identity)
        return res

    # ------------------------------------------------------------------ the request loop
    def backoff_delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (attempt counts from 0)."""
        d = min(self.backoff_max_s, self.backoff_base_s * (2 ** attempt)) * self._rng.uniform(0.5, 1.0)
        if retry_after is not None and retry_after > 0:
            d = max(d, min(float(retry_after), self.max_retry_after_s))
        return d

    async def _fetch(self, req: ChatRequest, role: str, key: str | None) -> ChatResult:
        """Backend attempts with retries, backoff and the overall deadline; the result is cached under ``key``."""
        last: BaseException | None = None
        attempts = 0
        deadline: float | None = None
        for attempt in range(self.max_retries + 1):
            attempts += 1
            async with self._slot():
                t0 = time.perf_counter()
                if self.deadline_s is not None and deadline is None:
                    deadline = time.monotonic() + self.deadline_s
                try:
                    res = await self._attempt(req, deadline)
                except TransientLLMError as e:
                    last = e
                except FatalLLMError:
                    self.usage.record_error(role)
                    raise
                except _DeadlineHit:
                    self.usage.record_error(role)
                    raise self._deadline_error(attempts, last, "attempt cancelled at the deadline") from None
                else:
                    return self._accept(res, req, role, key, t0)
            if attempt < self.max_retries:
                delay = self.backoff_delay(attempt, getattr(last, "retry_after", None))
                if deadline is not None and time.monotonic() + delay >= deadline:
                    self.usage.record_error(role)
                    raise self._deadline_error(attempts, last, f"no time left for a retry after {delay:.2f}s backoff")
                self.usage.record_retry(role)
                await self._sleep(delay)
        self.usage.record_error(role)
        assert last is not None
        raise RetriesExhausted(
            f"LLM request failed after {attempts} attempts ({self.backend.identity}); last error: "
            f"{type(last).__name__}: {last}", attempts=attempts, last_error=last)

    async def _attempt(self, req: ChatRequest, deadline: float | None) -> ChatResult:
        if deadline is None:
            return await self.backend.acomplete(req)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _DeadlineHit
        try:
            return await asyncio.wait_for(self.backend.acomplete(req), remaining)
        except TimeoutError as e:
            if time.monotonic() < deadline:  # a TimeoutError from inside the backend, not ours: retryable
                raise TransientLLMError(f"timeout: {e}") from e
            raise _DeadlineHit from None

    def _deadline_error(self, attempts: int, last: BaseException | None, what: str) -> DeadlineExceeded:
        err = last if last is not None else TimeoutError(f"no reply within {self.deadline_s}s")
        return DeadlineExceeded(
            f"LLM request exceeded its {self.deadline_s:g}s deadline after {attempts} attempt(s) ({what}; "
            f"{self.backend.identity}); last error: {type(err).__name__}: {err}",
            attempts=attempts, last_error=err, deadline_s=float(self.deadline_s or 0.0))

    # ------------------------------------------------------------------ async API
    async def achat(self, messages: list[dict], *, role: str = "solver", sample: int = 0, **params: Any) -> ChatResult:
        """Async version of :meth:`chat`."""
        req = self._request(messages, params)
        self._check_role_sample(role, sample)
        t0 = time.perf_counter()
        try:
            return await self._one(req, role, sample)
        finally:
            self.usage.add_wall(role, time.perf_counter() - t0)

    async def achat_many(self, batch: list[list[dict]], *, role: str = "solver", sample: int | list[int] = 0,
                         return_exceptions: bool = False, **params: Any) -> list[ChatResult]:
        """Async version of :meth:`chat_many`."""
        if not isinstance(batch, (list, tuple)):
            raise ValueError(f"batch must be a list of message lists, got {type(batch).__name__}")
        reqs = [self._request(m, params) for m in batch]
        samples = list(sample) if isinstance(sample, (list, tuple)) else [sample] * len(reqs)
        if len(samples) != len(reqs):
            raise ValueError(f"got {len(samples)} sample indices for {len(reqs)} requests")
        for s in samples or [0]:
            self._check_role_sample(role, s)
        order = issue_order(reqs) if getattr(self.backend, "prefix_cache", False) else list(range(len(reqs)))
        t0 = time.perf_counter()
        try:
            issued = await asyncio.gather(*(self._one(reqs[i], role, samples[i]) for i in order),
                                          return_exceptions=True)
        finally:
            self.usage.add_wall(role, time.perf_counter() - t0)
        out: list[Any] = [None] * len(reqs)
        for i, res in zip(order, issued, strict=True):
            out[i] = res
        if not return_exceptions:
            for o in out:
                if isinstance(o, BaseException):
                    raise o
        return list(out)

    @staticmethod
    def _check_role_sample(role: str, sample: int) -> None:
        if not isinstance(role, str) or not role:
            raise ValueError(f"role must be a non-empty str, got {role!r}")
        if not isinstance(sample, int) or sample < 0:
            raise ValueError(f"sample must be an int >= 0, got {sample!r}")

    # ------------------------------------------------------------------ sync API
    def chat(self, messages: list[dict], *, role: str = "solver", sample: int = 0, temperature: float | None = 0.0,
             max_tokens: int | None = 512, top_p: float | None = None, stop: list[str] | str | None = None,
             seed: int | None = None, presence_penalty: float | None = None, frequency_penalty: float | None = None,
             extra_body: dict | None = None) -> ChatResult:
        """One chat completion (cached, retried, counted under ``role``).

        ``sample`` is the sample index: different indices are different cache entries (for repeated sampling at
        temperature > 0); the same index returns the stored answer. Raises ValueError/TypeError on bad input,
        FatalLLMError, RetriesExhausted or ContextTruncated.
        """
        params = dict(temperature=temperature, max_tokens=max_tokens, top_p=top_p, stop=stop, seed=seed,
                      presence_penalty=presence_penalty, frequency_penalty=frequency_penalty, extra_body=extra_body)
        return self._sync(lambda: self.achat(messages, role=role, sample=sample, **params))

    def chat_many(self, batch: list[list[dict]], *, role: str = "solver", sample: int | list[int] = 0,
                  return_exceptions: bool = False, **params: Any) -> list[ChatResult]:
        """Solve a batch of prompts with at most ``concurrency`` calls in flight; results in input order.

        ``sample``: one sample index for the whole batch, or a list with one index per request (Janus's fresh
        replay draws a different index for every (entry, memory); see run/evaluator.py).

        For a backend with ``prefix_cache = True`` (LocalBackend) the calls are issued grouped by shared prompt
        prefix (:func:`issue_order`), so requests that share a memory reuse its KV cache.

        Every request is attempted (and successes cached) even if another fails; then the first error is
        raised, unless ``return_exceptions=True`` (the exception object takes that item's place).
        """
        return self._sync(lambda: self.achat_many(batch, role=role, sample=sample,
                                                  return_exceptions=return_exceptions, **params))

    async def _with_close(self, coro: Awaitable[Any]) -> Any:
        try:
            return await coro
        finally:
            await self.backend.aclose()
