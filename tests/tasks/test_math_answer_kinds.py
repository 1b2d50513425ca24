"""Math answer forms: a scale word after a labelled number, base subscripts with brackets, bound and approximation
qualifiers, the last-number fallback against the stated answer, a reply cut off right after its labelled digits, an
"(i.e., ...)" gloss. Each kind with its variants and the look-alikes that must not be credited; exact verdicts. The
paper preset (``--faithful``: the authors' last box and exact match) keeps its behaviour."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family
from janus_memory.tasks.extract_math import extract_math_answer
from janus_memory.tasks.math_family import MathFamily
from janus_memory.values import ChatResult, Task

Q = "A town's budget is split between roads and parks. How much does it spend on roads, in dollars?"
Q_MILLIONS = "A town spends its budget on roads. How many million dollars does it spend on roads?"


def gsm(gold, reply, question=Q):
    s = get_family("gsm8k").score(Task(id="m", dataset="gsm8k", question=question, gold=str(gold)), reply)
    return s.correct, s.extracted, s.status


def math500(gold, reply, question="Express the number in the base shown."):
    s = get_family("math500").score(Task(id="m", dataset="math500", question=question, gold=gold), reply)
    return s.correct, s.extracted, s.status


# ------------------------------------------------------------------------- a scale word after a labelled number

@pytest.mark.parametrize("reply,gold,shown", [
    ("The answer is 3.2 million.", 3200000, "3200000"),
    ("Answer: 3.2 million dollars", 3200000, "3200000"),
    ("Answer: $1.5 billion", 1500000000, "1500000000"),
    ("Answer: $40k", 40000, "40000"),
    ("The answer is 12 thousand.", 12000, "12000"),
    ("The total is $\\boxed{3.2 \\text{ million}}$.", 3200000, "3200000"),
    ("Answer: 2.5 million, since each of the 5 roads costs half a million", 2500000, "2500000"),
])
def test_a_scale_word_multiplies_the_labelled_number(reply, gold, shown):
    assert gsm(gold, reply) == (True, shown, "ok")


@pytest.mark.parametrize("reply,gold", [
    ("The answer is 3.2 million.", 3.2),  # the question counts in dollars: 3.2 million is not 3.2
    ("Answer: $40k", 40),
    ("Answer: 3.2", 3200000),
    ("The answer is 3.2 billion.", 3200000),
])
def test_a_scale_word_is_not_dropped(reply, gold):
    assert gsm(gold, reply)[0] is False


def test_a_question_that_counts_in_millions_reads_the_number_as_written():
    assert gsm("3.2", "The answer is 3.2 million.", Q_MILLIONS) == (True, "3.2", "ok")
    assert gsm("3200000", "The answer is 3.2 million.", Q_MILLIONS)[0] is False


# ------------------------------------------------------------------------- base subscripts with brackets

@pytest.mark.parametrize("reply", [
    "\\boxed{(1011)_2}", "\\boxed{[1011]_{2}}", "\\boxed{\\left(1011\\right)_2}", "\\boxed{(1011)_{2}}",
    "\\boxed{1011_{(2)}}", "\\boxed{1011_2}", "\\boxed{1011}",
])
def test_a_base_subscript_with_brackets_matches(reply):
    assert math500("1011_2", reply)[0] is True


@pytest.mark.parametrize("reply", [
    "\\boxed{(1011)_3}", "\\boxed{1011_3}", "\\boxed{(1101)_2}", "\\boxed{[1011]_{10}}", "\\boxed{11}",
])
def test_another_base_or_other_digits_do_not_match(reply):
    assert math500("1011_2", reply)[0] is False


def test_base_subscripts_of_the_math500_golds():
    assert math500("4210_{5}", "\\boxed{(4210)_5}")[0] is True
    assert math500("2516_8", "\\boxed{\\left(2516\\right)_{8}}")[0] is True
    assert math500("2516_8", "\\boxed{2516_{9}}")[0] is False


# ------------------------------------------------------------------------- bound and approximation qualifiers

@pytest.mark.parametrize("reply", [
    "Answer: at least 18", "The answer is approximately 18.", "Answer: about 18 apples", "Answer: ~18",
    "Answer: 18 or so", "Answer: roughly 18", "Answer: more than 18", "Answer: 18, give or take",
    "Final Answer: nearly 18", "The answer is $\\approx 18$.", "\\boxed{\\approx 18}", "\\boxed{\\ge 18}",
    "Answer: 18 (approximately)", "Answer: 18 at most", "The answer is 18?", "Answer: $x \\approx 18$",
])
def test_a_qualified_labelled_answer_is_not_credited(reply):
    assert gsm(18, reply)[0::2] == (False, "unparsed")


@pytest.mark.parametrize("reply,question", [
    ("Answer: 18", Q),
    ("Answer: 18 min", Q),  # minutes, not "minimum"
    ("Answer: 18 apples, since 6 x 3 = 18", Q),
    ("Answer: at most 18", "How many apples can she buy at most?"),  # the question's own bound
    ("Answer: at least 18", "What is the least number of apples, at least, that she needs?"),
])
def test_plain_or_question_bounded_answers_still_count(reply, question):
    assert gsm(18, reply, question) == (True, "18", "ok")


@pytest.mark.parametrize("reply", ["The answer is 18 dollars, or more precisely $18.00", "Answer: max(12, 18) = 18"])
def test_words_that_look_like_qualifiers_but_are_not(reply):
    assert gsm(18, reply)[0::2] == (True, "ok")


# ------------------------------------------------------------------------- the fallback against the stated answer

@pytest.mark.parametrize("reply,gold,correct,shown", [
    ("She sold 6 boxes of 8. So she sold 48 cookies in total, which is 6 boxes.", 6, False, "48"),
    ("She sold 6 boxes of 8. So she sold 48 cookies in total, which is 6 boxes.", 48, True, "48"),
    ("He gave away 6. So Tom has 12 marbles left, since he gave away 6.", 6, False, "12"),
    ("He gave away 6. So Tom has 12 marbles left, since he gave away 6.", 12, True, "12"),
    ("5 x 7 = 35. So she pays 35 dollars per week.", 35, True, "35"),
    ("She pays 35 dollars", 35, True, "35"),
    ("So, since each ticket costs 7, the total is 35.", 35, True, "35"),
    ("So she earns 5 dollars per hour, 40 hours a week, 200 dollars in total.", 200, True, "200"),  # a rate is no gloss
    ("So, each of the 4 friends gets 6 cookies.", 6, True, "6"),
])
def test_the_fallback_reads_the_concluding_statement(reply, gold, correct, shown):
    assert gsm(gold, reply) == (correct, shown, "fallback")


@pytest.mark.parametrize("reply", [
    "Each box holds 8 apples. Therefore the total is forty-eight apples (8 per box).",
    "18 - 6 = 12 were sold. So she has six left, from the 12 sold.",
])
def test_a_conclusion_in_words_gives_no_fallback_number(reply):
    assert gsm(8, reply)[0::2] == (False, "unparsed")
    assert gsm(12, reply)[0::2] == (False, "unparsed")


# ------------------------------------------------------------------------- cut off right after the labelled digits

def cut(text):
    return ChatResult(text=text, finish_reason="length")


@pytest.mark.parametrize("text,gold", [
    ("5 x 7 = 35\nAnswer: 3", 35), ("5 x 7 = 35\nAnswer: 35", 35), ("The answer is 18", 18), ("#### 1", 18),
    ("Answer: 3.1", 3.14), ("So the final answer is $1,2", 1200),
])
def test_a_reply_cut_right_after_its_labelled_digits_is_truncated(text, gold):
    assert gsm(gold, cut(text)) == (False, None, "truncated")


@pytest.mark.parametrize("text,gold", [
    ("The answer is 18 apples", 18), ("The answer is 18.", 18), ("The answer is 18.\n", 18), ("\\boxed{18}", 18),
    ("Answer: 18\nEach box holds 3", 18),
])
def test_a_cut_reply_whose_answer_is_complete_counts(text, gold):
    assert gsm(gold, cut(text)) == (True, "18", "ok")


def test_the_same_text_not_cut_counts():
    assert gsm(18, "The answer is 18") == (True, "18", "ok")


# ------------------------------------------------------------------------- an "(i.e., ...)" gloss

@pytest.mark.parametrize("reply,gold,shown", [
    ("Answer: 18 (i.e., 18 apples)", "18", "18"),
    ("The final answer is 72, i.e., 9 boxes of 8.", "72", "72"),
    ("Answer: 18 (ie 18 apples)", "18", "18"),
    ("Answer: 18 (e.g. 6 per bag)", "18", "18"),
    ("Answer: 0.5 (i.e. one half)", "0.5", "0.5"),
])
def test_a_labelled_answer_with_a_gloss_is_read(reply, gold, shown):
    assert gsm(gold, reply) == (True, shown, "ok")


def test_a_gloss_after_a_fraction():
    assert extract_math_answer("The answer is $\\frac{1}{2}$ (i.e., 0.5).").answer == "\\frac{1}{2}"
    assert math500("\\frac{1}{2}", "The answer is $\\frac{1}{2}$ (i.e., 0.5).")[0] is True


def test_a_gloss_does_not_make_another_value_right():
    assert gsm("18", "Answer: 20 (i.e., 18 plus 2)") == (False, "20", "ok")


# ------------------------------------------------------------------------- the paper preset keeps its rules

def test_the_paper_preset_reads_the_last_box_as_the_authors_do():
    fam = MathFamily(faithful=True)
    t = Task(id="m", dataset="math500", question=Q, gold="1011_2")
    assert fam.score(t, "\\boxed{(1011)_2}").correct is False  # their exact match: brackets are other text
    assert fam.score(t, "\\boxed{1011_2}").correct is True
    t18 = Task(id="m", dataset="gsm8k", question=Q, gold="18")
    assert fam.score(t18, "Answer: at least 18").status == "unparsed"  # no box: nothing read, as before
    assert fam.score(t18, cut("\\boxed{18}")).correct is True
