"""ExpeL rule operations as the Janus authors run them (docs/research-notes.md §5.2, docs/fidelity.md row 17): operations found
anywhere in the reply, targets picked by two-way text containment. Selected by ``rule_ops="paper"``; re-exported
by ``expel_rules.py``."""

from __future__ import annotations

import re

from .expel_rulelist import APPLY_ORDER, RuleOp, applied_item, finish_rules

_PAPER_OP = re.compile(r"((?:REMOVE|EDIT|ADD|AGREE)(?: \d+)?):\s*(.*)")


_PLACEHOLDER_WORDS = {"rule", "<rule>", "strategy", "<strategy>", "insight", "<insight>", "placeholder"}
_PLACEHOLDER_NUMBERED = re.compile(r"<?\s*(rule|strategy|insight)\s*\d*\s*>?")


def is_placeholder_rule(clean: str) -> bool:
    """The authors' placeholder test (``_normalize_rule_text`` in their ``methods/ExpeL.py``): lower-cased, quotes
    and backticks removed, one final period, a leading "<" and a trailing ">" dropped, the text is a bare template
    word (rule, strategy, insight, placeholder) or "rule"/"strategy"/"insight" with an optional number ("Rule 1",
    "<rule 2>")."""
    low = re.sub("[`\"'\u201c\u201d\u2018\u2019]", "", clean.lower().strip())
    low = re.sub(r"\.$", "", low).strip()
    low = re.sub(r"\s*>$", "", re.sub(r"^<\s*", "", low))
    return low in _PLACEHOLDER_WORDS or _PLACEHOLDER_NUMBERED.fullmatch(low) is not None


def normalize_rule_paper(text: str) -> str:
    """Strip spaces and leading/trailing '-' and ' ', collapse whitespace, end with a period; "" for an empty text
    or a placeholder (:func:`is_placeholder_rule`), as the authors normalise."""
    clean = str(text or "").strip().strip("- ").strip()
    if not clean:
        return ""
    clean = re.sub(r"\s+", " ", clean)
    if is_placeholder_rule(clean):
        return ""
    return clean if clean.endswith(".") else clean + "."


def parse_ops_paper(text: str) -> tuple[list[RuleOp], list[dict]]:
    """Operations found ANYWHERE in the reply (a regex scan, not line-anchored; the space after the colon may be a
    newline, so the text can sit on the next line). Empty and placeholder texts are dropped ("empty rule text",
    "placeholder rule text"), as the authors drop them. Returns ``(ops, dropped)``."""
    ops: list[RuleOp] = []
    dropped: list[dict] = []
    for m in _PAPER_OP.finditer(text or ""):
        head, raw_rule = m.group(1), m.group(2)
        rule = normalize_rule_paper(raw_rule)
        if not rule:
            reason = "placeholder rule text" if raw_rule.strip().strip("- ").strip() else "empty rule text"
            dropped.append({"raw": m.group(0), "reason": reason})
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
    for kind in APPLY_ORDER:
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
                target = src.num - 1  # type: ignore[operator]  # an EDIT op has its number
                rules[target] = [text, rules[target][1] + 1]
            else:
                rules.append([text, 2])
            applied.append(applied_item(src, kind, target, note))
    if ops:
        rules = finish_rules(rules, max_rules)
    return rules, applied, dropped
