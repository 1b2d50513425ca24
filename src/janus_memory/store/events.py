"""Typed events of a run. The stream loop emits them; the store, the CLI progress bar and a user's callback subscribe.

    def on_event(ev):
        if isinstance(ev, StepFinished): ...
    run_experiment(cfg, on_event=on_event)
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class MethodStarted:
    method: str
    total: int           # stream length
    resumed_after: int   # 0 for a fresh start
    initial_memory: str  # the memory deployed before step 1 (a fresh start) or after ``resumed_after``


@dataclass(frozen=True)
class StepRecorded:
    """Everything the run folder keeps about one step; the store writes it in one transaction (store/store.py)."""

    method: str
    step: int
    decision_line: dict       # the decisions.jsonl line
    record: dict              # the steps.jsonl line
    deployed_memory: str
    candidate: tuple          # (candidate text, parent sha256, rejection reason or None)
    checkpoint: dict          # updater + controller state + counters, to resume after this step; in the store's form:
                              # embedding matrices as janus_memory.rows.RowsRef (.encode() is the JSON), read-only
    hints: dict = field(default_factory=dict)  # {key path: (token, stable)}: what of the checkpoint only grew (ckpt_log)


@dataclass(frozen=True)
class StepFinished:
    """One stream step committed (after the store wrote it)."""

    method: str
    step: int
    total: int
    correct: bool
    decision: dict      # the decision-log entry (``reason``, ``triggered``, ``accept`` ...)
    online_acc: float
    triggers: int
    accepts: int
    rollbacks: int
    tokens: int         # cumulative LLM tokens of this method so far
    cache_hits: int = 0  # cumulative responses of this method served by the response cache (no tokens paid)

    def progress(self) -> dict:
        """The legacy ``on_step`` dict."""
        return {"method": self.method, "step": self.step, "total": self.total, "online_acc": self.online_acc,
                "triggers": self.triggers, "accepts": self.accepts, "rollbacks": self.rollbacks, "tokens": self.tokens}


@dataclass(frozen=True)
class Triggered:
    """Janus ran its paired evaluation at this step (``accept`` False = rolled back)."""

    method: str
    step: int
    accept: bool
    reason: str


@dataclass(frozen=True)
class TestStarted:
    """The held-out test of this method's frozen memory starts: ``tasks`` test tasks, ``answers`` test answers in all
    (tasks x (1 + memory checkpoints))."""

    __test__ = False  # not a pytest test class

    method: str
    tasks: int
    answers: int


@dataclass(frozen=True)
class TestProgress:
    """One more test answer arrived (``done`` of ``answers``); ``tokens``: test tokens paid so far in this phase
    (cache hits cost none)."""

    __test__ = False  # not a pytest test class

    method: str
    done: int
    answers: int
    tokens: int
    cached: int = 0  # answers so far served by the response cache


@dataclass(frozen=True)
class TestDone:
    """The frozen memory was evaluated on the held-out test split (``records``: the test.jsonl lines); ``tokens``: the
    tokens paid in the test phase (checkpoint memories included), ``cached``: test answers served by the cache."""

    __test__ = False  # not a pytest test class

    method: str
    records: list
    correct: int
    total: int
    tokens: int = 0
    cached: int = 0


@dataclass(frozen=True)
class MethodFinished:
    method: str
    summary: dict
    final_memory: str


Event = MethodStarted | StepRecorded | StepFinished | Triggered | TestStarted | TestProgress | TestDone | MethodFinished


class EventSink(Protocol):
    """What a method's stream loop emits into: the :class:`EventBus`, or a relay that hands events to the thread
    that owns the bus (run/streams.py)."""

    def emit(self, ev: Event) -> None: ...


class EventBus:
    """Calls every subscriber with every event, in subscription order."""

    def __init__(self, *subscribers: Callable[[Event], None] | None):
        self._subs = [s for s in subscribers if s is not None]

    def subscribe(self, fn: Callable[[Event], None]) -> None:
        self._subs.append(fn)

    def emit(self, ev: Event) -> None:
        for fn in self._subs:
            fn(ev)
