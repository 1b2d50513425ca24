"""The methods of one run as streams in helper threads: side by side (one thread per method) or one after another
(one thread for all), while the thread that called the run writes the run folder and shows the progress.

Why threads: a run's methods (the base updater and its +Janus twin) never wait for each other's answers, and against
a server the time of a run is latency. Each method's stream runs in its own thread and makes its LLM calls through
the client's session (llm/client.py): one event loop, so the run's ``--concurrency`` is one budget for all methods,
an identical request in flight is sent once, and HTTP connections are reused.

What stays as in one thread:

* **Events** go through :class:`EventRelay`: a method thread hands each event to the calling thread and waits until
  every subscriber (the store first) has had it, so a step is committed before its method goes on, the store's
  SQLite connection and the console are used by one thread only, and a user's ``on_event`` is called where it was.
  Events that only report progress (a step finished, a trigger, test answers: the store writes nothing for them) are
  posted without waiting, in order; test answers are emitted from the client's loop while a test batch runs.
* **Results**: every method has its own updater, controller and usage meter (``UsageMeter.scope``, with the run order
  as rank, so a response two methods share counts as paid by the first, as one after another); decisions, records,
  the response cache and the summary's numbers do not depend on how the threads interleave
  (tests/run/test_parallel_methods.py compares every file with a run made one method after another).
* **Stopping**: Ctrl-C (or SIGTERM) lands in the calling thread, in :meth:`EventRelay.serve`; it calls the methods
  off (:func:`~janus_memory.interrupts.stoppable`: their next event or LLM call raises ``Stopping``), cancels their
  calls in flight, waits a few seconds for the threads and re-raises. Committed steps are kept; ``--resume``
  continues every method after its last one. An error in one method (an LLM error, ``stop_after`` in tests) stops
  the others the same way and is raised.
"""
from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..interrupts import Stopping, check_stop, stoppable
from ..store.events import StepFinished, TestProgress, TestStarted, Triggered

# events that only report (the store writes nothing for them): posted without waiting, still delivered in order
_PROGRESS = (StepFinished, Triggered, TestStarted, TestProgress)

_JOIN_S = 5.0  # how long a stopping run waits for its method threads (they leave at their next event or LLM call)
_POLL_S = 0.2


@dataclass
class _Posted:
    call: Callable[[], Any]
    wait: bool
    done: threading.Event = field(default_factory=threading.Event)
    failed: bool = False


@dataclass
class _Ended:
    name: str | None  # None: the worker ends
    result: Any = None
    error: BaseException | None = None


class EventRelay:
    """An event bus for helper threads (module docstring): ``emit`` from any thread, delivered by :meth:`serve` in the
    thread that made the relay."""

    def __init__(self, bus: Any):
        self.bus = bus
        self.owner = threading.current_thread()
        self._queue: queue.Queue = queue.Queue()
        self._stop = threading.Event()

    def emit(self, ev: Any) -> None:
        self.here(lambda: self.bus.emit(ev), wait=not isinstance(ev, _PROGRESS))

    def here(self, fn: Callable[[], Any], *, wait: bool = True) -> None:
        """Call ``fn`` in the relay's own thread (at once when called from it) and, with ``wait``, return after it
        ran; a helper thread of a stopping run gets Stopping instead."""
        if threading.current_thread() is self.owner:
            fn()
            return
        check_stop()
        if self._stop.is_set():
            raise Stopping("the run is stopping")
        item = _Posted(fn, wait=wait)
        self._queue.put(item)
        while item.wait and not item.done.wait(_POLL_S):
            if self._stop.is_set():
                raise Stopping("the run is stopping")
        if item.failed:
            raise Stopping("the run stopped while this event was delivered")

    def serve(self, jobs: list[tuple[str, Callable[[], Any]]], *, side_by_side: bool,
              on_stop: Callable[[], None] = lambda: None) -> dict[str, Any]:
        """Run ``jobs`` (name, function) in helper threads, all at once (``side_by_side``) or one after another in
        one thread, delivering their events here. Returns {name: result} in the order of ``jobs``. The first error
        (or a KeyboardInterrupt here) stops every job (``on_stop`` cancels their LLM calls) and is raised."""
        results: dict[str, Any] = {}
        groups = [[j] for j in jobs] if side_by_side else [jobs]
        threads = [self._start(i, group) for i, group in enumerate(groups)]
        running = len(threads)
        try:
            while running:
                try:
                    item = self._queue.get(timeout=_POLL_S)
                except queue.Empty:
                    if not any(t.is_alive() for t in threads) and self._queue.empty():
                        raise RuntimeError("a method thread ended without reporting") from None
                    continue
                if isinstance(item, _Posted):
                    self._deliver(item)
                elif item.name is None:  # a thread finished all of its jobs
                    running -= 1
                elif item.error is not None:
                    raise item.error
                else:
                    results[item.name] = item.result
        except BaseException:
            self._stop.set()
            on_stop()
            self._drain()
            for t in threads:
                t.join(_JOIN_S / max(1, len(threads)))
            raise
        return {name: results[name] for name, _ in jobs}

    def _deliver(self, item: _Posted) -> None:
        try:
            item.call()
        except BaseException:
            item.failed = True
            raise
        finally:
            item.done.set()

    def _drain(self) -> None:
        """Release every thread still waiting for an event to be delivered (none will be, the run is stopping)."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Posted):
                item.failed = True
                item.done.set()

    def _start(self, i: int, group: list[tuple[str, Callable[[], Any]]]) -> threading.Thread:
        def work() -> None:
            with stoppable(self._stop):
                for name, fn in group:
                    try:
                        self._queue.put(_Ended(name, result=fn()))
                    except BaseException as e:  # noqa: BLE001 - handed to the calling thread, which raises it
                        if not (isinstance(e, Stopping) and self._stop.is_set()):
                            self._queue.put(_Ended(name, error=e))
                        break
            self._queue.put(_Ended(None))

        ctx = contextvars.copy_context()
        t = threading.Thread(target=ctx.run, args=(work,), name=f"janus-method-{i}", daemon=True)
        t.start()
        return t


def run_parallel(fns: list[Callable[[], Any]], side_by_side: bool = True) -> list[Any]:
    """Call every function in its own thread (with a copy of this context: the method's usage scope and stop signal)
    and return their results in order; the first error is raised after all have ended. Used for a method's test
    wave (the final memory and every checkpoint memory at once). ``side_by_side=False`` (a budget of one request,
    where threads gain nothing) calls them one after another, so the requests reach the backend in a fixed order."""
    if len(fns) <= 1 or not side_by_side:
        return [fn() for fn in fns]
    out: list[Any] = [None] * len(fns)
    errors: list[BaseException | None] = [None] * len(fns)

    def call(i: int) -> None:
        try:
            out[i] = fns[i]()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            errors[i] = e

    threads = [threading.Thread(target=contextvars.copy_context().run, args=(call, i), name=f"janus-test-{i}",
                                daemon=True) for i in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors:
        if e is not None:
            raise e
    return out
