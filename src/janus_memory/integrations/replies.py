"""The guard's errors, and how a reply of the user's agent is awaited within the guard's ``answer_timeout``.

Without a limit the answer function is called in the deciding thread (a coroutine is awaited on the adapter's
event loop, or on a loop of its own). With one, a synchronous answer function runs in a daemon worker thread
(``janus-guard-answer``, the caller's contextvars copied): Python cannot stop a thread, so a hung one is left there,
its late reply ignored, and it does not keep the process alive; a coroutine is cancelled (``asyncio.wait_for``).
A reply that arrives after its deadline is never used, whatever the path: a coroutine that catches the cancellation
and replies anyway, or one that blocks its event loop (``time.sleep``) past the deadline, fails with AnswerTimeout
like one that never replies (``wait_for`` hands back a result that came after the cancellation).
"""
from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import time
from collections.abc import Callable
from typing import Any

DEFAULT_ANSWER_TIMEOUT = 300.0  # seconds one reply of the user's agent may take (WriteGuard's answer_timeout)


class GuardError(RuntimeError):
    """The guard could not decide or apply an update; the deployed memory is unchanged (the message says so)."""


class AnswerTimeout(GuardError, TimeoutError):
    """The user's agent did not reply within the guard's ``answer_timeout``."""


def reply_within(answer: Callable[[str, Any], Any], query: str, view: Any, loop: asyncio.AbstractEventLoop | None,
                 limit: float | None) -> Any:
    """``answer(query, view)`` within ``limit`` seconds (None: no limit); AnswerTimeout when it takes longer
    (module docstring)."""
    if limit is None:
        reply = answer(query, view)
        return _await(reply, loop, None) if inspect.isawaitable(reply) else reply
    if inspect.iscoroutinefunction(answer):
        return _await(answer(query, view), loop, limit)
    box: dict[str, Any] = {}
    done = threading.Event()
    ctx = contextvars.copy_context()

    def run() -> None:
        try:
            box["reply"] = ctx.run(answer, query, view)
        except BaseException as exc:  # noqa: BLE001 - handed to the deciding thread
            box["error"] = exc
        finally:
            done.set()

    started = time.monotonic()
    threading.Thread(target=run, name="janus-guard-answer", daemon=True).start()
    if not done.wait(limit):
        raise AnswerTimeout(f"the agent did not reply within {limit:g} s (answer_timeout) to {_short(query)!r}")
    if "error" in box:
        raise box["error"]
    reply = box.get("reply")
    if inspect.isawaitable(reply):  # a sync function that returned an awaitable: the time left for it
        reply = _await(reply, loop, max(limit - (time.monotonic() - started), 0.001))
    return reply


def _await(aw: Any, loop: asyncio.AbstractEventLoop | None, timeout: float | None) -> Any:
    """Run an awaitable from the guard's (synchronous) evaluator: on the adapter's loop when the decision runs in a
    worker thread, else on a loop of its own; cancelled after ``timeout`` seconds (AnswerTimeout)."""
    if loop is not None and loop.is_running():
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not loop:
            fut = asyncio.run_coroutine_threadsafe(_as_coro(aw, timeout), loop)
            try:
                # the loop's own wait_for cancels on time; this wait covers a loop too busy to run it
                return fut.result(None if timeout is None else timeout + _LOOP_GRACE)
            except TimeoutError as exc:  # left to finish on the loop (wait_for cancelled it); its reply is dropped
                raise AnswerTimeout(str(exc) or f"the agent did not reply within {timeout:g} s (answer_timeout)") \
                    from exc
    try:
        return asyncio.run(_as_coro(aw, timeout))
    except TimeoutError as exc:
        raise AnswerTimeout(str(exc)) from exc


_LOOP_GRACE = 1.0  # seconds past the deadline a busy event loop may take to report the cancellation


async def _as_coro(aw: Any, timeout: float | None) -> Any:
    if timeout is None:
        return await aw
    deadline = time.monotonic() + timeout
    try:
        reply = await asyncio.wait_for(aw, timeout)
    except (asyncio.TimeoutError, TimeoutError) as exc:
        raise TimeoutError(f"the agent did not reply within {timeout:g} s (answer_timeout)") from exc
    late = time.monotonic() - deadline
    if late > 0:  # it swallowed the cancellation, or blocked the loop: a late reply is never used
        raise TimeoutError(f"the agent replied {late:.2f} s after its deadline of {timeout:g} s (answer_timeout); "
                           "the late reply is not used")
    return reply


def _short(s: str | None, n: int = 80) -> str:
    s = " ".join((s or "").split())
    return s if len(s) <= n else s[:n - 3] + "..."
