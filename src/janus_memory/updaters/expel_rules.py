"""ExpeL rule-list operations: parsing curator replies and applying ADD / EDIT / AGREE / REMOVE.

Source: Zhao et al., "ExpeL: LLM Agents Are Experiential Learners" (AAAI 2024); semantics as run by the Janus paper
(paper-spec §5.2) and failure case C25.

A rule list is a list of ``[text, count]`` pairs, shown to the solver as "1. text\\n2. text" (best count first).
Update semantics (both modes): ADD -> count 2; AGREE -> +1; EDIT -> replace the text, +1; REMOVE -> -1, or -3 when
the list is full (``len >= max_rules`` before the update); operations are applied in the order REMOVE, AGREE,
EDIT, ADD against the numbering shown to the curator; then rules with count <= 0 are dropped, the rest are
stably sorted by count (descending) and cut to ``max_rules``. Duplicate ADDs are filtered and an EDIT whose text
equals an existing rule becomes an AGREE of that rule.

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
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPS = ("ADD", "EDIT", "AGREE", "REMOVE")
_APPLY_ORDER = ("REMOVE", "AGREE", "EDIT", "ADD")

_STRICT_LINE = re.compile(r"(ADD|EDIT|AGREE|REMOVE)(?:[ \t]+(\d+))?[ \t]*:[ \t]*(.*)")
_OP_WORD = re.compile(r"\b(ADD|EDIT|AGREE|REMOVE)\b")
_BULLET = re.compile(r"^(?:[-*][ \t]+)")
_PLACEHOLDER = re.compile(r"<[^<>]*>\.?|(?:rule|strategy|insight)\s*\d*\.?", re.IGNORECASE)
# the original's pattern, in behaviour: op, optional " n", ": ", an optional "<words>: " prefix, then the text
_FAITHFUL = re.compile(r"((?:REMOVE|EDIT|ADD|AGREE)(?: \d+)?): (?:[a-zA-Z\s\d]+: )?(.*)")
_BANNED = ("ADD", "AGREE", "EDIT")


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
            reason = "unparseable op" if _OP_WORD.search(body) else "not an operation"
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


def apply_ops_strict(rules: list, ops: list[RuleOp], max_rules: int) -> tuple[list[list], list[dict], list[dict]]:
    """Apply ``ops`` to ``rules`` (list of [text, count]). Returns ``(new_rules, applied, dropped)``.

    The input list is not modified. When nothing is applied the rules are returned unchanged (not re-sorted).
    """
    rules = [[r[0], int(r[1])] for r in rules]
    n = len(rules)
    full = n >= max_rules
    keys = [norm_rule(r[0]) for r in rules]
    planned: list[tuple[str, int | None, str, RuleOp, str]] = []  # (op, target index, text, source, note)
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
        if op.op == "EDIT" and key in keys:
            hit = keys.index(key)
            planned.append(("AGREE", hit, rules[hit][0], op, "edit matches an existing rule: agree"))
            continue
        if op.num is None:
            dropped.append({**op.to_dict(), "reason": "missing rule number"})
            continue
        if not 1 <= op.num <= n:
            dropped.append({**op.to_dict(), "reason": "rule number out of range"})
            continue
        target = op.num - 1
        if op.op == "EDIT":
            planned.append(("EDIT", target, op.text, op, ""))
            continue
        # AGREE / REMOVE
        if key != keys[target]:
            if key in keys:
                dropped.append({**op.to_dict(), "reason": "text mismatch"})
                continue
            planned.append(
                (op.op, target, rules[target][0], op, f"text differs from rule {op.num}: resolved by number")
            )
        else:
            planned.append((op.op, target, rules[target][0], op, ""))

    applied: list[dict] = []
    for kind in _APPLY_ORDER:
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
            item = {**src.to_dict(), "applied_as": kind, "target": None if target is None else target + 1}
            if note:
                item["note"] = note
            applied.append(item)
    if applied:
        rules = _finish(rules, max_rules)
    return rules, applied, dropped


def _finish(rules: list, max_rules: int) -> list:
    kept = [r for r in rules if r[1] > 0]
    kept.sort(key=lambda r: r[1], reverse=True)  # stable: ties keep list order
    return kept[:max_rules]


# --------------------------------------------------------------------------------------------------
# faithful (original ExpeL behaviour, with every drop logged)
# --------------------------------------------------------------------------------------------------
def parse_ops_faithful(text: str) -> tuple[list[RuleOp], list[dict]]:
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
        if _OP_WORD.search(line) and not any(pos <= s < end for s in starts):
            dropped.append({"raw": line.strip(), "reason": "unparseable op"})
        pos = end
    return ops, dropped


def apply_ops_faithful(rules: list, ops: list[RuleOp], max_rules: int) -> tuple[list[list], list[dict], list[dict]]:
    """The original updater's behaviour (substring matching, EDIT index wrap-around), then the cap."""
    rules = [[r[0], int(r[1])] for r in rules]
    full = len(rules) >= max_rules

    def find(text: str) -> int | None:
        for i, r in enumerate(rules):
            if r[0] in text:
                return i
        return None

    kept: list[tuple[RuleOp, str, str]] = []  # (op, kind, note)
    dropped: list[dict] = []
    for op in ops:
        if op.op == "ADD":
            if find(op.text) is not None:
                dropped.append({**op.to_dict(), "reason": "duplicate rule (substring of an existing rule)"})
            else:
                kept.append((op, "ADD", ""))
        elif op.op == "EDIT":
            idx = find(op.text)
            if idx is not None:
                kept.append(
                    (RuleOp("AGREE", idx + 1, rules[idx][0], op.raw), "AGREE", "edit matches an existing rule: agree")
                )
            elif op.num is None or op.num > len(rules):
                dropped.append({**op.to_dict(), "reason": "rule number out of range"})
            else:
                kept.append((op, "EDIT", ""))
        else:
            if find(op.text) is None:
                dropped.append({**op.to_dict(), "reason": "no existing rule is a substring of the text"})
            else:
                kept.append((op, op.op, ""))

    applied: list[dict] = []
    for kind in _APPLY_ORDER:
        for op, k, note in kept:
            if k != kind:
                continue
            item = {**op.to_dict(), "applied_as": kind}
            if kind in ("REMOVE", "AGREE"):
                idx = find(op.text)
                rules[idx][1] += -(3 if full else 1) if kind == "REMOVE" else 1
            elif kind == "EDIT":
                idx = op.num - 1
                if idx < 0:
                    if not rules:
                        dropped.append(
                            {**op.to_dict(), "reason": "rule number out of range (original raises IndexError)"}
                        )
                        continue
                    idx += len(rules)
                    note = f"EDIT {op.num} wrapped to rule {idx + 1} (negative index)"
                rules[idx] = [op.text, rules[idx][1] + 1]
            else:
                idx = len(rules)
                rules.append([op.text, 2])
            item["target"] = idx + 1
            if note:
                item["note"] = note
            applied.append(item)
    return _finish(rules, max_rules), applied, dropped


# --------------------------------------------------------------------------------------------------
# paper (the Janus authors' ExpeL: paper-spec §5.2, fidelity-review B10)
# --------------------------------------------------------------------------------------------------
_PAPER_OP = re.compile(r"((?:REMOVE|EDIT|ADD|AGREE)(?: \d+)?):\s*(.*)")


def normalize_rule_paper(text: str) -> str:
    """Strip spaces and leading/trailing '-' and ' ', collapse whitespace, end with a period ("" stays "")."""
    clean = str(text or "").strip().strip("- ").strip()
    if not clean:
        return ""
    clean = re.sub(r"\s+", " ", clean)
    return clean if clean.endswith(".") else clean + "."


def parse_ops_paper(text: str) -> tuple[list[RuleOp], list[dict]]:
    """Operations found ANYWHERE in the reply (a regex scan, not line-anchored; the space after the colon may be a
    newline, so the text can sit on the next line). Empty texts are dropped. Returns ``(ops, dropped)``."""
    ops: list[RuleOp] = []
    dropped: list[dict] = []
    for m in _PAPER_OP.finditer(text or ""):
        head, raw_rule = m.group(1), m.group(2)
        rule = normalize_rule_paper(raw_rule)
        if not rule:
            dropped.append({"raw": m.group(0), "reason": "empty rule text"})
            continue
        parts = head.split(" ")
        ops.append(RuleOp(parts[0], int(parts[1]) if len(parts) > 1 else None, rule, m.group(0)))
    return ops, dropped


def paper_rule_index(rules: list, text: str) -> int | None:
    """First rule whose text contains ``text`` or is contained in it (two-way substring; case-sensitive)."""
    for i, r in enumerate(rules):
        if r[0] in text or text in r[0]:
            return i
    return None


def apply_ops_paper(rules: list, ops: list[RuleOp], max_rules: int) -> tuple[list[list], list[dict], list[dict]]:
    """The authors' semantics. AGREE/REMOVE pick their target by two-way containment (the number is ignored; no
    match -> dropped); an EDIT whose text matches a rule becomes an AGREE of that rule, otherwise it needs a number
    in 1..len; an ADD that matches an existing rule is skipped (ADDs in one reply are not checked against each
    other). REMOVE strength is 3 when ``len(rules) >= max_rules`` at that moment. With any operation given, rules
    with count <= 0 are dropped, the rest stably sorted by count and cut to ``max_rules``."""
    rules = [[r[0], int(r[1])] for r in rules]
    planned: list[tuple[str, RuleOp, str, str]] = []  # (kind, source op, text, note)
    dropped: list[dict] = []
    for op in ops:
        hit = paper_rule_index(rules, op.text)
        if op.op == "ADD":
            if hit is not None:
                dropped.append({**op.to_dict(), "reason": "duplicate rule"})
            else:
                planned.append(("ADD", op, op.text, ""))
        elif op.op == "EDIT":
            if hit is not None:
                planned.append(("AGREE", op, rules[hit][0], "edit matches an existing rule: agree"))
            elif op.num is None or not 1 <= op.num <= len(rules):
                dropped.append({**op.to_dict(), "reason": "rule number out of range" if op.num else
                                "missing rule number"})
            else:
                planned.append(("EDIT", op, op.text, ""))
        elif hit is None:
            dropped.append({**op.to_dict(), "reason": "no rule matches the text"})
        else:
            planned.append((op.op, op, op.text, ""))
    applied: list[dict] = []
    for kind in _APPLY_ORDER:
        for op_kind, src, text, note in planned:
            if op_kind != kind:
                continue
            target = None
            if kind in ("REMOVE", "AGREE"):
                target = paper_rule_index(rules, text)
                if target is None:
                    continue
                rules[target][1] += -(3 if len(rules) >= max_rules else 1) if kind == "REMOVE" else 1
            elif kind == "EDIT":
                target = src.num - 1
                rules[target] = [text, rules[target][1] + 1]
            else:
                rules.append([text, 2])
            item = {**src.to_dict(), "applied_as": kind, "target": None if target is None else target + 1}
            if note:
                item["note"] = note
            applied.append(item)
    if ops:
        rules = _finish(rules, max_rules)
    return rules, applied, dropped
