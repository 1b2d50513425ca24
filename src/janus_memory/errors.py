"""The one base class of user-facing errors, and the one way text from a server or a model is made printable.

Every error a user can fix (a bad option, a missing file, an unusable run folder, an unreachable model server ...)
subclasses :class:`JanusError`; its message is one line naming the fix. The CLI catches ``JanusError`` once and prints
``error: <message>`` with exit code 2; anything else is a bug and keeps its traceback.

A reply, an HTTP error body or a memory text may hold control characters: an escape sequence that changes the
window title, erases the line, switches to the alternate screen or re-colours what follows, a carriage return that
overwrites the line, a bidirectional override that shows text in another order than it is stored, an invisible
format, separator or tag character. :func:`printable` writes each such character (Unicode categories Cc, Cf, Zl, Zp,
the tag block; the list is above :func:`printable`) as a visible escape (``\\x1b``, ``\\r``, ``\\u202e``,
``\\U000e0041``) and leaves every other character, newlines and tabs included, as it is.
A lone surrogate (a JSON ``\\ud800`` escape without its pair, which a server may
send: no UTF-8 file or SQLite text can hold it) is written as that visible escape by :func:`escape_lone_surrogates`
where model text enters (every reply, llm/client.py; a replayed cache entry, llm/base.py; a dataset record,
tasks/data.py), so the run database, the exports, the cache, the report and the page all hold the same text. The CLI
passes through :func:`printable`: every error line (cli/app.py), every line a run
logs (cli/run_command._plain: progress, warnings, a grid's failed cells), ``janus memory diff``, the report's tables.
"""
from __future__ import annotations

import re
import unicodedata


class JanusError(Exception):
    """A problem the user can fix; ``str(e)`` is the one-line message."""

    def user_message(self, run_dir: str | None = None) -> str:
        """The line the CLI prints (``run_dir``: the run folder involved, for a resume hint)."""
        return str(self).split("\n")[0] if str(self) else type(self).__name__  # (a \r inside is escaped, not cut)


class ConfigError(JanusError, ValueError):
    """A configuration problem: unknown name, invalid value, missing file, unreachable endpoint.

    A value out of its allowed range also carries ``key`` (the settings key, e.g. ``llm.temperature`` or
    ``janus.tau``) and ``rule`` (``must be in [0, 2], got 5.0``), so the CLI can name the option that set it."""

    def __init__(self, message: str = "", *, key: str | None = None, rule: str | None = None):
        super().__init__(message)
        self.key = key
        self.rule = rule


class OutputError(JanusError, RuntimeError):
    """The output folder cannot be used (not writable, already finished, or not a resumable run)."""


class RunFolderError(JanusError, ValueError):
    """A folder given to report / memory diff / grid is not a (finished) run folder, or a requested item is absent."""


class StorageError(JanusError, OSError):
    """Writing the run folder failed (disk full, read-only, permissions); committed steps are kept."""

    def user_message(self, run_dir: str | None = None) -> str:
        """``run_dir``: the run folder when it holds a resumable run (config stored), else None."""
        if not run_dir:
            return f"cannot write the run folder ({self}); free space or fix permissions, then start the run again"
        return (f"cannot write {run_dir} ({self}); every committed step is kept: free space or fix permissions, then "
                f"continue with `janus run --resume {run_dir}`")


class DamagedStoreError(StorageError, RunFolderError):
    """A stored row of the run database does not read back (a memory or candidate text whose delta chain is broken
    or whose sha256 does not match): the database is damaged. Also a RunFolderError, so the readers' callers (report,
    memory diff, resume checks) treat it as an unusable folder."""

    def user_message(self, run_dir: str | None = None) -> str:
        return JanusError.user_message(self, run_dir)


# Escaped: every character of the Unicode categories Cc (controls: C0 but tab and newline, DEL, C1), Cf (format
# characters: the bidi marks, embeddings, overrides and isolates, U+061C, zero-width space, U+FEFF, tag characters,
# soft hyphen ...), Zl and Zp (U+2028, U+2029), Cs (a lone surrogate), and the whole tag block U+E0000-U+E007F.
# Kept: tab, newline (unless one_line), and the zero-width joiner and non-joiner (U+200C, U+200D), which Persian and
# Indic words and emoji sequences need. Everything else (letters of any script, emoji) is left as it is.
_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_KEEP = frozenset("\t\n\u200c\u200d")
# the blocks that hold such characters (in Unicode 14-16; tests/llm/test_printable_table.py checks every character of
# the running Python's Unicode): only their characters get a look at their category, so other text costs one regex scan
_BLOCKS = ("\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e"
           "\u200b-\u200f\u2028-\u202e\u2060-\u206f\ud800-\udfff\ufeff\ufff0-\ufffb\U000110bd\U000110cd"
           "\U00013430-\U0001345f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f")
_CANDIDATES = re.compile(f"[{_BLOCKS}]+")
_CANDIDATES_LINE = re.compile(f"[{_BLOCKS}\n]+")  # one_line: newlines too


def _unsafe(c: str, one_line: bool) -> bool:
    if c == "\n":
        return one_line
    if c in _KEEP:
        return False
    return unicodedata.category(c) in _CATEGORIES or 0xE0000 <= ord(c) <= 0xE007F


def _escape_char(c: str) -> str:
    o = ord(c)
    if c in "\r\n":
        return "\\r" if c == "\r" else "\\n"
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def _escape_run(m: re.Match, one_line: bool) -> str:
    return "".join(_escape_char(c) if _unsafe(c, one_line) else c for c in m.group())


def json_escaped(text: str) -> str:
    """``text`` (a line of JSON) with each character :func:`printable` escapes, newline included, written as a JSON
    escape (``\\u202e``; a character beyond U+FFFF as its surrogate pair, ``\\udb40\\udc01``): still valid JSON
    that decodes to the same string, and safe to print."""
    def esc(c: str) -> str:
        o = ord(c)
        if o < 0x10000:
            return f"\\u{o:04x}"
        o -= 0x10000
        return f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}"

    return _CANDIDATES_LINE.sub(lambda m: "".join(esc(c) if _unsafe(c, True) else c for c in m.group()), text)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # in a Python str every surrogate is lone (a pair is one code point)


def escape_lone_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as its visible escape (``\\ud800``, six characters); any other
    text is returned as it is (the same object)."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if _LONE_SURROGATE.search(text) else text


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` with its control, format and line/paragraph separator characters written as visible escapes
    (``\\x1b``, ``\\r``, ``\\u202e``, ``\\U000e0041``; module docstring); ``one_line``: newlines too (a message
    printed as one line)."""
    text = str(text)
    return (_CANDIDATES_LINE if one_line else _CANDIDATES).sub(lambda m: _escape_run(m, one_line), text)
