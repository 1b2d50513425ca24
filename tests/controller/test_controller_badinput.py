"""Bad input: dimension mismatches, NaN vectors, empty memories, failing evaluators, malformed steps; adapter."""
import json

import numpy as np
import pytest

from controller_fakes import mk_task
from janus_memory.controller import GuardedUpdate, Janus, JanusConfig, StepInput, guarded_step


def good_ev(mem, tasks):
    return [mem == "NEW"] * len(tasks)


def warmed(cfg=None, ev=good_ev, n=21):
    """Warm-up plus the momentum-initialising step 21 (momentum = [1, 0])."""
    j = Janus(cfg or JanusConfig(), ev)
    for i in range(n):
        j.decide(StepInput(mk_task(i), np.eye(8)[i % 8], "OLD", "OLD", np.zeros(2), np.array([1.0, 0.0])))
    return j


def test_memory_embedding_dimension_mismatch_gives_zero_z_and_cosine_zero():
    j = warmed()
    d = j.decide(StepInput(mk_task(21), np.eye(8)[0], "OLD", "NEW", np.zeros(3), np.array([-1.0, 0.0])))
    assert d.z_norm == 0.0 and d.cosine == 0.0 and not d.triggered
    assert any("dimension mismatch" in w for w in d.warnings)
    np.testing.assert_array_equal(j.momentum, 0.9 * np.array([1.0, 0.0]))
    # z of another size than the momentum: cosine 0, momentum restarts from z
    d = j.decide(StepInput(mk_task(22), np.eye(8)[0], "OLD", "NEW", np.zeros(3), -np.ones(3)))
    assert d.cosine == 0.0 and not d.triggered and any("momentum dimension" in w for w in d.warnings)
    np.testing.assert_array_equal(j.momentum, -np.ones(3))


def test_nan_vectors_are_zero_with_warning():
    j = warmed(JanusConfig(compare_on_broken_embeddings=False))  # the trigger alone reads them (fail open)
    d = j.decide(StepInput(mk_task(21), np.eye(8)[0], "OLD", "NEW", np.zeros(2), np.array([np.nan, 1.0])))
    assert d.z_norm == 0.0 and d.cosine == 0.0 and not d.triggered
    assert any("new_embedding" in w and "NaN" in w for w in d.warnings)
    d = j.decide(StepInput(mk_task(22), np.array([np.inf] + [0.0] * 7), "OLD", "NEW", np.zeros(2), np.ones(2)))
    assert any("task_embedding" in w for w in d.warnings)
    assert np.all(np.isfinite(json.loads(json.dumps(j.state_dict()))["step"]))


def test_task_embedding_errors_leave_state_untouched():
    j = warmed()
    before = json.dumps(j.state_dict(), sort_keys=True)
    with pytest.raises(ValueError, match="dimension"):
        j.decide(StepInput(mk_task(21), np.ones(5), "OLD", "NEW", np.zeros(2), np.ones(2)))
    with pytest.raises(ValueError, match="empty"):
        j.decide(StepInput(mk_task(21), np.zeros(0), "OLD", "NEW", np.zeros(2), np.ones(2)))
    with pytest.raises(ValueError, match="numeric"):
        j.decide(StepInput(mk_task(21), ["a", "b"], "OLD", "NEW", np.zeros(2), np.ones(2)))
    with pytest.raises(TypeError, match="id"):
        j.decide(StepInput(object(), np.ones(8), "OLD", "NEW", np.zeros(2), np.ones(2)))
    with pytest.raises(TypeError, match="str"):
        j.decide(StepInput(mk_task(21), np.ones(8), None, "NEW", np.zeros(2), np.ones(2)))
    with pytest.raises(TypeError):
        j.decide({"task": mk_task(21)})
    assert json.dumps(j.state_dict(), sort_keys=True) == before
    with pytest.raises(RuntimeError, match="evaluator"):
        Janus(JanusConfig(warmup=0)).decide(StepInput(mk_task(0), np.ones(8), "", "", np.zeros(2), np.ones(2)))


def test_empty_memories_are_fine():
    j = warmed(JanusConfig(trigger="always"))
    # empty old memory (zero embedding from the encoder) against a new one
    d = j.decide(StepInput(mk_task(21), np.eye(8)[1], "", "NEW", np.zeros(2), np.ones(2)))
    assert d.triggered and d.accept and d.reason == "new_ge_old"
    d = j.decide(StepInput(mk_task(22), np.eye(8)[2], "NEW", "", np.ones(2), np.zeros(2)))
    assert d.triggered and not d.accept and d.reason == "old_better"


@pytest.mark.parametrize(
    "ev,needle",
    [
        (lambda m, ts: (_ for _ in ()).throw(TimeoutError("server down")), "TimeoutError: server down"),
        (lambda m, ts: [True] * (len(ts) - 1), "results for"),
        (lambda m, ts: ["yes"] * len(ts), "non-boolean"),
        (lambda m, ts: None, "not a list"),
    ],
)
@pytest.mark.parametrize("on_error", ["keep_old", "deploy"])
def test_evaluator_failures_decide_by_the_setting_and_update_momentum(ev, needle, on_error):
    """Default ``keep_old``: the guard fails closed (the deployed memory stays); ``deploy`` is the authors' way."""
    failing = {"on": False}

    def wrapped(m, ts):
        return ev(m, ts) if failing["on"] else [True] * len(ts)

    j = warmed(JanusConfig(trigger="always", on_evaluation_error=on_error), wrapped)  # step 21 triggers, evaluator ok
    failing["on"] = True
    bnd = j.boundary_ids
    m_prev = j.momentum
    before = j.stats
    d = j.decide(StepInput(mk_task(21), np.eye(8)[1], "OLD", "NEW", np.zeros(2), np.array([0.0, 1.0])))
    assert d.triggered and d.accept == (on_error == "deploy") and d.reason.startswith("evaluation_failed:")
    assert needle in d.reason
    moved = "accepts" if on_error == "deploy" else "rollbacks"
    assert j.stats[moved] == before[moved] + 1
    assert d.flips == [] and d.old_score is None and d.new_score is None
    assert j.boundary_ids == bnd  # boundary untouched
    np.testing.assert_array_equal(j.momentum, 0.9 * m_prev + (1.0 - 0.9) * np.array([0.0, 1.0]))
    assert j.stats["evaluation_failures"] == 1 and j.stats["triggers"] == 2
    json.dumps(j.state_dict())  # state still serialisable
    # the controller keeps working afterwards with a good evaluator
    j.evaluator = good_ev
    d2 = j.decide(StepInput(mk_task(22), np.eye(8)[2], "OLD", "NEW", np.zeros(2), np.ones(2)))
    assert d2.accept and d2.reason == "new_ge_old"


def test_evaluator_returning_numpy_and_int_bools_is_accepted():
    j = warmed(JanusConfig(trigger="always"), lambda m, ts: np.array([m == "NEW"] * len(ts)))
    assert j.decide(StepInput(mk_task(21), np.eye(8)[1], "OLD", "NEW", np.zeros(2), np.ones(2))).accept
    j = warmed(JanusConfig(trigger="always"), lambda m, ts: [int(m == "OLD")] * len(ts))
    assert not j.decide(StepInput(mk_task(21), np.eye(8)[1], "OLD", "NEW", np.zeros(2), np.ones(2))).accept


def test_guarded_step_restores_on_rollback_and_guarded_update_loop():
    restored = []
    j = warmed(JanusConfig(trigger="always"), lambda m, ts: [m == "OLD"] * len(ts))

    def embed(texts):
        return np.array([[len(t), 1.0] if t else [0.0, 0.0] for t in texts])

    d = guarded_step(j, task=mk_task(21), task_embedding=np.eye(8)[3], old_text="OLD", new_text="NEWER",
                     embed=embed, snapshot={"mem": "OLD"}, restore=restored.append)
    assert not d.accept and restored == [{"mem": "OLD"}]
    with pytest.raises(ValueError, match="task_text"):
        guarded_step(j, task=mk_task(22), old_text="a", new_text="b", embed=embed, snapshot=None,
                     restore=restored.append)

    class Outcome:
        def __init__(self, old, new):
            self.old_memory, self.candidate_memory = old, new

    class ToyUpdater:
        def __init__(self):
            self.memory = "OLD"

        def snapshot(self):
            return {"memory": self.memory}

        def step(self, task):
            old, self.memory = self.memory, self.memory + "+"
            return Outcome(old, self.memory)

        def rollback(self, snap):
            self.memory = snap["memory"]

    def embed8(texts):
        return np.array([np.eye(8)[len(t) % 8] for t in texts])

    u = ToyUpdater()
    # shorter memories solve everything, longer ones nothing: every post-warm-up candidate is rolled back
    g = GuardedUpdate(Janus(JanusConfig(trigger="always"), lambda m, ts: [len(m) <= 23] * len(ts)), u, embed8)
    ds = [g.step(mk_task(i))[1] for i in range(22)]
    assert all(d.accept for d in ds[:20])
    assert [(d.step, d.triggered, d.accept) for d in ds[20:]] == [(21, True, False), (22, True, False)]
    assert u.memory == "OLD" + "+" * 20


def test_indeterminate_timeout_scores_incorrect_and_is_never_a_flip_c16():
    """C16-C: an entry that timed out under one memory (None) counts as incorrect but never enters the boundary."""
    timed_out = {"t21"}  # the current task: a fresh entry, not a coverage rep, so it would otherwise be a flip

    def ev(mem, ts):
        if mem == "NEW":
            return [None if t.id in timed_out else True for t in ts]
        return [t.id in timed_out for t in ts]  # old: only t21 correct

    j = warmed(JanusConfig(trigger="always", warmup=20), ev)
    d = j.decide(StepInput(mk_task(21), np.eye(8)[1], "OLD", "NEW", np.zeros(2), np.array([0.0, 1.0])))
    assert d.triggered and "t21" in d.fresh and "t21" not in d.coverage
    n = len(d.eval_ids)
    assert d.new_correct.count(None) == d.eval_ids.count("t21") == 1
    assert d.new_score == (n - 1) / n and d.old_score == 1 / n  # None counted as incorrect
    assert "t21" not in d.flips and "t21" not in j.boundary_ids
    assert set(d.flips) == {i for i in d.eval_ids if i != "t21"} - set(d.coverage)
    assert len(d.flips) > 0
