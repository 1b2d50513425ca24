"""The event loop of an :class:`~janus_memory.llm.client.LLMClient` session: one loop in a daemon helper thread that
runs every sync call of the client from any thread while the session is open (llm/client.py says why)."""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from janus_memory.interrupts import Stopping


class Session:
    """The event loop of :meth:`LLMClient.session <janus_memory.llm.client.LLMClient.session>`, running in a daemon
    helper thread until :meth:`close`."""

    def __init__(self, client: Any):
        self.client = client
        self.loop = asyncio.new_event_loop()
        self.depth = 1
        self.stopping = False
        self._pending: set[concurrent.futures.Future] = set()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._serve, name="janus-llm-session", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def on_loop_thread(self) -> bool:
        return threading.current_thread() is self.thread

    def run(self, make: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``make()`` on the session's loop and wait for it. The caller's context variables go with it
        (``call_soon_threadsafe`` runs the task's creation in a copy of the caller's context): a method's usage
        scope (llm/usage.py) sees its own calls. Ctrl-C while waiting cancels the call; a call cancelled by
        :meth:`stop` raises :class:`~janus_memory.interrupts.Stopping` in its thread."""
        with self._lock:
            if self.stopping:
                raise Stopping("the LLM session is stopping")

        async def call() -> Any:
            return await make()

        fut = asyncio.run_coroutine_threadsafe(call(), self.loop)
        with self._lock:
            self._pending.add(fut)
        try:
            return fut.result()
        except concurrent.futures.CancelledError:
            raise Stopping("the LLM call was cancelled: the run is stopping") from None
        except BaseException:
            if not fut.done():  # Ctrl-C (or another exception raised into this thread) while waiting
                fut.cancel()
            raise
        finally:
            with self._lock:
                self._pending.discard(fut)

    def stop(self) -> None:
        """Cancel every call still waiting (their threads get Stopping) and refuse new ones."""
        with self._lock:
            self.stopping = True
            pending = list(self._pending)
        for fut in pending:
            fut.cancel()

    def close(self, timeout: float = 10.0) -> None:
        """Cancel what is left, close the backend's connections of this loop, stop the loop and join its thread."""
        self.stop()

        async def shutdown() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.client.backend.aclose()
            await self.loop.shutdown_asyncgens()
            await self.loop.shutdown_default_executor()

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(timeout)
        except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError, RuntimeError):
            pass
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout)
            if not self.thread.is_alive():
                self.loop.close()
