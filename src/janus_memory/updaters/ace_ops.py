"""ACE curator operations (ADD only, as the authors' code implements) and the refine step's duplicate grouping.

Both functions work in place on the playbook ``sections`` (see :mod:`ace_playbook`) and return a JSON log.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from janus_memory.updaters.ace_playbook import (
    all_bullets,
    extract_json_original,
    extract_json_strict,
    section_key,
    section_slug,
)

OTHERS = "others"


def _log(rejected: str | None = None) -> dict:
    return {"rejected": rejected, "applied": [], "dropped": [], "notes": []}


def _validate_original(obj: Any) -> str | None:
    """The authors' all-or-nothing validation: one bad operation discards the whole reply."""
    if not obj:
        return "no JSON object"
    if not isinstance(obj, dict):
        return "not a JSON object"
    if not isinstance(obj.get("reasoning"), str):
        return "missing or non-string 'reasoning'"
    if not isinstance(obj.get("operations"), list):
        return "missing or non-list 'operations'"
    for op in obj["operations"]:
        if not isinstance(op, dict) or "type" not in op:
            return "operation without a type"
        if op["type"] == "ADD" and not {"section", "content"} <= set(op):
            return "ADD without section or content"
        if op["type"] == "ADD" and not isinstance(op["section"], str):
            return "operation error"  # the authors' section.lower() raises; the whole reply is skipped
    return None


def apply_ops_original(sections: list[list], text: str, next_id: int) -> tuple[int, dict]:
    """The authors' ``apply_curator_operations``: ADD appends ``[slug-NNNNN] helpful=0 harmful=0 :: content`` to the
    end of its section; an unknown section goes to the end of OTHERS; section "general" (no such heading) is
    inserted at the TOP of OTHERS with slug "gene"; empty and duplicate contents are added; other types are ignored."""
    obj = extract_json_original(text)
    reason = _validate_original(obj)
    if reason:
        return next_id, _log(reason)
    log = _log()
    keys = [section_key(h, True) for h, _ in sections]
    top_of_others: list[list] = []
    for op in obj["operations"]:
        if op["type"] != "ADD":
            log["notes"].append(f"{op['type']} ignored (ADD only)")
            continue
        key = section_key(op["section"], True)
        if key not in keys and key != "general":
            log["notes"].append("unknown section -> others")
            key = OTHERS
        bullet = [f"{section_slug(key, True)}-{next_id:05d}", 0, 0, str(op["content"])]
        next_id += 1
        if key in keys:
            sections[keys.index(key)][1].append(bullet)
        else:
            top_of_others.append(bullet)
        log["applied"].append({"id": bullet[0], "section": key, "content": bullet[3]})
    if top_of_others:
        target = next((s for s in sections if s[0].strip() == "OTHERS"), None)
        if target is not None:
            target[1][:0] = top_of_others
        else:
            sections[-1][1].extend(top_of_others)
    return next_id, log


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def apply_ops_strict(sections: list[list], text: str, next_id: int) -> tuple[int, dict]:
    """Strict application: the last JSON object with ``operations``; each operation is checked on its own and a bad
    one is dropped with a reason ("not an object", "missing type", "unsupported op type", "missing section",
    "empty content", "duplicate bullet"); content is collapsed to one line; an unknown section goes to OTHERS."""
    obj, reason = extract_json_strict(text, "operations")
    if reason or obj is None:
        return next_id, _log(reason or "")
    ops = obj["operations"]
    if not isinstance(ops, list):
        return next_id, _log("'operations' is not a list")
    log = _log()
    keys = [section_key(h, False) for h, _ in sections]
    seen = {_norm(b[3]) for b in all_bullets(sections)}
    for op in ops:
        reason = None
        if not isinstance(op, dict):
            reason = "not an object"
        elif not isinstance(op.get("type"), str) or not op["type"].strip():
            reason = "missing type"
        elif op["type"].strip().upper() != "ADD":
            reason = "unsupported op type"
        elif not isinstance(op.get("section"), str) or not op["section"].strip():
            reason = "missing section"
        elif not isinstance(op.get("content"), str) or not op["content"].strip():
            reason = "empty content"
        elif _norm(op["content"]) in seen:
            reason = "duplicate bullet"
        if reason:
            log["dropped"].append({"op": op, "reason": reason})
            continue
        key = section_key(op["section"], False)
        if key not in keys:
            log["notes"].append("unknown section -> others")
            key = OTHERS if OTHERS in keys else keys[-1]
        content = " ".join(op["content"].split())
        seen.add(_norm(content))
        bullet = [f"{section_slug(key, False)}-{next_id:05d}", 0, 0, content]
        next_id += 1
        sections[keys.index(key)][1].append(bullet)
        log["applied"].append({"id": bullet[0], "section": key, "content": content})
    return next_id, log


# ------------------------------------------------------------------------------------------------- refine
def duplicate_groups(emb: np.ndarray, threshold: float, faithful: bool) -> list[list[int]]:
    """Groups of near-duplicate bullets: for each bullet i not yet grouped, i plus every later j with cosine
    >= threshold. Faithful (the authors' analyzer): a j already in an earlier group can join again; strict: not."""
    n = emb.shape[0]
    sims = emb @ emb.T if n else np.zeros((0, 0), dtype=np.float32)
    groups, visited = [], set()
    for i in range(n):
        if i in visited:
            continue
        js = [j for j in range(i + 1, n) if sims[i, j] >= threshold and (faithful or j not in visited)]
        if js:
            groups.append([i, *js])
            visited.update([i, *js])
    return groups


_MERGED = re.compile(r"\[([^\]]+)\]\s+helpful=(\d+)\s+harmful=(\d+)\s+::\s+(.+)", re.DOTALL)


def refine(sections: list[list], emb: np.ndarray, threshold: float, faithful: bool,
           merge_fn: Callable[[list[list]], str] | None = None) -> dict:
    """De-duplicate the playbook in place. ``merge_fn(group bullets) -> reply`` merges each group with the LLM
    (the authors' ``merge=True``); without it the first bullet of a group is kept and the others removed.

    Counters: faithful dedup keeps the first bullet's counts only; strict dedup adds the removed bullets' counts to it.
    Faithful merge takes id and counts as the reply states them, and on an unparseable reply keeps the first bullet
    and still removes the others; strict merge keeps the first id, sets the summed counts itself and on an
    unparseable reply leaves the group untouched."""
    bullets = all_bullets(sections)
    groups = duplicate_groups(emb, threshold, faithful)
    log: dict = {"groups": [[bullets[i][0] for i in g] for g in groups], "merged": [], "unparseable": 0}
    replace: dict[int, list] = {}
    remove: set[int] = set()
    for g in groups:
        members = [bullets[i] for i in g]
        first = list(members[0])
        total_h, total_k = sum(b[1] for b in members), sum(b[2] for b in members)
        if merge_fn is None:
            if not faithful:
                first[1], first[2] = total_h, total_k
            replace[g[0]] = first
            remove.update(g[1:])
            continue
        m = _MERGED.match(merge_fn(members).strip())
        if m is None:
            log["unparseable"] += 1
            if faithful:
                replace[g[0]] = first
                remove.update(g[1:])
            continue
        if faithful:
            merged = [m.group(1), int(m.group(2)), int(m.group(3)), m.group(4).strip()]
        else:
            merged = [first[0], total_h, total_k, " ".join(m.group(4).split())]
        replace[g[0]] = merged
        remove.update(g[1:])
        log["merged"].append(merged[0])
    idx = 0
    for sec in sections:
        kept = []
        for b in sec[1]:
            if idx in replace:
                kept.append(replace[idx])
            elif idx not in remove:
                kept.append(b)
            idx += 1
        sec[1] = kept
    return log
