"""The rules family's prompt and scoring (:class:`RulesFamily`; the tickets themselves: tasks/rules.py): the one
exact number a reply gives, read from the answer's head before any justification or after a worked line's last
``=``; hedges, bounds and alternatives refused; numbers the ticket itself gave (echoed back with its words) never
taken for an answer."""
from __future__ import annotations

import re
from fractions import Fraction

from janus_memory.values import ChatResult, Score, Task

from .answer_text import qualifier
from .base import TaskFamily, output_text
from .extract_math import extract_math_answer, label_value, prepare, strip_markdown

_SCALE = re.compile(r"^\s*(?:k\b|K\b|thousand|million|billion|bn\b|m\b|M\b|hundred|dozen)", re.I)
_NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|-?\d+(?:\.\d+)?|-?\.\d+")
_ANSWER_LINE = re.compile(r"(?:final\s+answer|answer)\s*(?:is|:|：)", re.I)
# where a justification starts before the first "=" of an answer ("40, because 5 x $7 = $35 plus $5"); a comma
# followed by a consequence ("$7 per kg, so 5 x 7 = 35") does not start one
_REASON_START = re.compile(
    r"(?i)\s*\(|\s*[,;]\s*(?!(?:so|thus|hence|therefore|total|totals|totalling|giving|gives|making|makes|which\s+"
    r"(?:gives|makes|is)|that\s+(?:makes|gives|is)|for\s+a\s+total|in\s+total|altogether)\b)(?=[A-Za-z])"
    r"|\s+(?:since|because|as|given|due\s+to|from)\b|\s[-–—]\s|\s*—")


def _value(raw: str) -> Fraction | None:
    try:
        return Fraction(raw.replace(",", ""))
    except (ValueError, ZeroDivisionError):
        return None


def context_numbers(task: Task) -> frozenset:
    """The numbers a ticket gives itself: every number of its question and every value of its world's rules (what a
    closing bracket may restate without naming a second answer: "35 (5 kg)", "35 ($7 per kg)")."""
    vals = {_value(n) for n in _NUMBER.findall(task.question or "")}
    for rule in ((task.meta or {}).get("world") or {}).values():
        vals |= {Fraction(v) for v in (rule or {}).values() if isinstance(v, int)}
    return frozenset(v for v in vals if v is not None)


def _answer_head(a: str) -> str:
    """An answer cut where its justification starts, when that is before its first "=" and the answer before it is
    one number: "40, because 5 x $7 = $35 plus $5" -> "40", "$35 (5 x 7 = 35)" -> "$35"; a worked line ("5 x 7 =
    35", "5 kg x $7 = $35, plus $5 = $40") is left whole."""
    eq = a.find("=")
    if eq < 0:
        return a
    m = _REASON_START.search(a, 0, eq)
    if m and len(_NUMBER.findall(a[:m.start()])) == 1:
        return a[:m.start()]
    return a


def read_number(answer: str, question: str = "", known: frozenset = frozenset()) -> Fraction | None:
    """The exact value of an answer: one plain number (units and currency around it allowed: "$35", "35 dollars"),
    the number after the last ``=`` of a worked line ("5 x $7 = $35"; an "=" in a justification after the answer
    does not count: "40, because 5 x $7 = $35 plus $5" is 40), or the first clause's number when a justification
    follows ("35, since ...", "35 (5 kg at $7)"). None for anything else: several numbers ("35 or 36", "30, 35, 40"),
    words only, a number with a scale word ("35k", "3.5 thousand"), a fraction or an expression; a hedged, bounded or
    negated value (answer_text.qualifier: "about 35", "at least 35", "~35", "not 35", "35, give or take", "35 or so",
    "35?"), except a bound that repeats the ticket's own (``question``: "at most $100" when it asks "how much can the
    refund be at most"); a second value in a closing parenthesis ("35 (or 45)", "$35 ($45 for members)": one number
    there is an alternative unless it restates one of the ticket's own numbers or rule values (``known``) or the
    answer itself: "35 (5 kg)", "35 ($7 per kg)", "35 (i.e. $35)"; a worked "(5 kg at $7)" is not)."""
    a = re.sub(r"\\(?:text|mathrm|textbf)\{([^{}]*)\}", r"\1", answer.strip())
    a = a.replace("\\$", "$").replace("\\%", "%").replace("\\,", "").replace("{,}", ",")
    a = re.sub(r"\\[()\[\]]", " ", a).strip()  # inline and display LaTeX delimiters: \(35\) is 35
    a = _answer_head(a)
    if "=" in a:
        a = a.rsplit("=", 1)[1].strip()
    if qualifier(a, question) or re.search(r"(?i)±|\+/-|\\pm|plus\s+or\s+minus", a):
        return None  # hedged, bounded or negated; a margin ("35 ± 2") is no exact answer either
    tail = re.search(r"\s*\(([^()]*)\)[\s.]*$", a)
    if tail:  # a closing parenthesis: a worked justification is left out, a lone second value makes it ambiguous
        inner = _NUMBER.findall(tail.group(1))
        before = {_value(n) for n in _NUMBER.findall(a[:tail.start()])}
        restates = len(inner) == 1 and (_value(inner[0]) in known or _value(inner[0]) in before)
        alternative = not re.match(r"(?i)\s*not\b", tail.group(1)) and (
            (len(inner) == 1 and not restates) or re.search(r"(?i)\bor\b", tail.group(1)))
        if alternative:
            return None
        a = a[:tail.start()]
    nums = list(_NUMBER.finditer(a))
    if not nums or _SCALE.match(a[nums[0].end():]) or re.search(r"[*/^\\]|\d\s*[x×]\s*\d", a):
        return None
    raw = nums[0].group(0)
    if len(nums) > 1:
        head = label_value(a)  # "72, since each box holds 8." -> "72"; "35 or 36" stays whole
        if not re.fullmatch(r"-?\d+(?:\.\d+)?", head):
            return None
        raw = head
    if "," in raw and not re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", raw):
        return None  # "3,5" is no thousands group
    return _value(raw)


def _norm_words(s: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\*\*|__|`", "", s)).strip().lower()


def echoed(text: str, start: int, end: int, question: str) -> bool:
    """True when the number at ``text[start:end]`` comes with the ticket's own words: it and the three words before
    it occur in the question ("... items worth $120" echoed from "A Gold member returns items worth $120 ...")."""
    tokens = _norm_words(text[max(0, start - 80):end]).split(" ")
    if len(tokens) < 4 or not question:
        return False
    phrase = " ".join(tokens[-4:])
    return re.search(re.escape(phrase) + r"(?![\d.,]\d)", _norm_words(question)) is not None


def _answer_number(text: str, question: str) -> tuple[int, int] | None:
    """The last number of ``text`` that does not come with the ticket's own words (:func:`echoed`)."""
    for m in reversed(list(_NUMBER.finditer(text))):
        if not echoed(text, m.start(), m.end(), question):
            return m.start(), m.end()
    return None


def _labelled(text: str) -> str | None:
    """The text after the last answer label ("Answer:", "The answer is", "Final answer:") up to its line's end."""
    t = strip_markdown(text)
    labels = list(_ANSWER_LINE.finditer(t))
    if not labels:
        return None
    rest = t[labels[-1].end():].lstrip(" \t:：")
    return rest.split("\n", 1)[0].strip() or None


def _cut_answer_line(text: str) -> bool:
    """A reply cut off right after its answer's number may have lost digits ("Answer: 3" of "Answer: 35"): true when
    the last answer label's line is the reply's last line and nothing follows the number on it."""
    t = strip_markdown(text).rstrip(" \t")
    labels = list(_ANSWER_LINE.finditer(t))
    if not labels:
        return False
    rest = t[labels[-1].end():]
    return "\n" not in rest and bool(re.search(r"\d$", rest))


class RulesFamily(TaskFamily):
    """Prompt and exact numeric scoring of the rules tasks.

    Extraction reuses the math extraction (extract_math.py: the last box or ``<answer>`` tag, else the last labelled
    answer line such as ``Answer: 35``, else the concluding number as a fallback), then reads one exact number from it
    (:func:`read_number`, with the ticket's question and own numbers): units and currency are allowed ("$35", "35
    dollars", "35 kg"), ``29.00`` equals 29, a thousands group ``1,200`` is 1200; several numbers, a scale word
    ("35k"), an expression, a hedge, bound or negation the ticket does not ask for ("about 35", "35 or so", "at most
    35") give no number (status ``unparsed``). A number echoed back with the ticket's own words (:func:`echoed`) is no
    answer. A reply cut off by the token limit counts only with a complete labelled answer followed by more text that
    does not re-check or correct it (an answer line that ends the cut reply may have lost digits): else status
    ``truncated``.
    """

    name = "rules"
    prompt_name = "rules"

    def prompt(self, task: Task) -> str:
        return self._template.substitute(question=task.question)

    def fake_answer(self, task: Task, right: bool) -> str:
        gold = int(task.gold)
        return f"Using the team's rules.\nAnswer: {gold if right else gold + 1}"

    def score(self, task: Task, output: ChatResult | str) -> Score:
        text, truncated = output_text(output)
        ex = extract_math_answer(text)
        # a cut-off reply counts only with a complete labelled answer it was not revising when it stopped
        if ex.cut or (truncated and (not ex.strong or ex.revised or _cut_answer_line(text))):
            return Score(False, None, "truncated")
        if ex.answer is None:
            return Score(False, None, "unparsed")
        question = task.question or ""
        labelled = _labelled(text)
        # an answer line governs: when the extraction fell back to the last number past a labelled answer it could
        # not read ("Answer: not 35"), the labelled answer is read, and gives no number
        raw = labelled if ex.source == "label" or (not ex.strong and labelled is not None) else None
        if raw is None and ex.source == "number" and ex.span is not None:
            # the fallback (the concluding number, extract_math): not a number of the ticket echoed back with its
            # words; then the last number before it that is not one either
            plain = prepare(text)
            at: tuple[int, int] | None = ex.span
            if at is not None and echoed(plain, at[0], at[1], question):
                at = _answer_number(plain[:at[0]], question)
            if at is None:
                return Score(False, None, "unparsed", {"source": ex.source, "why": "only the ticket's own numbers"})
            raw = plain[at[0]:at[1]]
        elif raw is not None:
            first = _NUMBER.search(raw)
            if first and echoed(raw, first.start(), first.end(), question):
                return Score(False, None, "unparsed", {"source": ex.source, "why": "the ticket echoed back"})
        answer = raw if raw is not None else ex.answer
        bracket = re.search(r"\([^()]*\d[^()]*\)[\s.]*$", answer)  # the ticket's numbers matter only there
        value = read_number(answer, question, context_numbers(task) if bracket else frozenset())
        if value is None:
            return Score(False, ex.answer, "unparsed", {"source": ex.source, "why": "not one plain number"})
        shown = str(value.numerator) if value.denominator == 1 else repr(float(value))  # 35.0000001 is not shown as 35
        return Score(value == Fraction(int(task.gold)), shown, "ok" if ex.strong else "fallback", {"source": ex.source})
