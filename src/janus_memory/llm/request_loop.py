"""The request loop of :class:`~janus_memory.llm.client.LLMClient`: backend attempts, retries with backoff, and the
overall deadline (policies in the client's module docstring). ``LLMClient`` inherits :class:`RequestLoop`; the
cache, the in-flight sharing and the usage accounting of a finished reply (``_accept``) stay in ``client.py``.

Attributes the loop reads from the client: backend, max_retries, backoff_base_s, backoff_max_s, max_retry_after_s,
deadline_s, usage, _rng, _sleep (replaceable in tests), _slot() and _accept().
"""
from __future__ import annotations

import asyncio
import time

from janus_memory.llm.base import (
    ChatRequest,
    DeadlineExceeded,
    FatalLLMError,
    RetriesExhausted,
    TransientLLMError,
)
from janus_memory.types import ChatResult


class _DeadlineHit(Exception):
    """Internal: the overall deadline ran out during an attempt."""


class RequestLoop:
    """Retries, backoff and the deadline of one request (mixed into LLMClient)."""

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

