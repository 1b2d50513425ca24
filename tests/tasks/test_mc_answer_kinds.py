"""Multiple-choice answer forms: a JSON answer key, "which is option D", a heading then "D. text", a letter in
quotes; option lines that echo the options or evaluate an option are not the choice; several letters are no single
answer; hedges outside the anchored forms get no credit through the last-letter fallback. Exact letters and
verdicts, look-alikes included."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family
from janus_memory.tasks.extract_mc import extract_choice
from janus_memory.values import Task

J = "ABCDEFGHIJ"


def mc(gold, reply):
    t = Task(id="t", dataset="mmlu_pro_phy", question="q", gold=gold,
             meta={"options": [f"{10 * (i + 1)} N" for i in range(10)], "labels": J})
    s = get_family("mmlu_pro_phy").score(t, reply)
    return s.correct, s.extracted, s.status


# ------------------------------------------------------------------------- legitimate forms are read

@pytest.mark.parametrize("text", [
    '{"answer": "D"}',
    'Here is my answer: {"answer": "(D)"}',
    '```json\n{"answer": "D", "explanation": "the net force is 40 N"}\n```',
    "{'answer': 'D'}",
    '{"final_answer": "D"}',
    "The net force is 40 N, which is option D.",
    "That gives 40 N, which corresponds to option (D).",
    "This comes to 40 N, which is choice D.",
    "The force is 40 N, which is (D).",
    "## Final Answer\nD. 40 N",
    "Answer\n\n(D) 40 N",
    "**Final Answer**\n\nD) 40 N\n\nThe normal force cancels gravity.",
    "Final answer:\nD",
    'The answer is "D".',
    "Answer: 'D'",
    "I choose “D”.",
    "The correct option is ‘D’.",
])
def test_legitimate_answer_forms_are_read(text):
    assert extract_choice(text, J).letter == "D"
    assert mc("D", text) == (True, "D", "ok")
    assert mc("B", text)[0] is False


@pytest.mark.parametrize("text", [
    '{"answers": ["B", "D"]}',  # several letters
    "which is why option D fails.",  # no answer form
    "The letter 'D' marks the pivot in the figure, which is at the top.",
    'The label on the pivot is "D".',
    "Answer:\nA. 10 N\nB. 20 N\nC. 30 N\nD. 40 N",  # a heading over an echoed list of options
])
def test_look_alikes_of_those_forms_are_not_an_answer(text):
    assert mc("D", text)[0] is False


# ------------------------------------------------------------------------- option lines that are not the choice

@pytest.mark.parametrize("text", [
    "Let me restate the options:\n(A) 10 N\n(B) 20 N\n(C) 30 N\n(D) 40 N",
    "(A) 10 N\n(B) 20 N\n(C) 30 N\n(D) 40 N\nI am not sure which one.",
    "(A) is wrong: the sign is off.\n(B) is wrong: it ignores friction.\n(C) is right only for a frictionless plane.\n"
    "(D) is correct for an ideal gas, but this gas is real.",
    "Checking each option:\nA) too small\nB) too large\nD) - wrong, it double counts the weight",
    "(D) is correct for an ideal gas, but the gas here is real.",
    "Option (D) is right only if the plane is frictionless.",
])
def test_echoed_and_evaluated_option_lines_are_not_the_choice(text):
    assert mc("D", text)[0] is False


@pytest.mark.parametrize("text,letter", [
    ("(A) is wrong: the sign is off.\n(D) is correct for an ideal gas, but this gas is real.\nAnswer: B", "B"),
    ("The force is 40 N.\n(D) 40 N", "D"),
    ("(D) 40 N\nThe normal force cancels gravity, so only the applied force remains.", "D"),
    ("Option D is correct.", "D"),
    ("(D) is correct because the gas is ideal.", "D"),
])
def test_a_real_choice_beside_them_still_counts(text, letter):
    assert mc(letter, text) == (True, letter, "ok")


# ------------------------------------------------------------------------- several letters are no single answer

@pytest.mark.parametrize("text", [
    "<answer>A, C</answer>", "<answer>B and D</answer>", "<answer>(B) & (D)</answer>", "The answers are B and D.",
    "The correct options are (B) and (D).", "Both B and D are correct.", "B and D are both correct.",
    "Answer: B, D", "\\boxed{B, D}", "\\boxed{BD}", "The answer is B and D.", "<answer>B/D</answer>",
])
def test_several_letters_are_not_credited_as_one(text):
    assert extract_choice(text, J).letter is None
    assert mc("B", text)[0] is False and mc("D", text)[0] is False


@pytest.mark.parametrize("text,letter", [
    ("<answer>(D) 40 N</answer>", "D"),
    ("The answer is D and it matches the measured value.", "D"),
    ("The answer is B. Options A and C are wrong.", "B"),
    ("The options are (A) 10 N and (B) 20 N... The answer is (B).", "B"),
    ("The answers are B and D for the two parts; for this part the answer is (D).", "D"),
])
def test_one_letter_beside_other_letters_still_counts(text, letter):
    assert extract_choice(text, J).letter == letter


# ------------------------------------------------------------------------- hedges outside the anchored forms

@pytest.mark.parametrize("text", [
    "It's either (B) or (C).", "It is likely (B), though (C) is also possible.", "Probably (C).",
    "I'd say (B) or maybe (C).", "Could be (C).", "(B)/(C), I can't decide.", "Not sure, perhaps (C)",
    "The answer is (B), though (C) is also possible.", "The answer is likely B, though C is also possible.",
])
def test_a_hedge_is_not_credited_through_the_fallback(text):
    assert mc("C", text)[0] is False
    assert mc("B", text)[0] is False


@pytest.mark.parametrize("text,letter", [
    ("The force doubles, so (C).", "C"),
    ("Between (A) and (C) I lean to (C)", "C"),
    ("(B) fails the units check. (C)", "C"),
])
def test_a_plain_last_letter_is_still_a_fallback(text, letter):
    assert mc(letter, text) == (True, letter, "fallback")


@pytest.mark.parametrize("text,letter", [
    ("Answer\n\nA. 10 N", "A"), ("## Final Answer\nI. 90 N", "I"), ('{"answer": "A"}', "A"), ("which is option A.", "A"),
])
def test_the_new_forms_read_the_letters_that_look_like_words(text, letter):
    assert extract_choice(text, J).letter == letter


def test_a_lowercase_article_after_which_is_the_answer_is_no_letter():
    assert extract_choice("This gives the answer a force of 10 N.", J).letter is None


@pytest.mark.parametrize("text", [
    "The options are:\n(A) $2\\pi$\n(B) $\\pi$\n(C) $\\frac{\\pi}{2}$\n(D) $4\\pi$",  # "$\n(B) $" is no math-mode B
    "Options:\n(A) |H|cos(wt)\n(B) \x0bertH\x0bertcos(wt - p)\n(C) |H|exp(jwt)\n(D) |H|sin(wt)",  # \v inside a text
    "Options:\n(A) P(R) = 2/3, P(B) = 1/3\n(B) P(R) = 5/14, P(B) = 4/14\n(C) P(R) = 1/2, P(B) = 1/4",
    "Options:\n(A) 10 N\n(B) \nho = 3\n(C) 30 N\n(D) 40 N",  # an option whose text starts on the next line
])
def test_an_echoed_options_list_gives_no_letter_from_inside_its_lines(text):
    assert extract_choice(text, J).letter is None
