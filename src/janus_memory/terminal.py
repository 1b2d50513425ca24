"""Text from a model server or a model, made safe to print on a terminal.

A reply, an HTTP error body or a memory text may hold control characters: an escape sequence that changes the
window title, erases the line, switches to the alternate screen or re-colours what follows, a carriage return that
overwrites the line, a bidirectional override that shows text in another order than it is stored. :func:`printable`
writes each such character as a visible escape (``\\x1b``, ``\\r``, ``\\u202e``) and leaves every other character,
newlines and tabs included, as it is. The CLI passes through it: every error line (cli/app.py), every line a run
logs (cli/run_command._plain: progress, warnings, a grid's failed cells), ``janus memory diff``.
"""
from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, the bidi marks, embeddings, overrides and isolates
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_LINE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match) -> str:
    c = m.group()
    return {"\r": "\\r", "\n": "\\n"}.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` with its control characters written as visible escapes (module docstring); ``one_line``: newlines
    too (a message printed as one line)."""
    return (_UNSAFE_LINE if one_line else _UNSAFE).sub(_escape, str(text))
