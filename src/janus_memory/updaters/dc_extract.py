"""Cheatsheet extraction from a curator reply: the authors' first block, our strict last block, DC's original.

See ``dc.py`` (module docstring) and docs/fidelity.md rows 12-13 for which preset uses which.
"""

from __future__ import annotations

import re

_OPEN = re.compile(r"<cheatsheet>", re.IGNORECASE)
_CLOSE = re.compile(r"</cheatsheet>", re.IGNORECASE)


def _alone_on_line(text: str, start: int, end: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    return text[line_start:start].strip() == "" and text[end:line_end].strip() == ""


def extract_cheatsheet(text: str, *, truncated: bool = False) -> tuple[str | None, str | None, str]:
    """Strict extraction (default mode, C24). Returns ``(candidate, rejection_reason, branch)``.

    Exactly one of candidate / rejection_reason is None. Reasons: "unterminated block", "missing block", "empty".
    """
    closes = list(_CLOSE.finditer(text))
    opens = list(_OPEN.finditer(text))
    if not closes:
        if opens:
            return None, "unterminated block", "opening tag never closed"
        return None, "missing block", "no cheatsheet tags"
    last = closes[-1]
    if truncated and opens and opens[-1].start() > last.end():
        return None, "unterminated block", "truncated reply ends inside a new block"
    seg_start = closes[-2].end() if len(closes) > 1 else 0
    cands = [m for m in opens if seg_start <= m.start() and m.end() <= last.start()]
    if not cands:
        return None, "missing block", "closing tag without opening tag"
    alone = [m for m in cands if _alone_on_line(text, m.start(), m.end())]
    opener = alone[0] if alone else cands[-1]
    content = text[opener.end() : last.start()].strip()
    if not content:
        return None, "empty", "blank block"
    return content, None, "last complete block"


def extract_cheatsheet_first(text: str) -> str:
    """The authors' extraction: both tags must occur (case-sensitive); the text after the first ``<cheatsheet>`` up
    to the next ``</cheatsheet>``, stripped. ``""`` means unparsable (the caller falls back)."""
    if not text or "<cheatsheet>" not in text or "</cheatsheet>" not in text:
        return ""
    return text.split("<cheatsheet>", 1)[1].split("</cheatsheet>", 1)[0].strip()


def extract_cheatsheet_original(text: str, old: str) -> tuple[str, str]:
    """DC's original behaviour (C24 faithful mode). Returns ``(new_sheet, branch)``; never rejects."""
    t = text.strip()
    if "<cheatsheet>" not in t:
        return old, "no opening tag: previous cheatsheet kept"
    parts = t.split("<cheatsheet>")
    seg = parts[1]  # DC takes the text between the first opening tag and the next one (or the end)
    sheet = seg.strip().split("</cheatsheet>")[0].strip()
    if "</cheatsheet>" not in seg:
        if len(parts) > 2:
            branch = "text up to the next opening tag deployed"
        else:
            branch = "no closing tag: partial text deployed"
    elif not sheet:
        branch = "empty block deployed"
    else:
        branch = "first block"
    return sheet, branch
