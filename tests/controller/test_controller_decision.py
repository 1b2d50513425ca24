"""Comparison rules: paper rule, exact early stopping, sign test, C23 identical-memory guard."""
import zlib

import numpy as np
import pytest

from controller_fakes import mk_task
from janus_memory.controller import Janus, JanusConfig, StepInput, compare, sign_test


def _u(*parts):
    return zlib.crc32("|".join(parts).encode()) / 2**32


class QualityEvaluator:
    """Deterministic: memory m solves task t iff u(m, t) < quality(m), quality(m) in [0.2, 0.9]."""

    def __init__(self):
        self.n = 0

    def __call__(self, mem, tasks):
        self.n += len(tasks)
        q = 0.2 + 0.7 * _u("quality", mem)
        return [_u(mem, t.id) < q for t in tasks]


def recorded_stream(cfg, n_steps=220, seed=0):
    """Run a controller over a synthetic stream; return (controller, decisions, task map)."""
    rng = np.random.default_rng(seed)
    ev = QualityEvaluator()
    j = Janus(cfg, ev)
    mem, mem_vec = "m0", rng.normal(size=8)
    tasks, decisions = {}, []
    for i in range(n_steps):
        t = mk_task(i)
        tasks[t.id] = t
        cand = f"m{i + 1}"
        cand_vec = mem_vec + rng.normal(size=8)
        d = j.decide(StepInput(t, rng.normal(size=16), mem, cand, mem_vec, cand_vec))
        decisions.append((d, mem, cand))
        if d.accept:
            mem, mem_vec = cand, cand_vec
    return j, decisions, tasks


def test_paper_rule_ties_and_rollbacks_unit():
    def ev(m, ts):
        return [m == "N"] * len(ts)

    tasks = [mk_task(i) for i in range(4)]
    c = compare(ev, tasks, "O", "N")
    assert (c.accept, c.reason, c.calls, c.calls_full) == (True, "new_ge_old", 8, 8)
    c = compare(ev, tasks, "N", "O")
    assert (c.accept, c.reason, sum(c.old_correct), sum(c.new_correct)) == (False, "old_better", 4, 0)
    c = compare(ev, [], "O", "N")  # empty evaluation set: 0 vs 0 is a tie -> new
    assert (c.accept, c.calls) == (True, 0)


def test_early_stopping_identical_decisions_on_recorded_200_step_sequence():
    _, decisions, tasks = recorded_stream(JanusConfig())
    triggered = [(d, old, new) for d, old, new in decisions if d.triggered]
    assert len(decisions) == 220 and len(triggered) >= 50
    full_calls = es_calls = 0
    for d, old, new in triggered:
        entries = [tasks[i] for i in d.eval_ids]
        for rnd in (1, 5):
            es = compare(QualityEvaluator(), entries, old, new, early_stop=True, round_size=rnd)
            assert es.accept == d.accept
            assert es.old_correct == d.old_correct[: len(es.old_correct)]
            assert es.new_correct == d.new_correct[: len(es.new_correct)]
            assert es.calls == len(es.old_correct) + len(es.new_correct) <= d.evaluator_calls
        full_calls += d.evaluator_calls
        es_calls += compare(QualityEvaluator(), entries, old, new, early_stop=True).calls
    assert es_calls < 0.9 * full_calls  # > 10 % saved with rounds of 5 on this sequence (measured ~16 %)


def test_early_stopping_in_controller_reports_savings():
    j, decisions, _ = recorded_stream(JanusConfig(early_stop=True))
    trig = [d for d, _, _ in decisions if d.triggered]
    assert any(d.reason.startswith("early_stop_") for d in trig)
    assert all(d.evaluator_calls <= d.evaluator_calls_full for d in trig)
    s = j.stats
    assert s["evaluator_calls_saved"] == sum(d.evaluator_calls_full - d.evaluator_calls for d in trig) > 0
    assert s["evaluator_calls"] == sum(d.evaluator_calls for d in trig)
    for d in trig:
        assert d.n_evaluated == min(len(d.new_correct), len(d.old_correct))
        assert max(len(d.new_correct), len(d.old_correct)) <= len(d.eval_ids)
        assert d.evaluator_calls == len(d.old_correct) + len(d.new_correct)


def test_sign_test_rule():
    # b = old-only wins, c = new-only wins
    assert sign_test([True] * 5, [False] * 5, 0.05, 0) == (False, "sign_test_old_better", 0.03125)
    acc, reason, p = sign_test([True] * 4, [False] * 4, 0.05, 0)
    assert (acc, reason, p) == (True, "sign_test_not_significant", 0.0625)
    assert sign_test([True, False], [False, True], 0.05, 0)[:2] == (True, "sign_test_new_ge_old")
    # significant but below the minimum margin -> keep new
    assert sign_test([True] * 5, [False] * 5, 0.05, 6)[:2] == (True, "sign_test_not_significant")
    # in the controller: old wins on one task only -> paper rolls back, sign test keeps the candidate
    tasks = [mk_task(i) for i in range(10)]
    def ev(m, ts):
        return [(m == "O") or t.id != "t3" for t in ts]

    assert compare(ev, tasks, "O", "N").accept is False
    c = compare(ev, tasks, "O", "N", rule="sign_test")
    assert (c.accept, c.reason, c.p_value) == (True, "sign_test_not_significant", 0.5)


def test_sign_test_in_controller():
    cfg = JanusConfig(trigger="always", decision_rule="sign_test", alpha=0.05)
    j = Janus(cfg, lambda m, ts: [m == "OLD"] * len(ts))
    z = np.array([1.0, 0.0])
    for i in range(20):
        j.decide(StepInput(mk_task(i), np.eye(20)[i], "OLD", "OLD", z * 0, z))
    d = j.decide(StepInput(mk_task(20), np.eye(20)[0], "OLD", "NEW", z * 0, z))
    assert (d.accept, d.reason) == (False, "sign_test_old_better") and d.p_value == 0.5 ** 21


class Alternating:
    """C23: a noisy endpoint that answers the same request right on odd calls and wrong on even ones."""

    def __init__(self):
        self.k = 0

    def __call__(self, mem, tasks):
        out = []
        for _ in tasks:
            self.k += 1
            out.append(self.k % 2 == 1)
        return out


def test_identical_memory_creates_no_flips_c23():
    assert JanusConfig().same_memory_shortcut is False and JanusConfig.fast().same_memory_shortcut is True
    cfg = JanusConfig(trigger="always", same_memory_shortcut=True)
    j = Janus(cfg, Alternating())
    z = np.array([1.0, 0.0])
    for i in range(20):
        j.decide(StepInput(mk_task(i), np.eye(20)[i], "M", "M", z * 0, z * 0))
    before = j.boundary_ids
    for i in range(20, 23):
        d = j.decide(StepInput(mk_task(i), np.eye(20)[i - 20], "M", "M", z * 0, z * 0))
        assert d.triggered and d.accept and d.flips == [] and d.old_correct == d.new_correct
        assert d.evaluator_calls == len(d.eval_ids)  # evaluated once, reused for both
    # no noise flips entered the boundary: only bootstrap tasks remain (some left as they became coverage reps)
    assert set(j.boundary_ids) <= set(before) and set(j.boundary_tags) == {"bootstrap"}
    # with the shortcut disabled the noise shows up as flips (the naive behaviour C23 warns about)
    j2 = Janus(JanusConfig(trigger="always", same_memory_shortcut=False), Alternating())
    for i in range(20):
        j2.decide(StepInput(mk_task(i), np.eye(20)[i], "M", "M", z * 0, z * 0))
    d = j2.decide(StepInput(mk_task(20), np.eye(20)[0], "M", "M", z * 0, z * 0))
    assert d.flips != []
    # early stopping: identical memories need no evaluation at all
    j3 = Janus(JanusConfig(trigger="always", early_stop=True, same_memory_shortcut=True), Alternating())
    for i in range(21):
        d = j3.decide(StepInput(mk_task(i), np.eye(20)[i % 20], "M", "M", z * 0, z * 0))
    assert (d.accept, d.evaluator_calls, d.reason) == (True, 0, "early_stop_new_ge_old")


def test_early_stop_with_sign_test_is_rejected():
    with pytest.raises(ValueError, match="early_stop"):
        JanusConfig(early_stop=True, decision_rule="sign_test")
