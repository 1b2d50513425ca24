"""ExpeL's placeholder-rule filter and the fields a try is kept with, as the authors' code
(GitHub Chen-1031/Janus @ a42b1e6, ``methods/ExpeL.py``: ``_normalize_rule_text``, ``generate``,
``update_memory``, ``_build_fewshot_examples_block``) does them, with exact values; ours as named options."""
from __future__ import annotations

import pytest

from janus_memory.settings.config import migrate_stored
from janus_memory.tasks import get_family
from janus_memory.tasks.checker_paper import with_checker
from janus_memory.updaters import make_updater
from janus_memory.updaters.expel_rules import normalize_rule_paper, parse_ops_paper
from janus_memory.updaters.expel_rules_paper import is_placeholder_rule
from janus_memory.values import ChatResult, Task
from updater_fakes import HashEncoder, ScriptedLLM


# ------------------------------------------------------------------ the placeholder filter
@pytest.mark.parametrize("raw", ["<rule>", "<rule>.", "rule", "Rule.", "`rule`", "'Rule'", "\u201crule\u201d",
                                 "Rule 1", "rule 12.", "<rule 2>", "< Rule 3 >", "<Strategy>", "strategy",
                                 "insight 3.", "<insight>", "Placeholder", "PLACEHOLDER.", "- <rule>", "  rule  "])
def test_placeholder_rules_normalise_to_nothing(raw):
    assert normalize_rule_paper(raw) == ""


@pytest.mark.parametrize("raw,want", [
    ("Rules", "Rules."), ("Rule 1: check the units", "Rule 1: check the units."),
    ("Check  the\nunits", "Check the units."),
    ("<b>Check</b>", "<b>Check</b>."), ("rule of thumb", "rule of thumb."), ("placeholders", "placeholders."),
    ("Strategy 2b", "Strategy 2b."), ("insight-1", "insight-1."), ("- Keep it short.", "Keep it short."),
])
def test_real_rules_are_kept(raw, want):
    assert normalize_rule_paper(raw) == want


def test_is_placeholder_rule_reads_the_normalised_text():
    assert is_placeholder_rule("<rule>.") and is_placeholder_rule("Rule 7") and not is_placeholder_rule("Rule 7 x")


def test_parse_ops_drops_placeholders_with_their_reason():
    ops, dropped = parse_ops_paper("ADD 1: <rule>\nADD 2: Check units\nEDIT 1: Rule 3.\nAGREE 4: `insight`\nREMOVE 1:")
    assert [(o.op, o.num, o.text) for o in ops] == [("ADD", 2, "Check units.")]
    assert dropped == [{"raw": "ADD 1: <rule>", "reason": "placeholder rule text"},
                       {"raw": "EDIT 1: Rule 3.", "reason": "placeholder rule text"},
                       {"raw": "AGREE 4: `insight`", "reason": "placeholder rule text"},
                       {"raw": "REMOVE 1:", "reason": "empty rule text"}]


def test_a_placeholder_never_becomes_a_rule():
    upd = make_updater("expel", llm=ScriptedLLM(), family=get_family("gsm8k"), encoder=HashEncoder())
    log = upd.apply_curator_text("ADD 1: <rule>\nADD 2: Verify the units\nADD 3: Rule 3")
    assert upd.rules == [["Verify the units.", 2]]
    assert [d["reason"] for d in log["dropped"]] == ["placeholder rule text", "placeholder rule text"]
    assert upd.stats["ops_dropped"] == {"placeholder rule text": 2}


# ------------------------------------------------------------------ what a try is kept with
GPQA = Task(id="g1", dataset="gpqa", question="Which gas do plants take in?", gold="B",
            meta={"options": ["Oxygen", "Carbon dioxide", "Helium", "Argon"], "labels": "ABCD"})
NEXT = Task(id="g2", dataset="gpqa", question="Which gas do plants give off?", gold="A",
            meta={"options": ["Oxygen", "Neon", "Helium", "Argon"], "labels": "ABCD"})


def _expel(**config):
    script = {
        "solver": [
            ChatResult(text="<trajectory>try one</trajectory>\n<final_answer>A</final_answer>",
                       reasoning="maybe carbon dioxide"),
            ChatResult(text="<trajectory>try two</trajectory>\n<final_answer>B</final_answer>", reasoning="sure now"),
            ChatResult(text="<final_answer>A</final_answer>"),
        ],
        "reflection": [ChatResult(text="<reflection>final note</reflection>",
                                  reasoning="<reflection>draft note</reflection>")],
        "curator": ["ADD 1: Name the gas."],
    }
    llm = ScriptedLLM(script)
    upd = make_updater("expel", llm=llm, family=with_checker(get_family("gpqa"), "paper"), encoder=HashEncoder(),
                       config={"max_tries": 2, **config})
    return upd, llm


def test_the_paper_preset_keeps_a_try_as_the_authors_do():
    upd, llm = _expel()
    out = upd.step(GPQA)
    raw1 = "<think>\nmaybe carbon dioxide\n</think>\n\n<trajectory>try one</trajectory>\n<final_answer>A</final_answer>"
    # the checker sees the answer block alone: "A" is wrong, though the gold text is in the thinking
    assert [a["correct"] for a in out.info["attempts"]] == [False, True]
    assert out.info["attempts"][0] == {"attempt": 1, "output": raw1, "trajectory": "try one", "correct": False,
                                       "answer": "A"}
    # the reflection reads the raw failed output and keeps the first block of its raw reply (the thinking's draft)
    ref = [c for c in llm.calls if c["role"] == "reflection"][0]["messages"][0]["content"]
    assert raw1 in ref
    assert out.info["reflections"] == ["draft note"]
    case = upd.pool.records[0]
    assert case == {"id": "g1", "question": GPQA.question, "input": upd.family.prompt(GPQA),
                    "output": ("<think>\nsure now\n</think>\n\n<trajectory>try two</trajectory>\n"
                               "<final_answer>B</final_answer>"),
                    "trajectory": "try two", "reflections": ["draft note"], "answer": "B"}
    # the next task's solver sees the case's raw question, not its task prompt
    upd.step(NEXT)
    msgs = [c for c in llm.calls if c["role"] == "solver"][-1]["messages"]
    assert [m["role"] for m in msgs] == ["user"] and msgs[0]["content"].startswith("[SYSTEM]\n")  # one text
    user = msgs[0]["content"]
    assert f"Problem: {GPQA.question}\nReasoning:\ntry two" in user
    assert "Options:" not in user.split("Problem:")[1].split("Reasoning")[0]


def test_visible_outputs_keep_ours():
    upd, llm = _expel(outputs="visible", examples_input="task_prompt")
    out = upd.step(GPQA)
    # the reasoning stays attached to the checked answer: the gold text in it credits try 1 (the leak the paper
    # preset closes)
    assert [a["correct"] for a in out.info["attempts"]] == [True]
    shown = "<trajectory>try one</trajectory>\n<final_answer>A</final_answer>"
    assert out.info["attempts"][0] == {"attempt": 1, "output": shown, "trajectory": "try one", "correct": True}
    assert upd.pool.records[0]["output"] == "<trajectory>try one</trajectory>\n<final_answer>A</final_answer>"
    assert "answer" not in upd.pool.records[0]


def test_visible_reflection_takes_the_last_block_of_the_answer_text():
    upd, llm = _expel(outputs="visible")
    llm.queues["solver"][0] = ChatResult(text="<trajectory>t</trajectory>\n<final_answer>A</final_answer>")
    out = upd.step(GPQA)
    assert out.info["reflections"] == ["final note"]
    assert "<think>" not in [c for c in llm.calls if c["role"] == "reflection"][0]["messages"][0]["content"]


def test_replays_check_the_raw_output_once():
    upd, _ = _expel()
    res = ChatResult(text="<final_answer>A</final_answer>", reasoning="it is carbon dioxide")
    assert upd.replay_score(GPQA, res).correct is True  # the gold text in the thinking: the authors credit it
    assert upd.score(GPQA, res).correct is False  # the stream checks the answer block alone


def test_bad_option_values_are_refused():
    for key, bad in (("outputs", "raw"), ("examples_input", "prompt")):
        with pytest.raises(ValueError, match=f"config '{key}' must be one of"):
            make_updater("expel", llm=ScriptedLLM(), family=get_family("gsm8k"), encoder=HashEncoder(),
                         config={key: bad})


def test_stored_expel_configs_from_before_resume_as_they_ran():
    old = {"preset": "paper", "twin_cache": "separate", "updater": "expel", "updater_config": {"retrieval": "paper"}}
    # stored before the prompts took the authors' shape, format lines and section order
    shape = {"message_shape": "system_user", "ops_format": "short", "solver_layout": "rules_first"}
    assert migrate_stored(old)["updater_config"] == {"outputs": "visible", "examples_input": "task_prompt",
                                                     "test_scoring": "answer_block", "retrieval": "paper", **shape}
    new = {**old, "updater_config": {"outputs": "paper", "examples_input": "question"}}
    assert migrate_stored(new)["updater_config"] == {"outputs": "paper", "examples_input": "question", **shape}
    shaped = {**old, "updater_config": {"outputs": "paper", "message_shape": "one_text", "ops_format": "paper"}}
    assert migrate_stored(shaped)["updater_config"] == {**shaped["updater_config"], "solver_layout": "rules_first"}
    newest = {**old, "updater_config": {**shaped["updater_config"], "solver_layout": "paper"}}
    assert migrate_stored(newest)["updater_config"] == newest["updater_config"]
    dc = {**old, "updater": "dc_rs", "updater_config": {}}
    assert migrate_stored(dc)["updater_config"] == {}
    dc = {**old, "updater": "dc_rs", "updater_config": {"prompts": "paper"}}  # resolved, before letter_format
    assert migrate_stored(dc)["updater_config"] == {"letter_format": "bare", "prompts": "paper"}


def test_the_held_out_test_checks_the_raw_output_as_the_authors_batched_test():
    upd, llm = _expel()
    llm.push("test", ChatResult(text="<final_answer>A</final_answer>", reasoning="it is carbon dioxide"))
    [(_, score)] = upd.solve_frozen([GPQA])
    assert score.correct is True  # the gold text in the thinking: the authors' checker on the raw output credits it
    upd2, llm2 = _expel(test_scoring="answer_block")
    llm2.push("test", ChatResult(text="<final_answer>A</final_answer>", reasoning="it is carbon dioxide"))
    [(_, score2)] = upd2.solve_frozen([GPQA])
    assert score2.correct is False
    with pytest.raises(ValueError, match="config 'test_scoring' must be one of"):
        _expel(test_scoring="block")
