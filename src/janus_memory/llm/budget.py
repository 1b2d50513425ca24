"""A request budget shared by processes: at most ``limit`` LLM requests in flight to one endpoint, whichever worker
process of a `janus grid` / `janus sweep` sends them.

Inside one process the client's own bound is an ``asyncio.Semaphore`` of its event loop (a run's client session has
one loop for all its methods, llm/client.py). Across the worker processes of a sweep, :class:`SharedBudget` adds a
``multiprocessing`` semaphore made by the parent and handed to every worker when it is started: a request takes a
slot of its process's loop, then one of the shared semaphore, and gives both back when its attempt ends (also while
it waits to retry, as before). Nothing polls: when no slot is free, one helper thread per event loop blocks on the
semaphore (in steps of 50 ms, so a cancelled wait ends soon) and hands the slot to the first waiting request; a
request cancelled while waiting never keeps a slot (:class:`_Take`).

``in_flight()`` is the number of requests holding a slot in all processes together (the sweep's progress line).
"""
from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any

_STEP_S = 0.05  # a waiting helper thread re-checks whether its request was cancelled this often


class _Take:
    """One blocking wait for a slot, in a helper thread, that a cancelled waiter can abandon without leaking it."""

    def __init__(self, sem: Any):
        self.sem, self.lock, self.state = sem, threading.Lock(), "waiting"

    def run(self) -> bool:
        while True:
            ok = self.sem.acquire(True, _STEP_S)
            with self.lock:
                if self.state == "cancelled":
                    if ok:
                        self.sem.release()
                    return False
                if ok:
                    self.state = "taken"
                    return True

    def cancel(self) -> bool:
        """Stop waiting; True when the slot was already taken (the caller must give it back)."""
        with self.lock:
            if self.state == "taken":
                return True
            self.state = "cancelled"
            return False


class SharedBudget:
    """At most ``limit`` requests in flight across processes (module docstring). Made in the parent with the
    multiprocessing context that starts the workers (``ctx``, default spawn) and passed to them as an argument of the
    process or pool initializer, as multiprocessing requires for its semaphores."""

    def __init__(self, limit: int, ctx: Any = None):
        import multiprocessing as mp

        if int(limit) < 1:
            raise ValueError(f"the request budget must be >= 1, got {limit}")
        ctx = ctx or mp.get_context("spawn")
        self.limit = int(limit)
        self._sem = ctx.BoundedSemaphore(self.limit)
        self._count = ctx.Value("i", 0)
        self._heads: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event loop -> asyncio.Lock
        self._heads_lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {"limit": self.limit, "_sem": self._sem, "_count": self._count}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._heads = weakref.WeakKeyDictionary()
        self._heads_lock = threading.Lock()

    def in_flight(self) -> int:
        """Requests holding a slot now, in every process."""
        with self._count.get_lock():
            return int(self._count.value)

    def _took(self) -> None:
        with self._count.get_lock():
            self._count.value += 1

    def release(self) -> None:
        with self._count.get_lock():
            self._count.value -= 1
        self._sem.release()

    def _head(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        with self._heads_lock:
            lock = self._heads.get(loop)
            if lock is None:
                lock = self._heads[loop] = asyncio.Lock()
            return lock

    async def acquire(self) -> None:
        """Take one slot; waits (without blocking the event loop) while ``limit`` requests are in flight."""
        if self._sem.acquire(False):
            self._took()
            return
        async with self._head():  # one helper thread per event loop waits; the others queue behind it, in order
            if self._sem.acquire(False):
                self._took()
                return
            take = _Take(self._sem)
            try:
                got = await asyncio.to_thread(take.run)
            except BaseException:
                if take.cancel():
                    self._sem.release()
                raise
            if not got:  # (only after cancel(), which raised above)
                raise asyncio.CancelledError
            self._took()
