"""The ``falsify`` injected candidate (a memory stating one rule with a wrong number): which number changes, what is
never touched (bookkeeping, ids, counters), the planted false rule when the memory holds no number, the no-op, and
the exact candidate on every updater it supports. Scripted LLM, hashing encoder: no model."""
from __future__ import annotations

import random

import pytest

from janus_memory.inject.candidates import harmful_candidate, inject_candidate
from janus_memory.inject.falsify import false_fact, falsified_value, falsify_text, numbers
from janus_memory.inject.state import harmful_bank, harmful_playbook
from janus_memory.updaters import make_updater
from janus_memory.updaters.ace_playbook import new_sections
from janus_memory.values import Task
from updater_fakes import ExactFamily, HashEncoder, ScriptedLLM

FACTS = ["Shipping costs $7 per kg.", "Every order pays a flat handling fee of $5."]
T = Task("rules:stream:009", "rules", "A customer ships a 4 kg parcel. What do we charge for shipping?", "28",
         meta={"facts": FACTS[:1]})
PLAIN = Task("gsm8k:1", "gsm8k", "A farmer has 12 cows.", "12")
SHEET = ("Version: 4\n## General Problem-Solving Heuristics\n1. Multiply the weight by the rate.\n"
         "- Shipping costs $7 per kg (use when: parcels)\n- Handling is $5 per order\n- Reuse [ctx-00012] helpful=3")


def test_numbers_skip_bookkeeping_ids_counters_and_list_numbering():
    assert [v for _, _, v in numbers(SHEET)] == [7, 5]
    assert [v for _, _, v in numbers("# Memory Item 2\n## Content 1 blarg = 7 florps")] == [1, 7]
    assert numbers("Count: 3\n12.5 kg, 1,200 boxes, 5-10 days") == []


def test_a_number_of_the_task_rule_is_preferred_and_nothing_else_changes():
    for seed in range(20):
        text, changed = falsify_text(SHEET, FACTS[:1], random.Random(seed))
        assert changed["old"] == 7 and changed["new"] != 7
        assert text == SHEET.replace("$7 per kg", f"${changed['new']} per kg")
    # without facts, any content number (7 or 5) may change; never the version, the list number, id or counter
    seen = {falsify_text(SHEET, [], random.Random(s))[1]["old"] for s in range(30)}
    assert seen == {7, 5}
    assert falsify_text("no numbers here", FACTS, random.Random(0)) == ("no numbers here", None)


def test_cheatsheet_candidate_exact():
    cand = harmful_candidate("falsify", SHEET, T, updater_kind="dc_rs", seed=0, step=9)
    assert cand == SHEET.replace("$7 per kg", "$5 per kg")  # seeded: pinned
    assert harmful_candidate("falsify", SHEET, T, updater_kind="dc_cu", seed=0, step=9) == cand  # same draw
    # a sheet without a number: the task's rule with a wrong number planted on top
    strat = "Version: 2\n## General Problem-Solving Heuristics\n- Multiply the weight by the rate."
    planted = harmful_candidate("falsify", strat, T, updater_kind="dc_rs", seed=0, step=9)
    assert planted == "- Shipping costs $5 per kg.\n\n" + strat
    assert harmful_candidate("falsify", "(empty)", T, updater_kind="dc_rs", seed=0, step=9) == \
        "- Shipping costs $5 per kg."
    # neither a number nor a task fact: unchanged (a no-op injection)
    assert harmful_candidate("falsify", strat, PLAIN, updater_kind="dc_rs", seed=0, step=9) == strat


def test_false_fact_and_value():
    assert false_fact(["no number"], random.Random(0)) is None
    assert false_fact([], random.Random(0)) is None
    assert {false_fact(["Members get 20% off."], random.Random(s)) for s in range(20)} == {
        "Members get 10% off.", "Members get 30% off."}  # 20-40% off, in tens for a multiple of ten
    assert all(falsified_value(1, random.Random(s)) in (3, 4) for s in range(10))


def test_expel_rules_candidate():
    rules = "1. Shipping costs $7 per kg.\n2. Check the units."
    cand = harmful_candidate("falsify", rules, T, updater_kind="expel", seed=0, step=9)
    assert cand.splitlines()[1:] == ["2. Check the units."] and cand.startswith("1. Shipping costs $")
    assert cand != rules
    plain = harmful_candidate("falsify", "1. Check the units.", T, updater_kind="expel", seed=0, step=9)
    assert plain.splitlines()[1] == "2. Check the units." and plain.startswith("1. Shipping costs $")


def test_ace_bullet_content_only():
    secs = [h for h in new_sections()]
    secs[0][1] = [["strat-00001", 3, 1, "Shipping costs $7 per kg."], ["strat-00002", 0, 0, "Check units."]]
    out, nid = harmful_playbook("falsify", secs, T, next_id=3, faithful=False, seed=0, step=9)
    assert nid == 3 and out[0][1][1] == ["strat-00002", 0, 0, "Check units."]
    assert out[0][1][0][:3] == ["strat-00001", 3, 1] and out[0][1][0][3] != "Shipping costs $7 per kg."
    assert secs[0][1][0][3] == "Shipping costs $7 per kg."  # M_{t-1} untouched
    empty = new_sections()
    out, nid = harmful_playbook("falsify", empty, T, next_id=4, faithful=False, seed=0, step=9)
    assert nid == 5 and out[0][1][0][:3] == ["strat-00004", 0, 0] and out[0][1][0][3].startswith("Shipping costs $")
    assert harmful_playbook("falsify", empty, PLAIN, next_id=4, faithful=False, seed=0, step=9) == (empty, 4)


def test_reasoning_bank_item_numbers():
    body = "# Memory Item 1\n## Title Rate\n## Description d\n## Content Shipping costs $7 per kg."
    recs = [{"id": "t1", "question": "q", "status": "success", "body": body}]
    out = harmful_bank("falsify", recs, T, seed=0, step=9)
    assert out[0]["body"].startswith("# Memory Item 1\n") and "$7 per kg" not in out[0]["body"]
    planted = harmful_bank("falsify", [{**recs[0], "body": body.replace("$7 per kg", "by weight")}], T, seed=0, step=9)
    assert len(planted) == 2 and planted[1]["id"] == T.id and "Shipping costs $" in planted[1]["body"]


def _no_numbers(messages, role, params):
    if role == "curator":
        return "<cheatsheet>\n## Notes\n- Multiply the weight by the rate.\n</cheatsheet>\nADD: Check the units."
    return "<final_answer>ANSWER: 0</final_answer>"


@pytest.mark.parametrize("name", ["dc_rs", "dc_cu", "expel"])
def test_hook_noop_without_numbers_or_facts_and_planted_rule_with_facts(name):
    for task, noop in ((PLAIN, True), (T, False)):
        upd = make_updater(name, llm=ScriptedLLM(responder=_no_numbers), family=ExactFamily(), encoder=HashEncoder())
        upd.step(Task("x:1", "x", "warm up", "0"))
        before = upd.snapshot()
        out = upd.step(task)
        new = inject_candidate(upd, out, "falsify", task=task, step=2, seed=0, before=before)
        assert new.info["injected"]["kind"] == "falsify" and new.info["injected"]["noop"] is noop
        assert (new.candidate_memory == out.old_memory) is noop
        if not noop:
            assert "Shipping costs $" in new.candidate_memory and "$7" not in new.candidate_memory
        upd.rollback(before)
        assert upd.memory_text() == out.old_memory


# ------------------------------------------------------------------------------------------------ ExpRAG
def _exprag(config=None):
    from updater_fakes import ScriptedLLM as LLM

    llm = LLM(responder=lambda messages, role, params: "ANSWER: 28")
    return make_updater("exprag", llm=llm, family=ExactFamily(), encoder=HashEncoder(), config=config)


def _experience_run():
    upd = _exprag({"top_k": 8, "janus_replay": "whole_bank"})
    intro = Task("rules:stream:000", "rules", "Team rule (from billing): Shipping costs $7 per kg. A customer ships a "
                 "2 kg parcel. What do we charge?", "14", meta={"facts": FACTS[:1]})
    upd.step(intro)
    before = upd.snapshot()
    return upd, before, upd.step(T)


def test_exprag_falsify_changes_the_ticket_that_states_the_rule_and_re_embeds_it():
    from janus_memory.inject.state import harmful_experience

    upd, before, out = _experience_run()
    recs = before["state"]["bank"]["records"]
    got = harmful_experience("falsify", recs, T, seed=0, step=2)
    assert len(got) == 1 and got[0]["id"] == "rules:stream:000"
    changed = got[0]["question"]
    assert "$7 per kg" not in changed and changed.startswith("Team rule (from billing): Shipping costs $")
    assert changed in got[0]["input"] and recs[0]["question"] not in got[0]["input"]  # the prompt says it too
    new = inject_candidate(upd, out, "falsify", task=T, step=2, seed=0, before=before)
    assert upd.bank.records == got and len(upd.bank) == 1  # the genuine new record is replaced
    assert new.candidate_memory == upd.memory_text() and changed in new.candidate_memory
    # its embedding is its new question's
    import numpy as np

    assert np.allclose(upd.bank.matrix()[0], upd.embed([changed])[0])
    upd.rollback(before)
    assert upd.memory_text() == out.old_memory and upd.bank.records == recs


@pytest.mark.parametrize("kind,n", [("wipe", 1), ("dump", 1), ("overfit", 2), ("poison", 2), ("truncate", 1)])
def test_exprag_other_kinds(kind, n):
    upd, before, out = _experience_run()
    new = inject_candidate(upd, out, kind, task=T, step=2, seed=0, before=before)
    assert len(upd.bank) == n and new.candidate_memory == upd.memory_text()
    if kind == "dump":
        assert upd.bank.records[0]["id"] == T.id  # the step's own record alone
    if kind == "poison":
        assert upd.bank.records[1]["output"] in __import__("janus_memory.inject.candidates",
                                                           fromlist=["templates"]).templates()["poison"]
    upd.rollback(before)
    assert upd.memory_text() == out.old_memory


def test_exprag_janus_is_an_option():
    from janus_memory.errors import ConfigError
    from janus_memory.run.build import validate_names
    from janus_memory.settings.config import RunConfig

    base = dict(backend="fake", dataset="rules_small", updater="exprag", encoder="hashing:64", stream_size=4)
    with pytest.raises(ConfigError, match="Janus does not wrap it; use --controller none .or updater_config "
                                          "janus_replay: top_k or whole_bank"):
        validate_names(RunConfig(**base, controller="both"))
    validate_names(RunConfig(**base, controller="both", updater_config={"janus_replay": "whole_bank"}))
    validate_names(RunConfig(**base, controller="none"))
    with pytest.raises(ConfigError, match="janus_replay"):
        validate_names(RunConfig(**base, controller="none", updater_config={"janus_replay": "yes"}))


def test_exprag_replay_leaves_the_tasks_own_record_out():
    upd, before, out = _experience_run()
    mem = upd.memory_text()
    assert mem.count("[Experience ") == 2
    mine = upd.without_own_record(mem, T)
    assert mine.count("[Experience ") == 1 and mine.startswith("[Experience 1]\nQ: Question: Team rule")
    assert T.question not in mine
    other = Task("x:9", "rules", "Something else entirely?", "1")
    assert upd.without_own_record(mem, other) == mem
    upd.solve_with_memory(mem, [T])
    assert T.question not in upd.llm.calls[-1]["messages"][1]["content"].split("# CURRENT PROBLEM")[0]
    upd.solve_replays([(mem, T, 0)])
    assert T.question not in upd.llm.calls[-1]["messages"][1]["content"].split("# CURRENT PROBLEM")[0]
    only = _exprag({"janus_replay": "whole_bank"})
    only.step(T)
    assert only.without_own_record(only.memory_text(), T) == "(empty)"


def test_exprag_falsify_changes_the_rule_a_ticket_states_not_a_number_equal_to_it():
    """rules_small seed 0: shipping $12 per kg, handling $7. The bank's tickets also hold numbers equal to a rule's
    value that are no rule (a 12 kg parcel); the falsified record must be a ticket that states a rule, with the number
    of the statement changed."""
    from janus_memory.inject.state import harmful_experience
    from janus_memory.tasks.rules import generate

    stream, _, _ = generate("rules_small", 0)
    recs = [{"id": t.id, "question": t.question, "input": t.question, "output": f"Answer: {t.gold}",
             "feedback": "success"} for t in stream[:6]]
    out = harmful_experience("falsify", recs, stream[6], seed=0, step=1)
    (i,) = [k for k, (a, b) in enumerate(zip(recs, out)) if a != b]
    assert "Every order pays a flat handling fee of $7." in recs[i]["question"]
    assert "Every order pays a flat handling fee of $4." in out[i]["question"]
