"""How the extractors read answer text: unicode numerals made plain, and whether a mention of an answer is committed.

Numerals (:func:`plain_numerals`): a minus written U+2212 (or another minus dash) is ``-``; vulgar fractions become
exact fractions (``2¼`` -> ``\\frac{9}{4}``, ``¾`` -> ``\\frac{3}{4}``, also ``2¹⁄₄``); full-width digits, letters and
brackets are ASCII (``４２`` -> ``42``, ``（B）`` -> ``(B)``); superscripts are powers (``10³`` -> ``10^{3}``) and
subscripts indices; a thin, narrow or no-break space between digit groups joins them (``1 000 000``); ``×``, ``÷``,
``√``, ``π``, ``°`` and ``∞`` are their LaTeX.

Commitment (:func:`mention_rank`): models state answers they do not commit to. A mention of an answer is ranked by the
clause around it (bounded by sentence ends, line breaks, brackets, dashes and "but"/"however"/"whereas"; after the
mention, a justification - "since", "because", "which" ... - ends it):
- 2, committed: a plain statement, or a correction ("On reflection, the correct choice is (C)", "hmm, I counted the
  first day twice, so the answer is 27"; the sentence before the clause counts for the correction words);
- 1, conditional: a hypothetical, counterfactual or qualified mention ("Option (A) would be right if friction were
  ignored", "under the other convention the answer is (C)", "forgetting the tax gives the answer is 40", "a common
  mistake gives 40"). A correction stays committed unless it also holds a strong hypothetical (forgetting, otherwise,
  under the other ..., only if ...) or both "if" and a modal ("would", "could", "might");
- 0, tentative: "at first glance", "initially", "my first guess".
The extractors take the last mention of the highest rank, so a committed answer stands against later conditional
mentions and a real correction replaces it.

Revision (:func:`revised_after`) and dangling labels (:func:`ends_in_label`): a reply cut off while it re-checks or
re-states its answer, or one ending on "the answer is", was stopped before its final answer.
"""
from __future__ import annotations

import re
import unicodedata

_SUP = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_SUB = str.maketrans("₀₁₂₃₄₅₆₇₈₉₋₊", "0123456789-+")
_VULGAR = {"½": (1, 2), "⅓": (1, 3), "⅔": (2, 3), "¼": (1, 4), "¾": (3, 4), "⅕": (1, 5), "⅖": (2, 5), "⅗": (3, 5),
           "⅘": (4, 5), "⅙": (1, 6), "⅚": (5, 6), "⅐": (1, 7), "⅛": (1, 8), "⅜": (3, 8), "⅝": (5, 8), "⅞": (7, 8),
           "⅑": (1, 9), "⅒": (1, 10), "↉": (0, 3)}
_MIXED = re.compile(r"(?<![\d.])(-?)(?:(\d+)[ \u00a0\u2009\u202f]?)?(?:([" + "".join(_VULGAR) + r"])"
                    r"|([⁰¹²³⁴⁵⁶⁷⁸⁹]+)[⁄/]([₀₁₂₃₄₅₆₇₈₉]+))")
_MINUS = re.compile(r"[\u2212\u2012\ufe63\uff0d]|\u2013(?=\s?\d)(?<![\d\w]\u2013)")
_GROUP_SPACE = re.compile(r"(?<=\d)[\u00a0\u2009\u202f\u2007](?=\d{3}(?!\d))")
_SUPERSCRIPT = re.compile(r"[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+")
_SUBSCRIPT = re.compile(r"[₋₊]?[₀₁₂₃₄₅₆₇₈₉]+")
_SYMBOLS = {"×": r"\times ", "÷": r"\div ", "π": r"\pi ", "∞": r"\infty ", "°": r"^\circ", "≤": r" \le ",
            "≥": r" \ge ", "≠": r" \ne ", "·": r" \cdot "}


def _fraction(m: re.Match) -> str:
    sign, whole = m.group(1), int(m.group(2) or 0)
    if m.group(3):
        num, den = _VULGAR[m.group(3)]
    else:
        num, den = int(m.group(4).translate(_SUP)), int(m.group(5).translate(_SUB))
    if den == 0:
        return m.group(0)
    return f"{sign}\\frac{{{whole * den + num}}}{{{den}}}"


def _fullwidth(c: str) -> str:
    o = ord(c)
    return chr(o - 0xFEE0) if 0xFF01 <= o <= 0xFF5E else (" " if o == 0x3000 else c)


def plain_numerals(text: str) -> str:
    """``text`` with unicode numerals and symbols written in ASCII/LaTeX (module docstring)."""
    if not text or text.isascii():
        return text or ""
    t = "".join(_fullwidth(c) for c in text)
    t = _MINUS.sub("-", t)
    t = _GROUP_SPACE.sub("", t)
    t = _MIXED.sub(_fraction, t)
    t = _SUPERSCRIPT.sub(lambda m: "^{" + m.group(0).translate(_SUP) + "}", t)
    t = _SUBSCRIPT.sub(lambda m: "_{" + m.group(0).translate(_SUB) + "}", t)
    t = re.sub(r"√\s*(\d+(?:\.\d+)?|[A-Za-z])", r"\\sqrt{\1}", t).replace("√", r"\sqrt")
    for sym, tex in _SYMBOLS.items():
        t = t.replace(sym, tex)
    return unicodedata.normalize("NFC", t)


# ------------------------------------------------------------------------------------------------- commitment

_BOUNDARY = re.compile(r"(?<!\bi\.e)(?<!\be\.g)(?<!\bvs)[.!?;](?=\s|$)|\n|[()\[\]]|—|\s[-–]\s"
                       r"|\b(?:but|however|whereas|although|though)\b", re.I)
_STRONG_HYPO = re.compile(
    r"\b(?:forgetting|forgot\s+to|ignoring|neglecting|omitting|disregarding|leaving\s+out|dropping|otherwise"
    r"|under\s+(?:the|a|an)\s+(?:other|alternative|different|opposite|old|older|naive|wrong|incorrect|another)"
    r"|(?:common|typical|classic|frequent|tempting|likely|easy)\s+(?:mistake|error|trap|pitfall|misconception|slip"
    r"|distractor|wrong\s+answer)|mistakenly|incorrectly|wrongly|erroneously|naively|carelessly|by\s+mistake"
    r"|hypothetical(?:ly)?|counterfactual|only\s+(?:if|when|for|under|in\s+the\s+case)|in\s+contrast|by\s+contrast"
    r"|(?:someone|a\s+student|one)\s+(?:might|may|could|would)\s+(?:think|assume|choose|pick|say|answer|get))\b",
    re.I)
_WEAK_HYPO = re.compile(r"\b(?:if|unless|assuming|assume|suppose|supposing|provided|were\s+we|had\s+we)\b", re.I)
_MODAL = re.compile(r"\b(?:would|could|might)\b|\b(?:i|you|we|it|they|that)[’']d\b", re.I)
_TENTATIVE = re.compile(r"\b(?:at\s+first(?:\s+(?:glance|sight))?|initially|tentatively|my\s+first\s+"
                        r"(?:guess|thought|instinct|answer)|first\s+guess|at\s+a\s+glance|preliminar(?:y|ily))\b", re.I)
_CORRECTION = re.compile(
    r"\b(?:wait|actually|hmm+|oops|whoops|on\s+(?:second\s+thought|reflection|closer\s+inspection)|correction"
    r"|scratch\s+that|i\s+made\s+(?:a|an)\s+(?:mistake|error)|my\s+(?:mistake|error|bad)|i\s+was\s+wrong"
    r"|that(?:[’']s|\s+is|\s+was)\s+(?:wrong|incorrect|not\s+right)|i\s+(?:mis\w+|forgot|overlooked|missed|ignored"
    r"|counted)|miscount\w*|double[- ]count\w*|re-?check\w*|re-?calculat\w*|re-?comput\w*|re-?count\w*"
    r"|re-?examin\w*|re-?evaluat\w*|reconsider\w*|double[- ]check\w*|let\s+me\s+(?:check|verify|redo|fix)"
    r"|(?:upon|after)\s+(?:checking|review|reviewing|verification|reflection)|the\s+(?:correct|right|true|actual)"
    r"\s+(?:answer|value|total|result|choice|option|count)|corrected|instead|rather|turns\s+out|no,)", re.I)
_REVISION = re.compile(
    _CORRECTION.pattern + r"|\b(?:let\s+me\s+(?:double[- ]check|make\s+sure|see|think|look|re\w+)|verify(?:ing)?"
    r"|to\s+(?:confirm|be\s+sure|check)|alternatively|but\s+(?:wait|is|does|what|maybe|perhaps)|is\s+that\s+right"
    r"|are\s+we\s+sure|sanity\s+check)\b", re.I)
_WINDOW = 400
_JUSTIFICATION = re.compile(r"\b(?:since|because|as|given\s+that|due\s+to|which|so\s+that)\b", re.I)


def clause(text: str, start: int, end: int) -> str:
    """The clause around ``text[start:end]`` (see module docstring), the mention itself left out."""
    while start > 0 and text[start - 1] in "([{":  # the bracket of "(B)" or "\boxed{" is part of the mention
        start -= 1
    skip = re.match(r"\s*[)\]}]", text[end:end + 4])
    end += skip.end() if skip else 0
    lo = max(0, start - _WINDOW)
    cs = lo
    for m in _BOUNDARY.finditer(text, lo, start):
        cs = m.end()
    after = _BOUNDARY.search(text, end, min(len(text), end + _WINDOW))
    ce = after.start() if after else min(len(text), end + _WINDOW)
    why = _JUSTIFICATION.search(text, end, ce)  # "(C), since otherwise ... would": the reason, not a condition
    ce = why.start() if why else ce
    return text[cs:start] + " … " + text[end:ce]


def _previous_sentence(text: str, start: int) -> str:
    """The last non-empty sentence before the one holding ``start``, with the start of that one."""
    lo = max(0, start - _WINDOW)
    pieces = re.split(r"(?<=[.!?;])\s|\n", text[lo:start])
    filled = [i for i, p in enumerate(pieces[:-1]) if p.strip()]
    return " ".join(pieces[filled[-1]:]) if filled else text[lo:start]


def mention_rank(text: str, start: int, end: int) -> int:
    """2 committed, 1 conditional, 0 tentative: how the text around ``text[start:end]`` states that answer."""
    c = clause(text, start, end)
    corrected = bool(_CORRECTION.search(c) or _CORRECTION.search(_previous_sentence(text, start)))
    if corrected:
        return 1 if _STRONG_HYPO.search(c) or (_WEAK_HYPO.search(c) and _MODAL.search(c)) else 2
    if _TENTATIVE.search(c):
        return 0
    return 1 if _STRONG_HYPO.search(c) or _WEAK_HYPO.search(c) or _MODAL.search(c) else 2


def corrects(text: str, start: int) -> bool:
    """True when the sentence starting the mention at ``start`` (or the one before it) corrects an earlier answer."""
    return bool(_CORRECTION.search(clause(text, start, start)) or _CORRECTION.search(_previous_sentence(text, start)))


def pick(mentions: list[tuple]) -> tuple | None:
    """The mention to keep among ``(rank, end, ...)`` tuples: the highest rank, the last of those."""
    return max(mentions, key=lambda m: (m[0], m[1])) if mentions else None


def revised_after(text: str, pos: int) -> bool:
    """True when the text after ``pos`` re-checks, corrects or re-states the answer (a cut-off reply was revising)."""
    return bool(_REVISION.search(text, pos))


_DANGLING = re.compile(r"(?:\banswer\s*(?:is|:|：|should\s+be|would\s+be|must\s+be|=)|\bis\s*:|####|=)"
                       r"\s*[(\[{$]?\s*(?:\\\(|\\\[|\\boxed\{)?\s*$", re.I)


def ends_in_label(text: str) -> bool:
    """True when the reply stops right after an answer label ("... so the answer is", "Answer: (", "#### "): it was
    cut off before writing the answer."""
    return bool(_DANGLING.search((text or "").rstrip()[-200:]))


# ------------------------------------------------------------------------------------------ qualified values

# bounds a question may itself ask for: an answer that repeats the question's own bound states the value asked for
_UPPER = ("at most", "at the most", "up to", "no more than", "not more than", "a maximum of", "maximum", "max",
          "or less", "or fewer", "tops", r"\le", r"\leq", "≤")
_LOWER = ("at least", "at the least", "no less than", "not less than", "no fewer than", "a minimum of", "minimum",
          "min", "or more", r"\ge", r"\geq", "≥")
_DEADLINE = ("no later than", "not later than", "at the latest", "by", "within")
_BOUND_ASKED = {
    "upper": re.compile(r"\b(?:at\s+(?:the\s+)?most|up\s+to|no\s+more\s+than|not\s+more\s+than|maximum|max)\b", re.I),
    "lower": re.compile(r"\b(?:at\s+(?:the\s+)?least|no\s+(?:less|fewer)\s+than|not\s+less\s+than|minimum|min)\b",
                        re.I),
    "deadline": re.compile(r"\bby\s+(?:how\s+many|when|what)\b|\bno\s+later\s+than\b|\bat\s+the\s+latest\b|\bwithin\b"
                           r"|\bdeadline\b", re.I),
}
_APPROX = (r"about|around|approx\w*\.?|roughly|nearly|almost|circa|ca\.|close\s+to|just\s+(?:over|under)|some"
           r"|an?\s+estimated|estimated|probably|maybe|perhaps|possibly|likely|i\s+(?:think|guess|believe|assume)"
           r"|more\s+than|less\s+than|fewer\s+than|over|under|above|below|<|>|~|≈|\\approx|\\sim|\\lt|\\gt")
_LEAD = re.compile(r"(?i)^[\s:$(\[{]*(?P<q>" + "|".join(re.escape(b) if "\\" in b or not b.isalpha() else b
                                                        for b in (*_UPPER, *_LOWER, *_DEADLINE))
                   + r"|" + _APPROX + r"|not|never|no)(?![a-z(])")
_TRAIL = re.compile(
    r"(?i)(?P<q>give[\s-]+or[\s-]+take|or\s+so|or\s+thereabouts|more\s+or\s+less|-?ish\b|\?"
    r"|or\s+something(?:\s+like\s+that)?|if\s+i(?:'m|\s+am)\s+(?:not\s+mistaken|right)"
    r"|at\s+(?:the\s+)?(?:most|least|latest)|or\s+(?:more|less|fewer|under|over|above|below)(?!\s+(?:precisely|exactly"
    r"|simply|formally|accurately))|tops|max(?:imum)?"
    r"|minimum|approx\w*\.?|roughly|about|around|i\s+(?:think|guess|believe)|probably|maybe|perhaps"
    r"|possibly|likely|estimated|at\s+a\s+guess|in\s+the\s+ballpark)(?![a-z])")
# where a justification or a worked restatement starts after the value: hedge words past it qualify the working
_REASON = re.compile(r"(?i)\b(?:since|because|as|given|due\s+to|from|which|that\s+is|i\.?e\.?|e\.g\.|for|per|using"
                     r"|with|based|(?<!\bor\s)so|thus|hence|after|at(?!\s+(?:the\s+)?(?:most|least|latest)\b)|x|times)\b"
                     r"|[=×*]|\\times|\((?=[^)]*\d)")
# a variable approximately equal to the value: "x \approx 3.14", "t ≈ 2.5" (an inequality "x \le 5" is a value)
_VAR_APPROX = re.compile(r"^[\s:$(\[{]*[A-Za-z](?:_\{?\w+\}?)?\s*(?P<q>≈|\\approx|~|\\sim)")
_NUMERAL = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _bound_class(phrase: str) -> str | None:
    p = re.sub(r"\s+", " ", phrase.strip().lower())
    for name, group in (("upper", _UPPER), ("lower", _LOWER), ("deadline", _DEADLINE)):
        if p in group:
            return name
    return None


def qualifier(answer: str, question: str = "") -> str | None:
    """The hedge, bound or negation qualifying a stated value (None when the value stands plain): before the first
    number ("about 35", "at least 18", "~35", "not 35", "\\approx 18") or right after it, before any justification
    ("35, give or take", "35 or so", "35-ish", "35?", "35 at most", "35 (approximately)"). A bound the question asks
    for itself is the value, not a qualifier ("at most $100" when the ticket asks "how much can the refund be at
    most", "no later than hour 22" when it asks "by how many hours"); strict bounds ("more than", "over") never
    are."""
    a = (answer or "").strip()
    first = _NUMERAL.search(a)
    if first is None:
        return None
    found: list[str] = []
    lead = _LEAD.match(a[:first.start()]) or _VAR_APPROX.match(a[:first.start()])
    if lead:
        found.append(lead.group("q"))
    after = a[first.end():]
    stop = _REASON.search(after)
    for m in _TRAIL.finditer(after[:stop.start()] if stop else after):
        found.append(m.group("q"))
    for q in found:
        kind = _bound_class(q)
        if kind is None or not _BOUND_ASKED[kind].search(question or ""):
            return q
    return None
