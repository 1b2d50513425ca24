"""Committed answers against later hypothetical, conditional or contrastive mentions; real corrections; replies cut off
while revising their answer. Multiple choice and math alike, with exact verdicts."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family
from janus_memory.tasks.answer_text import mention_rank
from janus_memory.tasks.extract_math import extract_math_answer
from janus_memory.tasks.extract_mc import extract_choice
from janus_memory.values import ChatResult, Task


def mc(gold):
    return Task(id="t", dataset="mmlu_pro_phy", question="q", gold=gold,
                meta={"options": list("abcdefghij"), "labels": "ABCDEFGHIJ"})


def gsm(gold):
    return Task(id="m", dataset="gsm8k", question="q", gold=gold)


def mc_score(gold, out):
    s = get_family("mmlu_pro_phy").score(mc(gold), out)
    return s.correct, s.extracted, s.status


def math_score(gold, out):
    s = get_family("gsm8k").score(gsm(gold), out)
    return s.correct, s.extracted, s.status


# ------------------------------------------------------------------------------- the committed answer stands

@pytest.mark.parametrize("text", [
    "The answer is (B). Option (A) would be right if friction were ignored, but the incline is rough.",
    "The answer is (B).\n\nNote: under the other sign convention the answer would be (C).",
    "The answer is (B). If we ignored friction, the answer is (A).",
    "**Answer: B**\n\n(A common mistake is to forget the normal force, which leads to the answer is (D).)",
    "Answer: (B)\n\nIf the collision were elastic, the correct option would be (A).",
    "The answer is (B); option (D) is correct only for an ideal gas.",
    "The correct answer is (B) rather than (A).",
    "I'll go with (B) instead of (C).",
    "The answer is (B). Assuming no air resistance, the answer is (E) - but the problem includes drag.",
    "The answer is (B).\n\nOtherwise, i.e. for a point charge, the answer is (F).",
])
def test_mc_committed_answer_stands(text):
    assert extract_choice(text, "ABCDEFGHIJ").letter == "B"
    assert mc_score("B", text) == (True, "B", "ok")
    assert mc_score("A", text)[0] is False


@pytest.mark.parametrize("text,gold", [
    ("#### 42\n(forgetting the tax gives the answer is 40)", "42"),
    ("The total is $\\boxed{42}$.\n\n(If you forget the 5% tax, you would get $\\boxed{40}$ instead.)", "42"),
    ("So the answer is 42. Note that under the other rounding convention the answer would be 41.", "42"),
    ("\\boxed{42}\n\nIf instead each ticket cost $6, the answer would be \\boxed{48}.", "42"),
    ("Final Answer: 42\n\nA common mistake is to count the first day twice, giving an answer of 45. "
     "The answer is not 45.", "42"),
    ("The answer is 42, not 40.", "42"),
    ("The answer is 42 rather than 40.", "42"),
    ("Answer: 42\n\n(Ignoring the discount, the answer would be 50.)", "42"),
])
def test_math_committed_answer_stands(text, gold):
    assert extract_math_answer(text).answer == gold
    assert math_score(gold, text)[:2] == (True, gold)
    wrong = str(int(gold) - 2)
    assert math_score(wrong, text)[0] is False


# ------------------------------------------------------------------------------- a real correction replaces it

@pytest.mark.parametrize("text,letter", [
    ("The answer is (A). On reflection, the correct choice is (C).", "C"),
    ("The answer is (A).\n\nWait, I misread the units. The answer is (C).", "C"),
    ("Answer: A\n\nHmm, actually, recomputing the torque, the answer is (C).", "C"),
    ("The answer is (B). Hmm, if I redo the integral correctly, the answer is (D).", "D"),
    ("At first glance the answer is (B), but checking units, the answer is (D).", "D"),
    ("My first guess is (A). If the block slides, though, the answer is (C).", "C"),
    # a justification after the letter is not a condition on it
    ("The answer is (A).\n\nTherefore, the correct answer is **(C)**, since otherwise energy would not be conserved.",
     "C"),
])
def test_mc_real_correction_replaces(text, letter):
    assert mc_score(letter, text) == (True, letter, "ok")


def test_mc_wrong_letter_after_a_real_correction_fails():
    text = "The answer is (B). Wait, I made an error in the sign; the answer is (D)."
    assert mc_score("B", text) == (False, "D", "ok")


@pytest.mark.parametrize("text,value", [
    ("\\boxed{30}\n\nHmm, I counted the first day twice, so the answer is 27.", "27"),
    ("The answer is 30.\nWait, that's wrong: the first day was counted twice. The answer is 27.", "27"),
    ("So the answer is $\\boxed{30}$.\n\nOn reflection, I forgot the discount, so the correct total is 27.\n\n"
     "**Answer: 27**", "27"),
    ("The answer is \\boxed{5}. That is wrong; after fixing the sign the answer is \\boxed{7}.", "7"),
    ("#### 30\nOops, I double-counted Monday. The answer is 27.", "27"),
])
def test_math_real_correction_replaces(text, value):
    assert extract_math_answer(text).answer == value
    assert math_score(value, text) == (True, value, "ok")


def test_math_wrong_number_after_a_real_correction_fails():
    text = "\\boxed{30}\n\nWait, I counted the first day twice, so the answer is 27."
    assert math_score("30", text) == (False, "27", "ok")


def test_a_label_after_the_box_that_is_no_correction_leaves_the_box():
    text = "The total is \\boxed{\\frac{1}{2}}.\n\nThe answer is one half of the cake."
    assert extract_math_answer(text).answer == "\\frac{1}{2}"


@pytest.mark.parametrize("text,rank", [
    ("The answer is (B).", 2),
    ("If friction were ignored, the answer would be (A).", 1),
    ("Under the other convention the answer is (C).", 1),
    ("At first glance the answer is (B).", 0),
    ("Wait, actually the answer is (C).", 2),
    ("Wait, if friction were ignored the answer would be (A).", 1),  # a correction word, but still hypothetical
])
def test_mention_ranks(text, rank):
    i = text.rindex("(")  # the letter "(X)" is the mention
    assert mention_rank(text, i, i + 3) == rank


@pytest.mark.parametrize("text", [
    "If the friction is large, the answer is (A); if it is small, the answer is (B).",
    "Assuming an ideal gas the answer is (C). If the gas is real, the answer is (D).",
])
def test_mc_only_conditional_answers_naming_several_letters_are_a_hedge(text):
    ex = extract_choice(text, "ABCDEFGHIJ")
    assert (ex.letter, ex.source) == (None, "hedge")
    assert mc_score("B", text) == (False, None, "unparsed")


def test_mc_one_conditional_answer_alone_still_counts():
    assert mc_score("C", "Assuming an ideal gas, the answer is (C).") == (True, "C", "ok")
    assert mc_score("C", "If g = 9.8, the answer is (C). If g = 10, the answer is still (C).") == (True, "C", "ok")


def test_math_only_conditional_answers_naming_several_values_are_a_hedge():
    text = "If n is even the answer is \\boxed{2}; if n is odd, it would be \\boxed{3}."
    assert math_score("2", text) == (False, None, "unparsed")
    text = "If the rate is 5% the answer is 42. If the rate is 6% the answer is 44."
    assert math_score("42", text) == (False, None, "unparsed")
    assert math_score("42", "Assuming a 5% rate, the answer is 42.") == (True, "42", "ok")
    # boxes written together are one answer, conditional or not
    s = get_family("math500").score(Task(id="x", dataset="math500", question="q", gold="1, 2"),
                                    "If $x > 0$, the solutions are $\\boxed{1}$ and $\\boxed{2}$.")
    assert (s.correct, s.extracted) == (True, "1, 2")


def test_a_correction_label_that_is_no_value_leaves_the_box():
    assert extract_math_answer("\\boxed{\\frac{1}{2}}\n\nActually, the answer is half of the area.").answer == \
        "\\frac{1}{2}"


# ------------------------------------------------------------------------------- cut off while revising

@pytest.mark.parametrize("text", [
    "The answer is 12.\n\nWait, let me re-check: 3 x 5 = 15, so the answer is",
    "So the answer is \\boxed{12}.\n\nHmm, let me double-check the second step: 3 x 5",
    "#### 12\nActually, I think I missed the",
])
def test_math_cut_off_mid_revision_is_truncated(text):
    assert math_score("12", ChatResult(text=text, finish_reason="length")) == (False, None, "truncated")


def test_math_reply_ending_on_an_empty_label_is_truncated_whatever_the_finish():
    text = "The answer is 12.\n\nWait, 3 x 5 = 15, so the answer is"
    assert math_score("12", text) == (False, None, "truncated")
    assert math_score("12", ChatResult(text=text, finish_reason="stop")) == (False, None, "truncated")


def test_math_cut_off_after_a_plain_explanation_still_counts():
    text = "So the answer is \\boxed{12}. Each of the 4 boxes holds 3 apples, and the"
    assert math_score("12", ChatResult(text=text, finish_reason="length")) == (True, "12", "ok")


@pytest.mark.parametrize("text", [
    "The answer is (B).\n\nHmm, let me double-check option (C): the tension",
    "Answer: B\nWait, actually",
    "The answer is (B). But wait, does the pulley",
])
def test_mc_cut_off_mid_revision_is_truncated(text):
    assert mc_score("B", ChatResult(text=text, finish_reason="length")) == (False, None, "truncated")


def test_mc_reply_ending_on_an_empty_label_is_truncated():
    assert mc_score("B", "The answer is (B). Wait, actually the answer is") == (False, None, "truncated")
    assert mc_score("B", "Let me think.\n\nAnswer: (") == (False, None, "truncated")


def test_mc_cut_off_after_a_plain_explanation_still_counts():
    text = "The answer is (B). The tension exceeds the weight, so the"
    assert mc_score("B", ChatResult(text=text, finish_reason="length")) == (True, "B", "ok")
