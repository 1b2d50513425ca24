"""The authors' checkers (checker: paper, tasks/checker_paper.py): exact verdicts, including the lenient ones the
paper preset keeps on purpose, and our strict verdict recorded beside every paper verdict."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family
from janus_memory.tasks.checker_paper import (
    PaperCheckedFamily,
    answer_tag,
    checked_text,
    gpqa_correct,
    mmlu_pro_correct,
    mmlu_pro_letter,
    strict_of,
    with_checker,
)
from janus_memory.values import ChatResult, Task

GPQA = Task(id="g1", dataset="gpqa", question="Which gas?", gold="C",
            meta={"options": ["Neon", "Argon", "Carbon dioxide", "Helium"], "labels": "ABCD"})
MMLU = Task(id="m1", dataset="mmlu_pro_eng", question="Which unit?", gold="B",
            meta={"options": ["volt", "ohm meter", "tesla", "farad", "henry"], "labels": "ABCDE"})


def test_answer_tag_takes_the_last_answer_block_then_final_answer():
    assert answer_tag("<answer> B </answer> then <ANSWER>c</ANSWER>") == "c"
    assert answer_tag("<final_answer>D</final_answer>") == "D"
    assert answer_tag("<answer>A</answer><final_answer>D</final_answer>") == "A"  # <answer> first
    assert answer_tag("<answer>\nmulti\nline\n</answer>") == "multi\nline"
    assert answer_tag("<answer></answer>") == "" and answer_tag("<answer>B") == "" and answer_tag("") == ""


@pytest.mark.parametrize("text,want", [
    ("<answer>C</answer>", True),
    ("<answer>c) carbon dioxide</answer>", True),          # first character of the tag
    ("<answer>The gas is Carbon  Dioxide</answer>", True),  # gold text inside the tag (white space squashed)
    ("<answer>B</answer>", False),
    ("C", True), ("  c because", True),                    # first character of the whole output
    ("<answer>B</answer> although carbon dioxide was tempting", True),  # lenient: gold text anywhere
    ("<think>maybe carbon dioxide?</think>\n<answer>A</answer>", True),  # lenient: gold text in the thinking
    ("<answer>A</answer>", False), ("", False),
    ("Answer: (C)", False),                                  # no tag, first character 'a', no gold text
])
def test_gpqa_rule(text, want):
    assert gpqa_correct(text, "C", "Carbon dioxide") is want


@pytest.mark.parametrize("text,want", [
    ("The answer is (B).", "B"), ("FINAL ANSWER: c", "C"), ("option d", "D"), ("\\boxed{E}", "E"),
    ("<final_answer> A </final_answer>", "A"), ("(b).", "B"), ("b", "B"),
    ("I think A is wrong; E fits", "E"),             # last stand-alone letter
    ("a volt is not it", "A"),                       # the article read as a letter (upper-cased prose)
    ("The answer is J", ""),                         # J is no valid label with five options ... and no fallback
    ("nothing here", ""), ("", ""),
])
def test_mmlu_pro_letter(text, want):
    assert mmlu_pro_letter(text, "ABCDE") == want


def test_mmlu_pro_rule():
    assert mmlu_pro_correct("<answer>B</answer>", "ABCDE", "B", "ohm meter")
    assert mmlu_pro_correct("<answer>A</answer> the answer is B", "ABCDE", "B", "ohm meter")  # whole output: last
    assert mmlu_pro_correct("<answer>A</answer> an Ohm   Meter maybe", "ABCDE", "B", "ohm meter")  # gold text
    assert not mmlu_pro_correct("<answer>A</answer>", "ABCDE", "B", "ohm meter")
    assert not mmlu_pro_correct("", "ABCDE", "B", "ohm meter")


def test_checked_text_puts_the_thinking_first():
    assert checked_text(ChatResult(text="<answer>A</answer>", reasoning="hmm")) == (
        "<think>\nhmm\n</think>\n\n<answer>A</answer>")
    assert checked_text(ChatResult(text="C")) == "C" and checked_text("raw") == "raw"


def test_paper_family_keeps_the_strict_verdict_beside():
    fam = with_checker(get_family("gpqa"), "paper")
    assert isinstance(fam, PaperCheckedFamily) and fam.name == "mc" and fam.prompt(GPQA) != get_family("gpqa").prompt(GPQA)
    # strict reads the letter A (wrong); the paper rule credits the gold text in the thinking
    out = ChatResult(text="The answer is (A).", reasoning="carbon dioxide is heavier... no, neon")
    sc = fam.score(GPQA, out)
    assert sc.correct is True and strict_of(sc) is False
    assert (sc.extracted, sc.status, sc.detail["checker"], sc.detail["strict_correct"], sc.detail["strict_status"]) == (
        "A", "ok", "paper", False, "ok")
    right = fam.score(GPQA, ChatResult(text="<answer>C</answer>"))
    assert right.correct is True and strict_of(right) is True
    # our format outside a tag: strict reads C, the authors' GPQA rule finds no tag, first letter 't', no gold text
    ours = fam.score(GPQA, ChatResult(text="The answer is (C)."))
    assert ours.correct is False and strict_of(ours) is True
    wrong = fam.score(GPQA, ChatResult(text="The answer is (B)."))
    assert wrong.correct is False and strict_of(wrong) is False
    many = fam.score_many([GPQA, GPQA], [out, ChatResult(text="The answer is (B).")])
    assert [s.correct for s in many] == [True, False] and [strict_of(s) for s in many] == [False, False]
    assert with_checker(get_family("gpqa"), "strict") is get_family("gpqa")
    with pytest.raises(ValueError, match="checker must be one of paper, strict"):
        with_checker(get_family("gpqa"), "lenient")


def test_paper_family_mmlu_and_math():
    fam = with_checker(get_family("mmlu_pro_eng"), "paper")
    sc = fam.score(MMLU, ChatResult(text="Unsure. The answer is (D). An ohm meter would be B."))
    assert sc.correct is True and strict_of(sc) is False  # the last stand-alone letter B; strict reads (D)
    math = with_checker(get_family("gsm8k"), "paper")
    t = Task(id="q", dataset="gsm8k", question="?", gold="12")
    box_in_thinking = ChatResult(text="I give up.", reasoning="so it is \\boxed{12}")
    sc = math.score(t, box_in_thinking)
    assert sc.correct is True and strict_of(sc) is False  # the box in the thinking counts for the authors
    assert math.score(t, ChatResult(text="\\boxed{12}")).correct is True
    assert math.score(t, ChatResult(text="\\boxed{13}")).correct is False


def test_other_families_keep_the_strict_verdict():
    fam = with_checker(get_family("apibench_hf"), "paper")
    task = Task(id="a", dataset="apibench_hf", question="q", gold={"api_call": "x"}, meta={})
    strict = get_family("apibench_hf")
    out = ChatResult(text="nothing")
    try:
        want = strict.score(task, out).correct
    except Exception:  # the apibench gold needs its own fields; the paper family must behave the same
        with pytest.raises(Exception):  # noqa: B017 (whatever the strict family raised)
            fam.score(task, out)
        return
    assert fam.score(task, out).correct == want


def test_paper_family_asks_for_the_letter_alone():
    fam = with_checker(get_family("gpqa"), "paper")
    assert fam.prompt_name == "multiple_choice_paper"
    assert fam.prompt(GPQA) == ("Answer the following multiple-choice question.\n\nQuestion: Which gas?\n\nOptions:\n"
                                "A. Neon\nB. Argon\nC. Carbon dioxide\nD. Helium\n\nReason it through carefully, then "
                                "reply with the letter of your final choice alone (A/B/C/D).\n")
    assert with_checker(get_family("gsm8k"), "paper").prompt_name == get_family("gsm8k").prompt_name


def test_a_paper_preset_run_records_both_verdicts(tmp_path, monkeypatch):
    """Fake backend, MMLU-Pro, the paper preset: every test and step record carries strict_correct, the summary
    both accuracies; the small preset records neither."""
    import json

    from janus_memory.cli import main

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    common = ["run", "--backend", "fake", "--encoder", "hashing", "--quiet", "--stream-size", "8", "--test-size", "6",
              "--warmup", "4", "--coverage-size", "2", "--boundary-size", "1", "--fresh-size", "1",
              "--dataset", "mmlu_pro_eng", "--updater", "memory_free", "--controller", "none"]
    assert main([*common, "--out", str(tmp_path / "p")]) == 0
    s = json.loads((tmp_path / "p" / "summary.json").read_text())["methods"]["memory_free"]
    test = [json.loads(x) for x in (tmp_path / "p" / "memory_free" / "test.jsonl").read_text().splitlines()]
    steps = [json.loads(x) for x in (tmp_path / "p" / "memory_free" / "steps.jsonl").read_text().splitlines()]
    assert len(test) == 6 and all("strict_correct" in r for r in test) and all("strict_correct" in r for r in steps)
    assert s["checker"] == "paper"
    assert s["test_correct_strict"] == sum(r["strict_correct"] for r in test)
    assert s["test_correct"] == sum(r["correct"] for r in test)
    assert s["test_accuracy_strict"] == s["test_correct_strict"] / 6
    assert all(r["output"].endswith(("<answer>A</answer>", "<answer>B</answer>", "<answer>C</answer>",
                                     "<answer>D</answer>", "<answer>E</answer>", "<answer>F</answer>",
                                     "<answer>G</answer>", "<answer>H</answer>", "<answer>I</answer>",
                                     "<answer>J</answer>")) for r in test)
    assert main([*common, "--preset", "small", "--out", str(tmp_path / "s")]) == 0
    s2 = json.loads((tmp_path / "s" / "summary.json").read_text())["methods"]["memory_free"]
    assert "checker" not in s2 and "test_accuracy_strict" not in s2
    assert all("strict_correct" not in json.loads(x)
               for x in (tmp_path / "s" / "memory_free" / "test.jsonl").read_text().splitlines())


def test_report_shows_both_accuracies(tmp_path, monkeypatch):
    """janus report prints Table 1 (the run's checker) and the strict table of the same answers; a strict run
    shows the same numbers in both (here: one paper run whose strict accuracy is set lower, as checker leniency
    would make it)."""
    import io
    import json

    from rich.console import Console

    from janus_memory.cli import main
    from janus_memory.report.console import print_report
    from janus_memory.report.report import build_report

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "p"
    assert main(["run", "--backend", "fake", "--encoder", "hashing", "--quiet", "--stream-size", "6", "--test-size",
                 "4", "--dataset", "mmlu_pro_eng", "--updater", "memory_free", "--controller", "none",
                 "--out", str(run)]) == 0
    build_report([str(run)], str(tmp_path / "rep0"))
    md0 = (tmp_path / "rep0" / "report.md").read_text()
    assert ("Table 1 scores with the authors' checker (`checker: paper`); our strict checker gives the same accuracy "
            "in every cell.") in md0 and "## Table 1 with our strict checker" not in md0
    # A second run whose strict verdicts are lower, as checker leniency would make them: every other verdict the
    # strict checker gives is turned wrong (the run's files and database agree; editing summary.json would be damage
    # the store names).
    from janus_memory.tasks.checker_paper import PaperCheckedFamily

    combine, calls = PaperCheckedFamily._combine, []

    def stricter(self, task, output, strict):
        calls.append(task.id)
        score = combine(self, task, output, strict)
        if len(calls) % 2 == 0:
            score.detail["strict_correct"] = False
        return score

    monkeypatch.setattr(PaperCheckedFamily, "_combine", stricter)
    run = tmp_path / "p2"
    assert main(["run", "--backend", "fake", "--encoder", "hashing", "--quiet", "--stream-size", "6", "--test-size",
                 "4", "--dataset", "mmlu_pro_eng", "--updater", "memory_free", "--controller", "none",
                 "--out", str(run), "--no-cache"]) == 0
    summary = json.loads((run / "summary.json").read_text())
    m = summary["methods"]["memory_free"]
    assert (m["test_correct"], m["test_correct_strict"]) == (4, 2)
    res = build_report([str(run)], str(tmp_path / "rep"))
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Table 1 with our strict checker (the same answers)" in md
    strict_md = md.split("## Table 1 with our strict checker")[1]
    assert "| memory_free | 50.0 | 50.0 |" in strict_md and "| memory_free | 100.0 | 100.0 |" in md
    buf = io.StringIO()
    print_report(res, Console(file=buf, width=200))
    out = buf.getvalue()
    assert "Table 1: test accuracy (%)" in out and "Table 1, strict checker (%)" in out
    assert out.index("100.0") < out.index("Table 1, strict checker (%)") < out.index("50.0")
    assert "the difference is checker leniency" in out


def test_the_same_accuracy_line_names_the_strict_rows_of_a_mixed_group():
    """The adversary reported a paper-checker run beside a strict ExpeL run: the line said Table 1 scored with the
    authors' checker, but the ExpeL rows were scored with ours."""
    from janus_memory.report.report import STRICT_SAME, strict_same

    assert strict_same({"same": True, "strict_rows": []}) == STRICT_SAME
    assert strict_same({"same": True, "strict_rows": ["expel", "expel+janus"]}) == (
        "Table 1 scores each run with its own checker: expel, expel+janus with our strict checker (`checker: "
        "strict`), the other rows with the authors' (`checker: paper`); our strict checker gives the same accuracy "
        "in every cell.")
