"""Math answer extraction: model text -> final answer string (no scoring here).

Order (failure cases C01, C03, C05):
1. the last *complete* ``\\boxed{...}`` / ``\\fbox{...}`` (brace-balanced scan, so ``\\frac{1}{2}`` survives) or
   ``<answer>...</answer>`` / ``<final_answer>...</final_answer>`` tag, whichever ends last. Boxes written together
   (``\\boxed{1} and \\boxed{2}``, ``\\boxed{1}, \\boxed{2}``: only commas, "and", "or", ``$``, ``\\quad`` between them)
   form one answer with several parts, returned as ``1, 2`` and compared as a set; a box followed later by prose and
   another box is a self-correction, and only the last counts (C01);
2. else the last labelled final-answer line ("Final Answer: ...", "**Answer:** 4.", "The answer is 18", GSM8K's
   "#### 18"). A labelled answer that is one plain number among words, units or currency gives that number:
   "The answer is 18 apples." -> 18, "The answer is $29.00." -> 29, "is 1,200 dollars" -> 1200 (the forms of
   lm-evaluation-harness's GSM8K filters); text with LaTeX or several numbers is kept whole;
3. else (weak, status "fallback" in the score) the last number in the text.
A reply that ends inside an unclosed ``\\boxed{`` opened after every complete box/tag, or on an answer label with no
value ("... so the answer is"), is cut off: the extraction still reports what came before, with ``cut=True``, and the
math family scores it "truncated". ``revised`` says the text after the chosen answer re-checks or corrects it (a
reply cut off there was revising it).
Committed answers (answer_text.mention_rank): among boxes and tags, and among labels, the last one of the highest rank
wins, so a later conditional mention ("(If you forget the tax you would get \\boxed{40}.)", "#### 42 ... (forgetting
the tax gives the answer is 40)") does not replace a committed answer; a labelled correction after the chosen box
("\\boxed{30} ... hmm, I counted the first day twice, so the answer is 27") replaces it.
Unicode numerals are made plain first (answer_text.plain_numerals: ``−5``, ``2¼``, ``４２``, ``10³``).
Markdown emphasis is removed first; thousands separators (``8,000``, ``9{,}500``) are removed inside numbers, and a
plain decimal with a zero fraction loses it (``29.00`` -> ``29``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .answer_text import corrects, ends_in_label, mention_rank, pick, plain_numerals, revised_after

_BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*\{")
_TAG_RE = re.compile(r"<(answer|final_answer)>\s*(.*?)\s*</\1>", re.S | re.I)
_LABEL_RE = re.compile(
    r"(?:final\s+answer|answer)\s*(?:is|:|：)\s*[:：]?[ \t]*(?P<ans>[^\n]+)", re.I)
_ANSWER_IS_RE = re.compile(r"the\s+(?:final\s+)?answer\s+is\s*[:：]?[ \t]*(?P<ans>[^\n]+)", re.I)
_HASH_RE = re.compile(r"^[ \t]*####[ \t]*(?P<ans>\$?-?[0-9][0-9.,]*)[ \t]*$", re.M)  # GSM8K's "#### N", not a heading
_GLUE_RE = re.compile(r"^(?:\s|\$|,|;|&|\\quad|\\qquad|\\,|\\text\{\s*(?:and|or)\s*\}|\band\b|\bor\b"
                      r"|\b[A-Za-z](?:_\{?\w+\}?)?\s*=)*$")
_MATHY = re.compile(r"[\\^{}=+*/<>_|]")
_NUM_RE = re.compile(r"-?\d{1,3}(?:(?:,|\{,\})\d{3})+(?:\.\d+)?(?!\d)|-?\d+(?:\.\d+)?|-?\.\d+")
_SEP_NUM_RE = re.compile(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")


@dataclass(frozen=True)
class MathExtraction:
    """answer: extracted string (None if nothing found). source: "boxed" | "tag" | "label" | "number" | "hedge" (only
    conditional answers naming several values: none committed) | None.
    strong: True for an explicit final answer (box, tag, labelled line); False for the last-number fallback.
    parts: the distinct contents of a group of boxes written together (empty for a single answer)."""

    answer: str | None
    source: str | None
    strong: bool
    parts: tuple = ()
    cut: bool = False  # the reply ends inside an unclosed \boxed{ written after every answer, or on an empty label
    revised: bool = False  # the text after the chosen answer re-checks or corrects it
    stated: str | None = None  # the chosen answer as written (box content or label line), for its qualifiers
    open_end: bool = False  # a labelled answer ending the reply on its digits ("Answer: 3"): digits may be missing
    unscaled: str | None = None  # "3.2" of "3.2 million" (answer "3200000"), when the question counts in millions
    scale: str | None = None  # the scale word read ("million")
    span: tuple | None = None  # where the fallback number stands in the prepared text (prepare())


def strip_markdown(text: str) -> str:
    """Remove Markdown bold/italic markers (``**x**``, ``__x__``) that stick to answers (C05)."""
    return re.sub(r"\*\*|__", "", text)


def find_boxes(text: str) -> list[tuple[int, int, str]]:
    """All complete ``\\boxed{...}``/``\\fbox{...}`` as (start, end, content), brace-balanced. Unclosed boxes are skipped."""
    out = []
    for m in _BOX_RE.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            c = text[i]
            if c == "\\" and i + 1 < len(text) and text[i + 1] in "{}":
                i += 2
                continue
            depth += (c == "{") - (c == "}")
            i += 1
        if depth == 0:
            out.append((m.start(), i, text[m.end():i - 1]))
    return out


def last_boxed(text: str) -> str | None:
    """Content of the last complete box, or None."""
    boxes = find_boxes(text)
    return boxes[-1][2] if boxes else None


def _plain_number(num: str) -> str:
    """``8,000`` -> ``8000``; ``29.00`` -> ``29``; ``2.50`` -> ``2.5``."""
    n = num.replace(",", "")
    if "." in n:
        n = n.rstrip("0").rstrip(".") or "0"
    return n


# a labelled answer followed by its justification: "72, since each box holds 8." / "18 apples. Each box ..." /
# "5; because ..." - the clause after the break starts with a word (never "and"/"or", which join several answers)
_CLAUSE_RE = re.compile(r"^(?P<head>(?:[^,;]|(?<=\d),(?=\d{3}(?!\d)))*?)\s*"
                        r"(?:[,;]|\.(?=\s)|\s-\s|\s*\(|(?=\s+(?:since|because|as|so|which|given|"
                        r"due|where|for|from|by|rather|instead|not)\b))\s*(?P<tail>(?!(?:and|or)\b)(?:[ie]\.\s?[eg]\.|ie\b|eg\b"
                        r"|[A-Za-z][A-Za-z'’]+\b).*)$",
                        re.S)


_FRAC_RE = re.compile(r"-?\\[dt]?frac\{\d+\}\{\d+\}|-?\d+/\d+(?![\d/])")
_ARITH_RE = re.compile(r"^[\s\d.,+\-*/()$x]*(?:(?:\\times|\\cdot|\\div|\\\$)[\s\d.,+\-*/()$x]*)*$")


def _one_number(a: str) -> str | None:
    """The value of a labelled answer that is one plain number (or one exact fraction) among words, units or currency;
    a computation ending in it ("6 x 4 = 24 apples", "3 \\times \\$5 = \\$15") gives its result."""
    a = a.replace("\\$", "$")
    if "=" in a and a.count("=") == 1 and _ARITH_RE.match(a.split("=")[0]):
        a = a.split("=")[1]
    fracs = _FRAC_RE.findall(a)
    rest = _FRAC_RE.sub(" ", a)
    if len(fracs) == 1 and not _NUM_RE.search(rest) and not _MATHY.search(rest):
        sign, f = ("-", fracs[0][1:]) if fracs[0].startswith("-") else ("", fracs[0])
        if "frac" in f:
            return sign + re.sub(r"^\\[dt]frac", r"\\frac", f)
        num, den = f.split("/")
        return f"{sign}\\frac{{{num}}}{{{den}}}"
    if _MATHY.search(a.replace("\\%", "")) or last_boxed(a) is not None:
        return None
    nums = list(_NUM_RE.finditer(a.replace("{,}", ",")))
    return _plain_number(nums[0].group(0)) if len(nums) == 1 else None


def label_value(ans: str) -> str:
    """A labelled answer reduced to its number when it is one plain number among words/units/currency, or when its
    first clause is one such number followed by a justification ("72, since each box holds 8." -> 72)."""
    a = ans.strip()
    one = _one_number(a)
    if one is not None:
        return one
    m = _CLAUSE_RE.match(a)
    head = m.group("head").strip() if m else ""
    if head and all(head.count(o) == head.count(c) for o, c in ("()", "[]", "{}")):
        one = _one_number(head)
        return one if one is not None else head  # "2\sqrt{3}, since the side is 2" -> 2\sqrt{3}
    return a


def box_group(boxes: list[tuple[int, int, str]], text: str) -> list[str]:
    """Contents of the last box and of the boxes written together with it (only glue between them), in order."""
    group = [boxes[-1]]
    for b in reversed(boxes[:-1]):
        if not _GLUE_RE.match(text[b[1]:group[0][0]]):
            break
        group.insert(0, b)
    out: list[str] = []
    for _, _, c in group:
        c = clean_answer(c)
        if c and c not in out:
            out.append(c)
    return out


def clean_answer(ans: str) -> str:
    """Trim delimiters and punctuation around an answer and remove thousands separators (C03)."""
    a = ans.strip()
    inner = last_boxed(a)
    if inner is not None:
        a = inner.strip()
    a = re.sub(r"^\$+|\$+$", "", a).strip()
    a = re.sub(r"^\\\(|\\\)$|^\\\[|\\\]$", "", a).strip()
    a = re.sub(r"[\s.。;,:!]+$", "", a).strip()
    a = re.sub(r"\$+$", "", a).strip()
    a = a.replace("{,}", ",")
    b = a.lstrip("\\$").strip()
    if _SEP_NUM_RE.match(b):
        a = b.replace(",", "")
    if re.fullmatch(r"-?\d+\.\d+", a):
        a = _plain_number(a)
    return a.strip()


def prepare(text: str) -> str:
    """The text the extraction reads: Markdown emphasis removed, unicode numerals made plain."""
    return plain_numerals(strip_markdown(text or ""))


_SCALES = {"thousand": 10 ** 3, "million": 10 ** 6, "billion": 10 ** 9, "trillion": 10 ** 12, "k": 10 ** 3,
           "bn": 10 ** 9}
# a scale word after the number, or an abbreviation after an amount of money ("$40k": a bare "2k" is a variable)
_SCALED_RE = re.compile(r"^\s*(?P<cur>\$?)\s*(?P<num>-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?)\s*\$?"
                        r"(?:\s*(?P<w>thousand|million|billion|trillion)s?\b|(?P<a>k|K|bn)\b)[A-Za-z .]*$")


def scaled(stated: str) -> tuple[str, str, str] | None:
    """(value, number as written, scale word) of an answer that is one number with a scale word after it: "3.2
    million" -> ("3200000", "3.2", "million"), "$40k" -> ("40000", "40", "k"); None for anything else."""
    u = re.sub(r"\\(?:text|mbox|mathrm)\s*\{([^{}]*)\}", r" \1 ", stated or "").replace("\\$", "$").replace("\\,", "")
    money = u.lstrip().startswith("$")
    u = clean_answer(u)
    m = _CLAUSE_RE.match(u)
    head = m.group("head") if m else u
    m = _SCALED_RE.match(head)
    if not m or (m.group("a") and not (money or m.group("cur"))):
        return None
    word = (m.group("w") or m.group("a")).lower()
    from decimal import Decimal
    value = Decimal(m.group("num").replace(",", "")) * _SCALES[word]
    text = format(value.normalize(), "f")
    return text, _plain_number(m.group("num")), word


def extract_math_answer(text: str) -> MathExtraction:
    """Extract the final answer from model text (see module docstring for the order)."""
    if not text:
        return MathExtraction(None, None, False)
    t = prepare(text)
    ex, end = _extract(t)
    ex = replace(ex, revised=end is not None and revised_after(t, end))
    if ex.source in ("label", "boxed", "tag") and ex.stated and not ex.parts:
        sc = scaled(ex.stated)
        if sc is not None:
            ex = replace(ex, answer=sc[0], unscaled=sc[1], scale=sc[2])
    opened = [m.start() for m in _BOX_RE.finditer(t)]
    closed = {b[0] for b in find_boxes(t)}
    unclosed = [o for o in opened if o not in closed]
    if unclosed:
        ends = [b[1] for b in find_boxes(t) if b[2].strip()] + [m.end() for m in _TAG_RE.finditer(t)]
        if unclosed[-1] >= max(ends, default=-1):  # the final answer was being written when the reply stopped
            return replace(ex, cut=True)
    if ends_in_label(t):  # "... so the answer is": stopped before the value
        return replace(ex, cut=True)
    return ex


def _overlapping(rx: re.Pattern, t: str):
    """Every match of a label pattern, also one inside the previous match's answer text (two labels on a line)."""
    pos = 0
    while (m := rx.search(t, pos)) is not None:
        yield m
        pos = m.start("ans")


def _labels(t: str) -> list[tuple[int, int, int, str]]:
    """Labelled answers as (rank, end of the label's value, start, text after the label)."""
    found = [(m.start(), m.start("ans"), m.group("ans")) for rx in (_LABEL_RE, _ANSWER_IS_RE, _HASH_RE)
             for m in _overlapping(rx, t)]
    out = []
    for start, vs, ans in found:
        if not clean_answer(ans) or re.match(r"\s*(?:not|never|neither)\b", ans, re.I):
            continue  # "the answer is not 45" rejects a value
        head = re.match(r"[^\n]*?(?:[.;!?](?=\s|$)|$)", ans).group(0)  # type: ignore[union-attr]  # the value's own sentence
        out.append((mention_rank(t, start, vs), vs + len(head), start, ans))
    return out


def _extract(t: str) -> tuple[MathExtraction, int | None]:
    """The extraction and the end of the chosen answer in ``t`` (None when nothing was found)."""
    boxes = [b for b in find_boxes(t) if b[2].strip()]
    cands = [(mention_rank(t, s, e), e, s, c, "boxed") for s, e, c in boxes]
    cands += [(mention_rank(t, m.start(), m.end()), m.end(), m.start(), m.group(2), "tag") for m in _TAG_RE.finditer(t)]
    cands = [c for c in cands if c[3].strip()]
    labels = _labels(t)
    if cands:
        rank, end, _, content, src = pick(cands)  # type: ignore[misc]  # cands is not empty here
        group = box_group([b for b in boxes if b[1] <= end], t) if src == "boxed" else [clean_answer(content)]
        if rank < 2 and any(clean_answer(c[3]) not in group for c in cands if c[0] == rank):
            return MathExtraction(None, "hedge", False), None  # only conditional answers, several values
        # a labelled correction after the chosen box replaces it ("\boxed{30} ... hmm, I counted the first day twice,
        # so the answer is 27")
        later = [lb for lb in labels if lb[2] >= end and lb[0] == 2 and corrects(t, lb[2])
                 and re.search(r"[\d\\]", label_value(clean_answer(lb[3])))]  # a value, not "half of the area"
        if later:
            _, lend, lstart, ans = later[-1]
            return _label_extraction(t, lstart, ans), lend
        if src == "boxed":
            parts = group
            return MathExtraction(", ".join(parts) if parts else clean_answer(content), "boxed", True,
                                  tuple(parts) if len(parts) > 1 else (), stated=content), end
        return MathExtraction(clean_answer(label_value(clean_answer(content))), src, True, stated=content), end
    if labels:
        rank, end, start, ans = pick(labels)  # type: ignore[misc]  # labels is not empty here
        if rank < 2 and len({label_value(clean_answer(lb[3])) for lb in labels if lb[0] == rank}) > 1:
            return MathExtraction(None, "hedge", False), None
        return _label_extraction(t, start, ans), end
    return _fallback(t)


def _label_extraction(t: str, start: int, ans: str) -> MathExtraction:
    """A labelled answer: its value, the line as written, and whether it ends the reply on its digits."""
    rest = t[start:].rstrip(" \t")
    open_end = "\n" not in rest and re.search(r"\d$", rest) is not None
    return MathExtraction(clean_answer(label_value(clean_answer(ans))), "label", True, stated=ans, open_end=open_end)


# the fallback's concluding sentence: the last sentence that holds a number, when it concludes ("So she sold 48
# cookies in total, which is 6 boxes."): its value is the number before any justification after the conclusion word
_CONCLUDE = re.compile(r"\b(?:so|therefore|thus|hence|in\s+total|altogether|in\s+all|overall|total|which\s+means"
                       r"|that\s+means|this\s+means|giving|gives|get|gets)\b", re.I)
_GLOSS = re.compile(r"\s*\(|,?\s+(?:since|because|as|given\s+that|which\s+(?:is|are|was|were|means)|i\.e\.|that\s+is"
                    r"|where|from)\b|\s[-–—]\s", re.I)
_NUMBER_WORD = re.compile(r"\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen"
                          r"|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty"
                          r"|ninety|hundred|thousand|million|billion)\b", re.I)


def _fallback(t: str) -> tuple[MathExtraction, int | None]:
    """The last-number fallback (weak): the last number, unless the last sentence holding one concludes; then the
    number it concludes with, not one from a justification after it; a conclusion stated in words (the digits
    before it are working) gives no answer."""
    nums = list(_NUM_RE.finditer(t))
    if not nums:
        return MathExtraction(None, None, False), None
    last = nums[-1]
    bounds = [m.end() for m in re.finditer(r"[.!?](?=\s|$)|\n", t[:last.start()])]
    s0 = bounds[-1] if bounds else 0
    e = re.search(r"[.!?](?=\s|$)|\n", t[last.end():])
    s1 = last.end() + e.start() if e else len(t)
    cue = _CONCLUDE.search(t, s0, s1)
    if cue is not None:
        seg = t[cue.end():s1]
        first = _NUM_RE.search(seg)
        words = _NUMBER_WORD.search(seg)
        value_at = min(x.start() for x in (first, words) if x is not None) if (first or words) else None
        gloss = _GLOSS.search(seg, value_at + 1) if value_at is not None else None
        head = seg[:gloss.start()] if gloss else seg
        inside = list(_NUM_RE.finditer(head))
        if not inside and _NUMBER_WORD.search(head):
            return MathExtraction(None, None, False), None  # the conclusion in words: the digits are working
        if inside:
            last = inside[-1]
            a, b = cue.end() + last.start(), cue.end() + last.end()
            return MathExtraction(clean_answer(t[a:b]), "number", False, span=(a, b)), b
    return MathExtraction(clean_answer(last.group(0)), "number", False, span=(last.start(), last.end())), last.end()


def gsm8k_gold(answer_field: str) -> str:
    """GSM8K gold number: text after the last ``####``, commas removed (gsm8k/SOURCE.md)."""
    return answer_field.split("####")[-1].strip().replace(",", "")


# ---------------------------------------------------------------- the paper's normalisation (section 6.2; --faithful)

def paper_normalize(ans: str) -> str:
    """Normalisation of the paper's exact-match checker: strip $ \\( \\[ and outer braces, dfrac/tfrac -> frac,
    drop \\left \\right \\, \\!, unify dashes, strip trailing punctuation, remove whitespace."""
    a = ans.strip()
    a = a.replace("\\(", "").replace("\\)", "").replace("\\[", "").replace("\\]", "").replace("$", "")
    a = a.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    for tok in ("\\left", "\\right", "\\,", "\\!"):
        a = a.replace(tok, "")
    a = re.sub("[\u2212\u2013\u2014]", "-", a)
    a = re.sub(r"\s+", "", a)
    a = re.sub(r"[.,;:!]+$", "", a)
    while a.startswith("{") and a.endswith("}") and _balanced(a[1:-1]):
        a = a[1:-1]
    return a


def _balanced(s: str) -> bool:
    d = 0
    for c in s:
        d += (c == "{") - (c == "}")
        if d < 0:
            return False
    return d == 0


def paper_extract(text: str) -> str | None:
    """The paper's extraction: last ``\\boxed{}``, else the last ``<answer>``/``<final_answer>`` tag."""
    b = last_boxed(text or "")
    if b is not None:
        return b
    tags = _TAG_RE.findall(text or "")
    return tags[-1][1] if tags else None
