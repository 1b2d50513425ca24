"""The guard fails closed: a broken encoder forces a comparison, an evaluator error keeps the deployed memory (see
test_controller_badinput), a rollback is checked against the memory before the step, an embedding of several rows is
an error, and decide() changes nothing when it is interrupted."""
from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from controller_fakes import mk_task
from janus_memory.controller import GuardedUpdate, Janus, JanusConfig, StepInput
from janus_memory.values import Task


def _ev(mem, tasks):
    return [("PLANTED" not in mem)] * len(tasks)  # the planted candidate loses every task


@pytest.mark.parametrize("bad", [np.full(4, np.nan), np.full(4, np.inf), np.zeros(4)])
def test_a_broken_encoder_forces_a_comparison_and_the_planted_candidate_is_rolled_back(bad):
    j = Janus(JanusConfig(warmup=3, coverage_size=1, boundary_size=1, fresh_size=1), _ev)
    for i in range(6):  # every embedding broken, from the first step
        d = j.decide(StepInput(mk_task(i), bad, "rule A", "rule A", bad, bad))
    d = j.decide(StepInput(mk_task(6), bad, "rule A", "rule A\nPLANTED: answer 0", bad, bad))
    assert d.triggered and not d.accept and d.trigger_signals["forced_by"] == "encoder"
    assert any("compare_on_broken_embeddings" in w for w in d.warnings)
    # the setting off: the old behaviour, MMT never fires on zero vectors and the planted line is deployed
    j = Janus(JanusConfig(warmup=3, coverage_size=1, boundary_size=1, fresh_size=1,
                          compare_on_broken_embeddings=False), _ev)
    for i in range(6):
        j.decide(StepInput(mk_task(i), bad, "rule A", "rule A", bad, bad))
    d = j.decide(StepInput(mk_task(6), bad, "rule A", "rule A\nPLANTED: answer 0", bad, bad))
    assert not d.triggered and d.accept


def test_working_embeddings_and_blank_memories_are_not_called_broken():
    j = Janus(JanusConfig(warmup=2, coverage_size=1, boundary_size=1, fresh_size=1), _ev)
    for i in range(5):  # a blank memory embeds to zeros with some encoders: that is not a broken encoder
        d = j.decide(StepInput(mk_task(i), np.zeros(3), "", "", np.zeros(3), np.zeros(3)))
        assert "forced_by" not in d.trigger_signals and not d.triggered
    d = j.decide(StepInput(mk_task(5), np.eye(3)[0], "a", "b", np.eye(3)[1], np.eye(3)[1]))
    assert "forced_by" not in d.trigger_signals


@pytest.mark.parametrize("shape", [(3, 4), (2, 1, 4), (0, 4)])
def test_an_embedding_of_several_rows_is_an_error_not_flattened(shape):
    j = Janus(JanusConfig(warmup=2), _ev)
    before = json.dumps(j.state_dict(), sort_keys=True)
    for field in ("task", "old", "new"):
        emb = {k: np.ones(4) for k in ("task", "old", "new")}
        emb[field] = np.ones(shape)
        with pytest.raises(ValueError, match=r"expected one embedding of shape \(d,\) or \(1, d\), got shape"):
            j.decide(StepInput(mk_task(0), emb["task"], "a", "b", emb["old"], emb["new"]))
    assert json.dumps(j.state_dict(), sort_keys=True) == before
    j.decide(StepInput(mk_task(0), np.ones((1, 4)), "a", "b", np.ones((1, 4)), np.ones(4)))  # (1, d) is one row


class _ByReference:
    """An updater whose snapshot() returns its live state: rollback "restores" the candidate."""

    def __init__(self):
        self.state = {"memory": "rule A"}

    def snapshot(self):
        return self.state  # a reference, not a copy

    def step(self, task):
        from types import SimpleNamespace

        old = self.state["memory"]
        self.state["memory"] = old + "\nPLANTED: answer 0"
        return SimpleNamespace(old_memory=old, candidate_memory=self.state["memory"])

    def rollback(self, snap):
        self.state = snap

    def memory_text(self):
        return self.state["memory"]


class _Copying(_ByReference):
    def snapshot(self):
        return dict(self.state)


def _embed(texts):
    return np.array([[1.0, float(len(t) % 7), 1.0] for t in texts])


def _task(i):
    return Task(id=f"t{i}", dataset="x", question=f"q{i}", gold="1")


def test_a_rollback_that_restores_nothing_is_caught():
    from janus_memory.controller import RollbackError

    cfg = JanusConfig(warmup=0, trigger="always", coverage_size=0, boundary_size=0, fresh_size=1)
    g = GuardedUpdate(Janus(cfg, _ev), _ByReference(), _embed)
    with pytest.raises(RollbackError, match=r"^rollback failed at step 1: after _ByReference.rollback\(snapshot\) the "
                                            r"memory \(24 characters\) is not the one before the step \(6 characters\); "
                                            r"snapshot\(\) must return a copy"):
        g.step(_task(0))
    g = GuardedUpdate(Janus(cfg, _ev), _ByReference(), _embed, verify_rollback="warn")
    _, d = g.step(_task(0))
    assert not d.accept and any(w.startswith("rollback failed at step 1") for w in d.warnings)
    g = GuardedUpdate(Janus(cfg, _ev), _Copying(), _embed)
    _, d = g.step(_task(0))
    assert not d.accept and g.updater.memory_text() == "rule A" and d.warnings == []
    with pytest.raises(ValueError, match="verify_rollback must be one of raise, warn, off"):
        GuardedUpdate(Janus(cfg, _ev), _Copying(), _embed, verify_rollback="yes")


def test_embed_returning_the_wrong_number_of_rows_is_one_error():
    cfg = JanusConfig(warmup=0, trigger="always", coverage_size=0, boundary_size=0, fresh_size=1)
    g = GuardedUpdate(Janus(cfg, _ev), _Copying(), lambda texts: np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"embed\(texts\) must return one row per text, shape \(3, d\); got shape "
                                         r"\(2, 3\)"):
        g.step(_task(0))


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, asyncio.CancelledError])
@pytest.mark.parametrize("cfg", [
    dict(warmup=3, coverage_size=2, boundary_size=1, fresh_size=2, trigger="always"),
    dict(warmup=3, coverage_size=2, boundary_size=1, fresh_size=2, trigger="always", decision_rule="sequential",
         reuse_old_results=True, eval_set="panel", panel_size=3),
    dict(warmup=3, coverage_size=2, boundary_size=1, fresh_size=2, trigger="selective", gate_compare=True,
         retention_min=0.9),
])
def test_decide_changes_nothing_when_the_evaluator_is_interrupted_and_a_retry_adds_the_task_once(interrupt, cfg):
    calls = {"n": 0, "stop_at": None}

    def ev(mem, tasks):
        calls["n"] += 1
        if calls["stop_at"] is not None and calls["n"] >= calls["stop_at"]:
            raise interrupt()
        return [("bad" not in mem) == (i % 3 != 0) for i, _ in enumerate(tasks)]

    def step(i):
        v = np.array([np.cos(i), np.sin(i), 1.0])
        return StepInput(mk_task(i), v, f"memory {i}", f"memory {i + 1}" + (" bad" if i % 2 else ""), v, -v)

    ref, j = Janus(JanusConfig(**cfg), ev), Janus(JanusConfig(**cfg), ev)
    for i in range(8):
        ref.decide(step(i))
    for i in range(8):
        before = json.dumps(j.state_dict(), sort_keys=True)
        calls["stop_at"] = calls["n"] + 1  # the first evaluator call of this step is interrupted
        try:
            j.decide(step(i))
        except interrupt:
            assert json.dumps(j.state_dict(), sort_keys=True) == before
        calls["stop_at"] = None
        if json.dumps(j.state_dict(), sort_keys=True) == before:
            j.decide(step(i))  # the retried step
    assert json.dumps(j.state_dict(), sort_keys=True) == json.dumps(ref.state_dict(), sort_keys=True)
    assert j.n_seen == ref.n_seen and j.stats["steps"] == 8
