"""Code extraction: model text -> Python source (no execution here). Failure case C14.

1. Remove reasoning that leaked into the text (``<think>...</think>``, or everything before a lone ``</think>``).
2. Fenced blocks with 3 or more backticks (or tildes); the closing fence must be at least as long as the opening one.
   Only blocks tagged python/py/python3 or untagged are considered. The LAST complete block wins if it compiles,
   else the longest block that compiles, else the last block.
3. No fence: the longest run of lines starting at a top-level ``def``/``class``/``import``/``from``/``@`` line
   (continuing through indented or blank lines) that compiles, with trailing prose dropped.
Returns None when nothing code-like is found.
"""
from __future__ import annotations

import ast
import re

_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_FENCE_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[^\n]*$", re.M)
_PY_TAGS = {"", "python", "py", "python3", "py3"}
_START = re.compile(r"^(def |async def |class |import |from |@)")


def strip_reasoning(text: str) -> str:
    t = _THINK_BLOCK.sub("", text or "")
    m = re.search(r"</think(?:ing)?>", t, re.I)
    if m:
        t = t[m.end():]
    return t


def compiles(src: str) -> bool:
    try:
        ast.parse(src)
        return True
    except (SyntaxError, ValueError):
        return False


def fenced_blocks(text: str) -> list[tuple[str, str, bool]]:
    """All fenced blocks as (language tag, body, closed?). An unclosed final fence yields its body with closed=False."""
    out = []
    pos = 0
    while True:
        m = _FENCE_OPEN.search(text, pos)
        if not m:
            break
        fence, lang = m.group(1), m.group(2).lower()
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)
        c = close.search(text, m.end())
        if c:
            out.append((lang, text[m.end() + 1:c.start()], True))
            pos = c.end()
        else:
            out.append((lang, text[m.end() + 1:], False))
            break
    return out


def _unfenced(text: str) -> str | None:
    lines = text.splitlines()
    best: str | None = None
    i = 0
    while i < len(lines):
        if not _START.match(lines[i]):
            i += 1
            continue
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or lines[j][:1] in " \t" or _START.match(lines[j])):
            j += 1
        chunk = lines[i:j]
        while chunk and not chunk[-1].strip():
            chunk.pop()
        # extend by adjacent top-level code blocks separated by the loop above; drop trailing prose if needed
        for k in range(len(chunk), 0, -1):
            src = "\n".join(chunk[:k])
            if compiles(src):
                if best is None or len(src) > len(best):
                    best = src
                break
        i = j
    return best


def extract_python(text: str) -> str | None:
    """The Python program the model wrote (see module docstring), or None."""
    t = strip_reasoning(text)
    blocks = [(lang, body, closed) for lang, body, closed in fenced_blocks(t) if lang in _PY_TAGS]
    complete = [b for _, b, closed in blocks if closed and b.strip()]
    if complete:
        if compiles(complete[-1]):
            return complete[-1]
        good = [b for b in complete if compiles(b)]
        return max(good, key=len) if good else complete[-1]
    partial = [b for _, b, _ in blocks if b.strip()]
    if partial and compiles(partial[-1]):
        return partial[-1]
    return _unfenced(t)
