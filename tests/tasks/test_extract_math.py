"""Math extraction (C01, C03, C05, answers without a box) and family-level scoring of raw replies."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family
from janus_memory.tasks.extract_math import (
    extract_math_answer,
    find_boxes,
    gsm8k_gold,
    paper_extract,
    paper_normalize,
)
from janus_memory.values import ChatResult, Task


def T(gold, ds="math500"):
    return Task(id="t", dataset=ds, question="q", gold=gold)


@pytest.mark.parametrize("text,expected", [
    # C01: last complete box wins, nested braces kept
    (r"First attempt gives \boxed{5}. That is wrong; after fixing the sign the answer is \boxed{7}.", "7"),
    (r"So the probability is \boxed{\frac{1}{2}}.", r"\frac{1}{2}"),
    (r"the answer is \boxed{2}. wait, actually \boxed{3}", "3"),
    (r"\boxed{\left( 3, \frac{\pi}{2} \right)}", r"\left( 3, \frac{\pi}{2} \right)"),
    (r"earlier \boxed{4} then cut off \boxed{\frac{1}{", "4"),
    # C03: thousands separators
    (r"\boxed{8,000}", "8000"),
    (r"The answer is $9{,}500.", "9500"),
    (r"\boxed{10,000}", "10000"),
    (r"He made a profit of $70,000.", "70000"),
    (r"\boxed{1331, 1728}", "1331, 1728"),
    # C05: markdown bold, labelled final-answer lines before bare numbers
    ("Counting: 437 + 2*234 = 905 cases.\nThus the count is **73**.\n---\nFinal Answer: **73**", "73"),
    ("**Answer:** 4.", "4"),
    # no box
    ("The answer is 18", "18"),
    ("We compute things.\nFINAL ANSWER: <answer>18</answer>", "18"),
    ("Some work 3 + 4.\nAnswer: 18", "18"),
    ("<final_answer>\\frac{3}{4}</final_answer>", r"\frac{3}{4}"),
])
def test_extraction(text, expected):
    assert extract_math_answer(text).answer == expected


def test_box_scan_is_brace_balanced():
    assert [c for _, _, c in find_boxes(r"\boxed{a{b}c} and \fbox{d}")] == ["a{b}c", "d"]
    assert find_boxes(r"\boxed{open") == []


def test_nothing_found():
    ex = extract_math_answer("I do not know.")
    assert ex.answer is None and not ex.strong
    assert extract_math_answer("").answer is None


def test_gsm8k_gold():
    assert gsm8k_gold("blah <<2*3=6>>6\n#### 1,234") == "1234"


@pytest.mark.parametrize("text,gold,status", [
    (r"\boxed{8,000}", "8000", "ok"), (r"The answer is $9{,}500.", "9500", "ok"), (r"\boxed{10,000}", "10000", "ok"),
    (r"He made a profit of $70,000.", "70000", "fallback"),  # no final-answer marker: last number
])
def test_c03_scores_against_gsm8k_gold(text, gold, status):
    s = get_family("gsm8k").score(T(gsm8k_gold(f"work\n#### {gold}"), "gsm8k"), text)
    assert s.correct and s.status == status


def test_c01_c05_family_scores():
    fam = get_family("math500")
    assert fam.score(T("7"), r"First \boxed{5}. Wrong; after fixing the sign, \boxed{7}.").correct
    assert fam.score(T(r"\frac12"), r"So the probability is \boxed{\frac{1}{2}}.").correct
    assert fam.score(T("3"), r"the answer is \boxed{2}. wait, actually \boxed{3}").correct
    s = fam.score(T("73"), "437 + 2*234 = 905\nThus the count is **73**.\n---\nFinal Answer: **73**")
    assert s.correct and s.extracted == "73" and s.detail["source"] == "label"
    assert fam.score(T("4"), "**Answer:** 4.").correct
    assert not fam.score(T("234"), "437 + 2*234 = 905\nFinal Answer: **73**").correct


def test_unparsed_and_truncated():
    fam = get_family("math500")
    s = fam.score(T("7"), "no idea at all")
    assert (s.correct, s.extracted, s.status) == (False, None, "unparsed")
    # truncated, only a stray number: no complete final answer -> truncated
    s = fam.score(T("7"), ChatResult(text="Let us compute 3 + 4 = 7 and then", finish_reason="length"))
    assert (s.correct, s.extracted, s.status) == (False, None, "truncated")
    # truncated after a complete box: the box counts, unless the reply was re-checking it when it stopped
    s = fam.score(T("7"), ChatResult(text=r"So \boxed{7}. This is the sum of both parts, and", finish_reason="length"))
    assert s.correct and s.status == "ok"
    s = fam.score(T("7"), ChatResult(text=r"So \boxed{7}. Let me double-check: 3 + 4", finish_reason="length"))
    assert (s.correct, s.extracted, s.status) == (False, None, "truncated")
    # reasoning is never parsed
    s = fam.score(T("7"), ChatResult(text="", reasoning=r"\boxed{7}"))
    assert s.status == "unparsed" and not s.correct


def test_faithful_mode():
    fam = get_family("math500", faithful=True)
    assert fam.faithful
    assert fam.score(T(r"\dfrac{14}{3}"), r"so $\boxed{\frac{14}{3}}$.").correct
    assert fam.score(T(r"\left( 3, \frac{\pi}{2} \right)"), r"\boxed{(3,\frac{\pi}{2})}").correct
    assert not fam.score(T(r"\frac{17}{50}"), r"\boxed{0.34}").correct  # exact string match only
    assert fam.score(T("18"), "FINAL ANSWER: <answer>18</answer>").correct
    assert paper_extract("no box") is None
    assert paper_normalize(r"\[ {x+1} \]. ") == "x+1"
    assert paper_normalize("3 \u2212 x") == "3-x"


# boxes written together form one answer with several parts (compared as a set); a later box after prose is
# a self-correction (C01) and stands alone
@pytest.mark.parametrize("text,expected", [
    (r"The solutions are \boxed{1} and \boxed{2}.", "1, 2"),
    (r"\boxed{1}, \boxed{2}", "1, 2"),
    (r"$x = \boxed{2}$ or $x = \boxed{1}$", "2, 1"),
    (r"\boxed{-2} \quad \boxed{1}", "-2, 1"),
    (r"The primes are $\boxed{3}$, $\boxed{5}$, and $\boxed{7}$.", "3, 5, 7"),
    (r"\boxed{\frac{1}{2}} and \boxed{3}", r"\frac{1}{2}, 3"),
    (r"\boxed{1331} \text{ and } \boxed{1728}", "1331, 1728"),
    (r"\boxed{3} and \boxed{3}", "3"),
    (r"\boxed{8,000} or \boxed{9{,}500}", "8000, 9500"),
    (r"First \boxed{5}. That is wrong; after fixing the sign the answer is \boxed{7}.", "7"),
    (r"the answer is \boxed{2}. wait, actually \boxed{3}", "3"),
    (r"We get \boxed{4} for part one. For the second we find \boxed{6}", "6"),
])
def test_box_groups(text, expected):
    assert extract_math_answer(text).answer == expected


@pytest.mark.parametrize("gold,text,correct", [
    ("1, 2", r"The solutions are \boxed{1} and \boxed{2}.", True),
    (r"\{1,2\}", r"\boxed{1}, \boxed{2}", True),
    (r"\{1,2\}", r"$x = \boxed{2}$ or $x = \boxed{1}$", True),
    ("1331, 1728", r"\boxed{1331} and \boxed{1728}", True),
    ("1331, 1728", r"\boxed{1728}", False),  # C07-A: a subset is wrong
    ("1, 2", r"\boxed{1}, \boxed{2}, \boxed{3}", False),  # a superset is wrong
    ("-2, 1", r"\boxed{1} \quad \boxed{-2}", True),
    ("7", r"First \boxed{5}. That is wrong; after fixing the sign the answer is \boxed{7}.", True),
    (r"\frac{639}{40}", r"$d = \boxed{15\frac{39}{40}},$ or $\boxed{\frac{639}{40}}$ inches.", True),  # one value
    ("2", r"\boxed{2} or \boxed{3}", False),  # hedging between two values is wrong
])
def test_box_groups_compared_as_sets(gold, text, correct):
    s = get_family("math500").score(T(gold), text)
    assert (s.correct, s.status) == (correct, "ok")


# "The answer is N" followed by units, currency, words, commas or a period gives N (GSM8K golds are plain integers)
@pytest.mark.parametrize("text,expected", [
    ("The answer is 18 apples.", "18"),
    ("The answer is $29.00.", "29"),
    (r"The answer is $\$29.00$.", "29"),
    ("The answer is 1,200 dollars", "1200"),
    ("The answer is 70,000.", "70000"),
    ("The answer is -3 degrees Celsius.", "-3"),
    ("The answer is approximately 18.50 meters per second.", "18.5"),
    ("So she earns $18 per day. The answer is 18", "18"),
    ("Final Answer: The final answer is 4 cups. I hope it is correct.", "4"),
    ("The answer is: 25%.", "25"),
    ("Janet sells 16 - 3 - 4 = 9 eggs.\n#### 18", "18"),
    ("**The answer is 5 hours.**", "5"),
    # kept whole: LaTeX, several numbers, words only
    (r"The answer is 2\sqrt{3}.", r"2\sqrt{3}"),
    ("The answer is 1, 2", "1, 2"),
    ("The answer is Evelyn.", "Evelyn"),
])
def test_answer_is_with_units_and_currency(text, expected):
    assert extract_math_answer(text).answer == expected


@pytest.mark.parametrize("text,gold", [
    ("The answer is 18 apples.", "18"), ("The answer is $29.00.", "29"), ("The answer is 1,200 dollars", "1200"),
    ("The answer is 70,000.", "70000"), ("The answer is 5 hours and that is final.", "5"),
    ("Final answer: 42 marbles", "42"), ("#### 1,234", "1234"), ("The answer is $\\$7.50$ per hour.", "7.5"),
])
def test_gsm8k_answer_is_scores_correct(text, gold):
    s = get_family("gsm8k").score(T(gold, "gsm8k"), text)
    assert (s.correct, s.status, s.extracted) == (True, "ok", gold)


# no final-answer marker: scored through the last number but recorded as "fallback" (honest unparsed rate)
@pytest.mark.parametrize("text,gold,correct", [
    ("She has 3 + 4 = 7 apples", "7", True),
    ("So the total is 42", "42", True),
    ("Therefore x equals 12.", "12", True),
    ("We add 5 and 6 to get 11", "11", True),
    ("The trapezoid area is 1/2 (r + s) h and we substitute r + s = 24", "504", False),
    ("Divisors contributing 5^2: 25, 75, 2025", "237", False),
    ("He paid $70,000 in total", "70000", True),
    ("it comes to -4", "-4", True),
])
def test_last_number_fallback_has_its_own_status(text, gold, correct):
    s = get_family("math500").score(T(gold), text)
    assert (s.correct, s.status, s.detail["source"]) == (correct, "fallback", "number")


def test_fallback_rate_is_reported():
    from janus_memory.tasks import summarize
    fam = get_family("math500")
    scores = fam.score_many([T("7")] * 4, [r"\boxed{7}", "so 7", "nothing here", "The answer is 7."])
    assert [s.status for s in scores] == ["ok", "fallback", "unparsed", "ok"]
    summ = summarize(scores)
    assert (summ["accuracy"], summ["fallback_rate"], summ["unparsed_rate"]) == (0.75, 0.25, 0.25)


def test_markdown_heading_is_not_a_gsm8k_answer():
    text = "#### Step 4.1: Express rs in terms of the area\nThe area is 1/2 (r + s) h with r + s = 24"
    ex = extract_math_answer(text)
    assert (ex.answer, ex.source, ex.strong) == ("24", "number", False)
    assert extract_math_answer("work\n#### 1,234\n").answer == "1234"
