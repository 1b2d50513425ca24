"""A Ctrl-C that reaches a grid/sweep worker while Python runs a finalizer (asyncio's BaseEventLoop.__del__ during
garbage collection) must not be lost: an exception raised there is printed as "Exception ignored in ..." and dropped,
which left the worker running its cell (and a traceback on stderr). The handler re-sends it a moment later instead."""
from __future__ import annotations

import signal
import sys
import time

import pytest

from janus_memory import interrupts
from janus_memory.sweep import executors


def _frame_in_del():
    box = {}

    class Dying:
        def __del__(self):
            box["frame"] = sys._getframe()

    Dying()
    return box["frame"]


def test_sigint_inside_a_finalizer_is_deferred_not_swallowed(monkeypatch):
    sent = []
    monkeypatch.setattr(interrupts.os, "kill", lambda pid, sig: sent.append(sig))
    monkeypatch.setattr(executors, "_worker", {"busy": True, "stopping": False})
    executors._worker_sigint(signal.SIGINT, _frame_in_del())  # no KeyboardInterrupt raised inside __del__
    assert executors._worker == {"busy": True, "stopping": False}
    for _ in range(100):
        if sent:
            break
        time.sleep(0.01)
    assert sent == [signal.SIGINT]  # asked again, outside the finalizer
    with pytest.raises(KeyboardInterrupt):  # the re-sent signal, landing in ordinary code, stops the run
        executors._worker_sigint(signal.SIGINT, sys._getframe())
    assert executors._worker["stopping"] is True


def test_in_finalizer_looks_up_the_call_chain_only():
    assert interrupts.in_finalizer(_frame_in_del()) is True
    assert interrupts.in_finalizer(sys._getframe()) is False
    assert interrupts.in_finalizer(None) is False
