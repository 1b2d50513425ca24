"""Multiple-choice extraction: model text -> option letter (no scoring here).

Strong forms (the one that ends LAST wins, C11): ``<answer>X</answer>`` / ``<final_answer>X``, "answer is (X)",
"Answer: X" / "Final answer: X" / "Option X" / "Choice X" (no line break between the label and the letter; "Answer:
Option D" too), "the correct option is D" / "the best choice is (B)", "Option D is correct" / "C is the right answer",
``\\boxed{X}`` / ``\\boxed{\\text{X}}`` / ``\\boxed{(x)}``, a reply that is just the letter, and a reply whose first or
last line is an option line "(D) <option text>" / "D) <option text>". A letter in math mode or ``\\text{}``
(``$\\text{D}$``, ``$D$``, ``\\(D\\)``) reads as the plain letter, so "The answer is $\\text{D}$." is D and a reply
that is just ``$D$`` is D. Markdown bold/italic is removed first, so ``**B**`` and ``**Answer:** (c)`` read
as usual. Lowercase letters count in parentheses ``(b)``, in a box, or when
nothing but punctuation follows them (``Answer: c.``).
Never a letter: an article or pronoun. A bare ``a``/``i`` followed by a word ("Answer: a force of 10 N",
"answer: i think"), and a bare ``A``/``I`` followed by a word that is not a connective ("Answer: I think it is B",
"Answer: A force ..."; but "The answer is A because ..." is A). Any letter must end a word ("Answer: Let's" is not L).
Corrections and hedges: a correction "... just kidding, it's (B)" / "wait, actually it is B" / "the answer
is actually B" is a strong form, so the last committed answer wins whatever its form; a letter the text rejects ("D is
wrong", "not D", "(D) is not the right answer", right after it or anywhere later) is not an answer; when the winning
letter is followed by another option in a list ("D or B", "A, B, C, or D", "D/B") nothing is committed: no letter
(source "hedge", scored unparsed).
Committed, conditional and tentative mentions (answer_text.mention_rank): among the strong forms the last one of the
highest rank wins, so "The answer is (B). If friction were ignored, the answer would be (A)." is B, "At first glance
(A) ... the answer is (C) if my numbers hold" is C, and a correction ("On reflection, the correct choice is (C)")
replaces what came before. Only conditional (or only tentative) answers naming several letters are a hedge. A letter
right after "instead of", "rather than" or "as opposed to" is rejected. Full-width letters and brackets read as ASCII
(``（Ｂ）`` is B).
Cut-off replies: a reply ending on an answer label ("... the answer is") is ``cut``; ``revised`` says the text after
the chosen letter re-checks or corrects it (the family scores a truncated reply that was revising as truncated).
Weak fallback (status ``fallback`` in the score): the last parenthesised "(X)" or a line that is only "X"/"X."/"X)".
Letters outside the task's labels are ignored. Nothing found -> None (scored incorrect, status "unparsed"; C12).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .answer_text import ends_in_label, mention_rank, pick, plain_numerals, revised_after

_END = r"(?![A-Za-z0-9'’])"
# words after a bare A/I that confirm it is the option letter, not the article/pronoun
_CONNECTIVES = {"because", "since", "as", "which", "is", "was", "and", "with", "for", "due", "given", "option",
                "choice", "here", "therefore", "so", "seems", "appears", "best", "correct"}


@dataclass(frozen=True)
class MCExtraction:
    letter: str | None
    source: str | None
    strong: bool
    cut: bool = False  # the reply ends on an answer label: it stopped before writing its answer
    revised: bool = False  # the text after the chosen letter re-checks or corrects it


_OPT = r"(?:(?:option|choice)[ \t]+)?"  # "Answer: Option D", "the answer is choice (B)"
_CONFIRMED = ("confirmed",)
# sources whose letter the reply's structure confirms (a JSON key, an option line under a heading): no article check
_STRUCTURAL = ("json", "heading")
# sources whose letter is confirmed by the words after it: no article check
_ADV = r"(?:(?:actually|really|definitely|indeed|clearly|instead)[ \t]+)?"
# words after "X is correct" that restrict it to another case: "(D) is correct for an ideal gas, but ..."
_RESTRICT = (r"(?:only|for|in|when|if|under|as[ \t]+long|provided|but|except|unless|assuming|given|with|without"
             r"|too|also|as[ \t]+well)\b")


@lru_cache(maxsize=32)
def _patterns(labels: str):
    up = re.escape(labels)
    L = f"(?-i:[{up}{up.lower()}])"
    return (
        ("tag", re.compile(rf"<(?:answer|final_answer)>\s*(\(?)\s*({L}){_END}\s*\)?[^<]*</(?:answer|final_answer)>", re.I)),
        ("tag", re.compile(rf"<final_answer>\s*(\(?)({L}){_END}", re.I)),
        ("answer_is", re.compile(rf"answer\s+(?:is|should\s+be|must\s+be|has\s+to\s+be|will\s+be)\s*[:：]?"
                                 rf"[ \t]*{_ADV}{_OPT}(\(?)\s*({L}){_END}", re.I)),
        ("choose", re.compile(rf"\b(?:i(?:[’']ll|\s+will|\s+would)?\s+(?:go\s+with|choose|pick|select)|going\s+with"
                              rf"|my\s+(?:choice|pick)\s+is)[ \t]+{_OPT}(\(?)\s*({L}){_END}", re.I)),
        # a correction: "... just kidding, it's (B)", "wait, actually it is C", "no - it's B"
        ("correction", re.compile(rf"\b(?:kidding|actually|wait|correction|oops|sorry|no)\b[\s,.:;!—–-]*"
                                  rf"(?:actually[ \t]+)?(?:it'?s|it’s|it[ \t]+is)[ \t]+{_ADV}{_OPT}(\(?)\s*({L}){_END}",
                                  re.I)),
        # "the correct option is D.", "the best choice is (B)", "the right answer would be C"
        ("correct_is", re.compile(rf"(?:correct|right|best|final)\s+(?:option|choice|answer|letter)\s+"
                                  rf"(?:is|would\s+be|must\s+be)\s*[:：]?[ \t]*{_OPT}(\(?)\s*({L}){_END}", re.I)),
        ("label", re.compile(rf"(?:final\s+answer|answer|option|choice)\s*(?:is)?\s*[:：][ \t]*{_OPT}"
                             rf"(\(?)\s*({L}){_END}", re.I)),
        ("boxed", re.compile(rf"\\boxed\s*\{{\s*(?:\\(?:text|textbf|mathrm|mathbf)\s*\{{)?\s*(\(?)({L})\)?\s*\}}?\s*\}}")),
        # a JSON answer key: {"answer": "D"} (quoted letters are read as "(D)" first, see _QUOTED)
        ("json", re.compile(rf"[\"']?\b(?:final_?answer|answer|choice|option)[\"']?\s*:\s*(\(?)\s*({L})\)?\s*[,}}]",
                            re.I)),
        # "which is option D", "which corresponds to (D)", "that is choice C"
        ("which_is", re.compile(rf"\b(?:which|that|this)[ \t]+(?:is|corresponds[ \t]+to|matches|gives)[ \t]+"
                                rf"(?:the[ \t]+)?(?:option|choice|answer)[ \t]+(\(?)\s*({L}){_END}", re.I)),
        ("which_is", re.compile(rf"\b(?:which|that|this)[ \t]+(?:is|corresponds[ \t]+to|matches|gives)[ \t]+"
                                rf"(?:the[ \t]+)?(\()\s*({L})\)", re.I)),
        # a heading line ("## Final Answer", "Answer:", "**Answer**"), then the option line "D. text" / "(D) text" / "D"
        ("heading", re.compile(rf"(?im)^[ \t]*(?:#{{1,6}}[ \t]*)?(?:the[ \t]+)?(?:final[ \t]+answer|answer|correct[ \t]+"
                               rf"(?:answer|option|choice))[ \t]*[:：]?[ \t]*\n(?:[ \t]*\n)*[ \t]*(\(?)\s*({L})"
                               rf"(?=[.)][ \t]+\S|\)?[ \t]*\.?[ \t]*$)")),
        # "Option D is correct", "(B) is the right answer", "C is the correct choice"
        ("confirmed", re.compile(rf"(?<![A-Za-z0-9'’]){_OPT}(\(?)({L})\)?[ \t]+is[ \t]+(?:the[ \t]+)?"
                                 rf"(?:correct|right|best)(?:[ \t]+(?:answer|option|choice))?{_END}"
                                 rf"(?![ \t]*,?[ \t]*{_RESTRICT})", re.I)),
    )


@lru_cache(maxsize=32)
def _multi(labels: str) -> re.Pattern:
    """Statements naming several letters as the answer: "the answers are B and D", "the correct options are (B) and
    (D)", "both B and D are correct", "B and D are both correct"."""
    up = re.escape(labels)
    one = rf"(?:option[ \t]+|choice[ \t]+)?\(?[{up}]\)?{_END}"
    more = rf"{one}(?:[ \t]*(?:,|and|&|/|\+)[ \t]*(?:and[ \t]+)?{one})+"
    return re.compile(rf"\b(?:answers|options|choices|letters)[ \t]+(?:are|would[ \t]+be|:)[ \t]*[:：]?[ \t]*{more}"
                      rf"|\b(?:answers|choices|letters)[\"']?[ \t]*:[ \t]*\[[ \t]*[\"']?{one}"
                      rf"|\bboth[ \t]+{one}[ \t]+and[ \t]+{one}"
                      rf"|{more}[ \t]+are[ \t]+(?:both[ \t]+|all[ \t]+)?(?:correct|right|true|valid)\b", re.I)


# a letter in quotes is the letter: 'The answer is "D".', "Answer: 'D'", {"answer": "D"}
_QUOTE_ANCHOR = re.compile(r"(?:(?:answer|option|choice)(?:\s+(?:is|would\s+be|should\s+be|must\s+be))?"
                           r"|letter\s+(?:is|would\s+be|should\s+be|must\s+be)|choose"
                           r"|chose|pick|select|go\s+with|:)[\"'”’]?\s*[\[{(]?\s*$", re.I)


def _unquote_letters(t: str, labels: str) -> str:
    """A quoted letter right after an answer word or a colon reads as "(D)" ('The answer is "D"', "Answer:
    'D'", '{"answer": "D"}'); elsewhere ("the letter 'D' marks the pivot") it stays as it is."""
    up = re.escape(labels)

    def sub(m: re.Match) -> str:
        line = t[max(0, t.rfind("\n", 0, m.start()) + 1):m.start()]
        return f"({m.group(1) or m.group(2)})" if _QUOTE_ANCHOR.search(line[-40:]) else m.group(0)
    return re.sub(rf"[\"“]\s*\(?([{up}])\)?\s*[\"”]|['‘]\(?([{up}])\)?['’]", sub, t)


# a letter written in math mode or \text{}: "$\text{D}$", "$D$", "\(D\)", "\textbf{D}" -> "D"
_TXT = r"\\(?:text|textbf|mathrm|mathbf)\s*\{\s*\(?([A-Za-z])\)?\s*\}"
# (on one line: "$x$\n(B) $y$" holds no letter in math mode)
_MATH_LETTER = re.compile(rf"\$[ \t]*(?:{_TXT}|\(?([A-Za-z])\)?)[ \t]*\$"
                          rf"|\\\([ \t]*(?:{_TXT}|\(?([A-Za-z])\)?)[ \t]*\\\)"
                          rf"|(?<!\\boxed\{{){_TXT}")


def _unwrap_math_letters(t: str) -> str:
    return _MATH_LETTER.sub(lambda m: next(g for g in m.groups() if g), t)


def _is_letter(text: str, m: re.Match, paren: bool, src: str = "") -> bool:
    """False when the matched letter is really an article or pronoun (see the module docstring)."""
    letter = m.group(2)
    if src in _CONFIRMED and not paren:
        return letter.isupper()  # "a is the best" is an article; "A is the correct answer" a letter
    if paren or m.re.pattern.startswith(("\\boxed", "<")) or src in _STRUCTURAL:
        return True
    nxt = re.match(r"[ \t]+([A-Za-z][A-Za-z'’]*)", text[m.end():])
    if letter.islower():
        return nxt is None
    if letter in "AI" and nxt is not None:
        return nxt.group(1).lower() in _CONNECTIVES
    return True


def _rejected(t: str, m: re.Match, labels: str) -> bool:
    return _rejected_at(t, m.group(2).upper(), m.start(2), m.end())


def _rejected_at(t: str, letter: str, start: int, end: int) -> bool:
    """True when the text rejects the matched letter: "D is wrong/incorrect" right after it, "not D" before it, or a
    later "not D" / "D is wrong" (a correction: "Answer: D ... The answer is actually B, not D")."""
    rest = t[end:]
    if re.match(r"\)?[ \t]*(?:is|was|'s|’s)[ \t]+(?:wrong|incorrect|not\b|false|a[ \t]+mistake)", rest, re.I):
        return True
    if re.search(r"\b(?:not|instead[ \t]+of|rather[ \t]+than|as[ \t]+opposed[ \t]+to)[ \t]+(?:option[ \t]+|choice[ \t]+)?"
                 r"\(?$", t[:start], re.I):
        return True
    lt = rf"\(?(?-i:[{letter}{letter.lower()}])\)?{_END}"
    return bool(re.search(rf"\bnot[ \t]+(?:option[ \t]+|choice[ \t]+)?{lt}"
                          rf"|(?<![A-Za-z0-9'’]){_OPT}{lt}[ \t]+(?:is|was)[ \t]+(?:wrong|incorrect|not[ \t]+"
                          rf"(?:the[ \t]+)?(?:right|correct|answer))", rest, re.I))


def _hedged(t: str, end: int, labels: str) -> bool:
    """True when the committed letter is followed by another option in a list: "D or B", "A, B, C, or D", "B/C"."""
    up = re.escape(labels)
    m = re.match(rf"\)?[ \t]*(?:,[ \t]*(?:or[ \t]+|and[ \t]+)?|[ \t]+(?:or|and)[ \t]+|[/&+][ \t]*)"
                 rf"(?:option[ \t]+|choice[ \t]+)?\(?([{up}])\)?{_END}", t[end:])
    if not m:
        return False
    if _rejected_at(t, m.group(1), end + m.start(1), end + m.end()):
        return False  # "C and D is wrong": the second letter is rejected, not offered
    nxt = re.match(r"[ \t]+([A-Za-z][A-Za-z'’]*)", t[end + m.end():])
    # "D, I think" / "B and A force of ..." : a pronoun or article, not a second option
    return not (m.group(1) in "AI" and nxt is not None and nxt.group(1).lower() not in _CONNECTIVES)


_EVALUATION = re.compile(
    r"(?:is|was|would\s+be|seems|looks|appears)\s+(?:not\s+|also\s+|only\s+)?(?:the\s+)?(?:correct|incorrect|wrong|right"
    r"|false|true|invalid|valid|eliminated|ruled\s+out|best|answer|possible|impossible|plausible|implausible)\b"
    r"|(?:fails|ignores|neglects|confuses|double[- ]counts|overcounts|undercounts|contradicts)\b"
    r"|(?:only|also)\s+(?:correct|right|valid|works|applies|true)\b"
    r"|[:\-–—]\s*(?:wrong|incorrect|correct|right|false|true|no\b|yes\b|eliminat|rule|not\b)", re.I)


def _list_follows(t: str, pos: int, labels: str) -> bool:
    """True when the line after the one holding ``pos`` is another option line: the heading introduced an echoed list
    of options ("Answer:\nA. 10 N\nB. 20 N"), not the choice."""
    le = t.find("\n", pos)
    nxt = t[le + 1:].lstrip("\n") if le >= 0 else ""
    return re.match(rf"[ \t]*\(?[{re.escape(labels)}][.)]\s", nxt) is not None


def _listed_or_evaluated(t: str, start: int, labels: str) -> bool:
    """True when the letter at ``start`` begins a line of an echoed options list or an evaluation of that option
    ("(D) is correct for an ideal gas, but ...", "Option (D) is right only if ..."), not a choice."""
    ls = t.rfind("\n", 0, start) + 1
    le = t.find("\n", start)
    line = t[ls:le if le >= 0 else len(t)].strip()
    after = t[start + 1:le if le >= 0 else len(t)]
    if re.match(rf"\)?[ \t]+(?:is|was)[ \t]+(?:the[ \t]+)?(?:correct|right|best)(?:[ \t]+(?:answer|option|choice))?"
                rf"[ \t]*,?[ \t]*{_RESTRICT}", after, re.I):
        return True
    pat = re.compile(rf"^(?:option[ \t]+)?\(([{re.escape(labels)}])\)(?:\s+(\S.*)|$)|^([{re.escape(labels)}])\)\s+(\S.*)", re.I)
    m = pat.match(line)
    if not m or t[ls:start].strip().lower() not in ("", "(", "option", "option ("):
        return False
    if _EVALUATION.match(m.group(2) or m.group(4) or ""):
        return True
    lines = t.split("\n")
    i = t.count("\n", 0, start)
    return any(0 <= j < len(lines) and pat.match(lines[j].strip()) for j in (i - 1, i + 1))


def _option_lines(t: str, labels: str) -> dict[int, str]:
    """Line number -> letter of every option line ("(D) text", "D) text", "D. text")."""
    up = re.escape(labels)
    out = {}
    for i, ln in enumerate(t.split("\n")):  # line numbers as t.count("\n") gives them (\v is no line break here)
        m = re.match(rf"[ \t]*(?:\(([{up}])\)(?:[ \t]+\S|[ \t]*$)|([{up}])[.)][ \t]+\S)", ln)
        if m:
            out[i] = m.group(1) or m.group(2)
    return out


def _options_echoed(t: str, labels: str) -> bool:
    """True when the reply holds option lines of three or more letters: it echoes the options list (or walks
    through it), so none of those lines is a choice."""
    return len(set(_option_lines(t, labels).values())) >= 3


def _option_line(t: str, labels: str) -> str | None:
    """The letter of a reply whose first or last non-empty line is an option line "(D) text" / "D) text"; not a line
    of an options list the reply echoes (another option line next to it) and not an evaluation of that option in an
    elimination list ("(D) is correct for an ideal gas, but ...", "(B) - wrong")."""
    if _options_echoed(t, labels):
        return None
    lines = [ln.strip() for ln in t.strip().splitlines() if ln.strip()]
    pat = re.compile(rf"^\(([{re.escape(labels)}])\)(?:\s+(\S.*)|$)|^([{re.escape(labels)}])\)\s+(\S.*)")
    for i in ((len(lines) - 1, 0) if lines else ()):
        m = pat.match(lines[i])
        if not m:
            continue
        neighbours = [lines[j] for j in (i - 1, i + 1) if 0 <= j < len(lines) and j != i]
        if any(pat.match(n) for n in neighbours):
            continue  # a line of a list of options
        rest = m.group(2) or m.group(4) or ""
        if _EVALUATION.match(rest):
            continue
        return m.group(1) or m.group(3)
    return None


_HEDGE_WORDS = re.compile(r"\b(?:either|likely|probably|possibly|perhaps|maybe|might|could\s+be|not\s+sure|unsure"
                          r"|uncertain|guess|also\s+possible|leaning|tempted|torn|can'?t\s+decide)\b", re.I)


def _hedge_sentence(t: str, start: int, end: int, letter: str, labels: str) -> bool:
    """True when the sentence holding the fallback letter hedges: a hedge word ("either", "likely", "maybe", "could
    be", "also possible"), or the letter offered beside another ("(B) or (C)", "(B)/(C)")."""
    s0 = max([m.end() for m in re.finditer(r"[.!?](?=\s|$)|\n", t[:start])], default=0)
    e = re.search(r"[.!?](?=\s|$)|\n", t[end:])
    sentence = t[s0:end + e.start() if e else len(t)]
    if _HEDGE_WORDS.search(sentence):
        return True
    up = re.escape(labels)
    one = rf"\(?[{up}]\)?{_END}"
    return re.search(rf"{one}[ \t]*(?:,[ \t]*(?:or[ \t]+)?|or[ \t]+|[/&][ \t]*)(?:option[ \t]+)?{one}", sentence) is not None


def _also_possible(t: str, end: int, labels: str) -> bool:
    """True when the committed letter's sentence goes on to offer another: "(B), though (C) is also possible"."""
    up = re.escape(labels)
    return re.match(rf"[^.!?\n]{{0,160}}?\b(?:though|although|but|or|however|while)\b[^.!?\n]{{0,60}}?"
                    rf"(?:option[ \t]+|choice[ \t]+)?\(?[{up}]\)?{_END}[^.!?\n]{{0,30}}?\b(?:is|could|might|may|would)"
                    rf"[ \t]+(?:also|equally|just[ \t]+as)\b", t[end:], re.I) is not None


def extract_choice(text: str, labels: str = "ABCD") -> MCExtraction:
    """Extract the chosen option letter from ``text``; ``labels`` are the valid letters (e.g. "ABCD", "ABCDEFGHIJ")."""
    if not text:
        return MCExtraction(None, None, False)
    t = _unquote_letters(_unwrap_math_letters(re.sub(r"\*\*|__", "", plain_numerals(text))), labels)
    stripped = t.strip()
    m = re.fullmatch(rf"\(?([{re.escape(labels)}])\)?[.)]?", stripped)
    if m:
        return MCExtraction(m.group(1), "bare", True)
    m = re.fullmatch(rf"\(([{re.escape(labels.lower())}])\)[.]?", stripped)
    if m:
        return MCExtraction(m.group(1).upper(), "bare", True)
    if ends_in_label(t):
        return MCExtraction(None, "cut", False, cut=True)
    found = [(mention_rank(t, m.start(), m.end()), m.end(), m.group(2).upper(), src, m.end(2))
             for src, pat in _patterns(labels) for m in pat.finditer(t)
             if _is_letter(t, m, bool(m.group(1)), src) and not _rejected(t, m, labels)
             and not (src == "heading" and _list_follows(t, m.end(), labels))]
    # several letters stated as the answer: a single-answer question gets none of them
    found += [(mention_rank(t, m.start(), m.end()), m.end(), "*", "multi", m.end()) for m in _multi(labels).finditer(t)]
    best = pick(found)
    if best:
        rank, end, letter, src, letter_end = best
        if letter == "*":
            return MCExtraction(None, "multi", False)
        if (_hedged(t, letter_end, labels) or _hedged(t, end, labels) or _also_possible(t, end, labels)
                or (rank < 2 and len({f[2] for f in found if f[0] == rank}) > 1)):
            # "The answer is D or B", "<answer>A, C</answer>", "(B), though (C) is also possible", or only
            # conditional answers naming several letters ("if the friction is large the answer is (A); if it is
            # small, the answer is (B)"): no single letter committed
            return MCExtraction(None, "hedge", False)
        return MCExtraction(letter, src, True, revised=revised_after(t, end))
    opt = _option_line(t, labels)
    if opt:
        return MCExtraction(opt, "option_line", True)
    weak = [(m.end(), m.group(1), m.start(1)) for m in re.finditer(rf"\(([{re.escape(labels)}])\)", t)]
    weak += [(m.end(), m.group(1), m.start(1))
             for m in re.finditer(rf"(?m)^[ \t]*([{re.escape(labels)}])[ \t]*[.)]?[ \t]*$", t)]
    listed = set(_option_lines(t, labels)) if _options_echoed(t, labels) else set()
    kept = [w for w in weak if not _rejected_at(t, w[1], w[2], w[0]) and not _listed_or_evaluated(t, w[2], labels)
            and t.count("\n", 0, w[2]) not in listed]
    if kept:
        end, letter, start = max(kept)
        if _hedge_sentence(t, start, end, letter, labels):
            return MCExtraction(None, "hedge", False)  # "either (B) or (C)", "likely (B), though (C) is also possible"
        return MCExtraction(letter, "last_letter", False)
    return MCExtraction(None, None, False)
