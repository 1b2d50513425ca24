"""The ExpeL rule list shared by every operation mode (``expel_rules.py``, ``expel_rules_paper.py``): the parsed
operation record, the comparison key and rendering of rules, the order operations are applied in, the shape of an
applied-operation log item, and the final drop / sort / cap."""

from __future__ import annotations

import re
from dataclasses import dataclass

OPS = ("ADD", "EDIT", "AGREE", "REMOVE")
APPLY_ORDER = ("REMOVE", "AGREE", "EDIT", "ADD")
OP_WORD = re.compile(r"\b(ADD|EDIT|AGREE|REMOVE)\b")


@dataclass(frozen=True)
class RuleOp:
    """One parsed operation. ``num`` is the 1-based rule number (None when absent)."""

    op: str
    num: int | None
    text: str
    raw: str

    def to_dict(self) -> dict:
        return {"op": self.op, "num": self.num, "text": self.text, "raw": self.raw}


def norm_rule(text: str) -> str:
    """Comparison key for rule texts: whitespace collapsed, case-folded, final period ignored."""
    return re.sub(r"\s+", " ", text).strip().rstrip(".").strip().casefold()


def render_rules(rules: list) -> str:
    """ "1. text\\n2. text" (no counts), or "" for an empty list."""
    return "\n".join(f"{i}. {r[0]}" for i, r in enumerate(rules, start=1))

def applied_item(src: RuleOp, kind: str, target: int | None, note: str) -> dict:
    """Log item of an applied operation: the source op, what it was applied as, the 1-based target, any note."""
    item = {**src.to_dict(), "applied_as": kind, "target": None if target is None else target + 1}
    if note:
        item["note"] = note
    return item


def finish_rules(rules: list, max_rules: int) -> list:
    """Drop rules with count <= 0, sort stably by count (descending), cut to ``max_rules``."""
    kept = [r for r in rules if r[1] > 0]
    kept.sort(key=lambda r: r[1], reverse=True)  # stable: ties keep list order
    return kept[:max_rules]
