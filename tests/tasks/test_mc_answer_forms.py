"""MMLU-Pro answer forms ("the correct option is D.", "Answer: Option D", $\\text{D}$, $D$), with the
first-match false positives of C11 kept out. Exact letters and sources."""
from __future__ import annotations

import pytest

from janus_memory.tasks.extract_mc import extract_choice

J = "ABCDEFGHIJ"


@pytest.mark.parametrize("text,letter,source", [
    ("the correct option is D.", "D", "correct_is"),
    ("After weighing each, the correct option is D.", "D", "correct_is"),
    ("Therefore, the correct option is (d).", "D", "correct_is"),
    ("The best choice is (B).", "B", "correct_is"),
    ("So the right answer would be G", "G", "correct_is"),
    ("Answer: Option D", "D", "label"),
    ("**Answer:** Option (C)", "C", "label"),
    ("Final answer: choice J.", "J", "label"),
    ("the correct answer is option G", "G", "answer_is"),
    ("$\\text{D}$", "D", "bare"),
    ("$D$", "D", "bare"),
    ("\\(D\\)", "D", "bare"),
    ("The answer is $\\text{D}$.", "D", "answer_is"),
    ("So the answer is $D$", "D", "answer_is"),
    ("The final answer is \\(\\text{E}\\)", "E", "answer_is"),
    ("final answer: $\\textbf{F}$", "F", "label"),
    ("Answer: $\\boxed{D}$", "D", "boxed"),
    ("Option D is correct.", "D", "confirmed"),
    ("After checking, (B) is the right answer.", "B", "confirmed"),
    ("A is the correct answer because the load is static.", "A", "confirmed"),
    ("Work it out.\n$\\text{H}$", "H", "bare_line"),
    ("The answer is $\\text{(D)}$.", "D", "answer_is"),
    ("$(D)$", "D", "bare"),
    ("the answer is \\textbf{(C)}", "C", "answer_is"),
    ("The correct option is: D", "D", "correct_is"),
    ("The correct option is **D**.", "D", "correct_is"),
    ("Correct option: D", "D", "label"),
    ("the answer is Option D", "D", "answer_is"),
])
def test_new_forms(text, letter, source):
    ex = extract_choice(text, J)
    got_source = "bare_line" if (ex.source == "last_letter" and not ex.strong) else ex.source
    assert (ex.letter, got_source) == (letter, source)


@pytest.mark.parametrize("text,letter", [
    # C11 stays: the last anchored form wins, never the first
    ("At first glance the answer is (B). Re-checking the sign convention, the answer is (D).", "D"),
    ("Answer:\n\nAnswer: C", "C"),
    ("Answer: Let's think step by step. The forces balance. Therefore, the answer is (H).", "H"),
    ("The correct option is B at first sight. Re-checking, the correct option is D.", "D"),
    ("Answer: Option B... no. Answer: Option E", "E"),
    # math-mode letters elsewhere in the reasoning are not answers
    ("Let $A$ be the area and $B$ the base. The answer is (C).", "C"),
    ("The answer is (C). Note that $A$ is the area.", "C"),
    ("The correct option is D; $A$ denotes the amplitude.", "D"),
])
def test_last_form_wins(text, letter):
    assert extract_choice(text, J).letter == letter


@pytest.mark.parametrize("text", [
    "Answer: a force of 10 N",
    "the best option is a bit unclear",
    "This is the correct approach. It is the right way.",
    "A is the area of the circle",
    "a is the correct one",  # lowercase a before "is the correct": an article
    "Let $A$ be the area.",  # a math-mode letter without any answer form is no answer
    "The correct option is (K)",  # not a label of this question
])
def test_not_answers(text):
    ex = extract_choice(text, J)
    assert (ex.letter, ex.strong) == (None, False), ex
