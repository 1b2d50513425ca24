"""ExpeL rule-list operations: parsing curator replies and applying ADD / EDIT / AGREE / REMOVE.

Source: Zhao et al., "ExpeL: LLM Agents Are Experiential Learners" (AAAI 2024); semantics as run by the Janus paper
(docs/research-notes.md §5.2) and failure case C25.

A rule list is a list of ``[text, count]`` pairs, shown to the solver as "1. text\\n2. text" (best count first).
Update semantics (both modes): ADD -> count 2; AGREE -> +1; EDIT -> replace the text, +1; REMOVE -> -1, or -3 when
the list is full (``len >= max_rules`` before the update); operations are applied in the order REMOVE, AGREE,
EDIT, ADD against the numbering shown to the curator; then rules with count <= 0 are dropped, the rest are
stably sorted by count (descending) and cut to ``max_rules``. Duplicate ADDs are filtered (strict: within the reply
too; paper: only against the rules before the reply, as the authors) and an EDIT whose text equals an existing rule
becomes an AGREE of that rule.

Strict mode (default): one operation per line, ``OP <n>: text`` (``ADD: text`` or ``ADD <n>: text``), optional
leading "- " / "* " bullet. EDIT/AGREE/REMOVE resolve their target by number; a number outside 1..len is dropped
("rule number out of range"), never wrapped. A malformed line mentioning an operation is dropped as
"unparseable op"; other lines as "not an operation". AGREE/REMOVE whose text is exactly another rule's text are
dropped as "text mismatch" (a differently worded restatement of rule n is resolved by number and noted).
Rule texts are compared after collapsing whitespace, case-folding and ignoring a final period.

Faithful mode reproduces the original ExpeL parser/updater (C25): the original's operation regex, the banned
substrings ADD/AGREE/EDIT in rule texts, the mandatory final period, substring matching of existing rules, and
Python's negative indexing (``EDIT 0`` edits the last rule). Every operation it drops is logged with a reason,
and the quirk branches it takes are noted.
The rule list itself (RuleOp, comparison key, rendering, final cap) is ``expel_rulelist.py``; the Janus authors'
semantics (``rule_ops="paper"``) are ``expel_rules_paper.py``. Both are re-exported here.
"""

from __future__ import annotations

import re

from .expel_rulelist import (
    APPLY_ORDER,
    OP_WORD,
    OPS,
    RuleOp,
    applied_item,
    finish_rules,
    norm_rule,
    render_rules,
)
from .expel_rules_paper import apply_ops_paper, normalize_rule_paper, paper_rule_index, parse_ops_paper

__all__ = [
    "OPS", "RuleOp", "apply_curator_reply", "apply_ops_original", "apply_ops_paper", "apply_ops_strict", "norm_rule",
    "normalize_rule_paper", "paper_rule_index", "parse_ops_original", "parse_ops_paper", "parse_ops_strict",
    "render_rules",
]

_STRICT_LINE = re.compile(r"(ADD|EDIT|AGREE|REMOVE)(?:[ \t]+(\d+))?[ \t]*:[ \t]*(.*)")
_BULLET = re.compile(r"^(?:[-*][ \t]+)")
_PLACEHOLDER = re.compile(r"<[^<>]*>\.?|(?:rule|strategy|insight)\s*\d*\.?", re.IGNORECASE)
# the original's pattern, in behaviour: op, optional " n", ": ", an optional "<words>: " prefix, then the text
_FAITHFUL = re.compile(r"((?:REMOVE|EDIT|ADD|AGREE)(?: \d+)?): (?:[a-zA-Z\s\d]+: )?(.*)")
_BANNED = ("ADD", "AGREE", "EDIT")

# planned operation: (kind, target index or None, text, source op, note)
Planned = tuple[str, int | None, str, RuleOp, str]


# --------------------------------------------------------------------------------------------------
# strict (default)
# --------------------------------------------------------------------------------------------------
def parse_ops_strict(text: str) -> tuple[list[RuleOp], list[dict]]:
    """Parse a curator reply line by line. Returns ``(ops, dropped)``; dropped items are {"raw", "reason"}."""
    ops: list[RuleOp] = []
    dropped: list[dict] = []
    for line in (text or "").splitlines():
        s = line.strip()
        if not s:
            continue
        body = _BULLET.sub("", s)
        m = _STRICT_LINE.fullmatch(body)
        if m is None:
            reason = "unparseable op" if OP_WORD.search(body) else "not an operation"
            dropped.append({"raw": s, "reason": reason})
            continue
        rule = re.sub(r"\s+", " ", m.group(3)).strip()
        if not rule:
            dropped.append({"raw": s, "reason": "empty rule text"})
            continue
        if _PLACEHOLDER.fullmatch(rule):
            dropped.append({"raw": s, "reason": "placeholder rule text"})
            continue
        ops.append(RuleOp(m.group(1), int(m.group(2)) if m.group(2) else None, rule, s))
    return ops, dropped


def _resolve_strict(op: RuleOp, key: str, rules: list, keys: list[str]) -> Planned | str:
    """An EDIT / AGREE / REMOVE against the numbering shown to the curator: the planned operation, or the reason
    it is dropped."""
    if op.op == "EDIT" and key in keys:
        hit = keys.index(key)
        return ("AGREE", hit, rules[hit][0], op, "edit matches an existing rule: agree")
    if op.num is None:
        return "missing rule number"
    if not 1 <= op.num <= len(rules):
        return "rule number out of range"
    target = op.num - 1
    if op.op == "EDIT":
        return ("EDIT", target, op.text, op, "")
    # AGREE / REMOVE
    if key != keys[target]:
        if key in keys:
            return "text mismatch"
        return (op.op, target, rules[target][0], op, f"text differs from rule {op.num}: resolved by number")
    return (op.op, target, rules[target][0], op, "")


def _plan_strict(rules: list, ops: list[RuleOp]) -> tuple[list[Planned], list[dict]]:
    """Resolve every op (duplicate ADDs filtered, also within the reply): ``(planned, dropped)``."""
    keys = [norm_rule(r[0]) for r in rules]
    planned: list[Planned] = []
    dropped: list[dict] = []
    added_keys: set[str] = set()
    for op in ops:
        key = norm_rule(op.text)
        if op.op == "ADD":
            if key in keys or key in added_keys:
                dropped.append({**op.to_dict(), "reason": "duplicate rule"})
                continue
            added_keys.add(key)
            planned.append(("ADD", None, op.text, op, ""))
            continue
        resolved = _resolve_strict(op, key, rules, keys)
        if isinstance(resolved, str):
            dropped.append({**op.to_dict(), "reason": resolved})
        else:
            planned.append(resolved)
    return planned, dropped


def apply_ops_strict(rules: list, ops: list[RuleOp], max_rules: int) -> tuple[list[list], list[dict], list[dict]]:
    """Apply ``ops`` to ``rules`` (list of [text, count]). Returns ``(new_rules, applied, dropped)``.

    The input list is not modified. When nothing is applied the rules are returned unchanged (not re-sorted).
    """
    rules = [[r[0], int(r[1])] for r in rules]
    full = len(rules) >= max_rules
    planned, dropped = _plan_strict(rules, ops)
    applied: list[dict] = []
    for kind in APPLY_ORDER:
        for op_kind, target, text, src, note in planned:
            if op_kind != kind:
                continue
            if kind == "REMOVE":
                rules[target][1] -= 3 if full else 1
            elif kind == "AGREE":
                rules[target][1] += 1
            elif kind == "EDIT":
                rules[target] = [text, rules[target][1] + 1]
            else:
                rules.append([text, 2])
            applied.append(applied_item(src, kind, target, note))
    if applied:
        rules = finish_rules(rules, max_rules)
    return rules, applied, dropped


# --------------------------------------------------------------------------------------------------
# faithful (original ExpeL behaviour, with every drop logged)
# --------------------------------------------------------------------------------------------------
def parse_ops_original(text: str) -> tuple[list[RuleOp], list[dict]]:
    """The original parser's behaviour. Drops: "unparseable op" (an operation word on a line the original regex
    does not match), "empty rule text", "banned word in rule text", "no final period"."""
    text = text or ""
    ops: list[RuleOp] = []
    dropped: list[dict] = []
    starts = []
    for m in _FAITHFUL.finditer(text):
        starts.append(m.start())
        head, rule = m.group(1), m.group(2).strip()
        raw = m.group(0)
        if not rule:
            dropped.append({"raw": raw, "reason": "empty rule text"})
        elif any(w in rule for w in _BANNED):
            dropped.append({"raw": raw, "reason": "banned word in rule text"})
        elif not rule.endswith("."):
            dropped.append({"raw": raw, "reason": "no final period"})
        else:
            parts = head.split(" ")
            kind = "ADD" if "ADD" in head else parts[0]
            num = None if kind == "ADD" or len(parts) < 2 else int(parts[1])
            ops.append(RuleOp(kind, num, rule, raw))
    pos = 0
    for line in text.splitlines(keepends=True):
        end = pos + len(line)
        if OP_WORD.search(line) and not any(pos <= s < end for s in starts):
            dropped.append({"raw": line.strip(), "reason": "unparseable op"})
        pos = end
    return ops, dropped


def _find_original(rules: list, text: str) -> int | None:
    """The original's match: the first rule whose text is a substring of ``text``."""
    for i, r in enumerate(rules):
        if r[0] in text:
            return i
    return None


def _plan_original(rules: list, ops: list[RuleOp]) -> tuple[list[tuple[RuleOp, str, str]], list[dict]]:
    """The original's checks per op: ``(kept, dropped)`` with kept items ``(op, kind, note)``."""
    kept: list[tuple[RuleOp, str, str]] = []
    dropped: list[dict] = []
    for op in ops:
        if op.op == "ADD":
            if _find_original(rules, op.text) is not None:
                dropped.append({**op.to_dict(), "reason": "duplicate rule (substring of an existing rule)"})
            else:
                kept.append((op, "ADD", ""))
        elif op.op == "EDIT":
            idx = _find_original(rules, op.text)
            if idx is not None:
                kept.append(
                    (RuleOp("AGREE", idx + 1, rules[idx][0], op.raw), "AGREE", "edit matches an existing rule: agree")
                )
            elif op.num is None or op.num > len(rules):
                dropped.append({**op.to_dict(), "reason": "rule number out of range"})
            else:
                kept.append((op, "EDIT", ""))
        elif _find_original(rules, op.text) is None:
            dropped.append({**op.to_dict(), "reason": "no existing rule is a substring of the text"})
        else:
            kept.append((op, op.op, ""))
    return kept, dropped


def _apply_original_op(rules: list, op: RuleOp, kind: str, note: str, full: bool) -> tuple[int, str]:
    """Apply one kept op in place; returns its 0-based target and its note (EDIT 0 or below wraps, as Python's
    negative indexing does in the original)."""
    if kind in ("REMOVE", "AGREE"):
        idx = _find_original(rules, op.text)
        rules[idx][1] += -(3 if full else 1) if kind == "REMOVE" else 1
    elif kind == "EDIT":
        idx = op.num - 1
        if idx < 0:
            idx += len(rules)
            note = f"EDIT {op.num} wrapped to rule {idx + 1} (negative index)"
        rules[idx] = [op.text, rules[idx][1] + 1]
    else:
        idx = len(rules)
        rules.append([op.text, 2])
    return idx, note


def apply_ops_original(rules: list, ops: list[RuleOp], max_rules: int) -> tuple[list[list], list[dict], list[dict]]:
    """The original updater's behaviour (substring matching, EDIT index wrap-around), then the cap."""
    rules = [[r[0], int(r[1])] for r in rules]
    full = len(rules) >= max_rules
    kept, dropped = _plan_original(rules, ops)
    applied: list[dict] = []
    for kind in APPLY_ORDER:
        for op, k, note in kept:
            if k != kind:
                continue
            if kind == "EDIT" and op.num - 1 < 0 and not rules:
                dropped.append({**op.to_dict(), "reason": "rule number out of range (original raises IndexError)"})
                continue
            idx, note = _apply_original_op(rules, op, kind, note, full)
            applied.append(applied_item(op, kind, idx, note))
    return finish_rules(rules, max_rules), applied, dropped


def apply_curator_reply(rules: list, text: str, max_rules: int, *, faithful: bool,
                        rule_ops: str) -> tuple[list[list], list[dict], list[dict]]:
    """Parse a curator reply and apply it in the selected mode: ``faithful`` (the original ExpeL) wins, else
    ``rule_ops`` "paper" (the Janus authors') or "strict" (ours). Returns ``(new_rules, applied, dropped)`` with the
    parser's drops before the updater's."""
    if faithful:
        parse, apply = parse_ops_original, apply_ops_original
    elif rule_ops == "paper":
        parse, apply = parse_ops_paper, apply_ops_paper
    else:
        parse, apply = parse_ops_strict, apply_ops_strict
    ops, dropped = parse(text)
    new_rules, applied, dropped2 = apply(rules, ops, max_rules)
    return new_rules, applied, dropped + dropped2
