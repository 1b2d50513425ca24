"""Multiple-choice extraction: model text -> option letter (no scoring here).

Strong forms (the one that ends LAST wins, C11): ``<answer>X</answer>`` / ``<final_answer>X``, "answer is (X)",
"Answer: X" / "Final answer: X" / "Option X" / "Choice X" (no line break allowed between the label and the letter,
and the letter must end a word, so "Answer: Let's ..." is not "L"), ``\\boxed{X}`` / ``\\boxed{\\text{X}}``, and a reply
that is just the letter. Weak fallback: the last parenthesised "(X)" or a line that is only "X"/"X."/"X)".
Letters outside the task's labels are ignored. Nothing found -> None (scored incorrect, status "unparsed"; C12).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_END = r"(?![A-Za-z0-9'’])"


@dataclass(frozen=True)
class MCExtraction:
    letter: str | None
    source: str | None
    strong: bool


def _patterns(labels: str):
    L = f"(?-i:[{re.escape(labels)}])"
    return [
        ("tag", re.compile(rf"<(?:answer|final_answer)>\s*\(?\s*({L}){_END}\s*\)?[^<]*</(?:answer|final_answer)>", re.I)),
        ("tag", re.compile(rf"<final_answer>\s*\(?({L}){_END}", re.I)),
        ("answer_is", re.compile(rf"answer\s+is\s*[:：]?[ \t]*\**[ \t]*(?:option|choice)?[ \t]*\(?\s*({L}){_END}", re.I)),
        ("label", re.compile(rf"(?:final\s+answer|answer|option|choice)\s*(?:is)?\s*[:：][ \t]*\**[ \t]*\(?\s*({L}){_END}", re.I)),
        ("boxed", re.compile(rf"\\boxed\s*\{{\s*(?:\\text(?:bf)?\s*\{{)?\s*\(?({L})\)?\s*\}}?\s*\}}")),
    ]


def extract_choice(text: str, labels: str = "ABCD") -> MCExtraction:
    """Extract the chosen option letter from ``text``; ``labels`` are the valid letters (e.g. "ABCD", "ABCDEFGHIJ")."""
    if not text:
        return MCExtraction(None, None, False)
    t = re.sub(r"\*\*|__", "", text)
    stripped = t.strip()
    m = re.fullmatch(rf"\(?([{re.escape(labels)}])\)?[.)]?", stripped)
    if m:
        return MCExtraction(m.group(1), "bare", True)
    best: tuple[int, str, str] | None = None
    for src, pat in _patterns(labels):
        for m in pat.finditer(t):
            if best is None or m.end() > best[0]:
                best = (m.end(), m.group(1), src)
    if best:
        return MCExtraction(best[1], best[2], True)
    weak = [(m.end(), m.group(1)) for m in re.finditer(rf"\(([{re.escape(labels)}])\)", t)]
    weak += [(m.end(), m.group(1)) for m in re.finditer(rf"(?m)^[ \t]*([{re.escape(labels)}])[ \t]*[.)]?[ \t]*$", t)]
    if weak:
        return MCExtraction(max(weak)[1], "last_letter", False)
    return MCExtraction(None, None, False)
