"""A Ctrl-C/SIGTERM whose handler runs while asyncio is half-way through creating a Task must stop the run without a
half-made task: raised right there, the task is never registered, nobody cancels it, and Python prints "Task was
destroyed but it is pending!" and "coroutine 'LLMClient._fetch' was never awaited" at exit (CI saw exactly these
lines in test_cli_interrupt_grid's stderr). The handlers now raise at the event loop's next callback instead
(janus_memory/interrupts.py), and a deferred interrupt the loop never ran is raised after ``asyncio.run``."""
from __future__ import annotations

import asyncio
import gc
import logging
import signal
import sys
import warnings

import pytest

from janus_memory import interrupts
from janus_memory.cli import signals as cli_signals
from janus_memory.llm.cache import ResponseCache
from janus_memory.llm.client import LLMClient
from janus_memory.llm.fake import FakeBackend
from janus_memory.sweep import executors


def _fetch_step(callback) -> bool:
    task = getattr(callback, "__self__", None)
    return isinstance(task, asyncio.Task) and task.get_coro().__qualname__ == "LLMClient._fetch"


def _interrupt_inside_task_creation(monkeypatch, handler):
    """Run the handler at the instant the first ``_fetch`` task schedules its first step (inside Task.__init__)."""
    original = asyncio.BaseEventLoop.call_soon
    fired = []

    def call_soon(self, callback, *args, context=None):
        if not fired and _fetch_step(callback):
            fired.append(True)
            handler()
        return original(self, callback, *args, context=context)

    monkeypatch.setattr(asyncio.BaseEventLoop, "call_soon", call_soon)
    return fired


def _signal_handler(monkeypatch, name: str):
    """One of our real signal handlers, as a call with no arguments (the CLI's SIGINT or SIGTERM handler, or a grid
    worker's SIGINT handler), with the state it reads reset; no deferred interrupt left from an earlier test."""
    interrupts.clear_deferred()
    monkeypatch.setattr(cli_signals, "_state", {"terminated": False})
    monkeypatch.setattr(executors, "_worker", {"busy": True, "stopping": False})
    return {"cli_sigint": lambda: cli_signals._on_int(signal.SIGINT, sys._getframe()),
            "cli_sigterm": lambda: cli_signals._on_term(signal.SIGTERM, sys._getframe()),
            "worker_sigint": lambda: executors._worker_sigint(signal.SIGINT, sys._getframe())}[name]


def _client(tmp_path) -> LLMClient:
    # with a cache, each request is its own ``_fetch`` task (in-flight sharing, llm/client.py): the CI case
    return LLMClient(FakeBackend(default="The answer is 4."), cache=ResponseCache(tmp_path / "cache.sqlite"),
                     concurrency=2)


@pytest.mark.parametrize("handler", ["cli_sigint", "cli_sigterm", "worker_sigint"])
def test_interrupt_during_task_creation_leaves_no_half_made_task(monkeypatch, caplog, tmp_path, handler):
    call = _signal_handler(monkeypatch, handler)
    fired = _interrupt_inside_task_creation(monkeypatch, call)
    client = _client(tmp_path)
    caplog.set_level(logging.ERROR, logger="asyncio")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(KeyboardInterrupt):
            client.chat_many([[{"role": "user", "content": f"q{i}"}] for i in range(4)])
        gc.collect()
    assert fired == [True]
    assert [r.getMessage() for r in caplog.records if "destroyed" in r.getMessage()] == []
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []
    assert interrupts._deferred == {"pending": False}
    # the client still works afterwards (no stale in-flight entry, no stale deferred interrupt)
    monkeypatch.undo()
    assert client.chat([{"role": "user", "content": "again"}]).text == "The answer is 4."
    assert client._inflight == {}


def test_raising_at_that_instant_is_what_leaves_the_half_made_task(monkeypatch, caplog, tmp_path):
    """The failure the deferral prevents, reproduced: raising KeyboardInterrupt directly inside Task creation."""
    def raise_now():
        raise KeyboardInterrupt

    fired = _interrupt_inside_task_creation(monkeypatch, raise_now)
    caplog.set_level(logging.ERROR, logger="asyncio")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(KeyboardInterrupt):
            _client(tmp_path).chat_many([[{"role": "user", "content": f"q{i}"}] for i in range(4)])
        gc.collect()
    assert fired == [True]
    destroyed = [r.getMessage() for r in caplog.records if "destroyed" in r.getMessage()]
    never = [str(w.message) for w in caught if "never awaited" in str(w.message)]
    assert len(destroyed) == 1 and destroyed[0].startswith("Task was destroyed but it is pending!")
    assert never == ["coroutine 'LLMClient._fetch' was never awaited"]


def test_outside_an_event_loop_the_interrupt_is_raised_at_once():
    interrupts.clear_deferred()
    with pytest.raises(KeyboardInterrupt):
        interrupts.raise_interrupt()
    assert interrupts._deferred == {"pending": False}


def test_a_deferred_interrupt_the_loop_never_ran_is_raised_after_the_loop():
    """The signal came as the loop was ending: the callback is dropped with the loop, the flag is not."""
    interrupts.clear_deferred()

    async def main():
        interrupts.raise_interrupt()  # schedules the raise ...
        return "done"  # ... but the main task ends first; asyncio.run stops the loop

    loop_result = []
    # run the loop by hand and close it without running the scheduled callback
    loop = asyncio.new_event_loop()
    try:
        task = loop.create_task(main())
        loop.call_soon(loop.stop)
        loop.run_forever()  # main() runs, schedules _fire after the stop callback: the loop stops first
        loop_result.append(task.result())
    finally:
        loop.close()
    assert loop_result == ["done"]
    assert interrupts._deferred == {"pending": KeyboardInterrupt}
    with pytest.raises(KeyboardInterrupt):
        interrupts.raise_if_deferred()
    assert interrupts._deferred == {"pending": False}
    interrupts.raise_if_deferred()  # nothing pending: no exception


def test_the_client_raises_a_deferred_interrupt_after_its_loop(monkeypatch, tmp_path):
    """_run_sync checks the flag after asyncio.run, so an interrupt deferred in the loop's last instants stops the
    caller instead of being lost."""
    interrupts.clear_deferred()
    client = _client(tmp_path)
    original = client.backend.acomplete

    async def acomplete(req):
        res = await original(req)
        interrupts._deferred["pending"] = True  # as if the callback had been dropped with the loop
        return res

    monkeypatch.setattr(client.backend, "acomplete", acomplete)
    with pytest.raises(KeyboardInterrupt):
        client.chat([{"role": "user", "content": "x"}])
    assert interrupts._deferred == {"pending": False}


def _interrupt_before_the_loop_starts(monkeypatch, handler):
    """Run the handler at the instant ``asyncio.run`` has been handed its coroutine but no loop runs yet."""
    original = asyncio.run
    fired = []

    def run(main, **kw):
        if not fired:
            fired.append(main.__qualname__)
            handler()
        return original(main, **kw)

    monkeypatch.setattr(asyncio, "run", run)
    return fired


@pytest.mark.parametrize("handler", ["cli_sigint", "cli_sigterm", "worker_sigint"])
def test_interrupt_before_the_loop_starts_drops_no_coroutine(monkeypatch, caplog, tmp_path, handler):
    """CI (test_cli_interrupt) printed "coroutine 'LLMClient._with_close' was never awaited" and "... 'LLMClient.achat'
    ...": the Ctrl-C landed after chat() had made its coroutines and before asyncio.run started them. Now the handler
    only records it there, and the entry coroutine raises it at the loop's first callback, before chat's coroutines
    exist."""
    call = _signal_handler(monkeypatch, handler)
    client = _client(tmp_path)
    calls = []
    original = client.backend.acomplete

    async def acomplete(req):
        calls.append(req)
        return await original(req)

    monkeypatch.setattr(client.backend, "acomplete", acomplete)
    fired = _interrupt_before_the_loop_starts(monkeypatch, call)
    caplog.set_level(logging.ERROR, logger="asyncio")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(KeyboardInterrupt):
            client.chat([{"role": "user", "content": "q"}])
        gc.collect()
    assert fired == ["_entered"]
    assert calls == []  # stopped before any request was made
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []
    assert [r.getMessage() for r in caplog.records] == []  # no "Task exception was never retrieved" either
    assert interrupts._deferred == {"pending": False} and interrupts._entry == {"depth": 0}
    monkeypatch.undo()
    assert client.chat([{"role": "user", "content": "again"}]).text == "The answer is 4."


def test_raising_before_the_loop_starts_is_what_drops_the_coroutines(monkeypatch, tmp_path):
    """The CI failure reproduced: chat's coroutines made, KeyboardInterrupt raised before asyncio.run starts them."""
    client = _client(tmp_path)
    seen = []  # messages only: a recorded WarningMessage keeps its coroutine (and the one inside it) alive
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        monkeypatch.setattr(warnings, "showwarning", lambda message, *a, **k: seen.append(str(message)))

        def chat_interrupted_before_run():
            _coro = client._with_close(client.achat([{"role": "user", "content": "q"}]))  # as chat() makes it
            raise KeyboardInterrupt  # ... and the old handler raised here, before asyncio.run(coro)

        with pytest.raises(KeyboardInterrupt):
            chat_interrupted_before_run()
        gc.collect()
    assert sorted(m for m in seen if "never awaited" in m) == [
        "coroutine 'LLMClient._with_close' was never awaited", "coroutine 'LLMClient.achat' was never awaited"]


def test_an_interrupt_outside_sync_entry_in_another_thread_is_not_held(monkeypatch):
    """sync_entry counts only in the main thread: a worker thread inside it must not make the main thread's Ctrl-C
    wait for a loop that is not there."""
    import threading
    interrupts.clear_deferred()
    inside, release = threading.Event(), threading.Event()

    def worker():
        with interrupts.sync_entry():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    try:
        assert inside.wait(5)
        assert interrupts._entry == {"depth": 0}
        with pytest.raises(KeyboardInterrupt):
            interrupts.raise_interrupt()
    finally:
        release.set()
        t.join()
    with interrupts.sync_entry():
        assert interrupts._entry == {"depth": 1}
        interrupts.raise_interrupt()  # main thread, no loop: recorded, not raised
        assert interrupts._deferred == {"pending": KeyboardInterrupt}
    with pytest.raises(KeyboardInterrupt):
        interrupts.raise_if_deferred()
    assert interrupts._entry == {"depth": 0} and interrupts._deferred == {"pending": False}
