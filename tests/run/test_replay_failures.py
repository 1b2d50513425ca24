"""Replay failures: with ``failures="zero"`` (the paper preset) a replay request that fails scores
that (entry, memory) 0 and the comparison goes on, as the authors' replay does; ``abort`` (small preset) raises,
so the controller keeps the deployed memory (on_evaluation_error). Interrupts are never swallowed."""
from __future__ import annotations

import pytest

from janus_memory.controller import Janus, JanusConfig, StepInput
from janus_memory.llm.base import LLMError
from janus_memory.run.eval_batch import PairedEvaluator
from janus_memory.run.evaluator import UpdaterEvaluator
from janus_memory.settings.config import RunConfig
from janus_memory.values import ChatResult, Score, Task

TASKS = [Task(id=f"t{i}", dataset="toy", question=f"q{i}", gold="1") for i in range(4)]


class StubUpdater:
    """solve_with_memory: correct unless the task id is in ``bad`` (raises LLMError) or ``stop`` (KeyboardInterrupt)."""

    def __init__(self, bad=(), stop=()):
        self.bad, self.stop, self.calls = set(bad), set(stop), []

    def solve_with_memory(self, memory_text, tasks, *, role="janus", sample=0):
        self.calls.append([t.id for t in tasks])
        for t in tasks:
            if t.id in self.stop:
                raise KeyboardInterrupt
            if t.id in self.bad:
                raise LLMError(f"server gave up on {t.id}")
        return [(ChatResult(text="ok"), Score(True, "1")) for _ in tasks]


def test_zero_scores_the_failed_entry_and_keeps_the_others():
    upd = StubUpdater(bad={"t2"})
    ev = UpdaterEvaluator(upd, replay="frozen", failures="zero")
    assert ev("mem", TASKS) == [True, True, False, True]
    assert upd.calls == [["t0", "t1", "t2", "t3"], ["t0"], ["t1"], ["t2"], ["t3"]]  # the batch, then one by one
    recs = ev.drain()
    assert [r["status"] for r in recs] == ["ok", "ok", "error", "ok"]
    assert recs[2]["failure"] == "LLMError: server gave up on t2" and "failure" not in recs[0]


def test_abort_raises_and_interrupts_are_never_swallowed():
    with pytest.raises(LLMError):
        UpdaterEvaluator(StubUpdater(bad={"t2"}), replay="frozen", failures="abort")("mem", TASKS)
    with pytest.raises(KeyboardInterrupt):
        UpdaterEvaluator(StubUpdater(stop={"t1"}), replay="frozen", failures="zero")("mem", TASKS)
    with pytest.raises(ValueError, match="failures must be one of"):
        UpdaterEvaluator(StubUpdater(), failures="ignore")


class BatchStub(StubUpdater):
    """Also solve_replays (the batched path): a failed item comes back as its exception."""

    def solving_messages(self, memory_text, task):  # makes PairedEvaluator treat it as batchable via the base test
        return []

    def solve_replays(self, items, *, role="janus"):
        out = []
        for mem, t, _s in items:
            if t.id in self.bad and mem == "new":
                out.append(LLMError(f"failed {t.id}"))
            else:
                out.append((ChatResult(text="ok"), Score(mem == "new" or t.id != "t0", "1")))
        return out


def test_paired_evaluator_zero_in_a_batch(monkeypatch):
    import janus_memory.run.eval_batch as eb

    monkeypatch.setattr(eb, "_batchable", lambda u: True)
    ev = PairedEvaluator(BatchStub(bad={"t1"}), replay="frozen", failures="zero")
    ev.begin_comparison(step=1, trigger=1)
    ev.expect_pair("old", "new")
    assert ev("old", TASKS) == [False, True, True, True]
    assert ev("new", TASKS) == [True, False, True, True]  # t1 failed for the new memory: 0, not an abort
    ev2 = PairedEvaluator(BatchStub(bad={"t1"}), replay="frozen", failures="abort")
    ev2.begin_comparison(step=1, trigger=1)
    ev2.expect_pair("old", "new")
    ev2("old", TASKS)
    with pytest.raises(LLMError):
        ev2("new", TASKS)


def test_controller_decides_with_the_zero_and_the_failure_is_a_flip():
    """The authors' semantics: the comparison is not dropped; a failed entry can be a flip."""
    upd = StubUpdater()
    ev = UpdaterEvaluator(upd, replay="frozen", failures="zero")

    def evaluator(memory, tasks):
        upd.bad = {"t1"} if memory == "new" else set()
        return ev(memory, tasks)

    import numpy as np

    j = Janus(JanusConfig(warmup=2, coverage_size=1, boundary_size=1, fresh_size=2, trigger="always"), evaluator)
    for i, t in enumerate(TASKS[:3]):
        d = j.decide(StepInput(t, np.eye(4, dtype=np.float32)[i], "old", "new", np.zeros(3), np.ones(3)))
    assert d.triggered and not d.accept  # new lost one entry (its failure) -> rollback, as the authors decide
    assert j.stats["evaluation_failures"] == 0


def test_presets_choose_the_failure_mode():
    assert RunConfig().replay_failure_mode() == "zero"
    assert RunConfig(preset="small").replay_failure_mode() == "abort"
    assert RunConfig(replay_failures="abort").replay_failure_mode() == "abort"
