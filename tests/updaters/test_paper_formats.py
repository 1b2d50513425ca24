"""Where prompt wording meets the authors' parsers, with exact values: the DC generator's answer example, ExpeL's
message shape and operation format lines, a reply cut off inside its thinking, the Fig. 4 restore of an ExpeL memory
without rules, and GPQA's option order. The paper preset reproduces the authors' behaviour; each of ours is a named
option (docs/fidelity.md)."""
from __future__ import annotations

import csv
import hashlib
import random

import pytest

from janus_memory.cli.app import main
from janus_memory.errors import ConfigError
from janus_memory.llm.reasoning import normalise_response
from janus_memory.run.build import load_splits
from janus_memory.settings.config import RunConfig, migrate_stored
from janus_memory.settings.presets import updater_overrides
from janus_memory.tasks import get_family, load_split
from janus_memory.tasks.checker_paper import with_checker
from janus_memory.tasks.multiple_choice import gpqa_task
from janus_memory.updaters import make_updater
from janus_memory.updaters.expel_rules import parse_ops_paper
from janus_memory.updaters.prompt_text import load_prompt, thinking_output
from janus_memory.values import ChatResult, Task
from updater_fakes import HashEncoder, ScriptedLLM

GPQA = Task(id="g1", dataset="gpqa", question="Which gas do plants take in?", gold="A",
            meta={"options": ["Carbon dioxide", "Oxygen", "Helium", "Argon"], "labels": "ABCD"})
PAPER_MC = with_checker(get_family("gpqa"), "paper")


def _upd(name: str, llm=None, family=PAPER_MC, **config):
    return make_updater(name, llm=llm or ScriptedLLM(), family=family, encoder=HashEncoder(), config=config)


# ------------------------------------------------------------------ the DC generator's answer example
def test_the_paper_generator_shows_a_choice_in_parentheses():
    text = _upd("dc_rs").solving_messages("(empty)", GPQA)[0]["content"]
    assert ("with the final answer inside the tags written exactly in the format the problem asks for (for example a "
            "\\boxed{...} expression, an option letter in parentheses such as (A), or a complete code block).") in text


def test_bare_keeps_the_earlier_wording_byte_for_byte():
    text = _upd("dc_rs", letter_format="bare").solving_messages("(empty)", GPQA)[0]["content"]
    assert "(for example a \\boxed{...} expression, an option letter, or a complete code block)." in text
    assert "(A)" not in text.split("## CHEATSHEET")[0]
    # a task without options keeps that wording with either setting
    math = Task(id="m1", dataset="gsm8k", question="What is 2 + 2?", gold="4")
    assert _upd("dc_rs", family=get_family("gsm8k")).solving_messages("(empty)", math) == \
        _upd("dc_rs", family=get_family("gsm8k"), letter_format="bare").solving_messages("(empty)", math)
    # the small preset's prompts have no such example either way
    small = _upd("dc_rs", **updater_overrides("small", "dc_rs")).solving_messages("(empty)", GPQA)
    assert [m["role"] for m in small] == ["system", "user"]


def test_letter_format_is_checked():
    with pytest.raises(ValueError, match="config 'letter_format' must be one of"):
        _upd("dc_rs", letter_format="(A)")


@pytest.mark.parametrize("answer,credited", [("<answer>A</answer>", True), ("<answer>(A)</answer>", False),
                                             ("<answer>(A) Carbon dioxide</answer>", True), ("(A)", False),
                                             ("A", True)])
def test_the_authors_gpqa_rule_on_the_two_formats(answer, credited):
    """Why the example matters: the tag's (or the output's) first character is read as the letter."""
    assert PAPER_MC.score(GPQA, ChatResult(text=f"FINAL ANSWER: {answer}" if "<" in answer else answer)).correct \
        is credited


# ------------------------------------------------------------------ a reply cut off inside its thinking
@pytest.mark.parametrize("result,raw", [
    (ChatResult(text="B"), "B"),
    (ChatResult(text="B", reasoning="think"), "<think>\nthink\n</think>\n\nB"),
    (ChatResult(text="", reasoning="Alright, A or", finish_reason="length"), "<think>\nAlright, A or"),
    (ChatResult(text="<final_answer>(", reasoning="done", finish_reason="length"),
     "<think>\ndone\n</think>\n\n<final_answer>("),
    (ChatResult(text="", reasoning="done"), "<think>\ndone\n</think>"),
    (ChatResult(text="", reasoning="", finish_reason="length"), ""),
])
def test_thinking_output(result, raw):
    assert thinking_output(result) == raw


def _served(message: dict) -> ChatResult:
    """A server's reply, normalised as every backend's is."""
    return normalise_response({"choices": [{"message": message, "finish_reason": "length"}]},
                              [{"role": "user", "content": "q"}])


@pytest.mark.parametrize("message", [
    {"content": "<think>\nAlright, the gas here"},  # the thinking in the content, never closed
    {"content": None, "reasoning_content": "Alright, the gas here"},  # a reasoning parser's field
    {"content": "", "reasoning": "Alright, the gas here"},
])
def test_a_cut_off_thinking_is_not_read_as_the_letter_a(message):
    """The ExpeL stream check of the paper preset: "Alright, ..." must not pass the first-character rule for a gold
    A; the try is kept as the authors keep it (the unclosed <think> and the thinking)."""
    upd = _upd("expel")
    res = _served(message)
    assert (res.text, res.reasoning, res.truncated) == ("", "Alright, the gas here", True)
    assert upd.score(GPQA, res).correct is False
    assert upd.raw_output(res) == "<think>\nAlright, the gas here"
    # the gold text in the cut-off thinking is still credited by the authors' fallback
    gold_in = _served({"content": "<think>\nAlright, carbon dioxide it is"})
    assert upd.score(GPQA, gold_in).correct is True
    # the DC-RS pool keeps the same raw output
    assert _upd("dc_rs").stored_output(res) == "<think>\nAlright, the gas here"


def test_the_small_preset_keeps_the_visible_text_of_a_cut_off_reply():
    res = _served({"content": "<think>\nAlright"})
    assert _upd("expel", **updater_overrides("small", "expel")).raw_output(res) == "Alright"
    assert _upd("dc_rs", **updater_overrides("small", "dc_rs")).stored_output(res) == "Alright"


# ------------------------------------------------------------------ ExpeL: message shape, format lines
def test_expel_solver_is_one_text_with_sections_in_the_paper_preset():
    upd = _upd("expel")
    msgs = upd.solving_messages("1. Check units.", GPQA)
    system = load_prompt("expel_solver_system")
    assert len(msgs) == 1 and msgs[0]["role"] == "user"
    head = f"[SYSTEM]\n{system}\n\n[HUMAN]\n# SOLVED EXAMPLES RETRIEVED FROM EARLIER PROBLEMS\n(none)\n\n"
    assert msgs[0]["content"].startswith(head)
    roles = _upd("expel", message_shape="system_user").solving_messages("1. Check units.", GPQA)
    assert [m["role"] for m in roles] == ["system", "user"] and roles[0]["content"] == system
    assert msgs[0]["content"] == f"[SYSTEM]\n{system}\n\n[HUMAN]\n{roles[1]['content']}"  # same words


def test_the_paper_solver_sections_follow_the_authors_order():
    """Examples, rules, notes, attempt, answer format, problem; "(none)" for no example, "(empty)" for no rule and
    for no note. The small preset's layout puts the rules first and shows "(none)" for no note."""
    human = _upd("expel").solving_messages("(empty)", GPQA)[0]["content"].split("[HUMAN]\n", 1)[1]
    assert human == (
        "# SOLVED EXAMPLES RETRIEVED FROM EARLIER PROBLEMS\n(none)\n\n# RULES LEARNED SO FAR\n(empty)\n\n"
        "# NOTES FROM YOUR FAILED ATTEMPTS AT THIS SAME PROBLEM\n(empty)\n\n# ATTEMPT: 1\n\n"
        "# ANSWER FORMAT (REQUIRED)\nReply with exactly:\n<trajectory>your step-by-step reasoning, kept short"
        "</trajectory>\n<final_answer>the final answer alone</final_answer>\n\n# PROBLEM TO SOLVE\n"
        + PAPER_MC.prompt(GPQA))
    old = _upd("expel", solver_layout="rules_first").solving_messages("(empty)", GPQA)[0]["content"]
    assert old.split("[HUMAN]\n", 1)[1] == (
        "# RULES LEARNED FROM EARLIER PROBLEMS\n(empty)\n\n# SUCCESSFUL EXAMPLES FROM EARLIER PROBLEMS\n(none)\n\n"
        "# NOTES FROM YOUR FAILED ATTEMPTS AT THIS PROBLEM\n(none)\n\n# ATTEMPT 1\nWrite your step-by-step reasoning "
        "inside <trajectory>...</trajectory>, then the final answer inside <final_answer>...</final_answer>, written "
        "exactly in the form the problem below asks for.\n\n# PROBLEM\n" + PAPER_MC.prompt(GPQA))
    assert updater_overrides("small", "expel")["solver_layout"] == "rules_first"
    with pytest.raises(ValueError, match="config 'solver_layout' must be one of"):
        _upd("expel", solver_layout="examples_first")


@pytest.mark.parametrize("layout,empty", [("paper", "(empty)"), ("rules_first", "(none)")])
def test_the_notes_placeholder_of_the_solver_and_reflection_prompts(layout, empty):
    """Two failed tries: the first reflection prompt shows the placeholder, the second try the note."""
    llm = ScriptedLLM({
        "solver": [ChatResult(text="<trajectory>t1</trajectory><final_answer>B</final_answer>"),
                   ChatResult(text="<trajectory>t2</trajectory><final_answer>C</final_answer>")],
        "reflection": ["<reflection>name the gas</reflection>"],
    })
    _upd("expel", llm=llm, max_tries=2, solver_layout=layout).step(GPQA)
    solver = [c["messages"][-1]["content"] for c in llm.calls if c["role"] == "solver"]
    reflection = [c["messages"][0]["content"] for c in llm.calls if c["role"] == "reflection"]
    notes = "# NOTES FROM YOUR FAILED ATTEMPTS AT THIS" + (" SAME" if layout == "paper" else "") + " PROBLEM\n"
    assert f"{notes}{empty}\n\n" in solver[0] and f"{notes}- name the gas\n\n" in solver[1]
    assert len(reflection) == 1 and f"# EARLIER NOTES\n{empty}\n\n# PROBLEM\n" in reflection[0]


def test_the_paper_format_lines_cannot_be_read_as_operations():
    paper, short = load_prompt("expel_ops_format_paper"), load_prompt("expel_ops_format")
    assert parse_ops_paper(paper) == ([], [])
    ops, dropped = parse_ops_paper(short)
    assert [(o.op, o.num, o.text) for o in ops] == [("ADD", None, "<a new rule>.")] and dropped == []


@pytest.mark.parametrize("ops_format,rules", [
    ("paper", [["Name the gas first.", 2]]),
    ("short", [["<a new rule>.", 2], ["Name the gas first.", 2]]),
])
def test_a_curator_thinking_that_restates_the_format(ops_format, rules):
    """The pair curator's thinking restates the format it was given, then the answer holds one operation."""
    fmt = load_prompt("expel_ops_format_paper" if ops_format == "paper" else "expel_ops_format")
    llm = ScriptedLLM({
        "solver": [ChatResult(text="<trajectory>t1</trajectory><final_answer>B</final_answer>"),
                   ChatResult(text="<trajectory>t2</trajectory><final_answer>A</final_answer>")],
        "reflection": ["<reflection>name it</reflection>"],
        "curator": [ChatResult(text="ADD 1: Name the gas first.", reasoning=f"I may write:\n{fmt}\nSo:")],
    })
    upd = _upd("expel", llm=llm, max_tries=2, ops_format=ops_format)
    upd.step(GPQA)
    assert upd.rules == rules
    curator = [c for c in llm.calls if c["role"] == "curator"][0]["messages"][0]["content"]
    assert curator.endswith(fmt)


def test_the_small_preset_keeps_our_expel_prompts():
    small = updater_overrides("small", "expel")
    assert (small["message_shape"], small["ops_format"]) == ("system_user", "short")
    with pytest.raises(ValueError, match="config 'message_shape' must be one of"):
        _upd("expel", message_shape="one")
    with pytest.raises(ValueError, match="config 'ops_format' must be one of"):
        _upd("expel", ops_format="long")


# ------------------------------------------------------------------ Fig. 4 restore of ExpeL rules
@pytest.mark.parametrize("rules,restored,text", [
    ([], [["(empty).", 2]], "1. (empty)."),
    ([["Check units.", 5], ["Name the gas.", 3]], [["Check units.", 2], ["Name the gas.", 2]],
     "1. Check units.\n2. Name the gas."),
    ([["check units", 4]], [["check units.", 2]], "1. check units."),  # a strict-mode rule gets the period
    ([["Rule 1", 3], ["Keep it.", 2]], [["Keep it.", 2]], "1. Keep it."),  # a placeholder is not read back
    # a rule text holding a line break: each line is stripped before its number is dropped, as the authors do
    ([["Check units.\n  3. Then round.", 3]], [["Check units.", 2], ["Then round.", 2]],
     "1. Check units.\n2. Then round."),
])
def test_restore_as_logged_reads_the_logged_memory_back(rules, restored, text):
    upd = _upd("expel")
    upd.rules = [list(r) for r in rules]
    upd.restore_as_logged()
    assert upd.rules == restored and upd.memory_text() == text


# ------------------------------------------------------------------ GPQA option order
ROW = {"Question": "  Which gas do plants take in?  ", "Correct Answer": "Carbon dioxide",
       "Incorrect Answer 1": "Oxygen", "Incorrect Answer 2": "Helium", "Incorrect Answer 3": "Argon",
       "Record ID": "recA"}


def test_question_order_depends_on_the_question_alone():
    tasks = [gpqa_task({**ROW, "Record ID": rid}, seed, option_order="question")
             for rid in ("recA", "recB") for seed in (0, 1, 77)]
    assert {tuple(t.meta["options"]) for t in tasks} == {("Carbon dioxide", "Oxygen", "Helium", "Argon")}
    assert {t.gold for t in tasks} == {"A"} and {t.question for t in tasks} == {"Which gas do plants take in?"}
    # the authors' rule: random.Random(int(first 16 hex digits of sha256(Question as the file holds it), 16))
    # shuffles [correct, incorrect 1, 2, 3]; the question's spaces at its ends are part of the seed
    for q, want in ((ROW["Question"], ["Carbon dioxide", "Oxygen", "Helium", "Argon"]),
                    (ROW["Question"].strip(), ["Carbon dioxide", "Oxygen", "Argon", "Helium"])):
        opts = ["Carbon dioxide", "Oxygen", "Helium", "Argon"]
        random.Random(int(hashlib.sha256(q.encode("utf-8")).hexdigest()[:16], 16)).shuffle(opts)
        assert opts == want
        assert gpqa_task({**ROW, "Question": q}, 5, option_order="question").meta["options"] == want
    newline = gpqa_task({**ROW, "Question": ROW["Question"].strip() + "\n"}, 0, option_order="question")
    assert newline.meta["options"] == ["Argon", "Helium", "Carbon dioxide", "Oxygen"] and newline.gold == "C"
    seeded = {tuple(gpqa_task(ROW, s).meta["options"]) for s in range(6)}
    assert len(seeded) > 1  # ours: the split seed moves the options
    with pytest.raises(ValueError, match="option_order must be one of"):
        gpqa_task(ROW, 0, option_order="fixed")


def _gpqa_files(folder):
    rows = [{**ROW, "Question": f"Q{i} {ROW['Question']}", "Record ID": f"r{i}"} for i in range(6)]
    (folder / "gpqa").mkdir()
    for name, part in (("gpqa_main.csv", rows), ("gpqa_diamond.csv", rows[4:])):
        with open(folder / "gpqa" / name, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(ROW))
            w.writeheader()
            w.writerows(part)
    return folder


def test_the_run_settings_reach_the_gpqa_loader(tmp_path):
    folder = _gpqa_files(tmp_path)
    orders = {}
    for preset, seed in (("paper", 0), ("paper", 3), ("small", 0), ("small", 3)):
        cfg = RunConfig.parse({"dataset": "gpqa", "data_dir": str(folder), "preset": preset, "seed": seed})
        stream, test = load_splits(cfg)
        assert stream.info["option_order"] == test.info["option_order"] == cfg.option_order_mode()
        orders[preset, seed] = {t.id: tuple(t.meta["options"]) for t in stream.tasks + test.tasks}
    assert orders["paper", 0] == orders["paper", 3] != orders["small", 0]
    assert orders["small", 0] != orders["small", 3]
    cfg = RunConfig.parse({"dataset": "gpqa", "data_dir": str(folder), "option_order": "seeded"})
    assert {t.id: tuple(t.meta["options"]) for t in load_splits(cfg)[0].tasks} == {
        k: v for k, v in orders["small", 0].items() if k in {"r0", "r1", "r2", "r3"}}
    # another dataset ignores the option and does not record it
    split = load_split("mmlu_pro_eng", "stream", limit=2, options={"option_order": "question"})
    assert "option_order" not in split.info


def test_option_order_setting_and_flag(tmp_path):
    assert (RunConfig().option_order_mode(), RunConfig(preset="small").option_order_mode()) == ("question", "seeded")
    with pytest.raises(ConfigError, match="option_order"):
        RunConfig.parse({"option_order": "random"})
    assert RunConfig.parse(migrate_stored({"preset": "paper", "twin_cache": None})).option_order_mode() == "seeded"
    rc = main(["run", "--backend", "fake", "--encoder", "hashing", "--quiet", "--dataset", "gpqa", "--data-dir",
               str(_gpqa_files(tmp_path)), "--updater", "dc_rs", "--controller", "none", "--option-order", "seeded",
               "--stream-size", "2", "--test-size", "1", "--out", str(tmp_path / "run"), "--no-cache"])
    assert rc == 0
    stored = (tmp_path / "run" / "config.json").read_text()
    assert '"option_order": "seeded"' in stored


def test_the_run_header_names_the_gpqa_option_order(tmp_path, capsys):
    args = ["run", "--backend", "fake", "--encoder", "hashing", "--dataset", "gpqa", "--data-dir",
            str(_gpqa_files(tmp_path)), "--updater", "memory_free", "--controller", "none", "--stream-size", "1",
            "--test-size", "1", "--no-cache"]
    assert main(args + ["--out", str(tmp_path / "a")]) == 0
    assert ("GPQA option order: question (shuffled by the question alone, the same for every seed: the authors')"
            in capsys.readouterr().out.splitlines())
    assert main(args + ["--option-order", "seeded", "--out", str(tmp_path / "b")]) == 0
    assert ("GPQA option order: seeded (by record id and --seed; the authors': question)"
            in capsys.readouterr().out.splitlines())
