"""The adaptive cap of the sequential test, the relevance order, the preset label, the trigger
line's compared count and the --tau warning."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from controller_fakes import boundary_first, fixed, tasks
from janus_memory.controller import Janus, JanusConfig, StepInput, compare
from janus_memory.controller.evalset import EmbeddingStore
from janus_memory.controller.hybrid_set import order_by_relevance
from janus_memory.controller.sequential import SPRT, AdaptiveCap


def seq(ev, n, **kw):
    return compare(ev, tasks(n), "old", "new", rule="sequential", round_size=kw.pop("round_size", 2),
                   sprt=SPRT(0.2, 0.2, 0.3), **kw)


# ----------------------------------------------------------------------------- AdaptiveCap.stop


def reference(test: SPRT, cap: AdaptiveCap, pairs: list[int], n: int) -> tuple[str, int]:
    """The two-stage rule without curtailment, checked after every pair: (outcome, pairs used). A pair is +1 (new
    memory wins), -1 (old memory wins) or 0 (concordant)."""
    base, top = min(n, cap.base), min(n, cap.top)
    w = ll = 0
    for k in range(n + 1):
        v = test.verdict(w, ll)
        if v is not None:
            return v, k
        if k >= top:
            return test.truncated(w, ll), k
        if k >= base and test.quiet_tie(w, ll):
            return "deploy", k
        if k >= base and abs(w - ll - test.margin) > cap.margin:  # close to the deploy threshold (0: a tie)
            return ("deploy" if w - ll > test.margin else "rollback"), k
        p = pairs[k]
        w, ll = w + (p == 1), ll + (p == -1)
    raise AssertionError("unreachable")


@pytest.mark.parametrize("base, top, margin, n, lead, quiet", [
    (3, 6, 1, 6, 0, True), (4, 7, 0, 7, 0, True), (2, 5, 2, 5, 0, True), (3, 6, 1, 4, 0, True), (4, 7, 0, 7, 1, True),
    (3, 6, 1, 6, 2, True), (4, 7, 0, 7, 1, False), (3, 6, 0, 6, 2, False), (2, 5, 1, 5, 3, True)])
def test_adaptive_stop_is_exact_for_every_completion(base, top, margin, n, lead, quiet):
    """Whenever stop() answers after k pairs, every completion of those k pairs ends that way under the
    uncurtailed two-stage rule; and stop() answers at least wherever the rule itself stops. ``lead``: the deploy
    margin (``seq_deploy_margin``), from which closeness is measured; ``quiet``: a 0-0 comparison deploys."""
    test, cap = SPRT(0.2, 0.2, 0.3, lead, quiet), AdaptiveCap(base, top, margin)
    checked = 0
    for seqn in itertools.product((1, -1, 0), repeat=n):
        out, used = reference(test, cap, list(seqn), n)
        w = ll = 0
        for k in range(used + 1):
            got = cap.stop(test, w, ll, k, n)
            if got is not None:
                assert got == out, (seqn, k)
                checked += 1
                break
            assert k < used, (seqn, k)  # the rule stopped at k but stop() did not
            w, ll = w + (seqn[k] == 1), ll + (seqn[k] == -1)
    assert checked == 3 ** n


def test_adaptive_cap_extends_only_close_comparisons():
    # close at the base cap (one win each): goes on; after 7 pairs the candidate leads by 1 with one pair left under
    # the top, which cannot make it lose: stopped there (curtailed), deployed
    ev = fixed({"old": [True, False, True, True, True, True, False, True, True, True],
                "new": [False, True, True, True, True, True, True, True, True, True]})
    c = seq(ev, 10, max_pairs=4, extend_pairs=8, extend_margin=1, round_size=1)
    assert (c.accept, c.reason, c.n_evaluated, c.calls, c.calls_full) == (True, "sprt_truncated_new_ge_old", 7, 14, 20)
    # the same comparison with the fixed cap stops at 4 pairs (a tie deploys)
    ev = fixed({"old": [True, False, True, True] + [True] * 6, "new": [False, True, True, True] + [True] * 6})
    c = seq(ev, 10, max_pairs=4, round_size=1)
    assert (c.accept, c.n_evaluated, c.calls) == (True, 4, 8)
    # clear at the base cap (two old-memory wins and nothing for the new one): no extension, rolled back
    ev = fixed({"old": [True, True, True, True] + [False] * 6, "new": [False, False, True, True] + [True] * 6})
    c = seq(ev, 10, max_pairs=4, extend_pairs=8, extend_margin=1, round_size=2)
    assert (c.accept, c.reason, c.n_evaluated, c.calls) == (False, "sprt_truncated_old_better", 4, 8)
    # still close at the top: the paper rule on the pairs seen (a tie deploys)
    ev = fixed({"old": [True, False] * 5, "new": [False, True] * 5})
    c = seq(ev, 10, max_pairs=4, extend_pairs=8, extend_margin=1, round_size=2)
    assert (c.accept, c.reason, c.n_evaluated, c.calls) == (True, "sprt_truncated_new_ge_old", 8, 16)
    # stage 1 never crosses its own cap: with round 3 and base 4 the calls are 3 + 1 tasks, then 3 at a time
    ev = fixed({"old": [True, False] * 5, "new": [False, True] * 5})
    seq(ev, 10, max_pairs=4, extend_pairs=8, extend_margin=1, round_size=3)
    assert [len(ids) for _, ids in ev.calls] == [3, 3, 1, 1, 3, 3, 1, 1]


def test_adaptive_cap_off_is_the_fixed_cap():
    ev = fixed({"old": [True, False] * 5, "new": [False, True] * 5})
    a = seq(ev, 10, max_pairs=4)
    ev2 = fixed({"old": [True, False] * 5, "new": [False, True] * 5})
    b = seq(ev2, 10, max_pairs=4, extend_pairs=0)
    assert (a.accept, a.reason, a.n_evaluated, a.calls) == (b.accept, b.reason, b.n_evaluated, b.calls) == (
        True, "sprt_truncated_new_ge_old", 4, 8)
    assert ev.calls == ev2.calls


@pytest.mark.parametrize("kw, msg", [
    (dict(seq_extend_pairs=12), "seq_extend_pairs extends the sequential test's cap: set decision_rule: sequential"),
    (dict(decision_rule="sequential", seq_max_pairs=9, seq_extend_pairs=9),
     "seq_extend_pairs must be above seq_max_pairs (> 0), got seq_extend_pairs=9 with seq_max_pairs=9"),
    (dict(decision_rule="sequential", seq_max_pairs=0, seq_extend_pairs=9),
     "seq_extend_pairs must be above seq_max_pairs (> 0), got seq_extend_pairs=9 with seq_max_pairs=0"),
    (dict(decision_rule="sequential", seq_max_pairs=4, seq_extend_pairs=9, seq_extend_margin=-1),
     "seq_extend_margin must be >= 0, got -1"),
    (dict(seq_extend_pairs=True), "seq_extend_pairs must be an int, got True"),
    (dict(eval_order="nearest"),
     "eval_order must be one of ('paper', 'informative', 'relevant', 'fresh_first', 'interleaved'), got 'nearest'"),
])
def test_bad_adaptive_options_name_the_field(kw, msg):
    with pytest.raises(ValueError) as e:
        JanusConfig(**kw)
    assert msg in str(e.value)


def test_adaptive_cap_rejects_bad_stages():
    with pytest.raises(ValueError, match="0 < seq_max_pairs < seq_extend_pairs, got 5, 5"):
        AdaptiveCap(5, 5)


# ----------------------------------------------------------------------------- eval_order="relevant"


def test_relevance_order_sorts_by_cosine_with_the_current_task():
    store = EmbeddingStore()
    for v in ([1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1], [2, 0.1, 0]):
        store.append(np.array(v, dtype=float))
    # current task = row 4 (mostly axis 0): rows 0 and 2 are nearest, 1 and 3 orthogonal-ish (3 exactly: a tie
    # with nothing; 1 has a small positive cosine)
    assert order_by_relevance([3, 1, 2, 0], store, 4) == [0, 2, 1, 3]
    assert order_by_relevance([3, 1], store, 0) == [3, 1]  # both orthogonal to row 0: the given order stays
    assert order_by_relevance([2], store, 0) == [2] and order_by_relevance([], store, 0) == []


def test_controller_with_relevance_order_reads_the_nearest_tasks_first():
    seen = []

    def ev(text, ts):
        seen.append([t["id"] for t in ts])
        return [True] * len(ts)

    cfg = boundary_first(warmup=4, coverage_size=2, boundary_size=2, fresh_size=0, eval_order="relevant",
                                  seq_round=1, seq_max_pairs=0, seq_extend_pairs=0, gate_full_compare=False,
                                  near_copy_similarity=0.0)
    j = Janus(cfg, ev)
    axes = [0, 1, 2, 3, 0]
    for i, a in enumerate(axes):
        e = np.zeros(4)
        e[a] = 1.0
        d = j.decide(StepInput({"id": f"t{i}"}, e, "m" * (i + 1), "m" * (i + 2), np.ones(3) * i, np.ones(3) * (i + 1)))
    assert d.triggered and d.eval_ids[0] == "t0"  # the only planned task on the current task's axis comes first
    assert seen[0] == ["t0"]


# ----------------------------------------------------------------------------- labels and lines


def test_preset_label_names_changed_recommended_settings():
    rec = JanusConfig.recommended
    assert rec().preset_label() == "recommended"
    assert rec(trigger="mmt").preset_label() == "recommended + trigger mmt"
    assert rec(trigger="mmt", seq_alpha=0.1).preset_label() == "recommended + trigger mmt + seq_alpha 0.1"
    assert rec(panel_rotate=0.3).preset_label() == "recommended + panel_rotate 0.3"
    assert rec(tau=0.3, warmup=5).preset_label() == "recommended"  # settings of every preset
    assert boundary_first().preset_label() == "custom"  # it differs in the switches that define the preset
    assert JanusConfig().preset_label() == "paper" and JanusConfig(trigger="always").preset_label() == "paper"
    line = rec(trigger="mmt").preset_line()
    assert line.startswith("janus preset: recommended + trigger mmt (trigger=mmt, tau=0.0, ")


def test_trigger_line_says_how_many_tasks_were_compared():
    from janus_memory.cli.progress import trigger_line

    d = {"triggered": True, "accept": False, "reason": "sprt_truncated_old_better", "cosine": None,
         "coverage": ["a", "b"], "boundary": ["c"], "fresh": ["d"], "eval_ids": ["c", "a", "b", "d"],
         "old_correct": [True, True], "new_correct": [False, True], "old_score": 1.0, "new_score": 0.5}
    assert trigger_line("m+janus", 7, d, "+1 -0 lines (5 -> 9 chars)") == (
        "[m+janus] trigger at step 7: cos=n/a |E|=4 of 25 configured (coverage 2 of 12 + boundary 1 of 8 + fresh 1 of 5; "
        "fewer than configured: few tasks seen yet, few flipped tasks available, few tasks since the last comparison) "
        "compared on 2 of 4: old 1.000 vs "
        "new 0.500 -> ROLLBACK (sprt_truncated_old_better); candidate +1 -0 lines (5 -> 9 chars)")
    early = dict(d, old_correct=[True], new_correct=[False, True, True], reason="early_stop_new_ge_old", accept=True)
    assert "comparison) old scored on 1, new on 3 of 4: old 1.000" in \
        trigger_line("m", 1, early, "x")
    same = dict(d, old_correct=[], new_correct=[], reason="sprt_new_not_worse", accept=True)
    assert "comparison) compared on 0 of 4 -> ACCEPT" in trigger_line("m", 1, same, "x")
    full = dict(d, old_correct=[True] * 4, new_correct=[False] * 4)
    assert "comparison) compared on 4 of 4: old 1.000 vs new 0.500 -> ROLLBACK" in trigger_line("m", 1, full, "x")
    paper = dict(full, reason="old_better")
    assert "comparison) old 1.000 vs new 0.500 -> ROLLBACK (old_better)" in trigger_line("m", 1, paper, "x")


# ----------------------------------------------------------------------------- seq_recent_pairs


def test_recent_closeness_budget_grows_after_a_close_comparison_and_is_stored():
    import json

    mode = {"new_loses": False}

    def ev(text, ts):
        return [not (mode["new_loses"] and text.startswith("new"))] * len(ts)

    cfg = boundary_first(warmup=2, coverage_size=4, boundary_size=2, fresh_size=2, seq_max_pairs=2,
                                  seq_recent_pairs=4, seq_recent_window=1, seq_round=1, gate_full_compare=False,
                                  reuse_old_results=False, seq_extend_pairs=0, near_copy_similarity=0.0)
    j = Janus(cfg, ev)

    def step(i, old, new):
        e = np.zeros(4)
        e[i % 4] = 1.0
        return j.decide(StepInput({"id": f"t{i}"}, e, old, new, np.ones(3) * i, np.ones(3) * (i + 1)))

    step(0, "m0", "m1")
    step(1, "m1", "m2")
    got = [step(2, "m2", "new 3"), step(3, "new 3", "new 4")]  # all ties: close at the cap
    assert [(d.n_evaluated, d.reason) for d in got] == [(2, "sprt_truncated_new_ge_old"),
                                                         (4, "sprt_truncated_new_ge_old")]
    assert j.state_dict()["recent_close"] == [True]
    mode["new_loses"] = True
    d = step(4, "old 4", "new 5")  # 3 old-memory wins of 4: settled after 3, not close
    assert (d.n_evaluated, d.reason, d.accept) == (3, "sprt_new_worse", False)
    restored = Janus.from_state_dict(json.loads(json.dumps(j.state_dict())), ev)
    assert restored.state_dict()["recent_close"] == [False]
    assert step(5, "old 4", "new 6").n_evaluated == 2  # back to the small cap
    assert "recent_close" not in Janus(boundary_first(), ev).state_dict()
    with pytest.raises(ValueError, match="seq_recent_pairs must be above seq_max_pairs"):
        boundary_first(seq_recent_pairs=6)
    with pytest.raises(ValueError, match="seq_recent_pairs sets the sequential test's cap"):
        JanusConfig(seq_recent_pairs=9)
