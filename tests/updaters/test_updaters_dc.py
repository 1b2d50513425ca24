"""DC-RS / DC-Cu: exact cheatsheets after fixed curator outputs (C24 both modes), retrieval, replay equality, rollback."""

from __future__ import annotations

import json

import pytest

from janus_memory.updaters import extract_cheatsheet, extract_cheatsheet_original, make_updater
from janus_memory.updaters.dc import SMALL_MODEL_CONFIG
from janus_memory.values import ChatResult
from updater_fakes import ExactFamily, HashEncoder, ScriptedLLM, task

QS = [
    ("add two and three", "5"),
    ("multiply seven and nine", "63"),
    ("subtract ten from twenty", "10"),
    ("add two and four", "6"),
    ("add two and five", "7"),
    ("add three and four", "7"),
]
TASKS = [task(i + 1, q, g) for i, (q, g) in enumerate(QS)]

# the fixed curator sequence (C24 kinds included); ChatResult to set finish_reason
CURATOR = [
    "<cheatsheet>\nVersion: 1\nS1\n</cheatsheet>",
    "Here is the improved cheatsheet: add more checks.",  # C: missing block
    ChatResult(
        text="<cheatsheet>\n## Strategies\n1. For modular problems use CRT.\n2. When counting, check for overcount",
        finish_reason="length",
    ),  # A: unterminated
    "<cheatsheet></cheatsheet>",  # B: empty
    "I will put the notes in <cheatsheet> tags below.\n<cheatsheet>\nNEW\n</cheatsheet>",  # D
    "<cheatsheet>\ndraft notes\n</cheatsheet>\nOn reflection, here is the final one:\n<cheatsheet>\nFINAL\n</cheatsheet>",  # E
]
DEFAULT_MEMORIES = ["Version: 1\nS1", "Version: 1\nS1", "Version: 1\nS1", "Version: 1\nS1", "NEW", "FINAL"]
DEFAULT_REJECTED = [None, "missing block", "unterminated block", "empty", None, None]
FAITHFUL_MEMORIES = [
    "Version: 1\nS1",
    "Version: 1\nS1",
    "## Strategies\n1. For modular problems use CRT.\n2. When counting, check for overcount",
    "(empty)",  # DC deploys "" ; memory_text() renders it as "(empty)"
    "tags below.",
    "draft notes",
]
FAITHFUL_BRANCHES = [
    "first block",
    "no opening tag: previous cheatsheet kept",
    "no closing tag: partial text deployed",
    "empty block deployed",
    "text up to the next opening tag deployed",
    "first block",
]


def solver_replies():
    return [f"I computed it. ANSWER: {g}" for _, g in QS]


def make(name="dc_rs", curator=CURATOR, **config):
    """The small-model preset (our capped prompts, strict parsing) unless overridden; paper tests:
    tests/updaters/test_updaters_paper.py."""
    llm = ScriptedLLM({"curator": list(curator), "solver": solver_replies()})
    cfg = {**SMALL_MODEL_CONFIG, "curator_input": "question"} if name == "dc_rs" else dict(SMALL_MODEL_CONFIG)
    upd = make_updater(name, llm=llm, family=ExactFamily(), encoder=HashEncoder(), config={**cfg, **config})
    return upd, llm


@pytest.mark.parametrize("name", ["dc_rs", "dc_cu"])
def test_memory_after_fixed_curator_sequence_default(name):
    upd, _ = make(name)
    assert upd.memory_text() == "(empty)"
    mems, rej = [], []
    for t in TASKS:
        out = upd.step(t)
        mems.append(upd.memory_text())
        rej.append(out.candidate_rejected)
        assert out.candidate_memory == upd.memory_text()
        assert out.score.correct is True
    assert mems == DEFAULT_MEMORIES
    assert rej == DEFAULT_REJECTED
    assert upd.stats["candidates_rejected"] == {"missing block": 1, "unterminated block": 1, "empty": 1}


@pytest.mark.parametrize("name", ["dc_rs", "dc_cu"])
def test_memory_after_fixed_curator_sequence_faithful(name):
    upd, _ = make(name, faithful=True)
    mems, branches = [], []
    for t in TASKS:
        out = upd.step(t)
        assert out.candidate_rejected is None
        mems.append(upd.memory_text())
        branches.append(out.info["branch"])
    assert mems == FAITHFUL_MEMORIES
    assert branches == FAITHFUL_BRANCHES
    assert upd.stats["faithful_branches"]["first block"] == 2
    assert upd.stats["candidates_rejected"] == {}


C24 = {
    "A": (
        ChatResult(
            text="<cheatsheet>\n## Strategies\n1. For modular problems use CRT.\n2. When counting, check for overcount",
            finish_reason="length",
        ),
        ("OLD", "unterminated block"),
        "## Strategies\n1. For modular problems use CRT.\n2. When counting, check for overcount",
    ),
    "B": (ChatResult(text="<cheatsheet></cheatsheet>"), ("OLD", "empty"), "(empty)"),
    "C": (ChatResult(text="Here is the improved cheatsheet: use CRT more."), ("OLD", "missing block"), "OLD"),
    "D": (
        ChatResult(text="I will put the notes in <cheatsheet> tags below.\n<cheatsheet>\nNEW\n</cheatsheet>"),
        ("NEW", None),
        "tags below.",
    ),
    "E": (
        ChatResult(text="<cheatsheet>\nDRAFT\n</cheatsheet>\nBetter version:\n<cheatsheet>\nFINAL\n</cheatsheet>"),
        ("FINAL", None),
        "DRAFT",
    ),
}


@pytest.mark.parametrize("case", sorted(C24))
@pytest.mark.parametrize("name", ["dc_rs", "dc_cu"])
def test_c24_cases_both_modes(case, name):
    reply, (mem_default, reason), mem_faithful = C24[case]
    for faithful, expected_mem in ((False, mem_default), (True, mem_faithful)):
        upd, _ = make(name, curator=[reply], faithful=faithful)
        upd.cheatsheet = "OLD"
        out = upd.step(TASKS[0])
        assert upd.memory_text() == expected_mem
        assert out.old_memory == "OLD"
        assert out.candidate_rejected == (None if faithful else reason)
        if not faithful and reason:
            assert out.info["rejected_curator_output"] == reply.text
            assert upd.stats["candidates_rejected"] == {reason: 1}


def test_extractor_rules_directly():
    # a tag mentioned inside the block itself does not cut the block
    text = "<cheatsheet>\nWrap notes in <cheatsheet> tags.\nKeep it short.\n</cheatsheet>"
    assert extract_cheatsheet(text)[0] == "Wrap notes in <cheatsheet> tags.\nKeep it short."
    # a complete block followed by a truncated new block is rejected; without truncation the prose is ignored
    text = "<cheatsheet>\nA\n</cheatsheet>\nrevised:\n<cheatsheet>\nB and then"
    assert extract_cheatsheet(text, truncated=True)[1] == "unterminated block"
    assert extract_cheatsheet(text, truncated=False)[0] == "A"
    assert extract_cheatsheet("</cheatsheet>")[1] == "missing block"
    assert extract_cheatsheet("<cheatsheet>inline sheet</cheatsheet>") == ("inline sheet", None, "last complete block")
    assert extract_cheatsheet_original("no tags", "OLD") == ("OLD", "no opening tag: previous cheatsheet kept")


def test_dc_rs_retrieval_top3_and_curator_prompt_order():
    upd, llm = make()
    for t in TASKS[:5]:
        out = upd.step(t)
    # step 5 ("add two and five") retrieves t1 (0.75), t4 (0.75, later), t2 (0.25) from the bank of t1..t4
    assert [r["id"] for r in out.info["retrieved"]] == ["t1", "t4", "t2"]
    assert [r["similarity"] for r in out.info["retrieved"]] == [0.75, 0.75, 0.25]
    cur_user = out.calls[0].messages[1]["content"]
    assert out.calls[0].role == "curator" and out.calls[1].role == "solver"
    # listed least similar first; the closest sits right before the closing instruction
    p3, p2, p1 = (cur_user.index(f'<problem rank="{k}" ') for k in (3, 2, 1))
    assert cur_user.index("<upcoming_problem>") < p3 < p2 < p1 < cur_user.index("Write the updated cheatsheet now")
    assert '<problem rank="1" similarity="0.75">' in cur_user
    assert "\nmultiply seven and nine\n" in cur_user and "subtract ten" not in cur_user  # raw question, not the task prompt
    assert "I computed it. ANSWER: 63" in cur_user
    assert "<current_cheatsheet>\nVersion: 1\nS1\n</current_cheatsheet>" in cur_user
    # curator sampling: presence_penalty 1.0 (paper), temperature from config, unrestricted truncation (paper)
    assert llm.calls[-2]["params"] == {"temperature": 0.0, "max_tokens": 1024, "presence_penalty": 1.0, "top_p": 1.0,
                                       "extra_body": {"top_k": -1, "min_p": 0.0}}
    assert llm.calls[-1]["params"] == {"temperature": 0.0, "max_tokens": 1024, "top_p": 1.0,
                                       "extra_body": {"top_k": -1, "min_p": 0.0}}


def test_dc_rs_first_step_has_no_pairs_and_config_reaches_calls():
    upd, llm = make(temperature=0.7, solver_max_tokens=64, curator_max_tokens=99, curator_presence_penalty=0.5)
    out = upd.step(TASKS[0])
    assert "(none yet)" in out.calls[0].messages[1]["content"]
    assert llm.calls[0]["params"] == {"temperature": 0.7, "max_tokens": 99, "presence_penalty": 0.5, "top_p": 1.0,
                                      "extra_body": {"top_k": -1, "min_p": 0.0}}
    assert llm.calls[1]["params"] == {"temperature": 0.7, "max_tokens": 64, "top_p": 1.0,
                                      "extra_body": {"top_k": -1, "min_p": 0.0}}


def test_retrieved_output_chars_truncates_pairs():
    upd, _ = make(retrieved_output_chars=5)
    upd.step(TASKS[0])
    out = upd.step(TASKS[3])
    assert "I com [...truncated]" in out.calls[0].messages[1]["content"]


def test_stream_generator_call_equals_janus_replay_messages():
    upd, llm = make()
    upd.step(TASKS[0])
    out = upd.step(TASKS[3])  # candidate unchanged here (curator reply 2 has no block) -> still a valid check
    llm.push("janus", "ANSWER: 6")
    [(res, score)] = upd.solve_with_memory(out.candidate_memory, [TASKS[3]])
    assert llm.calls[-1]["messages"] == out.calls[1].messages
    assert llm.calls[-1]["params"] == out.calls[1].params  # same request -> the response cache serves the replay
    assert llm.calls[-1]["role"] == "janus" and score.correct
    # layout: system = fixed instructions, user = memory first, then the family prompt last
    user = out.calls[1].messages[1]["content"]
    assert user == "## CHEATSHEET\nVersion: 1\nS1\n\n## PROBLEM\n" + ExactFamily().prompt(TASKS[3])


def test_dc_cu_answers_with_current_sheet_then_curates():
    upd, llm = make("dc_cu")
    upd.step(TASKS[0])
    out = upd.step(TASKS[1])
    assert [c.role for c in out.calls] == ["solver", "curator"]
    assert "## CHEATSHEET\nVersion: 1\nS1" in out.calls[0].messages[1]["content"]
    cur = out.calls[1].messages[1]["content"]
    assert '<solver_answer note="unchecked; may be wrong">\nI computed it. ANSWER: 63\n</solver_answer>' in cur
    assert "Question: multiply seven and nine" in cur


def test_dc_rs_solve_frozen_adds_top_k_examples():
    upd, llm = make()
    for t in TASKS[:4]:
        upd.step(t)
    llm.push("test", "ANSWER: 7")
    [(res, score)] = upd.solve_frozen([TASKS[4]])
    user = llm.calls[-1]["messages"][1]["content"]
    assert llm.calls[-1]["role"] == "test" and score.correct
    assert user.index("### Example 1 (similarity 0.75)\nProblem:\nQuestion: add two and three") < user.index(
        "### Example 3"
    )
    assert user.index("## CHEATSHEET") < user.index("## SIMILAR EARLIER PROBLEMS") < user.index("## PROBLEM\n")


def test_rollback_keeps_bank_by_default():
    upd, _ = make()
    for t in TASKS[:4]:
        upd.step(t)  # after step 4 the sheet is "Version: 1\nS1" (step 4's candidate was empty -> rejected)
    snap = upd.snapshot()
    before = json.dumps(snap, sort_keys=True)
    upd.step(TASKS[4])
    assert upd.memory_text() == "NEW"
    upd.rollback(snap)
    assert upd.memory_text() == "Version: 1\nS1"
    assert len(upd.bank) == 5 and upd.bank.records[-1]["id"] == "t5"  # x_t stays in the bank (paper)
    assert upd.stats["rollbacks"] == 1
    assert json.dumps(snap, sort_keys=True) == before  # the snapshot was not mutated


def test_rollback_restores_bank_under_controller():
    upd, _ = make(bank_under_controller=True)
    for t in TASKS[:4]:
        upd.step(t)
    snap = upd.snapshot()
    upd.step(TASKS[4])
    upd.rollback(snap)
    assert json.dumps(upd.snapshot()["state"], sort_keys=True) == json.dumps(snap["state"], sort_keys=True)
    assert len(upd.bank) == 4
