"""The recommended controller's machinery: the sequential rule, the text gate, the near-copy cap, the preset."""
from __future__ import annotations

import math

import numpy as np
import pytest

from controller_fakes import boundary_first, fixed, tasks
from janus_memory.controller import EvaluationError, Janus, JanusConfig, StepInput, compare
from janus_memory.controller.config import (
    RECOMMENDED_ADDITIONS_LEAD,
    RECOMMENDED_HYBRID_BOUNDARY_FIRST,
    RECOMMENDED_LEAD_TO_DEPLOY,
)
from janus_memory.controller.hybrid_set import plan_trigger
from janus_memory.controller.sequential import SPRT, discordant, settled

# ----------------------------------------------------------------------------- the SPRT itself


def test_sprt_boundaries_and_llr_exact():
    t = SPRT(0.2, 0.2, 0.3)
    assert t.upper == math.log(4.0) and t.lower == -math.log(4.0)
    assert t.llr(0, 1) == math.log(1.4) and t.llr(1, 0) == math.log(0.6)
    # roll back needs 5 net old-memory wins (5 x 0.336 = 1.68 >= 1.386; 4 x 0.336 = 1.35 is not enough),
    # deploy 3 net new-memory wins (3 x -0.511 = -1.53)
    assert [t.verdict(0, k) for k in (4, 5)] == [None, "rollback"]
    assert [t.verdict(k, 0) for k in (2, 3)] == [None, "deploy"]
    assert t.verdict(3, 2) is None and t.truncated(3, 3) == "deploy" and t.truncated(2, 3) == "rollback"


@pytest.mark.parametrize("lead, quiet", [(0, True), (1, False), (2, False), (1, True), (2, True)])
def test_settled_is_exact_for_every_completion(lead, quiet):
    t = SPRT(0.2, 0.2, 0.3, lead, quiet)
    if quiet and lead:  # no discordant pair: the paper's tie, deployed; any completion may stay that way
        assert settled(t, 0, 0, 0) == "deploy" and settled(t, 0, 0, 1) is None
        assert settled(t, 0, 1, 0) == "rollback" and t.truncated(1, 1) == "rollback"
    elif lead == 0:
        assert settled(t, 2, 0, 1) == "deploy"     # even an old-memory win leaves w >= l at truncation
        assert settled(t, 0, 2, 1) == "rollback"   # even a new-memory win leaves w < l
        assert settled(t, 0, 0, 4) is None
        assert settled(t, 0, 0, 0) == "deploy"     # nothing evaluated: ties go to the new memory
    else:  # a deploy needs a lead of ``lead`` pairs at truncation: a tie, or nothing evaluated, rolls back
        assert settled(t, 0, 0, 0) == "rollback" and t.truncated(lead, 0) == "deploy"
        assert settled(t, 0, 0, lead - 1) == "rollback"  # too few pairs left to reach the lead
    # brute force: whenever settled() answers, every completion (each pair new win / old win / tie) agrees
    for w in range(4):
        for ll in range(6):
            for r in range(5):
                got = settled(t, w, ll, r)
                if got is None:
                    continue
                for code in range(3 ** r):
                    ww, lw, c = w, ll, code
                    out = t.verdict(ww, lw)
                    for _ in range(r):
                        if out is not None:
                            break
                        ww, lw = ww + (c % 3 == 0), lw + (c % 3 == 1)
                        c //= 3
                        out = t.verdict(ww, lw)
                    assert (out or t.truncated(ww, lw)) == got, (w, ll, r, code)


@pytest.mark.parametrize("kw", [dict(alpha=0.5), dict(alpha=0.0), dict(beta=0.7), dict(theta=0.5), dict(theta=0.0)])
def test_sprt_rejects_bad_rates(kw):
    with pytest.raises(ValueError):
        SPRT(**kw)


def test_discordant_counts_ignore_none():
    assert discordant([True, False, None, True, False], [False, True, True, None, False]) == (1, 1)
    assert discordant([], []) == (0, 0)


# ----------------------------------------------------------------------------- compare(rule="sequential")


def seq(ev, n, **kw):
    return compare(ev, tasks(n), "old", "new", rule="sequential", round_size=kw.pop("round_size", 2),
                   sprt=SPRT(0.2, 0.2, 0.3), **kw)


def test_all_ties_evaluate_everything_and_deploy():
    ev = fixed({"old": [True] * 10, "new": [True] * 10})
    c = seq(ev, 10)
    assert (c.accept, c.reason, c.n_evaluated, c.calls, c.calls_full, c.early_stopped) == (
        True, "sprt_truncated_new_ge_old", 10, 20, 20, False)
    assert ev.calls[:2] == [("old", [0, 1]), ("new", [0, 1])]


def test_all_discordant_for_the_old_memory_rolls_back_after_six_pairs():
    ev = fixed({"old": [True] * 10, "new": [False] * 10})
    c = seq(ev, 10)
    assert (c.accept, c.reason, c.n_evaluated, c.calls, c.early_stopped) == (False, "sprt_new_worse", 6, 12, True)
    assert c.old_correct == [True] * 6 and c.new_correct == [False] * 6


def test_all_discordant_for_the_new_memory_deploys_after_four_pairs():
    ev = fixed({"old": [False] * 10, "new": [True] * 10})
    c = seq(ev, 10)
    assert (c.accept, c.reason, c.n_evaluated, c.calls) == (True, "sprt_new_not_worse", 4, 8)


def test_cap_and_curtailment():
    ev = fixed({"old": [True] * 10, "new": [True] * 10})
    c = seq(ev, 10, max_pairs=6)
    assert (c.accept, c.reason, c.n_evaluated, c.calls, c.calls_full) == (True, "sprt_truncated_new_ge_old", 6, 12, 20)
    # two new-memory wins, one pair left under the cap: no completion can change the outcome
    ev = fixed({"old": [False] * 10, "new": [True] * 10})
    c = seq(ev, 10, max_pairs=3)
    assert (c.accept, c.reason, c.n_evaluated, c.calls) == (True, "sprt_new_not_worse", 2, 4)


def test_empty_set_and_identical_texts_cost_nothing():
    ev = fixed({"old": [], "new": []})
    c = seq(ev, 0)
    assert (c.accept, c.reason, c.calls, ev.calls) == (True, "sprt_truncated_new_ge_old", 0, [])
    c = compare(ev, tasks(5), "same", "same", rule="sequential", same_memory_shortcut=True)
    assert (c.accept, c.calls, c.calls_full, ev.calls) == (True, 0, 10, [])


def test_none_outcomes_cast_no_vote():
    ev = fixed({"old": [None] * 8, "new": [True] * 8})
    c = seq(ev, 8)
    assert (c.accept, c.reason, c.calls) == (True, "sprt_truncated_new_ge_old", 16)
    ev = fixed({"old": [True] * 8, "new": [None] * 8})
    assert seq(ev, 8).accept is True  # None is no evidence against the candidate


def test_failing_evaluator_raises_with_the_calls_spent():
    def bad(text, ts):
        if text == "new":
            raise RuntimeError("backend down")
        return [True] * len(ts)

    with pytest.raises(EvaluationError) as e:
        seq(bad, 6)
    assert e.value.calls == 4 and "RuntimeError: backend down" in str(e.value)

    def short(text, ts):
        return [True]

    with pytest.raises(EvaluationError, match="returned 1 results for 2 tasks"):
        seq(short, 6)


# ----------------------------------------------------------------------------- config


def test_recommended_preset_and_paper_unchanged():
    r = JanusConfig.recommended()
    assert (r.trigger, r.decision_rule, r.eval_set, r.panel_size, r.panel_rotate, r.panel_min_evals, r.seq_max_pairs,
            r.seq_extend_pairs, r.seq_extend_margin, r.seq_round) == ("always", "sequential", "panel", 19, 0.6, 5, 5,
                                                                      12, 0, 1)
    assert (r.seq_deploy_margin, r.seq_quiet_deploy, r.near_copy_anchor, r.indeterminate_rollback) == (1, False, True,
                                                                                                       True)
    assert (r.seq_rollback_lead, r.seq_innocent, r.panel_order, r.seq_theta) == (3, "additions", "touched", 0.3)
    assert (r.seq_innocent_pairs, r.seq_reoffer) == (12, 3)
    assert JanusConfig.recommended(**RECOMMENDED_ADDITIONS_LEAD) == JanusConfig(**RECOMMENDED_ADDITIONS_LEAD)
    before = RECOMMENDED_LEAD_TO_DEPLOY
    assert JanusConfig(**before).preset == "custom"  # an earlier recommended controller is a configuration now
    assert JanusConfig.recommended(**before) == JanusConfig(**before)  # nothing leaks in
    assert (r.near_copy_similarity, r.near_copy_inherit, r.near_copy_pairs, r.gate_compare, r.gate_full_compare,
            r.reuse_old_results, r.dedup, r.same_memory_shortcut) == (0.93, True, 1, True, False, True, True, True)
    assert r.preset == "recommended" and JanusConfig().preset == "paper"
    assert JanusConfig(**RECOMMENDED_HYBRID_BOUNDARY_FIRST).preset == "custom"  # a named configuration, not a preset
    p = JanusConfig()
    assert (p.decision_rule, p.eval_order, p.gate_full_compare, p.near_copy_similarity, p.seq_max_pairs, p.eval_set,
            p.gate_compare, p.near_copy_inherit) == ("paper", "paper", False, 0.0, 0, "hybrid", False, False)
    assert JanusConfig.recommended(seq_max_pairs=8).seq_max_pairs == 8


@pytest.mark.parametrize("kw, msg", [
    (dict(seq_alpha=0.5), "seq_alpha must be in (0, 0.5), got 0.5"),
    (dict(seq_theta=0.0), "seq_theta must be in (0, 0.5), got 0.0"),
    (dict(seq_round=0), "seq_round must be >= 1, got 0"),
    (dict(seq_max_pairs=-1), "seq_max_pairs must be >= 0, got -1"),
    (dict(eval_order="random"),
     "eval_order must be one of ('paper', 'informative', 'relevant', 'fresh_first', 'interleaved'), got 'random'"),
    (dict(decision_rule="sequentail"), "did you mean sequential?"),
    (dict(near_copy_similarity=0.9), "near_copy_similarity caps the sequential test"),
    (dict(gate_full_compare=1), "gate_full_compare must be a bool"),
])
def test_bad_options_name_the_field(kw, msg):
    with pytest.raises(ValueError) as e:
        JanusConfig(**kw)
    assert msg in str(e.value)


def test_informative_order_puts_past_flips_first():
    c = boundary_first()
    plan = plan_trigger(c, [0, 1, 2], [(5, "bootstrap"), (7, "flip"), (1, "flip")], [9], 1)
    assert plan.entries == [7, 1, 5, 0, 2, 9]  # flips, rest of the boundary, coverage (deduplicated), fresh
    assert plan_trigger(JanusConfig(), [0, 1, 2], [(5, "bootstrap"), (7, "flip")], [9], 1).entries == [0, 1, 2, 5, 7, 9]


@pytest.mark.parametrize("order, dedup, want", [
    ("fresh_first", True, [9, 1, 0, 2, 5, 7]),  # fresh, coverage, boundary (the second 1s dropped)
    ("fresh_first", False, [9, 1, 0, 1, 2, 5, 7, 1]),
    ("interleaved", True, [9, 1, 0, 5, 7, 2]),  # fresh, then coverage and boundary in turn
    ("interleaved", False, [9, 1, 0, 5, 1, 7, 2, 1]),
])
def test_fresh_first_and_interleaved_orders(order, dedup, want):
    c = boundary_first(eval_order=order, dedup=dedup)
    plan = plan_trigger(c, [0, 1, 2], [(5, "bootstrap"), (7, "flip"), (1, "flip")], [9, 1], 1)
    assert plan.entries == want
    assert (plan.coverage, plan.boundary, plan.fresh) == ([0, 1, 2], [5, 7, 1], [9, 1])  # roles kept as planned


def test_interleave_keeps_the_longer_tail():
    from janus_memory.controller.hybrid_set import interleave

    assert interleave([1, 2, 3], [7]) == [1, 7, 2, 3]
    assert interleave([], [4, 5]) == [4, 5] and interleave([], []) == []


# ----------------------------------------------------------------------------- the controller

SHEET = "\n".join(f"rule {i}: check the small cases of family {i} before solving" for i in range(12))
DUMP = "### PREVIOUS SOLUTIONS\nQ: what is 2+2\nA: 4"


def step(j, i, old, new):
    e = np.zeros(4)
    e[i % 4] = 1.0
    return j.decide(StepInput({"id": f"t{i}"}, e, old, new, np.ones(3) * len(old), np.ones(3) * len(new)))


def test_gate_forces_a_full_comparison_in_warmup_and_after():
    seen = []

    def ev(text, ts):
        seen.append((text[:5], len(ts)))
        return [text != DUMP] * len(ts)

    j = Janus(boundary_first(warmup=3, coverage_size=2, boundary_size=1, fresh_size=1), ev)
    d1 = step(j, 0, "", SHEET)
    assert (d1.phase, d1.triggered, d1.reason, d1.evaluator_calls) == ("warmup", False, "warmup", 0)
    d2 = step(j, 1, SHEET, DUMP)  # a dump inside the warm-up: compared, on every task seen so far, paper rule
    assert (d2.phase, d2.triggered, d2.accept, d2.reason) == ("warmup", True, False, "old_better")
    assert d2.trigger_signals == {"forced_by": "gate"} and d2.evaluator_calls == 4
    step(j, 2, SHEET, SHEET + "\nrule 12: a new rule")
    seen.clear()
    d4 = step(j, 3, SHEET, DUMP)  # after the warm-up: full comparison on all planned entries, no sequential stop
    assert (d4.triggered, d4.accept, d4.reason, d4.evaluator_calls) == (True, False, "old_better",
                                                                        d4.evaluator_calls_full)
    assert [n for _, n in seen] == [len(d4.eval_ids)] * 2
    d5 = step(j, 4, SHEET, SHEET.replace("rule 3:", "rule 3 (revised):"))  # ordinary step: the sequential rule
    assert d5.triggered and d5.reason.startswith("sprt_") and "forced_by" not in d5.trigger_signals


def test_gate_off_in_the_paper_preset_and_near_copy_cap():
    calls = []

    def ev(text, ts):
        calls.append(len(ts))
        return [True] * len(ts)

    j = Janus(JanusConfig(warmup=1, coverage_size=1, boundary_size=1, fresh_size=1), ev)
    step(j, 0, "", SHEET)
    assert step(j, 1, SHEET, DUMP).reason == "not_triggered"  # no momentum yet: MMT cannot fire, no gate
    near = SHEET.replace("family 3", "family three")
    cfg = boundary_first(warmup=2, coverage_size=2, boundary_size=2, fresh_size=2, near_copy_similarity=0.9,
                                  near_copy_pairs=0)
    j = Janus(cfg, ev)
    step(j, 0, "", SHEET)
    step(j, 1, SHEET, SHEET + "\nrule 12: x")
    calls.clear()
    d = step(j, 2, SHEET, near)
    assert (d.triggered, d.accept, d.reason, calls) == (False, True, "near_copy", [])
    j = Janus(boundary_first(**{**cfg.to_dict(), "near_copy_pairs": 1, "trigger": "always"}), ev)
    step(j, 0, "", SHEET)
    step(j, 1, SHEET, SHEET + "\nrule 12: x")
    calls.clear()
    d = step(j, 2, SHEET, near)
    assert (d.triggered, d.reason, d.n_evaluated, calls) == (True, "sprt_truncated_new_ge_old", 1, [1, 1])


def test_gate_needs_an_evaluator_even_with_trigger_never():
    j = Janus(boundary_first(trigger="never", warmup=0))
    with pytest.raises(RuntimeError, match="needs an evaluator"):
        step(j, 0, SHEET, DUMP)


def test_state_round_trip_keeps_the_recommended_decisions():
    import json

    def ev(text, ts):
        return [(len(text) + t["i"]) % 3 == 0 for t in ts]

    def run(j, lo, hi):
        return [step(j, i, SHEET + "\n" * (i % 2), SHEET + f"\nrule x{i}").to_dict() for i in range(lo, hi)]

    cfg = boundary_first(warmup=2, coverage_size=2, boundary_size=2, fresh_size=1)

    def ev2(text, ts):
        return ev(text, [dict(t, i=int(t["id"][1:])) for t in ts])

    a = Janus(cfg, ev2)
    first = run(a, 0, 6)
    b = Janus.from_state_dict(json.loads(json.dumps(a.state_dict())), ev2)
    assert run(a, 6, 10) == run(b, 6, 10)
    assert any(d["triggered"] for d in first)


# ----------------------------------------------------------------------------- reuse_old_results


def test_known_old_outcomes_are_reused_not_evaluated():
    from janus_memory.controller.decision_rules import UNKNOWN

    ev = fixed({"old": [True] * 6, "new": [True] * 6})
    c = compare(ev, tasks(6), "old", "new", rule="sequential", round_size=2, sprt=SPRT(0.2, 0.2, 0.3),
                known_old=[False, UNKNOWN, True, True, UNKNOWN, UNKNOWN])
    # the known False is a new-memory win; only the unknown old outcomes are asked for
    assert ev.calls == [("old", [1]), ("new", [0, 1]), ("new", [2, 3]), ("old", [4, 5]), ("new", [4, 5])]
    assert (c.accept, c.calls, c.old_correct) == (True, 9, [False, True, True, True, True, True])


def test_controller_reuses_the_deployed_memorys_outcomes_until_it_changes():
    asked = []

    def ev(text, ts):
        asked.append((text.count("\n"), [t["id"] for t in ts]))
        return [text == SHEET] * len(ts)  # the old sheet always wins: every candidate is rolled back

    cfg = boundary_first(warmup=2, coverage_size=2, boundary_size=0, fresh_size=1, reuse_old_results=True,
                                  gate_full_compare=False)
    j = Janus(cfg, ev)
    step(j, 0, "", SHEET)
    step(j, 1, SHEET, SHEET)
    d3 = step(j, 2, SHEET, SHEET + "\nrule a")
    old_asked = [ids for n, ids in asked if n == SHEET.count("\n")]
    assert (d3.accept, d3.reason, d3.eval_ids, d3.n_evaluated, d3.evaluator_calls) == (
        False, "sprt_new_worse", ["t1", "t0", "t2"], 2, 4)  # two old-memory wins with one pair left: settled
    asked.clear()
    d4 = step(j, 3, SHEET, SHEET + "\nrule b")  # same old memory: only the task it has not seen is asked for
    seen_before = {i for ids in old_asked for i in ids}
    old_now = [i for n, ids in asked if n == SHEET.count("\n") for i in ids]
    assert not (set(old_now) & seen_before) and old_now == [] and seen_before == {"t1", "t0"}
    assert (d4.accept, d4.eval_ids, d4.n_evaluated, d4.evaluator_calls) == (False, ["t1", "t0", "t3"], 2, 2)
    state = j.state_dict()
    assert state["old_results"]["results"] and "old_results" not in Janus(JanusConfig(), ev).state_dict()
    with pytest.raises(ValueError, match="reuse_old_results feeds the sequential test"):
        JanusConfig(reuse_old_results=True)


def test_bench_world_policy_names():
    from janus_memory.bench.policies import default_policies, parse_policy

    d = {p.name: p for p in default_policies()}
    assert d["recommended"].config == JanusConfig.recommended() and len(d) == 13
    p = parse_policy('cap4=janus:preset="recommended";seq_max_pairs=4')
    assert p.config == JanusConfig.recommended(seq_max_pairs=4)
    assert parse_policy("recommended").config.preset == "recommended"


def test_replay_limit_keeps_the_reading_order_of_a_non_paper_order():
    cov, bnd, fr = [0, 1, 2, 3], [(5, "flip"), (7, "bootstrap")], [9, 10]
    c = JanusConfig(eval_order="fresh_first", replay_limit=4)
    plan = plan_trigger(c, cov, bnd, fr, 1)
    full = plan_trigger(JanusConfig(eval_order="fresh_first"), cov, bnd, fr, 1).entries
    assert len(plan.entries) == 4 and plan.entries == [e for e in full if e in plan.entries]
    # the paper order keeps the authors' sampled order (random.sample), unchanged
    p = plan_trigger(JanusConfig(replay_limit=4), cov, bnd, fr, 1).entries
    import random

    assert p == random.Random(0 + 1 + 17).sample([0, 1, 2, 3, 5, 7, 9, 10], 4)


def test_preset_line_names_the_order_of_any_sequential_configuration():
    line = boundary_first(eval_order="interleaved").preset_line()
    assert line.startswith("janus preset: custom (") and "decision_rule=sequential, eval_order=interleaved" in line
    assert "eval_order" not in JanusConfig().preset_line()
