"""Math extraction (C01, C03, C05, answers without a box) and family-level scoring of raw replies."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family
from janus_memory.tasks.extract_math import (extract_math_answer, faithful_extract, faithful_normalize, find_boxes,
                                             gsm8k_gold)
from janus_memory.types import ChatResult, Task


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


@pytest.mark.parametrize("text,gold", [
    (r"\boxed{8,000}", "8000"), (r"The answer is $9{,}500.", "9500"), (r"\boxed{10,000}", "10000"),
    (r"He made a profit of $70,000.", "70000"),
])
def test_c03_scores_against_gsm8k_gold(text, gold):
    s = get_family("gsm8k").score(T(gsm8k_gold(f"work\n#### {gold}"), "gsm8k"), text)
    assert s.correct and s.status == "ok"


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
    # truncated after a complete box: the box counts
    s = fam.score(T("7"), ChatResult(text=r"So \boxed{7}. Let me double-check: 3 + 4", finish_reason="length"))
    assert s.correct and s.status == "ok"
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
    assert faithful_extract("no box") is None
    assert faithful_normalize(r"\[ {x+1} \]. ") == "x+1"
    assert faithful_normalize("3 \u2212 x") == "3-x"
