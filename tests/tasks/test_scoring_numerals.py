"""Unicode numerals (minus signs, vulgar fractions, full-width digits, superscripts, thin and no-break spaces) and
labelled answers reduced to their value, with exact extracted values and verdicts (the near misses must fail)."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family
from janus_memory.tasks.answer_text import plain_numerals
from janus_memory.tasks.extract_math import extract_math_answer
from janus_memory.tasks.extract_mc import extract_choice
from janus_memory.tasks.verify_math import verify_answer
from janus_memory.values import Task


def score(dataset, gold, text):
    s = get_family(dataset).score(Task(id="x", dataset=dataset, question="q", gold=gold), text)
    return s.correct, s.extracted, s.status


@pytest.mark.parametrize("raw,plain", [
    ("\u22125", "-5"), ("x = \u22123.5", "x = -3.5"), ("\u2012 7", "- 7"),
    ("2\u00bc cups", "\\frac{9}{4} cups"), ("\u00be", "\\frac{3}{4}"), ("\u22121\u00bd", "-\\frac{3}{2}"),
    ("2 \u00bd", "\\frac{5}{2}"), ("2\u00b9\u2044\u2084", "\\frac{9}{4}"),
    ("\uff14\uff12", "42"), ("\uff08\uff22\uff09", "(B)"),
    ("10\u00b3", "10^{3}"), ("x\u00b2 + 1", "x^{2} + 1"), ("2\u207b\u00b9", "2^{-1}"), ("log\u2082 8", "log_{2} 8"),
    ("1\u2009000\u2009000", "1000000"), ("12\u00a0345.5", "12345.5"), ("3\u202f600", "3600"),
    ("2\u221a3", "2\\sqrt{3}"), ("45\u00b0", "45^\\circ"), ("2\u03c0", "2\\pi "),
    ("pages 3\u20135", "pages 3\u20135"),  # an en dash between numbers is a range, not a minus
    ("plain 42", "plain 42"),
])
def test_plain_numerals(raw, plain):
    assert plain_numerals(raw) == plain


@pytest.mark.parametrize("text,answer,right,wrong", [
    ("The answer is \u22125.", "-5", "-5", "5"),  # before: read as 5, so a wrong negative passed for gold 5
    ("\\boxed{\u22123}", "-3", "-3", "3"),
    ("The answer is 2\u00bc cups.", "\\frac{9}{4}", "2.25", "2"),  # before: 2
    ("\\boxed{\u22121\u00bd}", "-\\frac{3}{2}", "-1.5", "-1"),
    ("The answer is \u00be.", "\\frac{3}{4}", "0.75", "3"),
    ("The answer is \uff14\uff12.", "42", "42", "4"),
    ("The answer is 10\u00b3.", "10^{3}", "1000", "10"),
    ("The answer is 1\u2009000\u2009000.", "1000000", "1000000", "1000"),
    ("The answer is 12\u00a0345 dollars.", "12345", "12345", "12"),
    ("Answer: 2\u221a3", "2\\sqrt{3}", "2\\sqrt{3}", "2"),
    ("The answer is 45\u00b0.", "45^\\circ", "45", "46"),
])
def test_unicode_numerals_in_math(text, answer, right, wrong):
    assert extract_math_answer(text).answer == answer
    assert verify_answer(right, answer) is True
    assert verify_answer(wrong, answer) is False
    assert score("math500", right, text)[0] is True
    assert score("math500", wrong, text)[0] is False


def test_unicode_numerals_in_golds():
    assert verify_answer("\u22125", "-5") is True and verify_answer("\u22125", "5") is False
    assert verify_answer("2\u00bc", "\\frac{9}{4}") is True


@pytest.mark.parametrize("text", ["Answer: \uff23", "The answer is \uff08\uff23\uff09.", "\uff23"])
def test_full_width_letters_in_multiple_choice(text):
    assert extract_choice(text).letter == "C"


@pytest.mark.parametrize("text,value", [
    ("Answer: 6 x 4 = 24 apples", "24"),
    ("The answer is 6 \u00d7 4 = 24.", "24"),
    ("Answer: 3 \\times \\$5 = \\$15", "15"),
    ("Final answer: $45 + $30 = $75 in total", "75"),
    ("The answer is 15 (that is, 3 x $5).", "15"),
    ("Answer: $15 (that is, 3 \u00d7 $5)", "15"),
    ("The answer is 9/4 cups.", "\\frac{9}{4}"),
    ("The answer is $\\frac{9}{4}$ cups of flour.", "\\frac{9}{4}"),
    ("The answer is -3/4 of the tank.", "-\\frac{3}{4}"),
    # kept whole: several values, an equation in unknowns, LaTeX that is not one number
    ("Answer: x = 3, y = 4", "x = 3, y = 4"),
    ("The answer is 2\\sqrt{3}, since the side is 2", "2\\sqrt{3}"),
    ("The answer is 1, 2", "1, 2"),
])
def test_labelled_answer_reduced_to_its_value(text, value):
    assert extract_math_answer(text).answer == value


@pytest.mark.parametrize("text,gold,correct", [
    ("Answer: 6 x 4 = 24 apples", "24", True),
    ("Answer: 6 x 4 = 25 apples", "24", False),  # the computation's result decides, not its operands
    ("The answer is 15 (that is, 3 x $5).", "15", True),
    ("The answer is 15 (that is, 3 x $5).", "5", False),
    ("Final answer: $45 + $30 = $75 in total", "75", True),
    ("Final answer: $45 + $30 = $75 in total", "45", False),
])
def test_labelled_values_score(text, gold, correct):
    assert score("gsm8k", gold, text)[0] is correct


@pytest.mark.parametrize("pred,gold,correct", [
    ("\\text{45 degrees}", "45^\\circ", True),
    ("\\text{45 degrees}", "45", True),
    ("\\text{46 degrees}", "45^\\circ", False),
    ("\\text{12 cm}", "12", True),
    ("\\text{Evelyn}", "\\text{Evelyn}", True),
    ("\\text{(C)}", "C", True),
])
def test_text_wrapped_value_with_unit(pred, gold, correct):
    assert verify_answer(gold, pred) is correct


def test_boxed_text_degrees_scores_against_a_circ_gold():
    assert score("math500", "45^\\circ", "So the angle is $\\boxed{\\text{45 degrees}}$.") == (True, "\\text{45 degrees}", "ok")
    assert score("math500", "45^\\circ", "So the angle is $\\boxed{\\text{54 degrees}}$.")[0] is False
