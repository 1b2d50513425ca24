"""Item-level change signals between two memory texts (pure, stdlib only).

A memory is treated as a list of items: its non-empty lines, normalised (stripped, inner whitespace collapsed,
lower-cased). Used by the ``selective`` trigger (trigger_options.py) and by ``janus replay`` to mark destructive
steps. All values are deterministic functions of the two texts.

* ``line_survival``: fraction of the old memory's distinct items found verbatim in the new one (1.0 when the old
  memory has no items: nothing can be lost).
* ``retention``: fraction of the old memory's distinct word 3-grams (shingles) found in the new memory. Unlike
  ``line_survival`` it tolerates rewording inside a line and re-wrapped lines; it is the signal the trigger uses.
  1.0 when the old memory has no shingles (fewer than 3 words).
* ``line_ratio``: new item count / old item count (``inf`` when the old memory is empty and the new one is not,
  1.0 when both are empty).
* ``lines_added`` / ``lines_removed``: distinct items only in the new / only in the old memory.
* ``rewords_only``: the new memory only rewords lines in place (see its docstring for what a rewording may not touch).
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass

_WS = re.compile(r"\s+")
_WORD = re.compile(r"\w+", re.UNICODE)
SHINGLE = 3


def memory_items(text: str) -> list[str]:
    """Non-empty lines of ``text``, stripped, whitespace-collapsed, lower-cased (order and duplicates kept)."""
    return [_WS.sub(" ", ln.strip()).lower() for ln in text.splitlines() if ln.strip()]


def changed_words(old_text: str, new_text: str) -> set[str]:
    """The distinct lower-cased words (``\\w+``, two characters or more) of the lines only in one of the two texts:
    what an update added or removed, for reading first the tasks it touches (``panel_order="touched"``)."""
    so, sn = set(memory_items(old_text)), set(memory_items(new_text))
    return {w for line in so ^ sn for w in _WORD.findall(line) if len(w) >= 2}


def only_adds(old_text: str, new_text: str) -> bool:
    """The new memory keeps every line of the old one (version and usage-count lines aside) and adds at least one:
    an update that can only add knowledge (``seq_innocent="additions"``)."""
    from .equivalence import COUNTER_BOOKKEEPING, _is_bookkeeping

    so, sn = set(memory_items(old_text)), set(memory_items(new_text))
    removed = [ln for ln in so - sn if not _is_bookkeeping(ln, COUNTER_BOOKKEEPING)]
    added = [ln for ln in sn - so if not _is_bookkeeping(ln, COUNTER_BOOKKEEPING)]
    return not removed and bool(added)


def text_words(text: str) -> set[str]:
    """The distinct lower-cased words (``\\w+``, two characters or more) of ``text``."""
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 2}


def shingles(text: str, n: int = SHINGLE) -> set[tuple[str, ...]]:
    """Distinct word n-grams of the lower-cased text (words = ``\\w+`` runs, across line breaks)."""
    words = _WORD.findall(text.lower())
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


@dataclass(frozen=True)
class ChangeStats:
    old_items: int
    new_items: int
    lines_added: int
    lines_removed: int
    line_survival: float
    retention: float
    line_ratio: float

    def to_dict(self) -> dict:
        return asdict(self)


def change_stats(old_text: str, new_text: str) -> ChangeStats:
    """Item-level comparison of two memory texts (see module docstring)."""
    old_l, new_l = memory_items(old_text), memory_items(new_text)
    so, sn = set(old_l), set(new_l)
    survival = len(so & sn) / len(so) if so else 1.0
    sh_old, sh_new = shingles(old_text), shingles(new_text)
    retention = len(sh_old & sh_new) / len(sh_old) if sh_old else 1.0
    if old_l:
        ratio = len(new_l) / len(old_l)
    else:
        ratio = float("inf") if new_l else 1.0
    return ChangeStats(old_items=len(old_l), new_items=len(new_l), lines_added=len(sn - so),
                       lines_removed=len(so - sn), line_survival=survival, retention=retention, line_ratio=ratio)


def shingle_similarity(old_text: str, new_text: str) -> float:
    """Jaccard similarity of the two texts' word 3-gram sets (1.0 when both have none): how much of a copy the new
    memory is, in both directions (an addition lowers it as much as a removal). Used by ``near_copy_similarity``."""
    return _jaccard(shingles(old_text), shingles(new_text))


def _jaccard(a: set, b: set) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def changed_items_texts(old_text: str, new_text: str) -> tuple[str, str]:
    """(removed items, added items) as two texts, one item a line, in their original order.

    For embedding only what changed: ``z = phi(added) - phi(removed)`` instead of ``phi(new) - phi(old)``.
    """
    old_l, new_l = memory_items(old_text), memory_items(new_text)
    so, sn = set(old_l), set(new_l)
    removed = list(dict.fromkeys(x for x in old_l if x not in sn))
    added = list(dict.fromkeys(x for x in new_l if x not in so))
    return "\n".join(removed), "\n".join(added)


# words that scope, order or flip an instruction (negations, quantifiers, modals, order, signs and directions): a
# rewording may not add, drop or change one (an adversarial review turned "often" into "never" and "Look for"
# into "Do not look for" unevaluated)
GUARD_WORDS = frozenset("""not no nor never none nothing nobody nowhere neither without cannot can't don't doesn't
didn't isn't aren't wasn't weren't won't shouldn't mustn't dont cant wont isnt doesnt didnt arent wasnt werent shouldnt
mustnt avoid except unless skip ignore omit exclude include only always often usually sometimes rarely seldom all
every each any some most least more less must should may might before after plus minus negative positive increase
decrease increasing decreasing greater smaller larger fewer maximum minimum max min above below over under true false
odd even left right upper lower add subtract multiply divide""".split())
# a LaTeX command, a word (with an apostrophe part), or any other non-space character
_TOKEN = re.compile(r"\\[A-Za-z]+|\w+(?:'\w+)?|[^\w\s]", re.UNICODE)
# DC's bookkeeping lines, in the form DC writes them (a colon): a version header and an item's usage count
_BOOKKEEPING = (re.compile(r"version\s*:\s*v?\d+(?:\.\d+)*", re.IGNORECASE),
                re.compile(r"(?:usage\s+)?count\s*:\s*\d+", re.IGNORECASE))


def _is_mark(tok: str) -> bool:
    """A token a rewording must keep: a number, an operator or punctuation, a LaTeX command, or a token with any
    non-ASCII character (a homoglyph "nоt" with a Cyrillic o, a Greek letter, an accented name)."""
    return not tok.isascii() or tok.startswith("\\") or not (tok[0].isalpha() or tok[0] == "_")


def _guarded(line: str) -> tuple[list[str], list[str]]:
    """(marks in order, guard words in order) of a line: what a rewording must leave as it is."""
    toks = _TOKEN.findall(unicodedata.normalize("NFKC", line))
    return [t for t in toks if _is_mark(t)], [t.lower() for t in toks if t.lower() in GUARD_WORDS]


def _in_order(a: str, b: str) -> bool:
    """The words two lines share appear in the same order in both (no swap such as "A implies B" -> "B implies A")."""
    wa, wb = _WORD.findall(a), _WORD.findall(b)
    common = set(wa) & set(wb)
    return [w for w in wa if w in common] == [w for w in wb if w in common]


def _case_kept(a: str, b: str) -> bool:
    """No word changes only its case ("Fraction" -> "fraction")."""
    wa, wb = set(_WORD.findall(a)), set(_WORD.findall(b))
    lower = {w.lower(): w for w in wa}
    return all(w.lower() not in lower for w in wb - wa)


def _rewords(new_line: str, old_line: str, min_line_similarity: float, max_growth: int) -> bool:
    """One arriving line rewords one leaving line: the same indentation, enough shared words, the same marks and
    guard words in the same order, the shared words in the same order and case, at most ``max_growth`` more words."""
    if len(new_line) - len(new_line.lstrip()) != len(old_line) - len(old_line.lstrip()):
        return False
    if _jaccard(set(_WORD.findall(new_line.lower())), set(_WORD.findall(old_line.lower()))) < min_line_similarity:
        return False
    if _guarded(new_line) != _guarded(old_line) or not _in_order(new_line, old_line):
        return False
    if not _case_kept(new_line, old_line):
        return False
    return len(_WORD.findall(new_line)) - len(_WORD.findall(old_line)) <= max_growth


def _bookkeeping_kind(line: str) -> int | None:
    """Which of ``_BOOKKEEPING`` the line is (decoration stripped as ``equivalence`` strips it), else None."""
    from .equivalence import _is_bookkeeping

    return next((k for k, pat in enumerate(_BOOKKEEPING) if _is_bookkeeping(line, (pat,))), None)


def rewords_only(old_text: str, new_text: str, min_line_similarity: float = 0.5, max_growth: int = 2) -> bool:
    """True when the new memory only rewords the old one: the same non-empty lines in the same order, except lines
    changed in place, each a rewording of the line it replaces: the same indentation, at least
    ``min_line_similarity`` of its words shared (Jaccard of lower-cased word sets), the same marks (numbers,
    operators, punctuation, LaTeX commands, tokens with non-ASCII characters, after NFKC normalisation) and guard
    words (``GUARD_WORDS``: negations, quantifiers, modals, order, sign and direction words) in the same order, the
    shared words in the same order and case, and at most ``max_growth`` more words. A DC version line
    (``Version: 7``) or usage count (``** Count: 3``) may change its number in place. An inserted, dropped, moved or
    re-indented line, a changed number, operator or LaTeX command, a flipped negation (also spelled with lookalike
    letters) or a clause appended to a line makes it False. Used by ``near_copy_inherit``; a one-word change outside
    the guard words ("mean" -> "median", "sin" -> "cos") still passes, which is why a rewording is still checked on
    ``near_copy_pairs`` tasks (docs/controller.md).
    """
    def lines(text):
        return [ln.rstrip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n") if ln.strip()]

    old_l, new_l = lines(old_text), lines(new_text)
    if len(old_l) != len(new_l):
        return False
    for a, b in zip(old_l, new_l):
        if a == b:
            continue
        kind = _bookkeeping_kind(a)
        if kind is not None and kind == _bookkeeping_kind(b):
            continue
        if not _rewords(b, a, min_line_similarity, max_growth):
            return False
    return True
