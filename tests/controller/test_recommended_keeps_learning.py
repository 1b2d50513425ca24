"""The recommended controller guards without freezing: on a late-rules stream (most rules first stated after the
warm-up, recall tickets after each) with a scripted model that answers right exactly when its memory holds the rule,
it deploys every candidate that only adds a rule, blocks a falsified rule and a wipe, and at 10% scripted noise still
ends holding every rule."""
from __future__ import annotations

import pytest

from controller_fakes import LateRules
from janus_memory.controller import JanusConfig
from janus_memory.controller.config import RECOMMENDED_LEAD_TO_DEPLOY


def test_the_stream_states_most_rules_after_the_warmup_with_recalls_after_each():
    s = LateRules()
    assert len(s.stated_after_warmup) == 4 and all(i >= s.warmup for i in s.stated_after_warmup)
    for i in s.stated_after_warmup:
        k = s.plan[i][1]
        assert [p[0] for p in s.plan[i + 1:i + 4]] == ["recall", "recall", "combo"] and s.plan[i + 1][2] == (k,)
    # the scripted model: right exactly when the memory holds the rule a ticket needs
    recall = s.tasks[s.stated_after_warmup[0] + 1]
    assert not s.correct("", recall) and s.correct(s.rule_line(2), recall)
    assert s.correct("", s.tasks[0])  # a statement ticket states its rule


def test_no_rule_candidate_is_rolled_back_and_the_final_memory_holds_every_rule():
    s = LateRules()
    steps = s.run(JanusConfig.recommended())
    adds = [(t, reason, ok) for t, what, reason, ok, _ in steps if what == "adds_rule"]
    assert len(adds) == 6 and all(ok for _, _, ok in adds), adds
    assert s.holds(steps[-1][4]) == [0, 1, 2, 3, 4, 5]
    assert all(ok for *_, ok, _ in steps)  # nothing here is harmful: nothing is rolled back


@pytest.mark.parametrize("harm", ["falsify", "wipe"])
def test_a_falsified_rule_and_a_wipe_are_blocked(harm):
    s = LateRules(harm={s_: harm for s_ in [LateRules().stated_after_warmup[1] + 2]})
    steps = s.run(JanusConfig.recommended())
    t_harm = next(iter(s.harm))
    t, what, reason, ok, memory = steps[t_harm]
    assert what == harm and not ok, (reason, ok)
    assert s.rule_line(0, 9) not in steps[-1][4]
    assert s.holds(steps[-1][4]) == [0, 1, 2, 3, 4, 5]
    assert all(ok for _, what, _, ok, _ in steps if what == "adds_rule")


def test_at_ten_percent_noise_every_rule_is_still_held():
    """Ten noise seeds (each a different 10% of flipped answers, fixed per memory and ticket): every one ends with
    all six rules."""
    for seed in range(10):
        s = LateRules(noise=0.1, seed=seed)
        steps = s.run(JanusConfig.recommended())
        assert s.holds(steps[-1][4]) == [0, 1, 2, 3, 4, 5], (
            seed, [(t, r, ok) for t, w, r, ok, _ in steps if w == "adds_rule"])


def test_the_old_recommended_rule_froze_the_memory_on_this_stream():
    """What the test guards against: the controller recommended before, which deployed only on a lead, rolled back
    every rule stated after the warm-up (ties: nothing seen yet needs it)."""
    lead_only = JanusConfig(**RECOMMENDED_LEAD_TO_DEPLOY)
    s = LateRules()
    steps = s.run(lead_only)
    assert s.holds(steps[-1][4]) == [0, 1]
