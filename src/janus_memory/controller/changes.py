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
from dataclasses import asdict, dataclass

_WS = re.compile(r"\s+")
_WORD = re.compile(r"\w+", re.UNICODE)
SHINGLE = 3


def memory_items(text: str) -> list[str]:
    """Non-empty lines of ``text``, stripped, whitespace-collapsed, lower-cased (order and duplicates kept)."""
    return [_WS.sub(" ", ln.strip()).lower() for ln in text.splitlines() if ln.strip()]


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
    a, b = shingles(old_text), shingles(new_text)
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


def _word_jaccard(a: str, b: str) -> float:
    wa, wb = set(_WORD.findall(a)), set(_WORD.findall(b))
    union = wa | wb
    return len(wa & wb) / len(union) if union else 1.0


# words that scope, order or flip an instruction (negations, quantifiers, modals, order, signs and directions): a
# rewording may not add, drop or change one (issue 24 round 4; an adversarial review turned "often" into "never" and
# "Look for" into "Do not look for" unevaluated)
GUARD_WORDS = frozenset("""not no nor never none nothing nobody nowhere neither without cannot can't don't doesn't
didn't isn't aren't wasn't weren't won't shouldn't mustn't avoid except unless only always often usually sometimes
rarely seldom all every each any some most least more less must should may might before after plus minus
negative positive increase decrease increasing decreasing greater smaller larger fewer maximum minimum max min above
below over under true false odd even left right upper lower add subtract multiply divide""".split())
_TOKEN = re.compile(r"\w+(?:'\w+)?|[^\w\s]", re.UNICODE)


def _guarded(line: str) -> tuple[list[str], list[str]]:
    """(numbers and symbols in order, guard words in order) of a line: what a rewording must leave as it is."""
    toks = _TOKEN.findall(line)
    marks = [t for t in toks if not t[0].isalpha() and t[0] != "_"]  # digits, operators, punctuation
    return marks, [t for t in toks if t in GUARD_WORDS]


def _in_order(a: str, b: str) -> bool:
    """The words two lines share appear in the same order in both (no swap such as "A implies B" -> "B implies A")."""
    wa, wb = _WORD.findall(a), _WORD.findall(b)
    common = set(wa) & set(wb)
    return [w for w in wa if w in common] == [w for w in wb if w in common]


def _rewords(new_line: str, old_line: str, min_line_similarity: float, max_growth: int) -> bool:
    """One arriving line rewords one leaving line: enough shared words, the same numbers, symbols and guard words in
    the same order, the shared words in the same order, at most ``max_growth`` more words."""
    if _word_jaccard(new_line, old_line) < min_line_similarity:
        return False
    if _guarded(new_line) != _guarded(old_line) or not _in_order(new_line, old_line):
        return False
    return len(_WORD.findall(new_line)) - len(_WORD.findall(old_line)) <= max_growth


def rewords_only(old_text: str, new_text: str, min_line_similarity: float = 0.5, max_growth: int = 2) -> bool:
    """True when the new memory only rewords the old one: the same lines in the same order except lines changed in
    place, each changed line a rewording of the line it replaces: at least ``min_line_similarity`` of its words
    shared (Jaccard of word sets), the same numbers, operators, punctuation and guard words (``GUARD_WORDS``:
    negations, quantifiers, "only", "before", ...) in the same order, the shared words in the same order, and at most
    ``max_growth`` more words. Version and usage-count lines (``Version: 7``, ``** Count: 3``:
    equivalence.COUNTER_BOOKKEEPING) are left out on both sides. An inserted, dropped, moved or reordered line, a
    changed number or operator, a flipped negation or a clause appended to a line makes it False. Used by
    ``near_copy_inherit``; a one-word change outside the guard words (increase -> decrease) still passes, which is
    why the option is documented as a cost saving with that risk (docs/controller.md).
    """
    from .equivalence import COUNTER_BOOKKEEPING, _is_bookkeeping

    def items(text):
        return [x for x in memory_items(text) if not _is_bookkeeping(x, COUNTER_BOOKKEEPING)]

    old_l, new_l = items(old_text), items(new_text)
    if len(old_l) != len(new_l):
        return False
    return all(a == b or _rewords(b, a, min_line_similarity, max_growth) for a, b in zip(old_l, new_l))
