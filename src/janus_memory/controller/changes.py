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
* ``rewords_only``: every changed item of the new memory rewrites a removed one (no item added or dropped).
"""
from __future__ import annotations

import re
from collections import Counter
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


def rewords_only(old_text: str, new_text: str, min_line_similarity: float = 0.5) -> bool:
    """True when the new memory only rewords the old one: as many items (lines) leave as arrive, and each arriving
    item shares at least ``min_line_similarity`` of its words (Jaccard of word sets) with a leaving one, each leaving
    item matched once (greedy, in order: a rewording a better matching would accept may be refused, never the
    reverse). Reordered or re-spaced lines count as unchanged; version and usage-count lines (``Version: 7``,
    ``** Count: 3``: equivalence.COUNTER_BOOKKEEPING) are left out on both sides. An inserted line (a planted instruction, a new rule),
    a dropped line or a rewritten one that shares too few words makes it False. Used by ``near_copy_inherit``.
    """
    from .equivalence import COUNTER_BOOKKEEPING, _is_bookkeeping

    def items(text):  # version and usage-count lines are bookkeeping, not instructions: left out
        return Counter(x for x in memory_items(text) if not _is_bookkeeping(x, COUNTER_BOOKKEEPING))

    old_l, new_l = items(old_text), items(new_text)
    added = list((new_l - old_l).elements())
    removed = list((old_l - new_l).elements())
    if len(added) != len(removed):
        return False
    free = list(removed)
    for line in added:
        best = max(range(len(free)), key=lambda k: _word_jaccard(line, free[k]))
        if _word_jaccard(line, free[best]) < min_line_similarity:
            return False
        free.pop(best)
    return True
