"""Multiple-choice extraction (C11) and honest accounting of unparsed replies (C12)."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family, summarize
from janus_memory.tasks.extract_mc import extract_choice
from janus_memory.values import ChatResult, Task

J = "ABCDEFGHIJ"


@pytest.mark.parametrize("text,labels,expected", [
    # C11
    ("At first glance the answer is (B). Re-checking the sign convention, the answer is (D).", J, "D"),
    ("Answer:\n\nAnswer: C", J, "C"),
    ("Answer: Let's think step by step. The forces balance. Therefore, the answer is (H).", J, "H"),
    # the accepted forms
    ("<answer>C</answer>", "ABCD", "C"),
    ("reasoning...\n<answer>(B)</answer>", "ABCD", "B"),
    ("so the final answer: D", "ABCD", "D"),
    ("The answer is option G.", J, "G"),
    (r"Thus \boxed{J}", J, "J"),
    (r"Thus \boxed{\text{E}}", J, "E"),
    ("B", "ABCD", "B"),
    ("(C)", "ABCD", "C"),
    ("I compared them.\nBest is (A) over (C)\nC", "ABCD", "C"),
    ("**Answer: B**", "ABCD", "B"),
])
def test_extract(text, labels, expected):
    assert extract_choice(text, labels).letter == expected


@pytest.mark.parametrize("text,labels", [
    ("I think a cat is here", "ABCD"),
    ("The answer is a bit unclear", "ABCD"),
    ("Answer: Let's see", J),
    ("The answer is (E)", "ABCD"),  # E is not a valid label for a 4-option question
    ("", "ABCD"),
])
def test_unparsed(text, labels):
    assert extract_choice(text, labels).letter is None


def _task(i, gold="B", n=10):
    return Task(id=str(i), dataset="mmlu_pro_eng", question=f"q{i}", gold=gold,
                meta={"options": [f"opt{k}" for k in range(n)], "labels": J[:n]})


def test_c12_unparsed_scores_zero_and_is_reported():
    fam = get_family("mmlu_pro_eng")
    tasks = [_task(i) for i in range(10)]
    outputs = ["The answer is (B)"] * 5 + ["The answer is (C)"] * 2 + ["I cannot decide.", "", "Answer: Let's see"]
    for _ in range(3):  # identical on every run (no random credit)
        scores = fam.score_many(tasks, outputs, workers=2)
        summ = summarize(scores)
        assert summ["accuracy"] == 0.5 and summ["unparsed_rate"] == 0.3 and summ["n"] == 10
        assert [s.status for s in scores[7:]] == ["unparsed"] * 3 and not any(s.correct for s in scores[7:])


def test_truncated_and_chatresult():
    fam = get_family("gpqa")
    t = Task(id="r", dataset="gpqa", question="q", gold="A", meta={"options": ["a", "b", "c", "d"], "labels": "ABCD"})
    s = fam.score(t, ChatResult(text="Considering (B) and then", finish_reason="length"))
    assert s.status == "truncated" and not s.correct
    s = fam.score(t, ChatResult(text="The answer is (A)", finish_reason="length"))
    assert s.correct and s.status == "ok"
    s = fam.score(t, ChatResult(text="", reasoning="The answer is (A)"))
    assert s.status == "unparsed"
    with pytest.raises(TypeError):
        fam.score(t, 42)
    with pytest.raises(ValueError):
        fam.score_many([t], [])


def test_faithful_gold_text_substring():
    t = Task(id="r", dataset="gpqa", question="q", gold="C", meta={"options": ["red", "green", "blue", "cyan"],
                                                                   "labels": "ABCD"})
    assert get_family("gpqa", faithful=True).score(t, "It must be blue light").correct
    assert not get_family("gpqa").score(t, "It must be blue light").correct


@pytest.mark.parametrize("text,labels,expected", [
    # lowercase letters in parentheses / after "answer:"
    ("The answer is (b).", "ABCD", "B"),
    ("Answer: c", "ABCD", "C"),
    ("Final answer: (d)", "ABCD", "D"),
    ("answer: j.", J, "J"),
    ("(c)", "ABCD", "C"),
    # bold and boxed
    ("So the correct choice is **C**.\n\n**Answer: C**", "ABCD", "C"),
    ("**Answer:** (D)", "ABCD", "D"),
    (r"Therefore $\boxed{B}$.", "ABCD", "B"),
    (r"\boxed{\textbf{C}}", "ABCD", "C"),
    (r"\boxed{(b)}", "ABCD", "B"),
    (r"\boxed{\text{(D)}}", "ABCD", "D"),
    # "(D) <option text>"
    ("(D) 42 N", "ABCD", "D"),
    ("After balancing the torques:\n\n(B) 3.2 m/s", "ABCD", "B"),
    ("The answer is (D) 42 N", "ABCD", "D"),
    ("Answer: (A) the Doppler effect", "ABCD", "A"),
    ("C) Increase the pressure", "ABCD", "C"),
    # pronouns and articles are never options; a real letter later still counts
    ("Answer: a force of 10 N, so the answer is (C).", "ABCD", "C"),
    ("The answer is A because the field is uniform.", "ABCD", "A"),
    ("The answer is I.", J, "I"),
    ("Answer: I", J, "I"),
])
def test_letter_forms(text, labels, expected):
    assert extract_choice(text, labels).letter == expected


@pytest.mark.parametrize("text,labels", [
    ("Answer: I think the second one is right", J),
    ("Answer: I think it is B.", J),
    ("Answer: a force of 10 N", "ABCD"),
    ("answer: i believe so", J),
    ("The answer is a small number", "ABCD"),
    ("The answer is I would say unclear", J),
    ("Answer: A particle moves faster", "ABCD"),
    ("answer is an integer", "ABCD"),
    ("I am not sure; a guess would be risky.", J),
])
def test_pronouns_and_articles_are_not_options(text, labels):
    assert extract_choice(text, labels).letter is None


def test_weak_letter_is_reported_as_fallback():
    fam = get_family("mmlu_pro_eng")
    t = _task(0, gold="C")
    s = fam.score(t, "Between (A) and (C) I lean to (C)")
    assert (s.correct, s.status, s.extracted) == (True, "fallback", "C")
    s = fam.score(t, "The answer is (C).")
    assert (s.correct, s.status) == (True, "ok")
    # a hedge ("maybe (C)") is no fallback answer: unparsed, like "no idea"
    assert fam.score(t, "maybe (C)").status == "unparsed"
    assert summarize([s, fam.score(t, "so (C)"), fam.score(t, "no idea")])["fallback_rate"] == 1 / 3
