"""The multiple-choice extractor on corrections, rejections and hedges (adversarial false positives)."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family
from janus_memory.tasks.extract_mc import extract_choice
from janus_memory.values import Task


def _task(gold="D"):
    return Task(id="t", dataset="mmlu_pro_eng", question="q", gold=gold,
                meta={"options": ["w", "x", "y", "z"], "labels": "ABCD"})


@pytest.mark.parametrize("text,letter", [
    # the last committed answer wins whatever its form; "not D" rejects D
    ("**Answer:** D\n\nHmm, that's wrong. The answer is actually B, not D.", "B"),
    ("Answer: D\n\nNo wait, the answer is B.", "B"),
    ("Answer: D\nWait, actually it's B.", "B"),
    ("The answer is (D)... just kidding, it's (B)", "B"),
    ("The answer is (D). Oops, it is (B).", "B"),
    ("Final answer: D. Correction: it's C", "C"),
    ("The answer is really B, not D.", "B"),
])
def test_a_later_correction_wins(text, letter):
    assert extract_choice(text).letter == letter
    assert get_family("mmlu_pro_eng").score(_task("D"), text).correct is False


@pytest.mark.parametrize("text", [
    "Answer: D is wrong, B",
    "Answer: D is incorrect",
    "The answer is D. Hmm, no: D is wrong.",
    "Answer: D\nActually not D.",
    "Answer: (D) is not the right answer",
])
def test_a_rejected_letter_is_not_credited(text):
    ex = extract_choice(text)
    assert ex.letter != "D"
    assert get_family("mmlu_pro_eng").score(_task("D"), text).correct is False


@pytest.mark.parametrize("text", [
    "The answer is D or B",
    "The answer is A, B, C, or D.",
    "Answer: D/B",
    "The answer is (D) or (B).",
    "Answer: D and B",
    "The answer is B, C or D",
])
def test_a_hedge_over_several_options_gives_no_letter(text):
    ex = extract_choice(text)
    assert ex.letter is None and ex.source == "hedge"
    s = get_family("mmlu_pro_eng").score(_task("D"), text)
    assert (s.correct, s.extracted, s.status) == (False, None, "unparsed")


@pytest.mark.parametrize("text,letter", [
    # not hedges, not rejections: one committed letter
    ("The answer is D, not B.", "D"),
    ("The answer is D, I think.", "D"),
    ("Answer: D. Option B is wrong because the load is static.", "D"),
    ("Option B is wrong. The answer is D.", "D"),
    ("Why not B? Because the answer is D.", "D"),
    ("The answer is D and a force of 10 N confirms it.", "D"),
    ("The answer is D and B is wrong.", "D"),
    ("The answer is B. I play the piano, it's C major.", "B"),
    # the forms accepted before stay parsed
    ("the correct option is D", "D"),
    ("Answer: Option D", "D"),
    ("The answer is $\\text{D}$.", "D"),
    ("$D$", "D"),
    ("The answer is A because the beam is fixed.", "A"),
])
def test_single_committed_letters_still_parse(text, letter):
    assert extract_choice(text).letter == letter


@pytest.mark.parametrize("text", ["Answer: a force of 10 N", "answer: i think so", "Answer: Let's see"])
def test_c11_first_match_false_positives_stay_refused(text):
    assert extract_choice(text).letter is None
