"""controller/describe.py: the one description of a controller (preset label, trigger, evaluation set, rule) that the
run header, the report, the view and the estimate read; stored configs (partial, old, edited) and a new strategy."""
from __future__ import annotations

import pytest

from janus_memory.controller import JanusConfig
from janus_memory.controller.config import (
    RECOMMENDED_ADDITIONS_LEAD,
    RECOMMENDED_HYBRID_BOUNDARY_FIRST,
    RECOMMENDED_LEAD_TO_DEPLOY,
)
from janus_memory.controller.describe import describe

PAPER_RULE = ("the paper's rule: deploy the candidate when it solves at least as many of the tasks as the old memory "
              "(ties go to the candidate)")


def test_the_paper_preset():
    d = describe(JanusConfig.paper())
    assert (d.preset, d.label, d.paper_cost, d.configured, d.reads, d.reads_most, d.cap) == (
        "paper", "paper", True, 25, 25, 25, None)
    assert d.lines() == [
        "Janus preset: paper",
        "Janus: warm-up 20; trigger MMT (compares when cos(z_t, m_t-1) < tau = 0; beta = 0.9); evaluation set: the "
        f"paper's hybrid set of coverage 12 + boundary 8 + fresh 5 = 25 tasks; decision: {PAPER_RULE}"]
    assert (d.reads_cell, d.sizes) == ("12+8+5", {"K'": 12, "K_b": 8, "K": 20, "K_F": 5})


def test_the_paper_preset_at_other_sizes_stays_paper_and_says_what_differs():
    d = describe(JanusConfig.paper(warmup=5, trigger="always", use_fresh=False))
    assert d.label == "paper" and d.paper_cost
    assert d.paper_differences == ("warm-up 5 (paper 20)", "trigger always (paper mmt)")
    assert d.lines()[0] == ("Janus preset: paper; differs from the paper's: warm-up 5 (paper 20), trigger always "
                            "(paper mmt)")
    assert (d.configured, d.eval_set_text) == (20, "the paper's hybrid set of coverage 12 + boundary 8 = 20 tasks")


def test_the_recommended_preset():
    d = describe(JanusConfig.recommended(warmup=5))
    assert (d.preset, d.label, d.paper_cost, d.configured, d.reads, d.reads_most, d.cap) == (
        "recommended", "recommended", False, 19, 5, 12, 12)
    assert (d.evaluation, d.reads_cell, d.sizes) == (
        "a panel of 19 seen tasks, those the changed lines touch first (read 5, up to 12 while the candidate leads by "
        "exactly 1 task)", "panel 19, read 5-12",
        {"panel": 19})
    assert d.rule == ("Wald's sequential test on the tasks the memories disagree on (alpha 0.2, beta 0.2, theta 0.3), "
                      "1 task a round, then deployed only when the candidate leads by 1 task on the tasks read (none "
                      "disagreeing: rolled back); a candidate that only adds lines is deployed unless a test on the "
                      "tasks it loses shows it harmful (at most 12 tasks; innocent until shown harmful), its lines "
                      "offered again at most 3 times when rolled back; the deployed memory's measured outcomes reused")
    # the preset before: an addition rolled back only on a lead of the deployed memory
    assert describe(JanusConfig(**RECOMMENDED_ADDITIONS_LEAD)).rule.endswith(
        "a candidate that only adds lines is deployed unless the old memory leads by 3 tasks on the tasks read "
        "(innocent until shown harmful); the deployed memory's measured outcomes reused")
    # the rule recommended before: every candidate had to lead
    assert describe(JanusConfig(**RECOMMENDED_LEAD_TO_DEPLOY)).rule == (
        "Wald's sequential test on the tasks the memories disagree on (alpha 0.2, beta 0.2, theta 0.3), 1 task a "
        "round, then deployed only when the candidate leads by 1 task on the tasks read (none disagreeing: rolled "
        "back); the deployed memory's measured outcomes reused")
    assert describe(JanusConfig.recommended(seq_innocent="all", seq_deploy_margin=0, seq_innocent_pairs=0)).rule.endswith(
        "then deployed unless the old memory leads by 3 tasks on the tasks read (innocent until shown harmful); the "
        "deployed memory's measured outcomes reused")
    assert "(none disagreeing: deployed)" in describe(JanusConfig.recommended(seq_quiet_deploy=True)).rule
    assert "leads by 2 tasks" in describe(JanusConfig.recommended(seq_deploy_margin=2)).rule
    assert d.extras == ("a dump/wipe-looking candidate gets a comparison at any step, warm-up included",
                        "a rewording (similarity >= 0.93) is checked on 1 task and keeps the deployed memory's other "
                        "outcomes", "identical texts are evaluated once")
    assert d.paper_differences == ()  # not the paper's set: its sizes are not compared with the paper's
    # a panel smaller than the cap is read whole; the rule's cap still cuts a bigger set
    small = describe(JanusConfig.recommended(panel_size=6))
    assert (small.reads, small.reads_most, small.reads_cell, small.tasks_at_most(25)) == (5, 6, "panel 6, read 5-6",
                                                                                          12)
    assert small.tasks_at_most(25, full=True) == 25  # a forced paper-rule comparison reads every entry


@pytest.mark.parametrize("cfg, label", [
    (JanusConfig.recommended(trigger="mmt"), "recommended + trigger mmt"),
    (JanusConfig.fast(), "fast"),
    (JanusConfig(decision_rule="sign_test"), "custom: paper with decision_rule=sign_test"),
    (JanusConfig(replay_limit=10), "custom: paper with replay_limit=10"),
    (JanusConfig.recommended(eval_set="hybrid"), "custom: recommended with eval_set=hybrid"),
    # RECOMMENDED_HYBRID_BOUNDARY_FIRST: the switches and the tuning it changed, the panel's own settings left out
    (JanusConfig(**RECOMMENDED_HYBRID_BOUNDARY_FIRST), "custom: recommended with gate_full_compare=True, seq_max_pairs=6, "
                                        "seq_extend_pairs=14, eval_set=hybrid, near_copy_inherit=False, "
                                        "gate_compare=False, seq_rollback_lead=0, seq_round=2, "
                                        "near_copy_pairs=4, near_copy_anchor=False, indeterminate_rollback=False, "
                                        "seq_deploy_margin=0, seq_quiet_deploy=True, seq_innocent_pairs=0, "
                                        "seq_reoffer=0"),
    # RECOMMENDED_LEAD_TO_DEPLOY: every candidate had to lead, the panel read in its places
    (JanusConfig(**RECOMMENDED_LEAD_TO_DEPLOY), "custom: recommended with seq_rollback_lead=0, panel_order=stable, "
                                                "seq_innocent_pairs=0, seq_reoffer=0"),
])
def test_labels_name_what_differs(cfg, label):
    assert describe(cfg).label == label
    assert not describe(cfg).paper_cost


def test_rules_and_triggers_in_words():
    assert describe(JanusConfig(decision_rule="sign_test", alpha=0.1, min_margin=2)).rule == (
        "a one-sided sign test on the tasks the memories disagree on: roll back only when the old memory wins "
        "significantly (alpha 0.1, margin 2)")
    assert describe(JanusConfig(early_stop=True)).rule == PAPER_RULE + "; exact early stopping (the same decisions, " \
                                                                       "fewer calls)"
    assert [describe(JanusConfig(trigger=t)).trigger for t in ("never", "random", "periodic")] == [
        "never (every candidate is deployed unexamined)",
        "random (each step after the warm-up with probability 0.3)", "periodic (every 3 steps after the warm-up)"]
    assert describe(JanusConfig(trigger="selective")).trigger == (
        "selective (item gate (retention < 0.25 or items shrink below 0.5x) or MMT below tau 0 with |z| >= 1.5x its "
        "recent median)")
    # sequential rule without a cap: the whole set
    d = describe(JanusConfig(decision_rule="sequential"))
    assert (d.reads, d.reads_most, d.cap, d.evaluation) == (25, 25, None, d.eval_set_text)


def test_a_stored_dict_is_described_as_the_config_it_makes():
    stored = JanusConfig.recommended(warmup=5).to_dict()
    assert describe(stored) == describe(JanusConfig.recommended(warmup=5))
    assert describe({"warmup": 3, "a_key_of_a_newer_version": 1}).label == "paper"  # partial: paper defaults
    assert describe({"clustering": "full"}).label == "custom: paper with clustering=sklearn"  # the old name
    with pytest.raises(ValueError, match="panel_size must be >= 1"):
        describe({**stored, "panel_size": 0})  # an edited config: the controller's own error


def test_a_new_evaluation_set_strategy_describes_itself(monkeypatch):
    """The seam: a strategy registered under an eval_set name is described by itself, no reader changed."""
    from janus_memory.controller import EVAL_SETS, EvalPlan, EvalSetStrategy

    class Tiny(EvalSetStrategy):
        name = "tiny"

        def size(self):
            return 7

        def text(self):
            return "seven recent tasks"

        def plan(self, store, seen_end, trigger_count, warnings):
            return EvalPlan([], [], [], [])

    monkeypatch.setitem(EVAL_SETS, "tiny", Tiny)
    d = describe(JanusConfig.recommended(seq_max_pairs=11, seq_extend_pairs=19, eval_set="tiny"))
    assert (d.evaluation, d.reads_cell, d.configured, d.reads, d.reads_most, d.sizes) == (
        "seven recent tasks", "tiny 7", 7, 7, 7, {"tiny": 7})  # the sequential cap (11-19) is above its size: read whole
    d = describe(JanusConfig.recommended(eval_set="tiny"))
    assert (d.evaluation, d.reads_cell) == ("seven recent tasks (read 5, up to 7 while the candidate leads by exactly 1 task)",
                                            "tiny 7, read 5-7")
    assert d.label == "custom: recommended with eval_set=tiny"  # the panel's own settings are not named for it


def test_extras_say_what_the_options_do():
    assert describe(JanusConfig.recommended(near_copy_pairs=0)).extras[1] == (
        "a rewording (similarity >= 0.93) is deployed unevaluated and keeps the deployed memory's outcomes")
    assert describe(JanusConfig.recommended(near_copy_inherit=False, near_copy_pairs=2)).extras[1] == (
        "a near copy (similarity >= 0.93) is checked on at most 2 tasks")
    assert describe(JanusConfig(skip_trivially_equal=True, ignore_usage_counters=True)).extras == (
        "a candidate that differs only in bookkeeping (usage counters included) is deployed unevaluated",)
    assert describe(JanusConfig.recommended(gate_compare=False, gate_full_compare=True)).extras[0] == (
        "a dump/wipe-looking candidate gets a full paper-rule comparison at any step, warm-up included")
    assert describe(JanusConfig.paper()).extras == ()


def test_a_custom_configuration_with_another_evaluation_set_says_where_it_leaves_the_paper():
    lines = describe(JanusConfig(eval_set="panel", warmup=4, trigger="always")).lines()
    assert lines[0] == ("Janus preset: custom: paper with eval_set=panel; differs from the paper's: warm-up 4 (paper 20), "
                        "trigger always (paper mmt)")
    assert describe(JanusConfig.recommended()).lines()[0] == "Janus preset: recommended"  # a preset: its name alone
