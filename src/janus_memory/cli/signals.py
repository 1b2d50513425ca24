"""How `janus run | demo | grid | sweep` react to signals (the CLI's main thread only).

* SIGTERM (`kill PID`, a batch scheduler's time limit, a job started in the background by a script, where the shell
  makes the process ignore SIGINT) stops a run the way Ctrl-C does: KeyboardInterrupt at the next bytecode, so the run
  ends at its last committed step with the resume line; the CLI exits 143 instead of 130.
* SIGINT that lands inside an object finalizer (asyncio's ``BaseEventLoop.__del__`` during garbage collection): an
  exception raised there is printed as "Exception ignored in ..." and dropped, so that Ctrl-C would be lost. It is
  re-sent 50 ms later instead (grid/sweep workers do the same, sweep/executors.py).
* Either signal while an LLM call's asyncio loop runs: the KeyboardInterrupt is raised at the loop's next callback,
  not in the middle of asyncio's task bookkeeping (interrupts.py says why).
"""
from __future__ import annotations

import signal
import sys
import threading

from ..interrupts import raise_interrupt, resent_from_finalizer

_state = {"terminated": False}


def terminated() -> bool:
    """Whether the last interruption of this process came from SIGTERM."""
    return _state["terminated"]


def _on_term(signum, frame) -> None:
    if _state["terminated"]:
        return
    if resent_from_finalizer(frame, signal.SIGTERM):
        return
    _state["terminated"] = True
    print("terminated (SIGTERM): stopping at the last committed step", file=sys.stderr)
    raise_interrupt()


def _on_int(signum, frame) -> None:
    if resent_from_finalizer(frame, signal.SIGINT):
        return
    raise_interrupt()


def install(cmd: str):
    """Install both handlers for a command that runs experiments; returns a function that restores the previous ones.
    A SIGINT the process inherited as ignored stays ignored (SIGTERM is then the way to stop it)."""
    _state["terminated"] = False
    if cmd not in ("run", "demo", "grid", "sweep") or threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _on_term)}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, _on_int)

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore
