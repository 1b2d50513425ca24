"""Turning a signal into KeyboardInterrupt at a point where Python and asyncio can unwind cleanly.

Our SIGINT/SIGTERM handlers (cli/signals.py for the CLI, sweep/executors.py for grid/sweep workers) stop a run by
raising KeyboardInterrupt. A signal handler runs between two bytecodes of whatever the main thread is doing, and two
places there cannot take an exception:

* an object finalizer (``__del__``, e.g. asyncio's ``BaseEventLoop.__del__`` during garbage collection): Python
  prints "Exception ignored in ..." and drops it, so the Ctrl-C is lost. :func:`resent_from_finalizer` sends the
  signal again 50 ms later instead.
* asyncio's own bookkeeping inside a running event loop: a KeyboardInterrupt raised while a Task is being created
  (its constructor calls the Python-level ``loop.call_soon`` before registering the task) leaves a half-made task
  that nobody cancels; at exit Python prints "Task was destroyed but it is pending!" and "coroutine ... was never
  awaited" (seen on CI in test_cli_interrupt_grid). :func:`raise_interrupt` therefore raises at once only outside
  an event loop; inside one it schedules the raise as the loop's next callback, where the exception leaves the loop
  between two callbacks and ``asyncio.run`` cancels every task properly (the way asyncio's own Runner handles
  Ctrl-C). :func:`raise_if_deferred` raises one that the loop ended before delivering (called after every
  ``asyncio.run`` of the LLM client), so no interrupt is lost.
* the instants around an event loop in sync code, when no loop is running yet (or any more) but coroutine objects
  already exist: raised after ``coro = self.achat(...)`` and before ``asyncio.run`` has made it a task, the
  coroutine is dropped unstarted and Python prints "coroutine 'LLMClient.achat' was never awaited" (seen on CI in
  test_cli_interrupt). The LLM client wraps each ``asyncio.run`` in :func:`sync_entry`; inside it the main thread's
  handlers only record the interrupt; :func:`deliver_deferred`, awaited first thing in the coroutine handed to
  ``asyncio.run``, raises it at the loop's next callback (before any other coroutine exists), and
  :func:`raise_if_deferred` right after ``asyncio.run`` returns.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import threading
from collections.abc import Iterator

class Stopping(BaseException):
    """Raised in a helper thread whose work the run called off (Ctrl-C in the main thread, or another method of the
    run failed): a BaseException, so no ``except Exception`` on the way (a replay scored 0 after a failed request)
    mistakes it for a failed LLM call and goes on."""


# the stop signal of the helper thread running in this context (None: not a helper thread of a run)
_STOP: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("janus_stop", default=None)


@contextlib.contextmanager
def stoppable(event: threading.Event) -> Iterator[None]:
    """Mark the work in this block (this thread, and threads started with a copy of its context) as called off once
    ``event`` is set: :func:`check_stop` then raises :class:`Stopping` (the LLM client checks before every call, the
    run's event relay before every event)."""
    token = _STOP.set(event)
    try:
        yield
    finally:
        _STOP.reset(token)


def check_stop() -> None:
    """Raise :class:`Stopping` when the work of this context was called off (:func:`stoppable`)."""
    ev = _STOP.get()
    if ev is not None and ev.is_set():
        raise Stopping("the run is stopping")


_deferred = {"pending": False}
_entry = {"depth": 0}  # sync_entry() nesting in the main thread (signal handlers only ever run there)


def resent_from_finalizer(frame, signum: int) -> bool:
    """For a signal handler: when the signal landed inside an object finalizer, send it to this process again in
    50 ms and return True (the handler then returns); an exception raised in a ``__del__`` is printed and dropped."""
    if not in_finalizer(frame):
        return False
    threading.Timer(0.05, os.kill, (os.getpid(), signum)).start()
    return True


def in_finalizer(frame, depth: int = 12) -> bool:
    """Whether the signal landed inside an object finalizer (e.g. asyncio's ``BaseEventLoop.__del__`` during garbage
    collection), where Python prints "Exception ignored in ..." and swallows the KeyboardInterrupt."""
    while frame is not None and depth > 0:
        if frame.f_code.co_name == "__del__":
            return True
        frame, depth = frame.f_back, depth - 1
    return False


def raise_interrupt(kind: type[KeyboardInterrupt] = KeyboardInterrupt) -> None:
    """From a signal handler: raise KeyboardInterrupt (or ``kind``, a subclass) now, or, when this thread is running
    an asyncio event loop, at that loop's next callback (module docstring). Returns only in the second case."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        if _entry["depth"] > 0:  # delivered by deliver_deferred (the loop's first callback) or raise_if_deferred
            _deferred["pending"] = kind
            return
        _deferred["pending"] = False  # raised now: an older deferred one must not fire again later
        raise kind from None
    _deferred["pending"] = kind
    loop.call_soon_threadsafe(_fire)  # safe from a signal handler: asyncio's Runner does the same on Ctrl-C


def _fire() -> None:
    kind = _deferred["pending"]
    if kind:
        _deferred["pending"] = False
        raise (kind if isinstance(kind, type) else KeyboardInterrupt)


@contextlib.contextmanager
def sync_entry() -> Iterator[None]:
    """Around ``asyncio.run`` in sync code (module docstring): while inside, an interrupt that arrives when no loop
    is running is recorded instead of raised. The coroutine handed to ``asyncio.run`` awaits ``deliver_deferred()``
    first, and the caller runs ``raise_if_deferred()`` after ``asyncio.run`` returns. Counts only in the main
    thread."""
    main = threading.current_thread() is threading.main_thread()
    if main:
        _entry["depth"] += 1
    try:
        yield
    finally:
        if main:
            _entry["depth"] -= 1


async def deliver_deferred() -> None:
    """In a coroutine: when an interrupt was recorded before this loop ran, raise it at the loop's next callback and
    stay suspended until then, so the caller's task is cancelled cleanly by ``asyncio.run`` (never resumed)."""
    if _deferred["pending"]:
        asyncio.get_running_loop().call_soon(_fire)
        await asyncio.sleep(0)


def raise_if_deferred() -> None:
    """Raise the KeyboardInterrupt that :func:`raise_interrupt` deferred when its event loop stopped before running
    the callback (a signal in the last instants of ``asyncio.run``)."""
    _fire()


def clear_deferred() -> None:
    """Forget a deferred interrupt (tests; a CLI command that starts afresh in the same process)."""
    _deferred["pending"] = False
