"""The paper preset (the authors' code) vs the small-model preset, item by item, with exact values."""

from __future__ import annotations

import numpy as np
import pytest

from janus_memory.controller import Janus, JanusConfig, StepInput
from janus_memory.run.evaluator import UpdaterEvaluator, replay_sample_index
from janus_memory.tasks.sandbox import SandboxResult
from janus_memory.updaters import dc as dc_mod
from janus_memory.updaters import make_updater
from janus_memory.updaters.dc import SMALL_MODEL_CONFIG as DC_SMALL
from janus_memory.updaters.dc import extract_cheatsheet_first
from janus_memory.updaters.expel import SMALL_MODEL_CONFIG as EXPEL_SMALL
from janus_memory.updaters.expel_rules import apply_ops_paper, normalize_rule_paper, parse_ops_paper
from janus_memory.values import ChatResult
from updater_fakes import ExactFamily, HashEncoder, ScriptedLLM, task

T1 = task(1, "add two and three", "5")
T2 = task(2, "multiply seven and nine", "63")
T3 = task(3, "add two and four", "6")


def dc(script=None, responder=None, **config):
    llm = ScriptedLLM(script or {}, responder=responder)
    return make_updater("dc_rs", llm=llm, family=ExactFamily(), encoder=HashEncoder(), config=config), llm


def expel(script=None, responder=None, **config):
    llm = ScriptedLLM(script or {}, responder=responder)
    return make_updater("expel", llm=llm, family=ExactFamily(), encoder=HashEncoder(), config=config), llm


# ---------------------------------------------------------------- item 1: replay sampling
def test_replay_sample_index_exact_values():
    assert replay_sample_index("", 1, 0, 0) == 880077058773
    assert replay_sample_index("", 1, 1, 0) == 177228412273  # the other memory of the same trigger
    assert replay_sample_index("", 1, 0, 1) == 719327784907  # a task listed twice
    assert replay_sample_index("", 2, 0, 0) == 1075131444139  # the next trigger
    assert replay_sample_index("seed=1", 1, 0, 0) == 700265372933  # another run


def test_fresh_replay_draws_distinct_samples_and_is_resumable():
    upd, llm = dc(responder=lambda m, r, p: "ANSWER: 5")
    ev = UpdaterEvaluator(upd)
    with pytest.raises(RuntimeError, match="begin_comparison"):
        ev("M", [T1])
    ev.begin_comparison(step=22, trigger=1)
    assert ev("M", [T1, T2, T1]) == [True, False, True]
    assert ev("M", [T1]) == [True]  # identical memory as "new": a different draw
    samples = [r["sample"] for r in ev.drain()]
    assert samples == [880077058773, 880077058773, 719327784907, 177228412273]
    assert [c["params"]["sample"] for c in llm.calls] == [880077058773, 880077058773, 719327784907, 177228412273]
    ev.begin_comparison(step=22, trigger=1)  # a resumed run redoes the step: the same draws (cache hits)
    ev("M", [T1, T2, T1])
    assert [r["sample"] for r in ev.drain()] == samples[:3]


def test_frozen_replay_reuses_the_stream_request():
    upd, llm = dc({"curator": ["<cheatsheet>S</cheatsheet>"], "solver": ["ANSWER: 5"], "janus": ["ANSWER: 5"]})
    out = upd.step(T1)
    ev = UpdaterEvaluator(upd, replay="frozen")
    assert ev(out.candidate_memory, [T1]) == [True]
    assert llm.calls[-1]["messages"] == out.calls[1].messages and llm.calls[-1]["params"] == out.calls[1].params
    with pytest.raises(ValueError, match="replay must be one of"):
        UpdaterEvaluator(upd, replay="cached")


def test_controller_calls_begin_comparison_with_its_trigger_count():
    seen = []

    class Ev:
        def begin_comparison(self, *, step, trigger):
            seen.append((step, trigger))

        def __call__(self, mem, tasks):
            return [True] * len(tasks)

    j = Janus(JanusConfig(warmup=2, coverage_size=1, boundary_size=1, trigger="always"), Ev())
    z = np.zeros(2)
    for i in range(5):
        j.decide(StepInput(task(i, f"q{i}", "0"), np.eye(5)[i], "M", "M", z, z))
    assert seen == [(3, 1), (4, 2), (5, 3)]


# ---------------------------------------------------------------- items 3, 4, 9: prompts and decoding
def test_paper_dc_rs_prompts_curator_input_and_presence_penalty():
    upd, llm = dc({"curator": ["<cheatsheet>\nVersion: 1\nS\n</cheatsheet>"], "solver": ["ANSWER: 5"]})
    out = upd.step(T1)
    cur, gen = out.calls
    assert [m["role"] for m in cur.messages] == ["user"] and [m["role"] for m in gen.messages] == ["user"]
    text = cur.messages[0]["content"]
    for needle in ("<memory_item>", "<strategy>", "<when_to_use>", "Version: N",
                   "## General Problem-Solving Heuristics", "no fixed limit"):
        assert needle in text
    assert "at most 8" not in text
    assert text.endswith("## UPCOMING PROBLEM\n" + ExactFamily().prompt(T1) +
                         "\n\nNow write the updated cheatsheet inside <cheatsheet> ... </cheatsheet>.")
    assert "## EARLIER SOLUTIONS TO SIMILAR PROBLEMS\n(empty)\n" in text
    g = gen.messages[0]["content"]
    assert "FINAL ANSWER: <answer>" in g and "EXECUTE CODE!" in g
    assert g.endswith("## CHEATSHEET\nVersion: 1\nS\n\n## PROBLEM\n" + ExactFamily().prompt(T1))
    assert cur.params["presence_penalty"] == 1.0 and gen.params["presence_penalty"] == 1.0
    small, llm2 = dc({"curator": ["<cheatsheet>S</cheatsheet>"], "solver": ["ANSWER: 5"]}, **DC_SMALL,
                     curator_input="question")
    o2 = small.step(T1)
    assert "presence_penalty" not in o2.calls[1].params and o2.calls[0].params["presence_penalty"] == 1.0
    assert "<upcoming_problem>\nadd two and three\n</upcoming_problem>" in o2.calls[0].messages[1]["content"]
    assert "at most 8 entries" in o2.calls[0].messages[0]["content"]


def test_paper_pairs_block_layout():
    upd, llm = dc(responder=lambda m, r, p: "<cheatsheet>S</cheatsheet>" if r == "curator" else "ANSWER: 5")
    upd.step(T1)
    upd.step(T2)
    out = upd.step(T3)
    text = out.calls[0].messages[0]["content"]
    block = text[text.index("### PREVIOUS SOLUTIONS (START)"):text.index("#### PREVIOUS SOLUTIONS (END)")]
    # least similar first: T2 (#1) then T1 (#2), the closest right before the end marker
    assert block.index("#### Previous Input #1 (Similarity: 0.25):\nmultiply seven and nine") < block.index(
        "#### Previous Input #2 (Similarity: 0.75):\nadd two and three")
    assert "#### Model Solution to Previous Input #2:\nANSWER: 5\n---\n---\n" in block


# ---------------------------------------------------------------- item 5: cheatsheet extraction
DRAFT_FINAL = "<cheatsheet>\nOLD DRAFT\n</cheatsheet>\nbetter:\n<cheatsheet>\nFINAL\n</cheatsheet>"


@pytest.mark.parametrize("reply, paper, small", [
    (DRAFT_FINAL, "OLD DRAFT", "FINAL"),
    ("no tags at all", "(empty)", "(empty)"),
    ("<cheatsheet>\nunterminated", "(empty)", "(empty)"),
    ("<cheatsheet>   </cheatsheet>", "(empty)", "(empty)"),
    ("</cheatsheet> early close <cheatsheet>\nX\n</cheatsheet>", "X", "X"),
    ("<CHEATSHEET>upper</CHEATSHEET>", "(empty)", "upper"),
])
def test_first_vs_last_block(reply, paper, small):
    for cfg, want in (({}, paper), (DC_SMALL, small)):
        upd, _ = dc({"curator": [reply], "solver": ["ANSWER: 5"]}, **cfg)
        assert upd.step(T1).candidate_memory == want, (reply, cfg)


def test_extract_first_exact():
    assert extract_cheatsheet_first("a <cheatsheet> x </cheatsheet> <cheatsheet>y</cheatsheet>") == "x"
    assert extract_cheatsheet_first("</cheatsheet><cheatsheet>tail only") == "tail only"
    assert extract_cheatsheet_first("") == ""


def test_reasoning_visible_to_parsers_option():
    """The paper preset: the parsers see the thinking, as the authors' do; parse_reasoning=False (small)
    strips it. DC-RS stores the thinking with the answer for retrieval, as the authors' model_output."""
    reply = ChatResult(text="no block here", reasoning="<cheatsheet>FROM THINKING</cheatsheet>")
    upd, _ = dc({"curator": [reply], "solver": ["ANSWER: 5"]}, parse_reasoning=False)
    assert upd.step(T1).candidate_memory == "(empty)"
    assert upd.bank.records[0]["output"] == "ANSWER: 5"
    upd, _ = dc({"curator": [reply], "solver": [ChatResult(text="ANSWER: 5", reasoning="2+3")]})
    assert upd.step(T1).candidate_memory == "FROM THINKING"
    assert upd.bank.records[0]["output"] == "<think>\n2+3\n</think>\n\nANSWER: 5"


def test_dc_original_fallback_deploys_the_pairs_block():
    upd, _ = dc({"curator": ["<cheatsheet>S1</cheatsheet>", "I forgot the tags"], "solver": ["ANSWER: 5"] * 2},
                fallback="dc_original")
    upd.step(T1)
    out = upd.step(T3)
    assert out.candidate_rejected is None
    assert out.candidate_memory.startswith("### PREVIOUS SOLUTIONS (START)")
    assert "#### Previous Input #1 (Similarity: 0.75):\nadd two and three" in out.candidate_memory
    assert out.info["branch"] == "no complete block; dc_original fallback: retrieved-pairs block deployed"
    upd2, _ = dc({"curator": ["<cheatsheet>S1</cheatsheet>", "I forgot the tags"], "solver": ["ANSWER: 5"] * 2})
    upd2.step(T1)
    out2 = upd2.step(T3)
    assert (out2.candidate_memory, out2.candidate_rejected) == ("S1", "missing block")


# ---------------------------------------------------------------- item 10: EXECUTE CODE! follow-up
def test_execute_code_follow_up_runs_in_the_sandbox(monkeypatch):
    ran = []

    def fake_run(code, *, limits=None, backend="auto"):
        ran.append((code, limits.wall_s))
        return SandboxResult(status="passed", returncode=0, stdout="6\n")

    monkeypatch.setattr(dc_mod, "run_python", fake_run)
    monkeypatch.setattr(dc_mod, "code_sandbox", lambda backend="auto", allow_weak=False: "bwrap")
    first = "Let me compute.\n```python\nprint(2 + 4)\n```\nEXECUTE CODE!"
    upd, llm = dc({"curator": ["<cheatsheet>S</cheatsheet>"], "solver": [first, "So ANSWER: 6"]})
    out = upd.step(T3)
    assert ran == [("print(2 + 4)\n", 15.0)]
    assert [c.role for c in out.calls] == ["curator", "solver", "solver"]
    follow = out.calls[2].messages
    assert follow[1] == {"role": "assistant", "content": "Let me compute.\n```python\nprint(2 + 4)\n```\n"
                         "EXECUTE CODE!\n\nExecution result (passed, exit code 0):\n6\n"}
    assert out.output.text.endswith("6\n\n\nSo ANSWER: 6") and out.score.correct
    assert out.info["exec"] == {"status": "passed", "returncode": 0, "sandbox": "bwrap"}
    # replay (solve_with_memory) never executes code; a directive without a block right before it is not run
    upd2, _ = dc({"curator": ["<cheatsheet>S</cheatsheet>"], "solver": ["EXECUTE CODE! ANSWER: 6"]})
    o2 = upd2.step(T3)
    assert len(o2.calls) == 2 and o2.info["exec"]["status"] == "not run"
    upd3, _ = dc({"curator": ["<cheatsheet>S</cheatsheet>"], "solver": [first]}, **DC_SMALL)
    assert len(upd3.step(T3).calls) == 2 and ran == [("print(2 + 4)\n", 15.0)]


# ---------------------------------------------------------------- item 6: ExpeL rule operations
OPS_REPLY = """Based on this I propose:
ADD 3: - verify the final   answer by plugging it back
**AGREE 1: Check units**
EDIT 2: Use substitution for systems of equations
REMOVE 7: check units.
ADD: Check units.
"""
RULES = [["Check units.", 3], ["Use substitution for systems of equations.", 2]]


def test_paper_rule_operations_exact():
    ops, dropped = parse_ops_paper(OPS_REPLY)
    assert [(o.op, o.num, o.text) for o in ops] == [
        ("ADD", 3, "verify the final answer by plugging it back."),
        ("AGREE", 1, "Check units**."),
        ("EDIT", 2, "Use substitution for systems of equations."),
        ("REMOVE", 7, "check units."),
        ("ADD", None, "Check units."),
    ] and dropped == []
    rules, applied, dropped = apply_ops_paper(RULES, ops, 20)
    assert rules == [["Check units.", 3], ["Use substitution for systems of equations.", 3],
                     ["verify the final answer by plugging it back.", 2]]
    assert [(a["op"], a["applied_as"]) for a in applied] == [("EDIT", "AGREE"), ("ADD", "ADD")]
    assert [d["reason"] for d in dropped] == ["no rule matches the text", "no rule matches the text",
                                              "duplicate rule"]


def test_paper_agree_remove_by_containment_ignore_number():
    ops, _ = parse_ops_paper("AGREE 9: Check units\nREMOVE 1: systems of equations\n"
                             "REMOVE 2: Use substitution for systems of equations and more\nEDIT 5: brand new text")
    rules, applied, dropped = apply_ops_paper(RULES, ops, 2)
    # REMOVE at capacity (2 >= 2): -3 -> rule 2 dies; AGREE hits rule 1 by text although numbered 9; EDIT 5 dropped
    assert rules == [["Check units.", 4]]
    # the appended period decides containment: "...equations and more." does not contain "...equations."
    assert [d["reason"] for d in dropped] == ["no rule matches the text", "rule number out of range"]
    assert normalize_rule_paper("  -  a   b ") == "a b." and normalize_rule_paper(" - ") == ""


def test_expel_updater_uses_paper_ops_by_default_and_strict_as_option():
    upd, _ = expel()
    upd.rules = [list(r) for r in RULES]
    upd.apply_curator_text(OPS_REPLY)
    assert upd.memory_text() == ("1. Check units.\n2. Use substitution for systems of equations.\n"
                                 "3. verify the final answer by plugging it back.")
    strict, _ = expel(**EXPEL_SMALL)
    strict.rules = [list(r) for r in RULES]
    strict.apply_curator_text(OPS_REPLY)
    # strict: line-anchored (the bold AGREE is dropped), REMOVE 7 out of range, no period added, bullet kept
    assert strict.memory_text() == ("1. Check units.\n2. Use substitution for systems of equations.\n"
                                    "3. - verify the final answer by plugging it back")


# ---------------------------------------------------------------- item 7: ExpeL scoring
def test_expel_first_block_in_stream_and_raw_output_in_replay():
    two = "<final_answer>ANSWER: 6</final_answer> then <final_answer>ANSWER: 7</final_answer>"
    upd, _ = expel({"solver": [two]}, max_tries=1)
    assert upd.step(T3).score.correct  # first block: 6
    small, _ = expel({"solver": [two]}, max_tries=1, **EXPEL_SMALL)
    assert not small.step(T3).score.correct  # last block: 7
    # replay: the raw output goes to the checker (ExactFamily takes the LAST "ANSWER:" of the whole text)
    raw = "<final_answer>ANSWER: 6</final_answer>\nwait, ANSWER: 9"
    upd2, llm2 = expel({"janus": [raw]})
    [(_, s)] = upd2.solve_with_memory("(empty)", [T3])
    assert (s.correct, s.extracted) == (False, "9")
    small2, _ = expel({"janus": [raw]}, **EXPEL_SMALL)
    [(_, s2)] = small2.solve_with_memory("(empty)", [T3])
    assert (s2.correct, s2.extracted) == (True, "6")
    assert llm2.calls[0]["params"]["presence_penalty"] == 1.0


# ---------------------------------------------------------------- item 8: ExpeL multi-field retrieval
def test_expel_multi_field_retrieval_matches_on_reflections():
    def responder(messages, role, params):
        if role == "reflection":
            return "<reflection>remember the zebra giraffe trick</reflection>"
        return "<final_answer>ANSWER: 0</final_answer>"  # wrong first, then scripted queue

    upd, llm = expel({"solver": ["<final_answer>ANSWER: 1</final_answer>", "<final_answer>ANSWER: 5</final_answer>",
                                 "<final_answer>ANSWER: 63</final_answer>"]}, responder=responder, max_tries=2)
    llm.push("curator", "ADD: keep going")
    upd.step(T1)  # fails once, reflects, succeeds: case 0 has a reflection document
    upd.step(T2)  # succeeds at once: case 1
    q = HashEncoder().encode(["zebra giraffe"])[0]
    assert [i for i, _ in upd._retrieve(q)] == [0, 1]
    # the authors' fields (retrieval "paper"): task, thought (the first 300 characters: no thought lines),
    # last steps, the joined reflections
    assert [r["field"] for r in upd.docs.records] == ["task", "thought", "step", "reflection", "task", "thought",
                                                      "step"]
    ours, _ = expel(retrieval="multi_field")
    ours.set_state(upd.get_state())
    assert [i for i, _ in ours._retrieve(q)] == [0, 1]
    small, _ = expel(**EXPEL_SMALL)
    small.set_state(upd.get_state())
    assert small._retrieve(q)[0][1] == 0.0  # question-only retrieval cannot see the reflection


def test_c24_sequence_in_the_paper_preset():
    from test_updaters_dc import CURATOR, TASKS, solver_replies

    llm = ScriptedLLM({"curator": list(CURATOR), "solver": solver_replies()})
    upd = make_updater("dc_rs", llm=llm, family=ExactFamily(), encoder=HashEncoder())
    outs = [upd.step(t) for t in TASKS]
    assert [o.candidate_memory for o in outs] == ["Version: 1\nS1"] * 4 + ["tags below.\n<cheatsheet>\nNEW",
                                                                          "draft notes"]
    assert [o.candidate_rejected for o in outs] == [None, "missing block", "missing block", "missing block", None,
                                                    None]


@pytest.mark.parametrize("name", ["exprag", "memory_free"])
def test_presence_penalty_on_every_call_for_the_other_updaters(name):
    from janus_memory.settings.presets import updater_overrides

    for cfg, want in (({}, 1.0), (updater_overrides("small", name), None)):
        llm = ScriptedLLM(responder=lambda m, r, p: "ANSWER: 5")
        upd = make_updater(name, llm=llm, family=ExactFamily(), encoder=HashEncoder(), config=cfg)
        upd.step(T1)
        upd.solve_with_memory(upd.memory_text(), [T1])
        assert [c["params"].get("presence_penalty") for c in llm.calls] == [want, want]
