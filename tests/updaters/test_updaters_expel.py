"""ExpeL: exact rule lists after fixed operation sequences (every rule), C25 both modes, tries/reflection, batch, rollback."""

from __future__ import annotations

import json

import pytest

from janus_memory.updaters import make_updater
from janus_memory.updaters.expel import SMALL_MODEL_CONFIG
from janus_memory.updaters.expel_rules import parse_ops_strict
from janus_memory.values import ChatResult
from updater_fakes import ExactFamily, HashEncoder, ScriptedLLM, task


def make(script=None, **config):
    llm = ScriptedLLM(script or {})
    cfg = {**SMALL_MODEL_CONFIG, **config}  # the small-model preset; paper semantics: test_updaters_paper.py
    return make_updater("expel", llm=llm, family=ExactFamily(), encoder=HashEncoder(), config=cfg), llm


def reply(answer: str, reasoning: str = "work") -> str:
    return f"<trajectory>{reasoning}</trajectory>\n<final_answer>ANSWER: {answer}</final_answer>"


def test_operation_sequence_exact_rule_lists():
    upd, _ = make()
    # ADD -> count 2 (number after ADD optional)
    log = upd.apply_curator_text("ADD: Read the question twice.\nADD 2: Check units.\n- ADD: Prefer exact fractions.")
    assert upd.rules == [["Read the question twice.", 2], ["Check units.", 2], ["Prefer exact fractions.", 2]]
    assert [a["applied_as"] for a in log["applied"]] == ["ADD", "ADD", "ADD"]
    # REMOVE -1, AGREE +1, EDIT replaces and +1; then stable sort by count
    upd.apply_curator_text(
        "AGREE 2: Check units.\nEDIT 3: Prefer exact fractions over decimals.\nREMOVE 1: Read the question twice."
    )
    assert upd.rules == [
        ["Check units.", 3],
        ["Prefer exact fractions over decimals.", 3],
        ["Read the question twice.", 1],
    ]
    assert upd.memory_text() == "1. Check units.\n2. Prefer exact fractions over decimals.\n3. Read the question twice."
    # duplicate ADD filtered; EDIT matching an existing rule -> AGREE; REMOVE to 0 -> dropped; junk logged
    log = upd.apply_curator_text(
        "Here are my operations:\n"
        "ADD: check   units\n"
        "EDIT 3: Check units.\n"
        "REMOVE 3: Read the question twice.\n"
        "**ADD**: Estimate first.\n"
        "EDIT 0: Always simplify radicals.\n"
        "AGREE: Check units."
    )
    assert upd.rules == [["Check units.", 4], ["Prefer exact fractions over decimals.", 3]]
    assert [(a["applied_as"], a["target"]) for a in log["applied"]] == [("REMOVE", 3), ("AGREE", 1)]
    assert log["applied"][1]["note"] == "edit matches an existing rule: agree"
    assert [d["reason"] for d in log["dropped"]] == [
        "not an operation",
        "unparseable op",
        "duplicate rule",
        "rule number out of range",
        "missing rule number",
    ]
    assert upd.stats["ops_dropped"]["rule number out of range"] == 1
    assert upd.stats["ops_applied"] == {"ADD": 3, "AGREE": 2, "EDIT": 1, "REMOVE": 2}


def test_remove_minus_three_when_full_and_cap_twenty():
    upd, _ = make()
    upd.rules = [[f"Tip number {i} about topic {i}.", 5 if i == 1 else 2] for i in range(1, 21)]
    assert len(upd.rules) == 20
    upd.apply_curator_text(
        "REMOVE 1: Tip number 1 about topic 1.\n"  # full: 5 - 3 = 2
        "REMOVE 2: Tip number 2 about topic 2.\n"  # full: 2 - 3 = -1 -> dropped
        "ADD: Fresh tip one.\n"
        "ADD: Fresh tip two."
    )
    # 19 old + 2 new = 21 -> stable sort (all count 2) -> cap 20 cuts the last added
    expected = [["Tip number 1 about topic 1.", 2]] + [[f"Tip number {i} about topic {i}.", 2] for i in range(3, 21)]
    expected += [["Fresh tip one.", 2]]
    assert upd.rules == expected
    # still full (20): REMOVE is -3 again, 2 -> -1 -> dropped at <= 0
    upd.apply_curator_text("REMOVE 1: Tip number 1 about topic 1.")
    assert len(upd.rules) == 19 and upd.rules[0] == ["Tip number 3 about topic 3.", 2]
    # not full any more: REMOVE is -1
    upd.apply_curator_text("REMOVE 1: Tip number 3 about topic 3.")
    assert len(upd.rules) == 19 and upd.rules[-1] == ["Tip number 3 about topic 3.", 1]


def test_max_num_rules_config_and_bad_values():
    upd, _ = make(max_num_rules=2)
    upd.apply_curator_text("ADD: One rule.\nADD: Two rule.\nADD: Three rule.")
    assert upd.rules == [["One rule.", 2], ["Two rule.", 2]]
    with pytest.raises(ValueError, match="max_tries"):
        make(max_tries=0)


C25_RULES = [["Read the question twice.", 2], ["Check units.", 3], ["Prefer exact fractions.", 2]]
SORTED = [["Check units.", 3], ["Read the question twice.", 2], ["Prefer exact fractions.", 2]]
C25 = {
    # case: (curator text, default (rules, dropped reasons), faithful (rules, dropped reasons))
    "A": (
        "EDIT 0: Always simplify radicals.",
        (C25_RULES, ["rule number out of range"]),
        ([["Check units.", 3], ["Always simplify radicals.", 3], ["Read the question twice.", 2]], []),
    ),
    "B": (
        "ADD 4: Validate the IP ADDRESS format before use.",
        (SORTED + [["Validate the IP ADDRESS format before use.", 2]], []),
        (SORTED, ["banned word in rule text"]),
    ),
    "C": ("**ADD**: Estimate before computing.", (C25_RULES, ["unparseable op"]), (SORTED, ["unparseable op"])),
    "D": (
        "ADD 4: Use (a+b)^2 = a^2+2ab+b^2 (binomial)",
        (SORTED + [["Use (a+b)^2 = a^2+2ab+b^2 (binomial)", 2]], []),
        (SORTED, ["no final period"]),
    ),
    "E": (
        "REMOVE 2: Check the units.",
        ([["Read the question twice.", 2], ["Check units.", 2], ["Prefer exact fractions.", 2]], []),
        (SORTED, ["no existing rule is a substring of the text"]),
    ),
}


@pytest.mark.parametrize("case", sorted(C25))
def test_c25_both_modes(case):
    text, (rules_default, drops_default), (rules_faithful, drops_faithful) = C25[case]
    for faithful, rules, drops in ((False, rules_default, drops_default), (True, rules_faithful, drops_faithful)):
        upd, _ = make(faithful=faithful)
        upd.rules = [list(r) for r in C25_RULES]
        log = upd.apply_curator_text(text)
        assert upd.rules == rules, (case, faithful)
        assert [d["reason"] for d in log["dropped"]] == drops
        # never silently ignored: every op-looking line is either applied or dropped with a reason
        assert len(log["applied"]) + len(log["dropped"]) == 1
    if case == "A":
        assert log["applied"][0]["note"] == "EDIT 0 wrapped to rule 3 (negative index)"
    if case == "E":
        upd, _ = make()
        upd.rules = [list(r) for r in C25_RULES]
        assert upd.apply_curator_text(text)["applied"][0]["note"] == "text differs from rule 2: resolved by number"


def test_strict_parser_text_mismatch_and_placeholders():
    upd, _ = make()
    upd.rules = [list(r) for r in C25_RULES]
    log = upd.apply_curator_text("REMOVE 1: Check units.\nADD: <rule>\nADD:   ")
    assert [d["reason"] for d in log["dropped"]] == ["placeholder rule text", "empty rule text", "text mismatch"]
    assert upd.rules == C25_RULES  # nothing applied -> untouched
    ops, dropped = parse_ops_strict("AGREE 12: Foo bar.")
    assert ops[0].num == 12 and ops[0].text == "Foo bar." and dropped == []


def test_three_tries_with_reflection_then_pair_update():
    script = {
        "solver": [reply("4", "two plus three is four"), reply("6"), reply("5", "2+3=5")],
        "reflection": ["<reflection>Add carefully.</reflection>", "Count on fingers."],
        "curator": ["ADD: Verify sums by adding twice.", "AGREE 1: Verify sums by adding twice."],
    }
    upd, llm = make(script)
    t = task(1, "add two and three", "5")
    out = upd.step(t)
    assert llm.roles() == ["solver", "reflection", "solver", "reflection", "solver", "curator", "curator"]
    assert out.score.correct and out.output.text == reply("5", "2+3=5")
    assert [a["correct"] for a in out.info["attempts"]] == [False, False, True]
    assert out.info["reflections"] == ["Add carefully.", "Count on fingers."]
    third = llm.calls[4]["messages"][1]["content"]
    assert "# NOTES FROM YOUR FAILED ATTEMPTS AT THIS PROBLEM\n- Add carefully.\n- Count on fingers.\n" in third
    assert "# ATTEMPT 3\n" in third
    assert llm.calls[1]["params"] == {"temperature": 0.0, "max_tokens": 256, "top_p": 1.0,
                                      "extra_body": {"top_k": -1, "min_p": 0.0}}
    # one pair update per failed try: first adds, second agrees
    assert upd.rules == [["Verify sums by adding twice.", 3]]
    assert out.old_memory == "(empty)" and out.candidate_memory == "1. Verify sums by adding twice."
    pair_prompt = llm.calls[5]["messages"][0]["content"]
    assert "Reasoning: 2+3=5" in pair_prompt and "Reasoning: two plus three is four" in pair_prompt
    assert len(upd.pool) == 1 and len(upd.recent_success) == 1


def test_all_tries_fail_no_update_and_no_final_reflection():
    upd, llm = make({"solver": [reply("1"), reply("2"), reply("3")], "reflection": ["<reflection>a</reflection>"] * 2})
    upd.rules = [["Keep rule.", 2]]
    out = upd.step(task(1, "add two and three", "5"))
    assert llm.roles() == ["solver", "reflection", "solver", "reflection", "solver"]
    assert not out.score.correct and out.candidate_memory == out.old_memory == "1. Keep rule."
    assert len(upd.pool) == 0 and upd.recent_success == []


def test_scored_on_final_answer_block():
    upd, _ = make(
        {
            "solver": [
                "<trajectory>ANSWER: 5</trajectory><final_answer>ANSWER: 4</final_answer>",
                "no tags at all, ANSWER: 5",
            ]
        },
        max_tries=2,
    )
    upd.llm.push("reflection", "<reflection>x</reflection>")
    upd.llm.push("curator", "ADD: Use the final answer block.")
    out = upd.step(task(1, "add two and three", "5"))
    assert [a["correct"] for a in out.info["attempts"]] == [False, True]


def test_batch_update_every_eight_successes_and_rollback():
    questions = [
        "add two and three",
        "add two and four",
        "multiply seven and nine",
        "subtract ten from twenty",
        "add one and one",
        "add six and six",
        "divide nine by three",
        "add two and five",
    ]
    upd, llm = make()
    for i, q in enumerate(questions[:7]):
        llm.push("solver", reply(str(i)))
        upd.step(task(i, q, str(i)))
    assert "curator" not in llm.roles() and len(upd.recent_success) == 7
    upd.rules = [["Show each step.", 2]]
    snap = upd.snapshot()
    llm.push("solver", reply("7"))
    llm.push("curator", "AGREE 1: Show each step.\nADD: Reuse earlier patterns.")
    out = upd.step(task(7, questions[7], "7"))
    assert llm.roles()[-2:] == ["solver", "curator"]
    batch_prompt = llm.calls[-1]["messages"][0]["content"]
    assert "[Success 1]" in batch_prompt and "[Success 8]" in batch_prompt and "[Success 9]" not in batch_prompt
    assert out.info["ops"][0]["source"] == "batch"
    assert upd.rules == [["Show each step.", 3], ["Reuse earlier patterns.", 2]]
    assert upd.recent_success == [] and len(upd.pool) == 8
    # retrieval: the 8th task saw the 3 most similar successes
    assert [r["id"] for r in out.info["retrieved"]] == ["t0", "t1", "t4"]
    # Janus rollback: rules+counts and the recent_success buffer come back; the success pool keeps x_t
    upd.rollback(snap)
    assert upd.rules == [["Show each step.", 2]] and len(upd.recent_success) == 7 and len(upd.pool) == 8
    state = upd.snapshot()["state"]
    assert json.dumps({k: state[k] for k in ("rules", "recent_success")}, sort_keys=True) == json.dumps(
        {k: snap["state"][k] for k in ("rules", "recent_success")}, sort_keys=True
    )


def test_replay_and_frozen_prompts():
    upd, llm = make({"solver": [reply("5")]})
    upd.rules = [["Show each step.", 2]]
    upd.step(task(1, "add two and three", "5"))
    llm.push("janus", reply("6"))
    [(res, score)] = upd.solve_with_memory("1. Other rule.", [task(2, "add two and four", "6")])
    user = llm.calls[-1]["messages"][1]["content"]
    assert score.correct and llm.calls[-1]["role"] == "janus"
    assert user.startswith(
        "# RULES LEARNED FROM EARLIER PROBLEMS\n1. Other rule.\n\n# SUCCESSFUL EXAMPLES FROM EARLIER PROBLEMS\n(none)\n"
    )
    assert "# ATTEMPT 1\n" in user and user.endswith(ExactFamily().prompt(task(2, "add two and four", "6")))
    llm.push("test", reply("6"))
    upd.solve_frozen([task(2, "add two and four", "6")])
    user = llm.calls[-1]["messages"][1]["content"]
    assert (
        "1. Show each step." in user and "### Example 1 (similarity 0.75)\nProblem: Question: add two and three" in user
    )


def test_truncated_reply_without_block_scores_whole_text():
    upd, _ = make({"solver": [ChatResult(text="<trajectory>long", finish_reason="length")]}, max_tries=1)
    out = upd.step(task(1, "add two and three", "5"))
    assert out.score.correct is False and out.score.status == "unparsed"
