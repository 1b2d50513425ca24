"""Trivially-equal memories: candidates that differ from the old memory only in bookkeeping.

A memory updater often rewrites the memory without changing what the solver is told: Dynamic Cheatsheet bumps
its ``Version: N`` header on every curation, re-indents entries or lists the same entries in another order.
Comparing such a candidate against the old memory costs ``2 x |E|`` solves and can only measure evaluator noise.
This module decides, by exact equality of a documented canonical form, whether two memory texts are the same
memory; the controller (``JanusConfig.skip_trivially_equal``) then accepts the candidate without evaluation and
logs the reason ``"trivially_equal"``. The option is outside the paper (off in the paper preset).

Canonical form (:func:`canonical_memory`), applied to both texts:

1. Line ends: ``\\r\\n`` and ``\\r`` become ``\\n``.
2. Bookkeeping lines are dropped: a line whose whole content (after stripping markdown ``#``/``*``/``_``
   decoration) is a version counter, e.g. ``Version: 7``, ``## Version 3.0``, ``**Version:** v12``,
   ``version = 2`` (case-insensitive). Other counters are kept unless the caller passes more patterns
   (``COUNT_LINE`` matches DC's per-item usage counters ``** Count: 3``; it is *not* in the default, because
   the solver reads those counts).
   In-line counters (``inline`` patterns, none by default) are cut out of every line before the rest:
   ``ACE_COUNTERS`` matches ACE's ``helpful=3 harmful=1`` between a bullet's ``[id]`` (at the start of the line)
   and its ``::`` (the same words inside a bullet's content are content).
   ``COUNTER_BOOKKEEPING`` / ``COUNTER_INLINE`` (both kinds of counter) are what
   ``JanusConfig.ignore_usage_counters`` adds.
3. Whitespace: outside fenced code blocks every run of whitespace inside a line becomes one space, lines are
   stripped and blank lines are dropped. Inside a fenced block (between two lines starting with three
   backticks or tildes) the leading indentation is kept (it can matter to code) and only trailing whitespace
   is stripped; blank lines are still dropped.
4. Items: the text is cut into units. An item is a ``<memory_item>...</memory_item>`` block (tags matched
   case-insensitively; the whole block is one unit), or a list entry: a line starting with ``-``, ``*``, ``+``,
   ``•`` or ``N.``/``N)`` together with the following more-indented lines (its continuation). The list marker
   itself is dropped (renumbering after a reorder is bookkeeping too). Every other line (headings, prose, code
   outside items) is a *structural* unit. A maximal run of consecutive items (no structural line between them)
   is an unordered group: it is sorted. So entries may move within their section but not across a heading,
   and prose keeps its order. Limit: a top-level numbered *procedure* whose step order matters is judged
   unordered too; memories of that shape (not DC's, ExpeL's or ACE's independent entries) should keep the
   option off.

Two texts are trivially equal iff their canonical forms are equal. Anything else (an edited word, a changed
number, a new or removed entry, a duplicated entry, a moved heading, an entry moved to another section) is a
real difference and goes through the normal evaluation. Pure functions, no I/O.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

VERSION_LINE = re.compile(r"version\s*[:=#-]?\s*v?\d+(?:\.\d+)*", re.IGNORECASE)
COUNT_LINE = re.compile(r"(?:usage\s+)?count\s*[:=]?\s*\d+", re.IGNORECASE)
# ACE's counters where ACE writes them: between a bullet's ``[id]`` at the start of a line and its ``::``
ACE_COUNTERS = re.compile(r"^(?P<keep>\s*(?:[-*]\s+)?\[[^\]\n]+\])\s+helpful=\d+\s+harmful=\d+(?=\s+::)")
DEFAULT_BOOKKEEPING: tuple[re.Pattern, ...] = (VERSION_LINE,)
COUNTER_BOOKKEEPING: tuple[re.Pattern, ...] = (VERSION_LINE, COUNT_LINE)
COUNTER_INLINE: tuple[re.Pattern, ...] = (ACE_COUNTERS,)

_ITEM_BLOCK = re.compile(r"(<memory_item>.*?</memory_item>)", re.IGNORECASE | re.DOTALL)
_LIST_MARKER = re.compile(r"^(?:[-*+\u2022]|\d{1,4}[.)])\s+")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_DECORATION = re.compile(r"[*_`]")


@dataclass(frozen=True)
class Unit:
    """One unit of the canonical form: ``kind`` is "item" or "text"; ``lines`` are its normalised lines."""

    kind: str
    lines: tuple[str, ...]


def _is_bookkeeping(line: str, patterns: Iterable[re.Pattern]) -> bool:
    core = _DECORATION.sub("", line).strip().lstrip("#>").strip()
    return bool(core) and any(p.fullmatch(core) for p in patterns)


def _norm_lines(raw: str, patterns: tuple[re.Pattern, ...],
                inline: tuple[re.Pattern, ...] = ()) -> list[tuple[str, int, bool]]:
    """(normalised line, indentation width, inside-fence) for every kept line of ``raw``."""
    out: list[tuple[str, int, bool]] = []
    in_fence = False
    for line in raw.split("\n"):
        for p in inline:  # an in-line pattern's match is cut out, except its group "keep" if it has one
            line = p.sub(r"\g<keep>" if "keep" in p.groupindex else "", line)
        if _FENCE.match(line):
            out.append((line.strip(), len(line) - len(line.lstrip()), True))
            in_fence = not in_fence
            continue
        if in_fence:
            kept = line.rstrip()
            if kept.strip():
                out.append((kept, len(line) - len(line.lstrip()), True))
            continue
        if not line.strip() or _is_bookkeeping(line, patterns):
            continue
        out.append((" ".join(line.split()), len(line) - len(line.lstrip()), False))
    return out


def _segment(raw: str, patterns: tuple[re.Pattern, ...], inline: tuple[re.Pattern, ...] = ()) -> list[Unit]:
    """Cut a text without ``<memory_item>`` blocks into list-entry items and structural lines."""
    units: list[Unit] = []
    item: list[str] | None = None
    item_indent = 0
    for text, indent, fenced in _norm_lines(raw, patterns, inline):
        m = None if fenced else _LIST_MARKER.match(text)
        if m is not None and (item is None or indent <= item_indent):
            if item is not None:
                units.append(Unit("item", tuple(item)))
            item, item_indent = [text[m.end():]], indent
        elif item is not None and indent > item_indent:
            item.append(text)
        else:
            if item is not None:
                units.append(Unit("item", tuple(item)))
                item = None
            units.append(Unit("text", (text,)))
    if item is not None:
        units.append(Unit("item", tuple(item)))
    return units


def canonical_memory(text: str, patterns: Iterable[re.Pattern] = DEFAULT_BOOKKEEPING,
                     inline: Iterable[re.Pattern] = ()) -> tuple[Unit, ...]:
    """The canonical form of a memory text (see the module docstring). Raises TypeError for a non-str."""
    if not isinstance(text, str):
        raise TypeError(f"memory text must be a str, got {type(text).__name__}")
    pats, inl = tuple(patterns), tuple(inline)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    units: list[Unit] = []
    for k, part in enumerate(_ITEM_BLOCK.split(text)):
        if k % 2 == 1:
            inner = part[len("<memory_item>"):-len("</memory_item>")]
            units.append(Unit("item", tuple(t for t, _, _ in _norm_lines(inner, pats, inl))))
        else:
            units.extend(_segment(part, pats, inl))
    out: list[Unit] = []
    run: list[Unit] = []
    for u in units + [Unit("text", ())]:  # sentinel flushes the last run
        if u.kind == "item":
            run.append(u)
            continue
        out.extend(sorted(run, key=lambda x: x.lines))
        run = []
        if u.lines:
            out.append(u)
    return tuple(out)


def canonical_text(text: str, patterns: Iterable[re.Pattern] = DEFAULT_BOOKKEEPING,
                   inline: Iterable[re.Pattern] = ()) -> str:
    """Human-readable rendering of :func:`canonical_memory` (for logs and docs; not used for the decision)."""
    rows = []
    for u in canonical_memory(text, patterns, inline):
        rows.append(("- " if u.kind == "item" else "") + " / ".join(u.lines))
    return "\n".join(rows)


def trivially_equal(old: str, new: str, patterns: Iterable[re.Pattern] = DEFAULT_BOOKKEEPING,
                    inline: Iterable[re.Pattern] = ()) -> bool:
    """True iff ``old`` and ``new`` have the same canonical form (differ only in bookkeeping)."""
    pats, inl = tuple(patterns), tuple(inline)
    if old == new:
        return True
    return canonical_memory(old, pats, inl) == canonical_memory(new, pats, inl)
