"""Math answer forms: vectors/matrices keep every entry; `,\\!` thousands groups; labelled answers with a
justification; replies cut inside `\\boxed{`. Exact verdicts, several variants per kind."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family
from janus_memory.tasks.extract_math import extract_math_answer
from janus_memory.tasks.verify_math import check_math, normalize_for_verify
from janus_memory.values import ChatResult, Task

V3 = r"\begin{pmatrix} -2 \\ -14 \\ -7 \end{pmatrix}"  # MATH-500 style: entries separated by "\\ "
VF = r"\begin{pmatrix} -1/3 \\ 2/3 \\ 5/3 \end{pmatrix}"
M2 = r"\begin{pmatrix} -1 & 0 \\ 0 & -1 \end{pmatrix}"


def ok(gold, text):
    return check_math(gold, extract_math_answer(text).answer)


def test_row_breaks_survive_normalisation():
    assert normalize_for_verify(V3) == r"\begin{pmatrix} -2 \\ -14 \\ -7 \end{pmatrix}"
    assert normalize_for_verify(r"a\ b\,c\!d\\e") == r"abcd\\e"


@pytest.mark.parametrize("gold,text,expected", [
    # wrong vectors are refused (false positives before: everything after the first entry was lost)
    (V3, r"\boxed{\begin{pmatrix} -2 \\ -14 \\ 7 \end{pmatrix}}", False),  # wrong last entry
    (V3, r"\boxed{\begin{pmatrix} -2 \\ 0 \\ 0 \end{pmatrix}}", False),  # only the first entry right
    (V3, r"\boxed{\begin{pmatrix} -2 \\ -14 \end{pmatrix}}", False),  # an entry missing
    (V3, r"\boxed{\begin{pmatrix} -2 \\ -14 \\ -7 \\ 0 \end{pmatrix}}", False),  # an entry too many
    (V3, r"\boxed{\begin{pmatrix} -2 \end{pmatrix}}", False),
    (V3, r"\boxed{-2}", False),  # a scalar for a vector
    (V3, r"\boxed{\begin{pmatrix} -14 \\ -2 \\ -7 \end{pmatrix}}", False),  # order matters in a vector
    (VF, r"\boxed{\begin{pmatrix} -1/3 \\ 2/3 \\ 1 \end{pmatrix}}", False),
    (VF, r"\boxed{\begin{pmatrix} -0.3333 \\ 0.6667 \\ 1.6667 \end{pmatrix}}", False),  # rounded entries
    (M2, r"\boxed{\begin{pmatrix} -1 & 0 \\ 0 & 1 \end{pmatrix}}", False),
    (M2, r"\boxed{\begin{pmatrix} -1 & 0 \end{pmatrix}}", False),
    (r"\begin{pmatrix} 1/5 \\ -18/5 \end{pmatrix}", r"\boxed{\begin{pmatrix} 1/5 \\ 18/5 \end{pmatrix}}", False),
    # right vectors with other spacing, one entry per line, \frac, bmatrix, \left/\right, \dfrac
    (V3, r"\boxed{\begin{pmatrix} -2 \\ -14 \\ -7 \end{pmatrix}}", True),
    (V3, r"\boxed{\begin{pmatrix}-2\\-14\\-7\end{pmatrix}}", True),
    (V3, "$$\\boxed{\\begin{pmatrix}\n-2 \\\\\n-14 \\\\\n-7\n\\end{pmatrix}}$$", True),
    (V3, r"\boxed{\begin{pmatrix}  -2  \\   -14 \\ -7\end{pmatrix}}", True),
    (V3, r"\boxed{\begin{bmatrix} -2 \\ -14 \\ -7 \end{bmatrix}}", True),
    (VF, r"\boxed{\begin{pmatrix} -\frac{1}{3} \\ \frac{2}{3} \\ \frac{5}{3} \end{pmatrix}}", True),
    (VF, r"\boxed{\begin{pmatrix} -\dfrac{1}{3} \\ \dfrac{2}{3} \\ \dfrac{5}{3} \end{pmatrix}}", True),
    (M2, r"\boxed{\begin{pmatrix}-1&0\\0&-1\end{pmatrix}}", True),
    (V3, r"\boxed{\left(\begin{array}{c} -2 \\ -14 \\ -7 \end{array}\right)}", True),
    (V3, r"\boxed{\begin{pmatrix} -2 \\ -14 \\ -7 \\ \end{pmatrix}}", True),  # a trailing row break
    (V3, r"\boxed{\begin{pmatrix} -2 \\[2pt] -14 \\[2pt] -7 \end{pmatrix}}", True),
    (V3, r"\boxed{\begin{pmatrix} -2 & -14 & -7 \end{pmatrix}}", False),  # a row for a column: another shape
    (M2, "\\boxed{\\begin{pmatrix}\n-1 & 0 \\\\\n0 & -1\n\\end{pmatrix}}", True),
])
def test_vectors_and_matrices(gold, text, expected):
    assert ok(gold, text) == (expected, "ok")


@pytest.mark.parametrize("gold,text,expected", [
    (r"10,\!080", r"\boxed{10080}", True),
    (r"10,\!080", r"\boxed{10,080}", True),
    (r"10,\!080", "The answer is 10,080.", True),
    (r"10,\!080", r"\boxed{10081}", False),
    (r"10,\!080", r"\boxed{10, 080}", False),  # with a space it is a list of two numbers
    (r"11,\! 111,\! 111,\! 100", r"\boxed{11111111100}", True),
    (r"11,\! 111,\! 111,\! 100", r"\boxed{11111111101}", False),
    (r"\$32,\!348", r"\boxed{\$32,348}", True),
    (r"\$32,\!348", r"\boxed{32348}", True),
    ("58,500", r"\boxed{58500}", True),
    # real sets stay sets
    ("1, 2", r"\boxed{2, 1}", True),
    ("1, 2", r"\boxed{12}", False),
])
def test_thousands_groups_are_numbers(gold, text, expected):
    assert ok(gold, text) == (expected, "ok")


@pytest.mark.parametrize("text,answer", [
    ("Answer: 72, since each box holds 8.", "72"),
    ("Answer: 72 since each box holds 8", "72"),
    ("The answer is 18 apples. Each box holds 8 of them.", "18"),
    ("Final answer: 5; because 2+3 = 5", "5"),
    ("Answer: $1,200, because 12 boxes cost 100 each.", "1200"),
    ("Answer: 2\\sqrt{3}, since the side is 2.", "2\\sqrt{3}"),
    ("The final answer is Evelyn, since she runs fastest.", "Evelyn"),
    ("Answer: 72 (since each box holds 8)", "72"),
    ("Answer: 5 (five)", "5"),
    ("**Answer:** 72, since each box holds 8.", "72"),
    ("Answer: $72$, since each box holds 8.", "72"),
    ("Answer: 2(3+4), since it distributes", "2(3+4)"),
    ("Answer: f(x) = 3", "f(x) = 3"),
    # several answers stay whole
    ("Answer: 1, 2", "1, 2"),
    ("Answer: 72, 8", "72, 8"),
    ("Answer: 3 and 4", "3 and 4"),
    ("Answer: 72, or 8", "72, or 8"),
    ("Answer: x = 3, y = 4", "x = 3, y = 4"),
    ("Answer: (1, 2), because it is the only pair.", "(1, 2), because it is the only pair"),
])
def test_labelled_answer_with_a_justification(text, answer):
    ex = extract_math_answer(text)
    assert (ex.answer, ex.source, ex.strong) == (answer, "label", True)


def test_justified_label_scores():
    assert ok("72", "Each box holds 8, nine boxes.\nAnswer: 72, since each box holds 8.") == (True, "ok")
    assert ok("72", "Answer: 71, since each box holds 8.") == (False, "ok")


T = Task(id="t", dataset="math500", question="q", gold="12")


@pytest.mark.parametrize("text", [
    r"The total is 12, so the answer is \boxed{12",
    r"So the answer is \boxed{\frac{1}{",
    r"First guess \boxed{12}. Re-checking, the answer is \boxed{1",
    "Final Answer: 12\nSo $\\boxed{",
    r"\boxed{12} and \boxed{",
])
def test_cut_inside_boxed_is_truncated(text):
    fam = get_family("math500")
    assert extract_math_answer(text).cut is True  # (the extraction still reports what came before)
    for out in (text, ChatResult(text=text, finish_reason="length"), ChatResult(text=text, finish_reason="stop")):
        s = fam.score(T, out)
        assert (s.correct, s.extracted, s.status) == (False, None, "truncated")
    assert [(s.correct, s.status) for s in fam.score_many([T], [text])] == [(False, "truncated")]


@pytest.mark.parametrize("text", [
    r"\boxed{12}", r"We note \boxed{x} is unclosed... no: the answer is \boxed{12}.",
    r"\boxed{12} \quad \text{done}", "Answer: 12",
])
def test_complete_final_box_is_not_cut(text):
    s = get_family("math500").score(T, text)
    assert (s.correct, s.status) == (True, "ok")
